//! A lane's connections: one to the primary (or the server, or its mongos), opened with the first
//! request, and one to a secondary, opened with the first request whose read preference allows a
//! secondary when the replica set has one.

use crate::replay::client::{Conn, ConnError, ReadMode};
use crate::replay::route::op::Op;
use crate::replay::route::shared::{Counters, Shared};
use crate::wire::bson_raw;
use crate::wire::compressed::Compressor;
use crate::wire::OpMsgView;
use tokio::sync::watch;

/// Which of the lane's connections a request went on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Side {
    Primary,
    Secondary,
}

#[derive(Default)]
pub(super) struct Conns {
    pub primary: Option<Conn>,
    /// The topology's generation when `primary` was opened.
    pub generation: usize,
    pub secondary: Option<Conn>,
}

impl Conns {
    /// The connection for `op` (opened now if needed), and which one it is.
    pub async fn pick(
        &mut self,
        shared: &Shared,
        op: &Op,
        live_cursors: &[i64],
        abort: &mut watch::Receiver<bool>,
    ) -> Result<(&mut Conn, Side), ConnError> {
        let side =
            if shared.servers.has_secondaries() && goes_to_secondary(shared, op, live_cursors) {
                Side::Secondary
            } else {
                Side::Primary
            };
        let slot = match side {
            Side::Primary => &mut self.primary,
            Side::Secondary => &mut self.secondary,
        };
        if slot.is_none() {
            let generation = shared.servers.generation();
            let host = match side {
                Side::Primary => shared.servers.lane_host(),
                Side::Secondary => shared
                    .servers
                    .secondary_host()
                    .unwrap_or_else(|| shared.servers.lane_host()),
            };
            *slot = Some(connect(shared, &host, op.compressor, abort).await?);
            if side == Side::Primary {
                self.generation = generation;
            }
        }
        Ok((slot.as_mut().expect("opened above"), side))
    }

    /// Both connections, for their counters at the end.
    pub fn all(&mut self) -> impl Iterator<Item = &mut Conn> {
        self.primary.iter_mut().chain(self.secondary.iter_mut())
    }
}

async fn connect(
    shared: &Shared,
    host: &crate::net::HostPort,
    offer: Option<Compressor>,
    abort: &mut watch::Receiver<bool>,
) -> Result<Conn, ConnError> {
    let conn = tokio::select! {
        c = Conn::connect_offering(&shared.target, host, shared.op_timeout, offer) => c,
        _ = abort.wait_for(|a| *a) => Err(ConnError::Closed { addr: host.to_string(), during: "aborting" }),
    }?;
    Counters::bump(&shared.counters.connections_opened);
    Ok(conn)
}

/// A getMore or killCursors follows its cursor; any other request goes to a secondary when its
/// recorded `$readPreference` allows one, or, recorded without one, when it is a read and the
/// target's `readPreference` allows one.
fn goes_to_secondary(shared: &Shared, op: &Op, live_cursors: &[i64]) -> bool {
    if !live_cursors.is_empty() {
        return live_cursors
            .iter()
            .any(|c| shared.servers.is_on_secondary(*c));
    }
    match recorded_read_mode(&op.bytes) {
        Some(mode) => mode.prefers_secondary(),
        None => {
            is_read(&op.command, &op.bytes)
                && shared
                    .target
                    .read_preference
                    .is_some_and(ReadMode::prefers_secondary)
        }
    }
}

/// `$readPreference.mode` of an OP_MSG body.
pub(super) fn recorded_read_mode(bytes: &[u8]) -> Option<ReadMode> {
    let view = OpMsgView::new(bytes).ok()?;
    let body = view.body().ok()?;
    let pref = bson_raw::iter(body)
        .ok()?
        .flatten()
        .find(|e| e.key == "$readPreference")?;
    let mode = bson_raw::iter(pref.as_doc()?)
        .ok()?
        .flatten()
        .find(|e| e.key == "mode")?;
    ReadMode::from_name(mode.as_str()?)
}

/// Commands that only read (an aggregate writing with `$out` or `$merge` is not one).
pub(super) fn is_read(command: &str, bytes: &[u8]) -> bool {
    match command {
        "find" | "count" | "distinct" | "listCollections" | "listIndexes" | "dbStats"
        | "collStats" => true,
        "aggregate" => {
            memchr::memmem::find(bytes, b"$out").is_none()
                && memchr::memmem::find(bytes, b"$merge").is_none()
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::op_msg::{MsgFlags, OpMsg};
    use bson::rawdoc;

    fn msg(body: bson::RawDocumentBuf) -> Vec<u8> {
        OpMsg::with_body(body, MsgFlags::empty()).encode(1, 0)
    }

    #[test]
    fn read_preferences_are_read_from_the_request() {
        let m = msg(
            rawdoc! { "find": "c", "$db": "d", "$readPreference": { "mode": "secondaryPreferred" } },
        );
        assert_eq!(recorded_read_mode(&m), Some(ReadMode::SecondaryPreferred));
        assert_eq!(
            recorded_read_mode(&msg(rawdoc! { "find": "c", "$db": "d" })),
            None
        );
        assert_eq!(recorded_read_mode(b"junk"), None);
        assert!(is_read(
            "aggregate",
            &msg(rawdoc! { "aggregate": "c", "pipeline": [] })
        ));
        assert!(!is_read(
            "aggregate",
            &msg(rawdoc! { "aggregate": "c", "pipeline": [{ "$out": "x" }] })
        ));
        assert!(!is_read("insert", b""));
    }
}
