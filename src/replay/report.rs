//! The replay report: JSON (`--report`) with the shared [`ReportSummary`] under `summary`, and a text
//! summary for stdout.

use super::measure::buckets::BucketTimeline;
use super::measure::knee::KneeReport;
use super::measure::metrics::{DivergenceReport, HistogramsReport, LagReport, SecondReport};
use super::measure::server::StatusSnapshot;
use crate::figures::phases::PhaseReport;
use crate::figures::summary::{CommandSummary, LatencySummary, ReportSummary};
use crate::figures::table::Table;
use crate::figures::units;
use crate::replay::pacing::Pacing;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct ServerReport {
    pub pid: Option<u32>,
    /// How the pid was known: `--server-pid` or `port`.
    pub pid_source: Option<String>,
    pub cpu_s: Option<f64>,
    pub cpu_s_per_1k_ops: Option<f64>,
    pub status_before: Option<StatusSnapshot>,
    pub status_after: Option<StatusSnapshot>,
    /// after - before of opcounters, network and connections.
    pub delta: Option<serde_json::Value>,
    pub status_error: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct ReplayerReport {
    pub cpu_s: Option<f64>,
    pub cpu_us_per_op: Option<f64>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct OptionsReport {
    pub pacing: String,
    pub connections: Option<usize>,
    pub clones: u32,
    pub repeat: Option<u64>,
    pub duration_s: Option<f64>,
    pub db_map: Vec<String>,
    pub filters: Vec<String>,
    /// The open-loop schedule for all shards together (`--rate`, `--ramp`), for the knee.
    pub open_loop: Option<OpenLoopReport>,
}

/// Recorded latency per command: request to reply in the capture, as `analyze` measures it.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct RecordedReport {
    pub per_command: BTreeMap<String, LatencySummary>,
    /// The histograms behind them ([`super::measure::hdr`]), for charts and `merge`.
    pub histograms: BTreeMap<String, String>,
}

impl RecordedReport {
    pub fn of(hists: &BTreeMap<String, hdrhistogram::Histogram<u64>>) -> RecordedReport {
        RecordedReport {
            per_command: hists
                .iter()
                .map(|(k, h)| (k.clone(), LatencySummary::from_ns_histogram(h)))
                .collect(),
            histograms: hists
                .iter()
                .map(|(k, h)| (k.clone(), super::measure::hdr::encode(h)))
                .collect(),
        }
    }
}

/// `--rate R`: from = to = R, over_s = 0. `--rate A..B --ramp T [--ramp-steps K]`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct OpenLoopReport {
    pub from: f64,
    pub to: f64,
    pub over_s: f64,
    pub steps: u32,
}

impl OpenLoopReport {
    pub fn of(p: &Pacing) -> Option<OpenLoopReport> {
        match *p {
            Pacing::Rate { ops_per_s } => Some(OpenLoopReport {
                from: ops_per_s,
                to: ops_per_s,
                over_s: 0.0,
                steps: 0,
            }),
            Pacing::Ramp {
                from,
                to,
                over_s,
                steps,
            } => Some(OpenLoopReport {
                from,
                to,
                over_s,
                steps,
            }),
            _ => None,
        }
    }

    pub fn pacing(&self) -> Pacing {
        if self.over_s > 0.0 {
            Pacing::Ramp {
                from: self.from,
                to: self.to,
                over_s: self.over_s,
                steps: self.steps,
            }
        } else {
            Pacing::Rate {
                ops_per_s: self.from,
            }
        }
    }
}

/// `--connections N`: how much the order between writes and what follows them held the replay back.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct OrderingReport {
    pub connections: usize,
    /// Requests that followed a write of their namespace sent on another connection.
    pub followed_a_write: u64,
    /// Of those, how many had to wait for it, and for how long in all.
    pub waited: u64,
    pub wait_s: f64,
    /// Requests in flight on average (sum of latencies / wall time): the concurrency the
    /// dependencies allowed, out of `connections` x clones.
    pub mean_in_flight: f64,
}

/// One lane per recorded connection: requests that waited for their logical session's previous
/// request, sent on another connection ([`crate::replay::route::session_order`]).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct SessionOrderReport {
    /// Requests whose session's previous request went on another connection.
    pub followed: u64,
    /// Of those, how many had to wait for it, and for how long in all.
    pub waited: u64,
    pub wait_s: f64,
}

/// How many replay connections were open at once (`--max-open-connections`,
/// [`crate::replay::route::slots`]).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct ConnectionLimitReport {
    /// At most this many open at once.
    pub limit: usize,
    /// Where the limit comes from: `--max-open-connections`, or the process's file limit.
    pub from: String,
    /// The most the replay would open at once without a limit: the recorded connections open at
    /// once at most (times `--clones`), or `--connections` x clones.
    pub wanted: u64,
    /// The most replay connections open at once.
    pub peak_open: u64,
    /// Times a connection waited for a slot.
    pub waited: u64,
    /// Times a connection with nothing to send was closed to give its slot to a waiting one.
    pub given_up: u64,
}

/// Which part of the capture a shard replayed (`--shard I/N`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ShardReport {
    pub index: u32,
    pub count: u32,
    /// `I/N`
    pub label: String,
}

/// What a merged report was merged from (`mongotape merge`).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct MergeReport {
    /// N, from the shard labels.
    pub shards_expected: u32,
    /// Labels (`I/N`) of the shards merged.
    pub merged: Vec<String>,
    /// Labels of the shards with no report.
    pub missing: Vec<String>,
    /// Shards whose replay ended early or read the capture only in part, with why.
    pub failed: BTreeMap<String, String>,
    /// The report files read.
    pub files: Vec<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct ReplayReport {
    /// [`crate::figures::SCHEMA_VERSION`]: the layout of this JSON (docs/schemas/).
    pub schema_version: u32,
    pub mongotape_version: String,
    pub capture: String,
    pub target: String,
    /// What `--target` turned out to be: a single server, a replica set (primary, secondaries), mongos.
    pub topology: String,
    pub options: OptionsReport,
    /// `--shard I/N`: this report covers one part of the capture.
    pub shard: Option<ShardReport>,
    /// A merged report: which shard reports it adds up.
    pub merge: Option<MergeReport>,
    /// When the replay's clock started (after `--start-at`), Unix seconds.
    pub started_at_unix_s: f64,
    /// False when the replay ended early: `error` says why.
    pub complete: bool,
    pub error: Option<String>,
    /// Where a truncated or corrupt capture stopped; everything before was replayed.
    pub capture_error: Option<String>,
    pub summary: ReportSummary,
    pub recorded_span_s: f64,
    /// The latency the capture recorded for the requests replayed, to set beside the replay's.
    pub recorded: RecordedReport,
    pub iterations: u64,
    pub requests_read: u64,
    pub sent: u64,
    /// Of `sent`, how many went compressed (recorded compressed, and the target agreed to a compressor).
    pub compressed: u64,
    pub unacknowledged: u64,
    pub connections_opened: u64,
    pub skipped: BTreeMap<String, u64>,
    pub per_namespace: BTreeMap<String, CommandSummary>,
    pub lag: LagReport,
    pub divergences: BTreeMap<String, DivergenceReport>,
    pub stray_replies: u64,
    /// Requests sent again on the new primary after a "not primary" reply (the primary changed).
    pub retried_not_primary: u64,
    /// Requests sent again on a new connection (to the primary found again) after the target
    /// dropped the connection they were in flight on: reads, and writes that are retryable.
    pub retried_dropped_connection: u64,
    pub timeline: Vec<SecondReport>,
    /// The timeline again, in buckets as wide as the run's length calls for (the charts use it).
    pub timeline_buckets: BucketTimeline,
    /// The replay cut at the capture's step markers; empty without markers.
    pub phases: Vec<PhaseReport>,
    /// Open loop: where the server stopped keeping up.
    pub knee: Option<KneeReport>,
    /// `--connections N`: the order kept between dependent requests, and the concurrency left.
    pub ordering: Option<OrderingReport>,
    /// One lane per recorded connection: each session's requests kept one at a time.
    pub session_order: Option<SessionOrderReport>,
    /// How many replay connections were open at once, and how many waited for a slot.
    pub connection_limit: Option<ConnectionLimitReport>,
    /// The histograms behind every percentile, serialized losslessly for `merge`.
    pub histograms: HistogramsReport,
    pub server: ServerReport,
    pub replayer: ReplayerReport,
}

fn knee_text(k: &KneeReport) -> String {
    match (k.rate_ops_per_s, &k.reason) {
        (Some(rate), Some(reason)) => format!(
            "knee: at {rate:.0} ops/s intended ({}s in), {}: p99 {} vs baseline {}, {:.0} ops/s achieved; last rate that held {}\n",
            k.at_s.unwrap_or_default(),
            if reason == "p99" { "p99 more than doubled" } else { "throughput below 90% of the schedule" },
            units::duration_us(k.p99_us.unwrap_or_default()),
            units::duration_us(k.baseline_p99_us),
            k.achieved_ops_per_s.unwrap_or_default(),
            k.last_held_ops_per_s.map_or("none".into(), |r| format!("{r:.0} ops/s")),
        ),
        _ => format!(
            "knee: none, the server kept up (p99 baseline {}, last rate {})\n",
            units::duration_us(k.baseline_p99_us),
            k.last_held_ops_per_s.map_or("n/a".into(), |r| format!("{r:.0} ops/s")),
        ),
    }
}

impl ReplayReport {
    pub fn render_text(&self) -> String {
        let s = &self.summary;
        let mut out = String::new();
        out.push_str(&format!(
            "replayed {} against {} ({})\n",
            self.capture, self.target, self.options.pacing
        ));
        if !self.topology.is_empty() && !self.topology.starts_with("single") {
            out.push_str(&format!("target: {}\n", self.topology));
        }
        out.push_str(&format!(
            "{} ops in {} ({} ops/s), recorded span {}, {} connection(s), {} pass(es)\n",
            s.ops,
            units::duration_s(s.wall_s),
            units::count(s.ops_per_s),
            units::duration_s(self.recorded_span_s),
            self.connections_opened,
            self.iterations
        ));
        if let Some(shard) = &self.shard {
            out.push_str(&format!("shard {} of the capture\n", shard.label));
        }
        out.push_str(&self.command_table());
        self.push_notes(&mut out);
        out
    }

    /// Phases, what was not replayed or diverged, and what was spent, a line each.
    fn push_notes(&self, out: &mut String) {
        if !self.phases.is_empty() {
            out.push_str(
                "phases, from the first connection reaching each step marker to the next:\n",
            );
            out.push_str(&crate::figures::phases::render_text(&self.phases));
        }
        if self.unacknowledged > 0 {
            out.push_str(&format!(
                "{} unacknowledged (moreToCome) requests: counted, no latency\n",
                self.unacknowledged
            ));
        }
        let skipped: Vec<String> = self
            .skipped
            .iter()
            .filter(|(_, n)| **n > 0)
            .map(|(k, n)| format!("{k} {n}"))
            .collect();
        if !skipped.is_empty() {
            out.push_str(&format!("not replayed: {}\n", skipped.join(", ")));
        }
        if let Some(l) = self
            .connection_limit
            .as_ref()
            .filter(|l| l.wanted > l.limit as u64)
        {
            out.push_str(&format!(
                "connections: at most {} open at once ({}) of the {} the capture holds open at once; {} waited for a slot, {} closed while idle to free one\n",
                l.limit, l.from, l.wanted, l.waited, l.given_up
            ));
        }
        if self.retried_not_primary > 0 {
            out.push_str(&format!(
                "{} requests sent again on the new primary after a \"not primary\" reply\n",
                self.retried_not_primary
            ));
        }
        if self.retried_dropped_connection > 0 {
            out.push_str(&format!(
                "{} requests sent again after the target dropped their connection\n",
                self.retried_dropped_connection
            ));
        }
        out.push_str(&format!(
            "schedule lag: p50 {} p99 {} max {}; {} ops >1 ms late\n",
            units::duration_us(self.lag.latency.p50_us),
            units::duration_us(self.lag.latency.p99_us),
            units::duration_us(self.lag.latency.max_us),
            self.lag.behind_1ms
        ));
        let diverged: u64 = self.divergences.values().map(|d| d.count).sum();
        if diverged > 0 {
            let per: Vec<String> = self
                .divergences
                .iter()
                .map(|(k, d)| format!("{k} {}", d.count))
                .collect();
            out.push_str(&format!(
                "divergences from recorded replies: {diverged} ({})\n",
                per.join(", ")
            ));
        }
        match (self.server.cpu_s, self.server.cpu_s_per_1k_ops) {
            (Some(cpu), Some(per)) => out.push_str(&format!(
                "server CPU: {} ({} per 1,000 ops, pid {})\n",
                units::duration_s(cpu),
                units::duration_s(per),
                self.server.pid.unwrap_or_default()
            )),
            _ => out.push_str("server CPU: not measured (no local server process found)\n"),
        }
        if let (Some(cpu), Some(per)) = (self.replayer.cpu_s, self.replayer.cpu_us_per_op) {
            out.push_str(&format!(
                "replayer CPU: {} ({} per op)\n",
                units::duration_s(cpu),
                units::duration_us(per)
            ));
        }
        if let Some(k) = &self.knee {
            out.push_str(&knee_text(k));
        }
        if let Some(o) = &self.ordering {
            out.push_str(&format!(
                "order: {} request(s) followed a write on another connection, {} waited ({}); {:.1} requests in flight on average over {} connection(s) per clone\n",
                o.followed_a_write, o.waited, units::duration_s(o.wait_s), o.mean_in_flight, o.connections
            ));
        }
        if let Some(o) = self.session_order.as_ref().filter(|o| o.waited > 0) {
            out.push_str(&format!(
                "session order: {} request(s) waited for their session's previous request on another connection ({})\n",
                o.waited,
                units::duration_s(o.wait_s)
            ));
        }
        if let Some(m) = &self.merge {
            out.push_str(&format!(
                "merged {} of {} shard report(s): {}\n",
                m.merged.len(),
                m.shards_expected,
                m.merged.join(", ")
            ));
            if !m.missing.is_empty() {
                out.push_str(&format!("missing shards: {}\n", m.missing.join(", ")));
            }
            for (label, why) in &m.failed {
                out.push_str(&format!("shard {label} failed: {why}\n"));
            }
        }
        if let Some(e) = &self.capture_error {
            out.push_str(&format!("capture stopped early: {e}\n"));
        }
        if let Some(e) = &self.error {
            out.push_str(&format!("replay ended early: {e}\n"));
        }
    }

    /// Latency and throughput per command, and over all.
    fn command_table(&self) -> String {
        let s = &self.summary;
        let mut t = Table::new([
            "command", "count", "errors", "ops/s", "p50", "p90", "p99", "p99.9", "max",
        ]);
        let mut row = |name: &str, c: &CommandSummary| {
            let l = &c.latency;
            t.row([
                name.to_owned(),
                c.count.to_string(),
                c.errors.to_string(),
                units::count(c.ops_per_s),
                units::duration_us(l.p50_us),
                units::duration_us(l.p90_us),
                units::duration_us(l.p99_us),
                units::duration_us(l.p999_us),
                units::duration_us(l.max_us),
            ]);
        };
        for (name, c) in &s.per_command {
            row(name, c);
        }
        row("(all)", &s.overall);
        t.render()
    }
}
