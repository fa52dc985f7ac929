//! The "Phases" section that analyze's and the replay's pages share: time per phase as bars, and
//! the phases' table.

use super::{BarChart, Page};
use crate::figures::phases::{table, PhaseReport};

/// A "Phases" section: time per phase as bars, and the table. Nothing when there are no phases.
pub fn section(page: Page, phases: &[PhaseReport], intro: &str) -> Page {
    if phases.is_empty() {
        return page;
    }
    let names = phases.iter().map(|p| p.name.clone());
    let times = phases.iter().any(|p| p.server_s.is_some());
    let chart = if times {
        // Server and client time are connection-seconds; on one connection they add up to about
        // the wall time, the rest is time outside any request and reply of the workload.
        let rest = |p: &PhaseReport| {
            (p.wall_s - p.server_s.unwrap_or(0.0) - p.client_s.unwrap_or(0.0)).max(0.0)
        };
        BarChart::new("Time per phase", "s")
            .categories(names)
            .series("server", phases.iter().map(|p| p.server_s.unwrap_or(0.0)))
            .color("#3b6fd8")
            .series("client", phases.iter().map(|p| p.client_s.unwrap_or(0.0)))
            .color("#f28e2b")
            .series("rest of the wall time", phases.iter().map(rest))
            .color("#c0c4cc")
            .stacked()
    } else {
        BarChart::new("Wall time per phase", "s")
            .categories(names)
            .series("wall", phases.iter().map(|p| p.wall_s))
    };
    let measured: Vec<&PhaseReport> = phases.iter().filter(|p| p.latency.count > 0).collect();
    let latency = BarChart::new("Latency per phase", "µs")
        .categories(measured.iter().map(|p| p.name.clone()))
        .series("p50", measured.iter().map(|p| p.latency.p50_us))
        .series("p99", measured.iter().map(|p| p.latency.p99_us));
    let mut page = page.section("Phases").paragraph(intro).bar_chart(chart);
    if !measured.is_empty() {
        page = page.bar_chart(latency);
    }
    page.table(&table(phases))
}
