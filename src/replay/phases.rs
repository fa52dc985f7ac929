//! Phases of a replay, cut at the capture's step markers (`wire::marker`).
//!
//! A marker is a `ping`, a handshake command, so it is not sent. The capture reader queues it on
//! its connection's lane like any request (after the requests recorded before it on that
//! connection, due at its recorded time under `--speed`), and the lane, on reaching it, starts the
//! phase. With clones (or `--repeat`) every copy reaches the same marker: the first copy to get
//! there starts the phase and later ones are ignored, so a phase runs from the first connection
//! reaching its marker to the first reaching the next one. Operations count in the phase their
//! reply arrived in (an unacknowledged one: the phase it was sent in).

use super::cursors::Scope;
use super::metrics::Sample;
use super::rewrite::Request;
use super::schedule::{Op, Shared};
use crate::report::phases::{PhaseReport, Phases};
use std::sync::Arc;
use std::time::Instant;
use tokio::time::Instant as TokioInstant;

/// A step marker on its way to a lane.
#[derive(Debug, Clone)]
pub struct Marker {
    pub step: Arc<str>,
    /// (pass, position among the pass's markers): which copies reach "the same" marker.
    pub key: (u64, u64),
}

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
        command: Arc::from("ping"),
        db: String::new(),
        collection: None,
        expects_reply: false,
        lsid: None,
        transaction: None,
        cursor_refs: Vec::new(),
        recorded: None,
    }
}

/// The copy of `marker` a lane of `scope` reaches: sent nowhere, due when the recorded marker was.
pub fn marker_op(marker: Marker, req: &Request, offset_ns: u64, seq: u64, scope: Scope) -> Op {
    Op {
        bytes: Vec::new(),
        cursor_patches: Vec::new(),
        expects_reply: false,
        command: req.command.clone(),
        namespace: Arc::from(""),
        offset_ns,
        seq,
        scope,
        produces_cursor: None,
        recorded: None,
        origin_conn: req.conn_id,
        origin_request: req.request_id,
        marker: Some(marker),
    }
}

/// The replay's phases, kept with the metrics (under their lock).
pub struct ReplayPhases {
    start: Instant,
    reached: Option<(u64, u64)>,
    phases: Phases,
}

impl ReplayPhases {
    pub fn new(start: Instant) -> ReplayPhases {
        ReplayPhases {
            start,
            reached: None,
            phases: Phases::default(),
        }
    }

    fn ns(&self, at: Instant) -> u64 {
        at.saturating_duration_since(self.start).as_nanos() as u64
    }

    /// A lane reached `marker` now; only the first copy to reach a marker counts, and a marker
    /// behind one already reached (a lagging clone) is ignored.
    pub fn reach(&mut self, marker: &Marker) {
        if self.reached.is_some_and(|k| k >= marker.key) {
            return;
        }
        self.reached = Some(marker.key);
        let now = self.ns(Instant::now());
        self.phases.marker(&marker.step, now, now);
    }

    /// One finished operation (from `Metrics::record`).
    pub fn record(&mut self, s: &Sample<'_>) {
        let done = self.ns(s.done);
        if let Some(p) = self.phases.at(done) {
            p.op(done);
            p.done(done, s.latency_ns, s.error);
        }
    }

    pub fn reports(&self) -> Vec<PhaseReport> {
        self.phases.reports(0, false)
    }
}

/// Waits for the marker's due time (as a request would be), then marks the phase. False when the
/// replay was aborted meanwhile.
pub async fn reach(
    shared: &Shared,
    marker: &Marker,
    due: Option<TokioInstant>,
    abort: &mut tokio::sync::watch::Receiver<bool>,
) -> bool {
    if let Some(due) = due {
        if shared.deadline.is_some_and(|d| due >= d) {
            return true;
        }
        if due > TokioInstant::now() {
            tokio::select! {
                _ = tokio::time::sleep_until(due) => {}
                _ = abort.wait_for(|a| *a) => return false,
            }
        }
    }
    shared
        .metrics
        .lock()
        .expect("metrics lock")
        .phases
        .reach(marker);
    true
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

    #[test]
    fn the_first_copy_to_reach_a_marker_starts_the_phase() {
        let start = Instant::now();
        let mut p = ReplayPhases::new(start);
        let mut seq = MarkerSeq::default();
        let (a, b) = (seq.next(0, "a"), seq.next(0, "b"));
        p.reach(&a);
        p.reach(&b);
        p.reach(&a); // a lagging clone
        p.reach(&b);
        let names: Vec<String> = p.reports().into_iter().map(|r| r.name).collect();
        assert_eq!(names, ["a", "b"]);
    }
}
