//! Step phases of a replay, cut at the capture's step markers (`wire::marker`).
//!
//! A marker is a `ping`, a handshake command, so it is not sent. The capture reader queues it on
//! its connection's lane like any request (after the requests recorded before it on that
//! connection, due at its recorded time under `--speed`), and the lane, on reaching it, starts the
//! phase. With clones (or `--repeat`) every copy reaches the same marker: the first copy to get
//! there starts the phase and later ones are ignored, so a phase runs from the first connection
//! reaching its marker to the first reaching the next one. Operations count in the phase their
//! reply arrived in (an unacknowledged one: the phase it was sent in).

use crate::figures::phases::{PhaseReport, Phases, BEFORE_FIRST_MARKER};
use std::sync::Arc;
use std::time::Instant;

/// A step marker on its way to a lane.
#[derive(Debug, Clone)]
pub struct Marker {
    pub step: Arc<str>,
    /// (pass, position among the pass's markers): which copies reach "the same" marker.
    pub key: (u64, u64),
}

/// The replay's phases, kept with the metrics (under their lock).
pub struct ReplayPhases {
    start: Instant,
    reached: Option<(u64, u64)>,
    phases: Phases,
    /// The server's pid and clock tick, to read its CPU time at every marker.
    server: Option<(u32, f64)>,
    cpu_at_start_of_replay: Option<f64>,
    /// The server's CPU seconds at the start and end of each phase of `phases.list`.
    cpu: Vec<(Option<f64>, Option<f64>)>,
}

impl ReplayPhases {
    pub fn new(start: Instant) -> ReplayPhases {
        ReplayPhases {
            start,
            reached: None,
            phases: Phases::default(),
            server: None,
            cpu_at_start_of_replay: None,
            cpu: Vec::new(),
        }
    }

    /// Reads the server's CPU time at every phase boundary; `cpu_now` is the reading at the start.
    pub fn measure_server(&mut self, pid: u32, tick_s: f64, cpu_now: Option<f64>) {
        self.server = Some((pid, tick_s));
        self.cpu_at_start_of_replay = cpu_now;
    }

    fn ns(&self, at: Instant) -> u64 {
        at.saturating_duration_since(self.start).as_nanos() as u64
    }

    fn server_cpu(&self) -> Option<f64> {
        self.server
            .and_then(|(pid, tick)| super::server::cpu_seconds(pid, tick))
    }

    /// A lane reached `marker` now; only the first copy to reach a marker counts, and a marker
    /// behind one already reached (a lagging clone) is ignored.
    pub fn reach(&mut self, marker: &Marker) {
        if self.reached.is_some_and(|k| k >= marker.key) {
            return;
        }
        self.reached = Some(marker.key);
        let cpu = self.server_cpu();
        let now = self.ns(Instant::now());
        let n = self.phases.list.len();
        let running = self.phases.list.last().is_some_and(|p| p.end_ns.is_none());
        self.phases.marker(&marker.step, now, now);
        if running && self.phases.list[n - 1].end_ns.is_some() {
            self.cpu[n - 1].1 = cpu;
        }
        if self.phases.list.len() > n {
            self.cpu.push((cpu, None));
        }
    }

    /// One finished operation (from `Metrics::record`): when it was done, its latency (none when
    /// unacknowledged), whether it failed.
    pub fn record(&mut self, done: Instant, latency_ns: Option<u64>, error: bool) {
        let done = self.ns(done);
        let n = self.phases.list.len();
        if let Some(p) = self.phases.at(done) {
            p.op(done);
            p.done(done, latency_ns, error);
        }
        if self.phases.list.len() > n {
            self.cpu.push((self.cpu_at_start_of_replay, None));
        }
    }

    /// The replay is over: `cpu_now` closes the server CPU of a phase no `end` marker closed.
    pub fn finish(&mut self, cpu_now: Option<f64>) {
        if let (Some(p), Some(c)) = (self.phases.list.last(), self.cpu.last_mut()) {
            if p.end_ns.is_none() {
                c.1 = cpu_now;
            }
        }
    }

    pub fn reports(&self) -> Vec<PhaseReport> {
        if !self.phases.marked {
            return Vec::new();
        }
        self.phases
            .list
            .iter()
            .zip(&self.cpu)
            .filter(|(p, _)| p.ops > 0 || p.name != BEFORE_FIRST_MARKER)
            .map(|(p, cpu)| PhaseReport {
                server_cpu_s: match *cpu {
                    (Some(a), Some(b)) => Some((b - a).max(0.0)),
                    _ => None,
                },
                ..p.report(0, false)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_copy_to_reach_a_marker_starts_the_phase() {
        let start = Instant::now();
        let mut p = ReplayPhases::new(start);
        let marker = |n: u64, step: &str| Marker {
            step: Arc::from(step),
            key: (0, n),
        };
        let (a, b) = (marker(1, "a"), marker(2, "b"));
        p.measure_server(
            std::process::id(),
            super::super::server::clock_tick_s(),
            Some(0.0),
        );
        p.reach(&a);
        p.reach(&b);
        p.reach(&a); // a lagging clone
        p.reach(&b);
        p.finish(Some(1e9));
        let r = p.reports();
        let names: Vec<&str> = r.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
        assert!(r[0].server_cpu_s.is_some_and(|c| c < 1e9), "{r:?}");
        assert!(
            r[1].server_cpu_s.is_some_and(|c| c > 1e8),
            "closed by finish"
        );
    }
}
