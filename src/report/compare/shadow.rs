//! A shadow's report (`mongotape shadow --report`, `kind: shadow`) as columns to compare:
//! production first, then each target, every column a summary (the mirrored reads and errors
//! per command) and its query shapes (each side's latency over the same mirrored reads), so that
//! the per-shape ratios `compare` gives are each target's against production.

use crate::figures::summary::{CommandSummary, LatencySummary, ReportSummary};
use crate::shadow::report::{Latency, ShadowReport, ShapeEntry};
use crate::shape::{ShapeFigures, ShapeReport};
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// One side of a shape: its latency and error count.
type Side<'a> = fn(&'a ShapeEntry) -> (Option<&'a Latency>, u64);

fn production(s: &ShapeEntry) -> (Option<&Latency>, u64) {
    let errors = s.errors_production.values().sum();
    (s.production_latency_us.as_ref(), errors)
}

fn target(s: &ShapeEntry) -> (Option<&Latency>, u64) {
    let errors = s.errors_target.values().sum();
    (s.target_latency_us.as_ref(), errors)
}

/// The report's columns, each `(name, {summary, shapes})` as `compare` reads a report; `name`
/// is the file's and the column's for errors.
pub fn columns(name: &str, report: &ShadowReport) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    if let Some(first) = report.targets.first() {
        out.push(column(
            name,
            "production",
            report,
            &first.shapes,
            production,
        ));
    }
    for t in &report.targets {
        let label = format!("{} {}", t.role, t.label);
        out.push(column(name, &label, report, &t.shapes, target));
    }
    out
}

fn column<'a>(
    name: &str,
    label: &str,
    report: &ShadowReport,
    shapes: &'a [ShapeEntry],
    side: Side<'a>,
) -> (String, Value) {
    let total_us: f64 = shapes.iter().map(|s| time_us(s, side)).sum();
    let mut per_command: BTreeMap<String, CommandSummary> = BTreeMap::new();
    let mut overall = CommandSummary::default();
    let mut rows = Vec::with_capacity(shapes.len());
    for s in shapes {
        let (latency, errors) = side(s);
        for c in [
            per_command.entry(s.command.clone()).or_default(),
            &mut overall,
        ] {
            c.count += s.counts.mirrored;
            c.errors += errors;
        }
        let figures = ShapeFigures {
            count: s.counts.mirrored,
            errors,
            p50_us: latency.map_or(0.0, |l| l.p50),
            p99_us: latency.map_or(0.0, |l| l.p99),
            mean_us: latency.map_or(0.0, |l| l.mean),
            total_us: time_us(s, side),
            share: if total_us > 0.0 {
                time_us(s, side) / total_us
            } else {
                0.0
            },
            // A side that never answered has no latency (`answered` is false).
            no_reply: if latency.is_none() {
                s.counts.mirrored
            } else {
                0
            },
            ..ShapeFigures::default()
        };
        rows.push(ShapeReport {
            hash: s.hash.clone(),
            command: s.command.clone(),
            namespace: s.namespace.clone(),
            shape: s.shape.clone(),
            figures,
        });
    }
    let per_s = |n: u64| crate::figures::summary::per_s(n, report.seconds);
    overall.ops_per_s = per_s(overall.count);
    for c in per_command.values_mut() {
        c.ops_per_s = per_s(c.count);
    }
    overall.latency = LatencySummary::default();
    let summary = ReportSummary {
        kind: "shadow".into(),
        label: label.to_owned(),
        source: report.production.clone(),
        wall_s: report.seconds,
        ops: overall.count,
        ops_per_s: overall.ops_per_s,
        overall,
        per_command,
        ..ReportSummary::default()
    };
    let value = json!({"summary": summary, "shapes": rows});
    (format!("{name} [{label}]"), value)
}

/// A side's time on a shape: its mean latency times the mirrored reads.
fn time_us<'a>(s: &'a ShapeEntry, side: Side<'a>) -> f64 {
    side(s).0.map_or(0.0, |l| l.mean * s.counts.mirrored as f64)
}
