//! `mongotape compare` as text: one table for the overall figures and one per command, each
//! column followed by its ratio against the first. The cell and header helpers are shared with
//! `html::compare`, which shows the same tables under its charts.

use super::{CompareReport, MetricRow};
use crate::report::table::Table;
use crate::report::units;

fn cell(v: Option<f64>, unit: &str) -> String {
    match v {
        Some(v) if unit.is_empty() => format!("{v:.0}"),
        Some(v) => units::value(v, unit),
        None => "-".into(),
    }
}

fn ratio(r: Option<f64>) -> String {
    r.map_or("-".into(), units::ratio)
}

impl CompareReport {
    fn table(&self, rows: &[MetricRow]) -> Table {
        let mut t = Table::new(self.table_rows_headers());
        for cells in self.table_rows(rows) {
            t.row(cells);
        }
        t
    }

    pub fn render_text(&self) -> String {
        let mut s = String::new();
        for c in &self.columns {
            s.push_str(&format!(
                "{:<16} {} report of {} ({})\n",
                c.label, c.kind, c.source, c.file
            ));
        }
        s.push_str("\nOverall (workload requests a replay replays: handshakes left out)\n");
        s.push_str(&self.table(&self.overall).render());
        for c in &self.per_command {
            let rows: Vec<MetricRow> = c
                .rows
                .iter()
                .filter(|r| {
                    matches!(
                        r.metric.as_str(),
                        "count" | "throughput" | "p50" | "p99" | "errors"
                    )
                })
                .cloned()
                .collect();
            s.push_str(&format!("\n{}\n", c.command));
            s.push_str(&self.table(&rows).render());
        }
        s
    }

    pub(crate) fn table_rows_headers(&self) -> Vec<String> {
        let mut h = vec!["metric".to_owned()];
        for (i, c) in self.columns.iter().enumerate() {
            h.push(c.label.clone());
            if i > 0 {
                h.push(format!("vs {}", self.columns[0].label));
            }
        }
        h
    }

    pub(crate) fn table_rows(&self, rows: &[MetricRow]) -> Vec<Vec<String>> {
        rows.iter()
            .map(|r| {
                let mut cells = vec![r.metric.clone()];
                for (i, v) in r.values.iter().enumerate() {
                    cells.push(cell(*v, &r.unit));
                    if i > 0 {
                        cells.push(ratio(r.ratios.get(i).copied().flatten()));
                    }
                }
                cells
            })
            .collect()
    }
}
