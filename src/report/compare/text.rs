//! `mongotape compare` as text: one table for the overall figures and one per command, each
//! column followed by its ratio against the first. The cell and header helpers are shared with
//! `html::compare`, which shows the same tables under its charts.

use super::rows::{Interval, MetricRow, Spread};
use super::CompareReport;
use crate::figures::table::{Column, Table};
use crate::figures::text::{cut, fit_lines, TEXT_WIDTH};
use crate::figures::units;

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

/// A median with its spread over the runs: `300 (290-310)`.
fn cell_spread(v: Option<f64>, s: Option<Spread>, unit: &str) -> String {
    match (v, s) {
        (Some(_), Some(s)) if s.runs > 1 && s.min < s.max => format!(
            "{} ({}-{})",
            cell(v, unit),
            cell(Some(s.min), unit),
            cell(Some(s.max), unit)
        ),
        _ => cell(v, unit),
    }
}

/// A ratio with its interval, starred when beyond noise: `3.00x [2.81-3.20]*`.
fn ratio_interval(r: Option<f64>, i: Option<Interval>) -> String {
    match (r, i) {
        (Some(r), Some(i)) => format!(
            "{} [{:.2}-{:.2}]{}",
            units::ratio(r),
            i.low,
            i.high,
            if i.beyond_noise { "*" } else { "" }
        ),
        _ => ratio(r),
    }
}

impl CompareReport {
    /// One comparison table, for the text summary and the HTML page alike; a ratio column stays
    /// beside its report's when the text folds a table of many reports.
    pub(crate) fn table(&self, rows: &[MetricRow]) -> Table {
        let columns = self
            .table_rows_headers()
            .into_iter()
            .enumerate()
            .map(|(i, h)| match i > 1 && i % 2 == 1 {
                true => Column::new(h).with_previous(),
                false => Column::new(h),
            });
        let mut t = Table::with_columns(columns);
        for cells in self.table_rows(rows) {
            t.row(cells);
        }
        t
    }

    pub fn render_text(&self) -> String {
        let mut s = String::new();
        for c in &self.columns {
            let runs = if c.runs > 1 {
                format!("{} runs: ", c.runs)
            } else {
                String::new()
            };
            s.push_str(&format!(
                "{:<16} {} report of {} ({runs}{})\n",
                c.label, c.kind, c.source, c.file
            ));
        }
        if self.columns.iter().any(|c| c.runs > 1) {
            s.push_str(
                "\nValues are medians over the runs (min-max); ratios of medians [95% bootstrap \
                 interval over the runs], * beyond noise (the interval excludes 1).\n",
            );
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
        self.push_shapes(&mut s);
        s.push_str(&self.errors_text());
        fit_lines(&s)
    }

    /// The ten shapes with the most total time, a few rows each; the JSON has every shape.
    fn push_shapes(&self, s: &mut String) {
        if self.shapes.is_empty() {
            return;
        }
        s.push_str(&format!(
            "\nQuery shapes, the {} with the most total time (of {}; docs/shapes.md)\n",
            self.shapes.len().min(10),
            self.shapes.len()
        ));
        for shape in self.shapes.iter().take(10) {
            let rows: Vec<MetricRow> = shape
                .rows
                .iter()
                .filter(|r| matches!(r.metric.as_str(), "count" | "p50" | "p99" | "total"))
                .cloned()
                .collect();
            s.push_str(&format!("\n{}\n", cut(&shape.shape, TEXT_WIDTH)));
            s.push_str(&self.table(&rows).render());
        }
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
                    let s = r.spreads.get(i).copied().flatten();
                    cells.push(cell_spread(*v, s, &r.unit));
                    if i > 0 {
                        let interval = r.intervals.get(i).copied().flatten();
                        cells.push(ratio_interval(r.ratios.get(i).copied().flatten(), interval));
                    }
                }
                cells
            })
            .collect()
    }
}
