//! A lane's connections: one to the primary (or the server, or its mongos), opened with the first
//! request, and one to a secondary, opened with the first request whose read preference allows a
//! secondary when the replica set has one. Each holds a connection slot, given up when the lane
//! has nothing to send and another lane waits for one.

use crate::replay::client::{Conn, ConnError, ReadMode};
use crate::replay::route::counter;
use crate::replay::route::op::Op;
use crate::replay::route::run::Run;
use crate::replay::route::slots::Slot;
use crate::replay::route::target::TargetState;
use crate::wire::bson_raw;
use crate::wire::compressed::Compressor;
use crate::wire::OpMsgView;
use bson::rawdoc;
use std::future::Future;
use tokio::sync::watch;

/// Which of the lane's connections a request went on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Side {
    Primary,
    Secondary,
}

/// The connections are boxed: a lane holds its `Conns` for as long as its recorded connection is
/// open, connected or not (a capture can hold 200,000 open connections), and a `Conn` inline is
/// 208 bytes, twice.
#[derive(Default)]
pub(super) struct Conns {
    pub primary: Option<Box<Conn>>,
    /// The topology's generation when `primary` was opened.
    pub generation: usize,
    pub secondary: Option<Box<Conn>>,
    /// Each open connection's slot ([`crate::replay::route::slots`]).
    primary_slot: Option<Slot>,
    secondary_slot: Option<Slot>,
    /// The last request on the primary was unacknowledged (moreToCome): a ping confirms it
    /// before that connection is closed to give its slot up.
    pub unconfirmed: bool,
    /// Opens connections without slots: an A/B replay's paired lanes, which wait for every target
    /// together and so cannot give one target's slot up alone; `--max-open-connections` does
    /// not apply to them.
    pub uncapped: bool,
}

impl Conns {
    /// Connections that take no slot ([`Conns::uncapped`]).
    pub fn uncapped() -> Conns {
        Conns {
            uncapped: true,
            ..Conns::default()
        }
    }

    /// The connection for `op` (opened now if needed), and which one it is; `None` when the
    /// `--duration` deadline passed while the lane waited for a connection slot.
    pub async fn pick(
        &mut self,
        run: &Run,
        target: &TargetState,
        op: &Op,
        live_cursors: &[i64],
        abort: &mut watch::Receiver<bool>,
    ) -> Result<Option<(&mut Conn, Side)>, ConnError> {
        let side =
            if target.servers.has_secondaries() && goes_to_secondary(target, op, live_cursors) {
                Side::Secondary
            } else {
                Side::Primary
            };
        if self.side(side).0.is_none() {
            let generation = target.servers.generation();
            let host = match side {
                Side::Primary => target.servers.lane_host(),
                Side::Secondary => target
                    .servers
                    .secondary_host()
                    .unwrap_or_else(|| target.servers.lane_host()),
            };
            // Opening a connection is rare against sending on one: its futures (handshake,
            // authentication) are boxed, so the lane's future for every request stays small
            // (it is moved for every request).
            if self.side(side).1.is_none() && !self.uncapped {
                let Some(slot) = Box::pin(self.take_slot(run, target, side, &host, abort)).await?
                else {
                    return Ok(None);
                };
                *self.side(side).1 = Some(slot);
            }
            let conn = Box::pin(connect(run, target, &host, op.compressor, abort)).await?;
            *self.side(side).0 = Some(Box::new(conn));
            if side == Side::Primary {
                self.generation = generation;
            }
        }
        Ok(Some((
            self.side(side).0.as_deref_mut().expect("opened above"),
            side,
        )))
    }

    fn side(&mut self, side: Side) -> (&mut Option<Box<Conn>>, &mut Option<Slot>) {
        match side {
            Side::Primary => (&mut self.primary, &mut self.primary_slot),
            Side::Secondary => (&mut self.secondary, &mut self.secondary_slot),
        }
    }

    /// A slot for a new connection on `side`. A lane never waits for one while holding another
    /// (that could deadlock): with none free, its other connection is closed first. `None` when
    /// the `--duration` deadline passes meanwhile: what waits then is not sent.
    async fn take_slot(
        &mut self,
        run: &Run,
        target: &TargetState,
        side: Side,
        host: &crate::net::HostPort,
        abort: &mut watch::Receiver<bool>,
    ) -> Result<Option<Slot>, ConnError> {
        if let Some(slot) = target.slots.try_take() {
            return Ok(Some(slot));
        }
        let other = match side {
            Side::Primary => Side::Secondary,
            Side::Secondary => Side::Primary,
        };
        self.close(target, other).await;
        let deadline = async {
            match run.deadline {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            slot = target.slots.take() => Ok(Some(slot)),
            () = deadline => Ok(None),
            _ = abort.wait_for(|a| *a) => Err(ConnError::Closed {
                addr: host.to_string(),
                during: "aborting",
            }),
        }
    }

    /// Runs `wait`, during which the lane has nothing to send. When another lane waits for a slot
    /// meanwhile, this one's connections close and give theirs up (reopened when it sends again).
    pub async fn idle<T>(&mut self, target: &TargetState, wait: impl Future<Output = T>) -> T {
        if self.primary_slot.is_none() && self.secondary_slot.is_none() {
            return wait.await;
        }
        tokio::pin!(wait);
        tokio::select! {
            biased;
            out = &mut wait => return out,
            () = target.slots.claim() => {}
        }
        Box::pin(self.close(target, Side::Primary)).await;
        Box::pin(self.close(target, Side::Secondary)).await;
        wait.await
    }

    /// Closes one connection (an unacknowledged write on it confirmed first) and frees its slot.
    pub async fn close(&mut self, target: &TargetState, side: Side) {
        if let Some(mut conn) = self.side(side).0.take() {
            if side == Side::Primary && self.unconfirmed && !target.abort.is_set() {
                let ping = rawdoc! { "ping": 1, "$db": "admin" };
                if let Err(e) = conn
                    .command(&ping, "confirming unacknowledged writes")
                    .await
                {
                    target.abort.trigger(e.to_string());
                }
                self.unconfirmed = false;
            }
            counter::add(&target.counters.stray_replies, conn.stray_replies);
        }
        *self.side(side).1 = None;
    }

    /// Both connections, for their counters at the end.
    pub fn all(&mut self) -> impl Iterator<Item = &mut Conn> {
        self.primary
            .as_deref_mut()
            .into_iter()
            .chain(self.secondary.as_deref_mut())
    }
}

async fn connect(
    run: &Run,
    target: &TargetState,
    host: &crate::net::HostPort,
    offer: Option<Compressor>,
    abort: &mut watch::Receiver<bool>,
) -> Result<Conn, ConnError> {
    let conn = tokio::select! {
        c = Conn::connect_offering(&target.target, host, run.op_timeout, offer) => c,
        _ = abort.wait_for(|a| *a) => Err(ConnError::Closed { addr: host.to_string(), during: "aborting" }),
    }?;
    counter::bump(&target.counters.connections_opened);
    Ok(conn)
}

/// A getMore or killCursors follows its cursor; any other request goes to a secondary when its
/// recorded `$readPreference` allows one, or, recorded without one, when it is a read and the
/// target's `readPreference` allows one.
fn goes_to_secondary(target: &TargetState, op: &Op, live_cursors: &[i64]) -> bool {
    if !live_cursors.is_empty() {
        return live_cursors
            .iter()
            .any(|c| target.servers.is_on_secondary(*c));
    }
    match recorded_read_mode(&op.bytes) {
        Some(mode) => mode.prefers_secondary(),
        None => {
            is_read(&op.command, &op.bytes)
                && target
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
