//! The charts any report can draw from its shared [`ReportSummary`]: facts, throughput and latency
//! percentiles per command. The table per command is the report's own (the replay's sets the
//! recorded latency beside the replayed). A replay report calls
//! `summary::summary_section(Page::new(..), &report.summary)` and adds its own charts after.

use super::{BarChart, Page};
use crate::figures::summary::ReportSummary;
use crate::figures::units::{self, duration_us};

/// Commands drawn (the most frequent).
const MAX_CHART_COMMANDS: usize = 12;

/// The summary's headline figures, each present only when measured.
fn facts(s: &ReportSummary) -> Vec<(&'static str, String)> {
    let mut facts = vec![
        ("operations", s.ops.to_string()),
        ("ops/s", units::count(s.ops_per_s)),
        ("wall time", units::duration_s(s.wall_s)),
        ("p50", duration_us(s.overall.latency.p50_us)),
        ("p99", duration_us(s.overall.latency.p99_us)),
        ("errors", s.overall.errors.to_string()),
    ];
    if let Some(cpu) = s.server_cpu_s_per_1k_ops {
        facts.push(("server CPU / 1,000 ops", units::duration_s(cpu)));
    }
    if let Some(cpu) = s.server_cpu_net_s_per_1k_ops {
        facts.push((
            "server CPU / 1,000 ops, net of idle",
            units::duration_s(cpu),
        ));
    }
    if let Some(cpu) = s.client_cpu_us_per_op {
        // A replay's client is the replayer: its CPU is mongotape's, not the application's.
        let name = if s.kind == "replay" {
            "replayer (mongotape) CPU / op"
        } else {
            "client CPU / op"
        };
        facts.push((name, duration_us(cpu)));
    }
    if let Some(share) = s.client_bound_share {
        facts.push(("client-bound share", units::share(Some(share))));
    }
    facts
}

pub fn summary_section(page: Page, s: &ReportSummary) -> Page {
    let facts = facts(s);
    let mut cmds: Vec<_> = s.per_command.iter().collect();
    cmds.sort_by(|a, b| b.1.count.cmp(&a.1.count).then(a.0.cmp(b.0)));
    let top = &cmds[..cmds.len().min(MAX_CHART_COMMANDS)];
    let lat = |f: fn(&crate::figures::summary::LatencySummary) -> f64| {
        top.iter()
            .map(move |(_, c)| (c.latency.count > 0).then(|| f(&c.latency)))
    };
    page.facts(&facts)
        .bar_chart(
            BarChart::new("Throughput per command", "ops/s")
                .categories(top.iter().map(|(n, _)| n.to_string()))
                .series("ops/s", top.iter().map(|(_, c)| c.ops_per_s)),
        )
        .bar_chart(
            BarChart::new("Latency percentiles per command", "µs")
                .categories(top.iter().map(|(n, _)| n.to_string()))
                .series_opt("p50", lat(|l| l.p50_us))
                .series_opt("p90", lat(|l| l.p90_us))
                .series_opt("p99", lat(|l| l.p99_us)),
        )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::figures::summary::CommandSummary;

    #[test]
    fn any_summary_draws() {
        let mut s = ReportSummary {
            kind: "replay".into(),
            ops: 3,
            server_cpu_s_per_1k_ops: Some(0.12),
            ..Default::default()
        };
        let mut find = CommandSummary {
            count: 3,
            ops_per_s: 30.0,
            ..Default::default()
        };
        find.latency.count = 3;
        find.latency.p50_us = 200.0;
        s.per_command.insert("find".into(), find);
        s.per_command
            .insert("insert".into(), CommandSummary::default());
        let html = summary_section(Page::new("t"), &s).render();
        assert_eq!(html.matches("<svg class=\"chart").count(), 2);
        assert!(html.contains("server CPU / 1,000 ops") && html.contains("n/a"));
    }
}
