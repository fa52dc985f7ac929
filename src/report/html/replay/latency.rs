//! The replay page's latency: per command, the distribution the replay measured over the one the
//! capture recorded (small multiples, one chart per command), and the replay's latency table
//! (the text's, with the recorded p50 and p99 beside the replayed): the page's one table per
//! command.

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
    let page = page.section("Latency per command: replayed and recorded");
    if cmds.is_empty() {
        return page.table(&r.command_table());
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
    page.paragraph(
        "Each chart is one command: the share of its replies at or below each latency (log \
             axis), as the replay measured it and as the capture recorded it (request to reply, \
             as analyze measures it). A curve to the right is slower.",
    )
    .grid(charts)
    .table(&r.command_table())
}
