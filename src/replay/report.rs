//! The replay report: JSON (`--report`) with the shared [`ReportSummary`] under `summary`, and a text
//! summary for stdout.

use super::measure::metrics::{DivergenceReport, LagReport, SecondReport};
use super::measure::server::StatusSnapshot;
use crate::report::phases::PhaseReport;
use crate::report::summary::{CommandSummary, ReportSummary};
use crate::report::table::Table;
use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Debug, Clone, Default, Serialize)]
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

#[derive(Debug, Clone, Default, Serialize)]
pub struct ReplayerReport {
    pub cpu_s: Option<f64>,
    pub cpu_us_per_op: Option<f64>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct OptionsReport {
    pub pacing: String,
    pub connections: Option<usize>,
    pub clones: u32,
    pub repeat: Option<u64>,
    pub duration_s: Option<f64>,
    pub db_map: Vec<String>,
    pub filters: Vec<String>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct ReplayReport {
    pub mongotape_version: String,
    pub capture: String,
    pub target: String,
    /// What `--target` turned out to be: a single server, a replica set (primary, secondaries), mongos.
    pub topology: String,
    pub options: OptionsReport,
    /// False when the replay ended early: `error` says why.
    pub complete: bool,
    pub error: Option<String>,
    /// Where a truncated or corrupt capture stopped; everything before was replayed.
    pub capture_error: Option<String>,
    pub summary: ReportSummary,
    pub recorded_span_s: f64,
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
    pub timeline: Vec<SecondReport>,
    /// The replay cut at the capture's step markers; empty without markers.
    pub phases: Vec<PhaseReport>,
    pub server: ServerReport,
    pub replayer: ReplayerReport,
}

fn us(v: f64) -> String {
    if v >= 10_000.0 {
        format!("{:.1}ms", v / 1000.0)
    } else {
        format!("{v:.0}µs")
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
            "{} ops in {:.2} s ({:.0} ops/s), recorded span {:.2} s, {} connection(s), {} pass(es)\n",
            s.ops, s.wall_s, s.ops_per_s, self.recorded_span_s, self.connections_opened, self.iterations
        ));
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
            out.push_str(&crate::report::phases::render_text(&self.phases));
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
        if self.retried_not_primary > 0 {
            out.push_str(&format!(
                "{} requests sent again on the new primary after a \"not primary\" reply\n",
                self.retried_not_primary
            ));
        }
        out.push_str(&format!(
            "schedule lag: p50 {} p99 {} max {}; {} ops >1 ms late\n",
            us(self.lag.latency.p50_us),
            us(self.lag.latency.p99_us),
            us(self.lag.latency.max_us),
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
                "server CPU: {cpu:.2} s ({per:.3} s per 1,000 ops, pid {})\n",
                self.server.pid.unwrap_or_default()
            )),
            _ => out.push_str("server CPU: not measured (no local server process found)\n"),
        }
        if let (Some(cpu), Some(per)) = (self.replayer.cpu_s, self.replayer.cpu_us_per_op) {
            out.push_str(&format!("replayer CPU: {cpu:.2} s ({per:.1} µs per op)\n"));
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
                format!("{:.0}", c.ops_per_s),
                us(l.p50_us),
                us(l.p90_us),
                us(l.p99_us),
                us(l.p999_us),
                us(l.max_us),
            ]);
        };
        for (name, c) in &s.per_command {
            row(name, c);
        }
        row("(all)", &s.overall);
        t.render()
    }
}
