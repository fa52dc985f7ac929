//! Query shapes across reports (`docs/shapes.md`): each report's top-level `shapes` (analyze,
//! replay, a merged replay), matched by hash, one row per figure with its ratio against the first
//! column, the shapes with the most total time first. A report without shapes (an older one, a
//! bare summary) gives an empty column.

use super::read::{load_json, CompareError};
use super::rows::{row, MetricRow};
use crate::shape::{ShapeFigures, ShapeReport};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::Path;

/// One query shape across the columns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ShapeRows {
    #[schemars(pattern(r"^([0-9a-f]{16}|other)$"))]
    pub hash: String,
    pub command: String,
    pub namespace: String,
    pub shape: String,
    pub rows: Vec<MetricRow>,
}

/// The `shapes` of a report file: empty when it has none.
pub fn load_shapes(path: &Path) -> Result<Vec<ShapeReport>, CompareError> {
    let (name, value) = load_json(path)?;
    shapes_of(name, value)
}

/// The `shapes` of a report already read (`name` for errors).
pub fn shapes_of(
    name: String,
    mut value: serde_json::Value,
) -> Result<Vec<ShapeReport>, CompareError> {
    match value.get_mut("shapes").map(serde_json::Value::take) {
        None | Some(serde_json::Value::Null) => Ok(Vec::new()),
        Some(shapes) => serde_json::from_value(shapes).map_err(|e| CompareError::NoSummary {
            path: name,
            detail: format!("its `shapes` do not read: {e}"),
        }),
    }
}

fn shape_rows(cols: &[Option<&ShapeReport>]) -> Vec<MetricRow> {
    let figures = || cols.iter().map(|c| c.map(|s| &s.figures));
    let f = |g: fn(&ShapeFigures) -> f64| figures().map(|c| c.map(g)).collect();
    let lat = |g: fn(&ShapeFigures) -> f64| {
        figures()
            .map(|c| c.filter(|s| s.answered()).map(g))
            .collect()
    };
    vec![
        row("count", "", f(|s| s.count as f64)),
        row("errors", "", f(|s| s.errors as f64)),
        row("p50", "µs", lat(|s| s.p50_us)),
        row("p99", "µs", lat(|s| s.p99_us)),
        row("mean", "µs", lat(|s| s.mean_us)),
        row("total", "µs", f(|s| s.total_us)),
        row("share", "%", f(|s| s.share * 100.0)),
        row("docs returned", "", f(|s| s.docs_returned as f64)),
    ]
}

/// The shapes of every report, matched by hash, the most total time (all columns) first.
pub fn compare_shapes(reports: &[Vec<ShapeReport>]) -> Vec<ShapeRows> {
    let by_hash: Vec<HashMap<&str, &ShapeReport>> = reports
        .iter()
        .map(|r| r.iter().map(|s| (s.hash.as_str(), s)).collect())
        .collect();
    let mut seen: HashMap<&str, ()> = HashMap::new();
    let mut out: Vec<(f64, ShapeRows)> = Vec::new();
    for s in reports.iter().flatten() {
        if seen.insert(s.hash.as_str(), ()).is_some() {
            continue;
        }
        let cols: Vec<Option<&ShapeReport>> = by_hash
            .iter()
            .map(|m| m.get(s.hash.as_str()).copied())
            .collect();
        let total: f64 = cols.iter().flatten().map(|c| c.figures.total_us).sum();
        out.push((
            total,
            ShapeRows {
                hash: s.hash.clone(),
                command: s.command.clone(),
                namespace: s.namespace.clone(),
                shape: s.shape.clone(),
                rows: shape_rows(&cols),
            },
        ));
    }
    out.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.shape.cmp(&b.1.shape)));
    out.into_iter().map(|(_, r)| r).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(text: &str, count: u64, total_us: f64) -> ShapeReport {
        ShapeReport {
            hash: crate::shape::hash(text),
            shape: text.into(),
            figures: ShapeFigures {
                count,
                total_us,
                p50_us: total_us / count as f64,
                ..ShapeFigures::default()
            },
            ..ShapeReport::default()
        }
    }

    #[test]
    fn shapes_are_matched_by_hash_with_ratios_against_the_first_report() {
        let a = vec![shape("find d.c {a: ?number}", 10, 1_000.0)];
        let b = vec![
            shape("insert d.c", 5, 50.0),
            shape("find d.c {a: ?number}", 10, 3_000.0),
        ];
        let rows = compare_shapes(&[a, b]);
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].shape, "find d.c {a: ?number}");
        let total = rows[0].rows.iter().find(|r| r.metric == "total").unwrap();
        assert_eq!(total.ratios, vec![Some(1.0), Some(3.0)]);
        let count = rows[1].rows.iter().find(|r| r.metric == "count").unwrap();
        assert_eq!(count.values, vec![None, Some(5.0)]);
    }
}
