//! The replay page's latency: per command, the distribution the replay measured over the one the
//! capture recorded (small multiples, one chart per command), and their percentiles side by side.

use crate::figures::table::Table;
use crate::figures::units;
use crate::replay::measure::hdr;
use crate::replay::report::ReplayReport;
use crate::report::html::distribution::cdf_us;
use crate::report::html::{LineChart, Page};

/// Commands drawn (the most frequent); the table has them all.
const MAX_CHART_COMMANDS: usize = 8;
const REPLAYED: &str = "#3b6fd8";
const RECORDED: &str = "#f28e2b";

pub(super) fn section(page: Page, r: &ReplayReport) -> Page {
    let mut cmds: Vec<_> = r
        .summary
        .per_command
        .iter()
        .filter(|(_, c)| c.latency.count > 0)
        .collect();
    if cmds.is_empty() {
        return page;
    }
    cmds.sort_by(|a, b| b.1.count.cmp(&a.1.count).then(a.0.cmp(b.0)));
    let cdf = |text: Option<&String>| {
        text.and_then(|t| hdr::decode(t).ok())
            .map(|h| cdf_us(&h))
            .unwrap_or_default()
    };
    let curves: Vec<_> = cmds
        .iter()
        .take(MAX_CHART_COMMANDS)
        .map(|(name, _)| {
            (
                name,
                cdf(r.histograms.per_command.get(*name)),
                cdf(r.recorded.histograms.get(*name)),
            )
        })
        .collect();
    let xs = || {
        curves
            .iter()
            .flat_map(|c| c.1.iter().chain(&c.2).map(|p| p.0))
    };
    let (lo, hi) = (xs().fold(f64::MAX, f64::min), xs().fold(0.0, f64::max));
    let charts = curves.into_iter().map(|(name, replayed, recorded)| {
        let chart = LineChart::new(name, "latency", "%")
            .small()
            .x_log("µs")
            .x_span(lo, hi)
            .series("replayed", replayed)
            .color(REPLAYED);
        if recorded.is_empty() {
            chart
        } else {
            chart.series("recorded", recorded).color(RECORDED)
        }
    });
    let rows: Vec<Vec<String>> = cmds
        .iter()
        .map(|(name, c)| {
            let rec = r.recorded.per_command.get(*name).filter(|l| l.count > 0);
            let pair = |live: f64, recorded: Option<f64>| {
                let ratio = recorded
                    .filter(|v| *v > 0.0)
                    .map_or("-".into(), |v| units::ratio(live / v));
                [
                    recorded.map_or("-".into(), units::duration_us),
                    units::duration_us(live),
                    ratio,
                ]
            };
            let mut row = vec![name.to_string(), c.latency.count.to_string()];
            row.extend(pair(c.latency.p50_us, rec.map(|l| l.p50_us)));
            row.extend(pair(c.latency.p99_us, rec.map(|l| l.p99_us)));
            row
        })
        .collect();
    page.section("Latency per command: replayed and recorded")
        .paragraph(
            "Each chart is one command: the share of its replies at or below each latency (log \
             axis), as the replay measured it and as the capture recorded it (request to reply, \
             as analyze measures it). A curve to the right is slower.",
        )
        .grid(charts)
        .table(
            &Table::new([
                "command",
                "replies",
                "recorded p50",
                "replayed p50",
                "replayed / recorded",
                "recorded p99",
                "replayed p99",
                "replayed / recorded",
            ])
            .with_rows(rows),
        )
}
