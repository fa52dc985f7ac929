//! Step markers on their way from the capture to the lanes: numbered per pass, held in their
//! connection's queue as a placeholder request, and copied to a lane of every clone like a request
//! (not sent: the lane marks the phase when it gets there, `lane::reach_marker`).

use crate::replay::measure::step_phases::Marker;
use crate::replay::names::Name;
use crate::replay::request::{Request, Scope};
use crate::replay::route::op::Op;
use std::sync::Arc;

/// Numbers the markers of one pass in capture order. Consecutive markers of the same step (from
/// several recorded connections) share a number, as `analyze` merges them into one phase.
#[derive(Debug, Default)]
pub struct MarkerSeq {
    last: Option<Arc<str>>,
    next: u64,
}

impl MarkerSeq {
    /// The marker for `step` seen next in pass `pass` (passes restart the numbering).
    pub fn next(&mut self, pass: u64, step: &str) -> Marker {
        let step: Arc<str> = match &self.last {
            Some(last) if &**last == step => last.clone(),
            _ => {
                self.next += 1;
                let s: Arc<str> = Arc::from(step);
                self.last = Some(s.clone());
                s
            }
        };
        Marker {
            step,
            key: (pass, self.next),
        }
    }

    pub fn new_pass(&mut self) {
        *self = MarkerSeq::default();
    }
}

/// What a marker looks like while it waits in its connection's queue with the recorded requests:
/// a request that is never rewritten or sent (no bytes, no reply expected).
pub fn marker_request(conn_id: u64, ts_ns: u64, request_id: i32) -> Request {
    Request {
        conn_id,
        ts_ns,
        request_id,
        msg: bytes::Bytes::new(),
        plain: false,
        command: Name::from("ping"),
        db: Name::default(),
        collection: None,
        expects_reply: false,
        lsid: None,
        transaction: None,
        cursor_refs: Vec::new(),
        recorded: None,
        compressor: None,
        shape: None,
    }
}

/// The copy of `marker` a lane of `scope` reaches: sent nowhere, due when the recorded marker was.
pub fn marker_op(marker: Marker, req: &Request, offset_ns: u64, seq: u64, scope: Scope) -> Op {
    Op {
        bytes: Vec::new(),
        cursor_patches: Vec::new(),
        expects_reply: false,
        command: req.command.clone(),
        namespace: Name::default(),
        offset_ns,
        seq,
        scope,
        produces_cursor: None,
        recorded: None,
        origin_conn: req.conn_id,
        origin_request: req.request_id,
        marker: Some(marker),
        compressor: None,
        after: None,
        completes: None,
        connect_lead_ns: 0,
        charge: 0,
        plan_slot: None,
        shape: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_are_numbered_per_pass_and_repeats_share_a_number() {
        let mut seq = MarkerSeq::default();
        let a = seq.next(0, "a");
        let a2 = seq.next(0, "a");
        let b = seq.next(0, "b");
        assert_eq!((a.key, a2.key, b.key), ((0, 1), (0, 1), (0, 2)));
        seq.new_pass();
        assert_eq!(seq.next(1, "a").key, (1, 1));
    }
}
