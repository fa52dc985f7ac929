//! Phases: a capture or a replay cut at its step markers (`wire::marker`), one phase from each
//! marker to the next. `analyze` and `replay` both report a `phases` list of [`PhaseReport`]; this
//! file holds that schema, the per-phase accumulator and its text table and HTML section.

use crate::figures::summary::LatencySummary;
use crate::figures::table::Table;
use crate::figures::units;
use crate::wire::marker::END_STEP;
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// The name of the phase holding the operations sent before the first marker, when there are any.
pub const BEFORE_FIRST_MARKER: &str = "(before first marker)";

/// Phases kept; later markers are ignored and the last phase runs on. Each phase holds a latency
/// histogram of ~40 KiB.
pub const MAX_PHASES: usize = 1000;

/// The figures of one phase, between two step markers (docs/analyze.md, Phases).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PhaseReport {
    /// The marker's step name, or [`BEFORE_FIRST_MARKER`].
    pub name: String,
    /// When the phase began: seconds from the capture's first record (analyze) or from the start
    /// of the replay (replay).
    pub start_s: f64,
    /// Until the next marker; the last phase, when no `end` marker closes it, until its last
    /// request or reply.
    #[schemars(range(min = 0))]
    pub wall_s: f64,
    /// Operations sent in the phase, counted as the summary counts them (handshakes and markers
    /// are not operations).
    pub ops: u64,
    pub errors: u64,
    #[schemars(range(min = 0))]
    pub ops_per_s: f64,
    /// Time with a request in flight and time the client took between a reply and its next
    /// request, summed over the workload connections (analyze only; connection-seconds).
    #[schemars(range(min = 0))]
    pub server_s: Option<f64>,
    #[schemars(range(min = 0))]
    pub client_s: Option<f64>,
    /// Latency of the phase's operations (by the phase they were sent in).
    pub latency: LatencySummary,
    /// The server's CPU seconds over the phase (replay only, when the server's process is known;
    /// read from `/proc` in clock ticks of usually 10 ms, so short phases read 0 or one tick).
    #[serde(default)]
    #[schemars(range(min = 0))]
    pub server_cpu_s: Option<f64>,
}

/// Latency to 2 significant digits: phases can be many.
fn phase_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(100, 3_600_000_000_000, 2).expect("static bounds are valid")
}

/// One phase being measured. Times are nanoseconds on the caller's clock.
#[derive(Debug, Clone)]
pub struct PhaseAcc {
    pub name: String,
    pub start_ns: u64,
    /// Set when the next marker (or `end`) closed the phase.
    pub end_ns: Option<u64>,
    /// The phase's last request or reply.
    pub last_ns: u64,
    pub ops: u64,
    pub errors: u64,
    pub server_ns: u64,
    pub client_ns: u64,
    latency: Option<Histogram<u64>>,
}

impl PhaseAcc {
    pub fn new(name: &str, start_ns: u64) -> PhaseAcc {
        PhaseAcc {
            name: name.to_owned(),
            start_ns,
            end_ns: None,
            last_ns: start_ns,
            ops: 0,
            errors: 0,
            server_ns: 0,
            client_ns: 0,
            latency: None,
        }
    }

    pub fn op(&mut self, ts_ns: u64) {
        self.ops += 1;
        self.last_ns = self.last_ns.max(ts_ns);
    }

    /// A reply (or, for an unacknowledged request, `latency_ns: None`) to one of this phase's ops.
    pub fn done(&mut self, ts_ns: u64, latency_ns: Option<u64>, error: bool) {
        self.last_ns = self.last_ns.max(ts_ns);
        self.errors += u64::from(error);
        if let Some(ns) = latency_ns {
            self.latency
                .get_or_insert_with(phase_histogram)
                .saturating_record(ns.max(100));
        }
    }

    /// Where the phase ends: its closing marker, or its last activity.
    pub fn end(&self) -> u64 {
        self.end_ns.unwrap_or(self.last_ns).max(self.start_ns)
    }

    /// `origin_ns`: what `start_s` counts from. `times`: whether server and client time were
    /// measured.
    pub fn report(&self, origin_ns: u64, times: bool) -> PhaseReport {
        let wall_s = (self.end() - self.start_ns) as f64 / 1e9;
        let secs = |ns: u64| times.then_some(ns as f64 / 1e9);
        PhaseReport {
            name: self.name.clone(),
            start_s: self.start_ns.saturating_sub(origin_ns) as f64 / 1e9,
            wall_s,
            ops: self.ops,
            errors: self.errors,
            ops_per_s: if wall_s > 0.0 {
                self.ops as f64 / wall_s
            } else {
                0.0
            },
            server_s: secs(self.server_ns),
            client_s: secs(self.client_ns),
            latency: self
                .latency
                .as_ref()
                .map(LatencySummary::from_ns_histogram)
                .unwrap_or_default(),
            server_cpu_s: None,
        }
    }
}

/// The phases of one capture or replay, in the order their markers were reached.
#[derive(Debug, Clone, Default)]
pub struct Phases {
    pub list: Vec<PhaseAcc>,
    /// Whether any marker was seen (without one there are no phases at all).
    pub marked: bool,
}

impl Phases {
    /// A marker sent at `sent_ns` and answered at `answered_ns` (the same instant for a marker
    /// that is reached rather than sent): closes the running phase when it was sent and, unless it
    /// is `end`, opens the next once it was answered, so the marker's own round trip belongs to no
    /// phase (as it belongs to no step's clock in the workloads). A marker naming the phase
    /// already running is ignored (several connections marking the same step).
    pub fn marker(&mut self, name: &str, sent_ns: u64, answered_ns: u64) {
        self.marked = true;
        let running = self.list.last().filter(|p| p.end_ns.is_none());
        if running.is_some_and(|p| p.name == name) {
            return;
        }
        if name != END_STEP && self.list.len() >= MAX_PHASES {
            return;
        }
        if let Some(p) = self.list.last_mut().filter(|p| p.end_ns.is_none()) {
            p.end_ns = Some(sent_ns.max(p.start_ns));
        }
        if name != END_STEP {
            let start = self
                .list
                .last()
                .map_or(answered_ns, |p| answered_ns.max(p.end()));
            self.list.push(PhaseAcc::new(name, start));
        }
    }

    /// The phase running at `ts_ns`. An operation before any marker opens the
    /// [`BEFORE_FIRST_MARKER`] phase (dropped at the end if no marker ever comes).
    pub fn at(&mut self, ts_ns: u64) -> Option<&mut PhaseAcc> {
        if !self.marked && self.list.is_empty() {
            self.list.push(PhaseAcc::new(BEFORE_FIRST_MARKER, ts_ns));
        }
        let i = self.list.iter().rposition(|p| p.start_ns <= ts_ns)?;
        let p = &mut self.list[i];
        match p.end_ns {
            Some(end) if ts_ns >= end => None,
            _ => Some(p),
        }
    }

    /// Books the interval `[from_ns, to_ns)` as server (or client) time to the phases it overlaps.
    pub fn time(&mut self, from_ns: u64, to_ns: u64, server: bool) {
        if to_ns <= from_ns {
            return;
        }
        let n = self.list.len();
        for i in (0..n).rev() {
            let start = self.list[i].start_ns;
            let end = match self.list[i].end_ns {
                Some(e) => e,
                None => self.list.get(i + 1).map_or(u64::MAX, |q| q.start_ns),
            };
            let overlap = to_ns.min(end).saturating_sub(from_ns.max(start));
            let p = &mut self.list[i];
            if server {
                p.server_ns += overlap;
            } else {
                p.client_ns += overlap;
            }
            if start <= from_ns {
                break;
            }
        }
    }

    /// The reports, or none when no marker was seen; an empty [`BEFORE_FIRST_MARKER`] phase is
    /// left out.
    pub fn reports(&self, origin_ns: u64, times: bool) -> Vec<PhaseReport> {
        if !self.marked {
            return Vec::new();
        }
        self.list
            .iter()
            .filter(|p| p.ops > 0 || p.name != BEFORE_FIRST_MARKER)
            .map(|p| p.report(origin_ns, times))
            .collect()
    }
}

/// One row per phase, for the text table and the HTML one. Server and client time appear when
/// measured (analyze), server CPU when measured (replay).
pub fn table(phases: &[PhaseReport]) -> Table {
    let (headers, rows) = rows(phases);
    Table::new(headers).with_rows(rows)
}

fn rows(phases: &[PhaseReport]) -> (Vec<&'static str>, Vec<Vec<String>>) {
    let times = phases.iter().any(|p| p.server_s.is_some());
    let cpu = phases.iter().any(|p| p.server_cpu_s.is_some());
    let mut headers = vec!["phase", "start", "wall", "ops", "ops/s"];
    if times {
        headers.extend(["server", "client"]);
    }
    headers.extend(["p50", "p99", "max", "errors"]);
    if cpu {
        headers.push("server CPU");
    }
    let rows = phases
        .iter()
        .map(|p| {
            let l = &p.latency;
            let lat = |v: f64| {
                if l.count > 0 {
                    units::duration_us(v)
                } else {
                    "-".into()
                }
            };
            let mut row = vec![
                p.name.clone(),
                units::duration_s(p.start_s),
                units::duration_s(p.wall_s),
                p.ops.to_string(),
                units::count(p.ops_per_s),
            ];
            if times {
                let secs = |v: Option<f64>| v.map_or("-".into(), units::duration_s);
                row.extend([secs(p.server_s), secs(p.client_s)]);
            }
            row.extend([
                lat(l.p50_us),
                lat(l.p99_us),
                lat(l.max_us),
                p.errors.to_string(),
            ]);
            if cpu {
                row.push(p.server_cpu_s.map_or("-".into(), units::duration_s));
            }
            row
        })
        .collect();
    (headers, rows)
}

/// The phases as a text table (empty string when there are none).
pub fn render_text(phases: &[PhaseReport]) -> String {
    if phases.is_empty() {
        return String::new();
    }
    table(phases).render()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_cut_phases_and_time_is_split_at_them() {
        let mut p = Phases::default();
        assert!(p.at(5).is_some(), "an op before any marker");
        p.at(5).unwrap().op(5);
        p.marker("a", 9, 10);
        p.marker("a", 12, 13); // another connection marking the same step
        p.at(15).unwrap().op(15);
        p.time(8, 20, true); // 1 before a, 10 in a, 1 in the marker's round trip
        p.marker("b", 20, 20);
        p.time(18, 30, false); // 2 in a, 10 in b
        p.at(25).unwrap().op(25);
        p.at(26).unwrap().done(29, Some(4), true);
        assert!(p.at(9).is_none(), "in the marker's round trip, no phase");
        p.marker(END_STEP, 40, 41);
        assert!(p.at(45).is_none(), "after end, no phase");
        p.marker(END_STEP, 50, 51); // nothing running: ignored
        let r = p.reports(0, true);
        let names: Vec<&str> = r.iter().map(|x| x.name.as_str()).collect();
        assert_eq!(names, [BEFORE_FIRST_MARKER, "a", "b"]);
        assert_eq!(r.iter().map(|x| x.ops).sum::<u64>(), 3);
        assert_eq!(r[1].wall_s, 10e-9);
        assert_eq!(r[1].server_s, Some(10e-9));
        assert_eq!(r[1].client_s, Some(2e-9));
        assert_eq!(r[0].server_s, Some(1e-9));
        assert_eq!((r[2].client_s, r[2].wall_s), (Some(10e-9), 20e-9));
        assert_eq!((r[2].errors, r[2].latency.count), (1, 1));
        assert!(render_text(&r).contains("(before first marker)"));
        let html =
            crate::report::html::phases::section(crate::report::html::Page::new("t"), &r, "intro");
        assert_eq!(html.render().matches("<svg class=\"chart").count(), 2);
    }

    #[test]
    fn no_marker_no_phases_and_the_last_phase_ends_at_its_last_activity() {
        let mut p = Phases::default();
        p.at(5).unwrap().op(5);
        assert!(p.reports(0, false).is_empty());
        let mut p = Phases::default();
        p.marker("only", 100, 100);
        p.at(150).unwrap().op(150);
        p.at(150).unwrap().done(170, Some(20), false);
        let r = p.reports(100, false);
        assert_eq!((r[0].start_s, r[0].wall_s), (0.0, 70e-9));
        assert_eq!(r[0].server_s, None);
        assert!(render_text(&[]).is_empty());
    }
}
