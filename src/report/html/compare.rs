//! `mongotape compare` as a self-contained HTML page: bar charts of throughput, latency, client-bound
//! share and server CPU across the columns, overall and for the busiest commands, above the same
//! tables as the text rendering.

use super::{BarChart, Page};
use crate::report::compare::{CommandRows, CompareReport};

impl CompareReport {
    pub fn render_html(&self) -> String {
        let labels: Vec<String> = self.columns.iter().map(|c| c.label.clone()).collect();
        let get = |metric: &str| -> Vec<Option<f64>> {
            self.overall
                .iter()
                .find(|r| r.metric == metric)
                .map(|r| r.values.clone())
                .unwrap_or_default()
        };
        let mut page = Page::new(&format!("mongotape compare: {}", labels.join(" vs ")));
        for c in &self.columns {
            page = page.subtitle(&format!(
                "{}: {} report of {} ({})",
                c.label, c.kind, c.source, c.file
            ));
        }
        page = page
            .section("Overall")
            .bar_chart(
                BarChart::new("Throughput", "ops/s")
                    .categories(labels.clone())
                    .series_opt("ops/s", get("throughput")),
            )
            .bar_chart(
                BarChart::new("Latency percentiles", "µs")
                    .categories(labels.clone())
                    .series_opt("p50", get("p50"))
                    .series_opt("p90", get("p90"))
                    .series_opt("p99", get("p99")),
            )
            .bar_chart(
                BarChart::new("Client-bound share of active time", "%")
                    .categories(labels.clone())
                    .series_opt("client-bound", get("client-bound share"))
                    .color("#f28e2b"),
            );
        let cpu = get("server CPU per 1,000 ops");
        if cpu.iter().any(Option::is_some) {
            page = page.bar_chart(
                BarChart::new("Server CPU per 1,000 operations", "s")
                    .categories(labels.clone())
                    .series_opt("server CPU", cpu),
            );
        }
        page = page.table(&self.table(&self.overall));
        let top: Vec<&CommandRows> = self.per_command.iter().take(12).collect();
        let metric = |c: &CommandRows, m: &str, i: usize| -> Option<f64> {
            c.rows
                .iter()
                .find(|r| r.metric == m)
                .and_then(|r| r.values.get(i).copied().flatten())
        };
        for (m, unit, title) in [
            ("throughput", "ops/s", "Throughput per command"),
            ("p50", "µs", "p50 latency per command"),
            ("p99", "µs", "p99 latency per command"),
        ] {
            let mut chart =
                BarChart::new(title, unit).categories(top.iter().map(|c| c.command.clone()));
            for (i, l) in labels.iter().enumerate() {
                chart = chart.series_opt(l, top.iter().map(|c| metric(c, m, i)));
            }
            if m == "throughput" {
                page = page.section("Per command");
            }
            page = page.bar_chart(chart);
        }
        for c in &self.per_command {
            page = page.paragraph(&c.command).table(&self.table(&c.rows));
        }
        page.render()
    }
}
