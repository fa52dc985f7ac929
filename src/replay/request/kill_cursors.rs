//! Legacy OP_KILL_CURSORS as a `killCursors` command. It names no namespace, and the command needs
//! one, so the capture reader remembers where each recorded cursor was opened
//! ([`CursorNamespaces`]).

use super::as_command::{malformed, op_msg};
use super::recorded::{Request, Skip};
use super::understand::understand;
use crate::replay::measure::outcome::Outcome;
use crate::replay::names::Name;
use crate::wire::compressed;
use crate::wire::header::{MsgHeader, OpCode};
use crate::wire::legacy::OpKillCursors;
use bson::{rawdoc, RawArrayBuf};
use bytes::Bytes;
use std::collections::HashMap;

/// OP_KILL_CURSORS names no namespace, and `killCursors` needs one: `namespace_of` says where the
/// capture opened a recorded cursor (`(db, collection)`, remembered by the capture reader). The
/// cursors of the first namespace found are killed in one command; ids whose cursor the capture
/// never opened are left out, and a kill of only those is not replayed (`Skip::Unsupported`).
/// Anything but OP_KILL_CURSORS (possibly inside OP_COMPRESSED) is `Skip::Unsupported` too.
pub fn understand_kill_cursors(
    conn_id: u64,
    ts_ns: u64,
    wire: &Bytes,
    namespace_of: impl Fn(i64) -> Option<(Name, Name)>,
) -> Result<Request, Skip> {
    let header = MsgHeader::parse(wire)
        .ok()
        .flatten()
        .ok_or(Skip::Malformed)?;
    match header.op_code {
        OpCode::KillCursors => {}
        OpCode::Compressed => {
            let (_, inner) = compressed::decompress(wire).map_err(|_| Skip::Malformed)?;
            return understand_kill_cursors(conn_id, ts_ns, &Bytes::from(inner), namespace_of);
        }
        _ => return Err(Skip::Unsupported),
    }
    let m = OpKillCursors::parse(wire).map_err(malformed)?;
    let mut namespace = None;
    let mut ids = RawArrayBuf::new();
    for id in m.cursor_ids {
        match namespace_of(id) {
            Some(ns) if namespace.as_ref().is_none_or(|first| *first == ns) => {
                namespace = Some(ns);
                ids.push(id);
            }
            _ => {}
        }
    }
    let (db, collection) = namespace.ok_or(Skip::Unsupported)?;
    let body = rawdoc! { "killCursors": &*collection, "cursors": ids, "$db": &*db };
    let mut req = understand(conn_id, ts_ns, &op_msg(body, false, header.request_id))?;
    // It had no reply: nothing to wait for in the capture, nothing to compare but success.
    req.recorded = Some(Outcome {
        ok: true,
        ..Outcome::default()
    });
    Ok(req)
}

/// Recorded cursor id -> `(db, collection)` it was opened on, from the recorded replies; forgotten
/// when the recording shows the cursor exhausted or killed. Bounded: past the limit it starts over.
#[derive(Default)]
pub struct CursorNamespaces(HashMap<i64, (Name, Name)>);

impl CursorNamespaces {
    const LIMIT: usize = 100_000;

    pub fn learn(&mut self, req: &Request) {
        if let Some(c) = req.produces_cursor() {
            if self.0.len() >= Self::LIMIT {
                self.0.clear();
            }
            let collection = req.collection.clone().unwrap_or_default();
            self.0.insert(c, (req.db.clone(), collection));
        }
        let exhausted = req.recorded.as_ref().and_then(|o| o.cursor_id) == Some(0);
        if (&*req.command == "getMore" && exhausted) || &*req.command == "killCursors" {
            for c in &req.cursor_refs {
                self.0.remove(c);
            }
        }
    }

    pub fn get(&self, cursor: i64) -> Option<(Name, Name)> {
        self.0.get(&cursor).cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn op_kill_cursors_takes_the_namespace_its_cursors_were_opened_in() {
        let wire = Bytes::from(
            crate::wire::legacy::OpKillCursors {
                cursor_ids: vec![5, 6, 7],
            }
            .encode(8),
        );
        let ns = |c: i64| match c {
            5 | 7 => Some((Name::from("bench"), Name::from("c"))),
            6 => Some((Name::from("bench"), Name::from("other"))),
            _ => None,
        };
        assert_eq!(understand(1, 1, &wire).unwrap_err(), Skip::Unsupported);
        let req = understand_kill_cursors(1, 1, &wire, ns).unwrap();
        assert_eq!(
            (&*req.command, &*req.db, req.collection.as_deref()),
            ("killCursors", "bench", Some("c"))
        );
        assert_eq!(req.cursor_refs, vec![5, 7]);
        assert!(req.expects_reply && req.recorded.as_ref().is_some_and(|o| o.ok));
        assert_eq!(req.request_id, 8);
        let none = understand_kill_cursors(1, 1, &wire, |_| None).unwrap_err();
        assert_eq!(none, Skip::Unsupported);
    }
}
