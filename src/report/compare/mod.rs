//! `mongotape compare`: reports side by side, per command and overall, with ratios against the first
//! column. Reads the `summary` key ([`ReportSummary`]) of any report JSON (analyze or replay), or a
//! bare `ReportSummary`.
//!
//! This file loads the summaries and lines them up (the report's schema); `repeats` folds reports
//! that repeat one run (same label) into one column with a median, a spread and ratio intervals;
//! the renderings are in `text` and [`crate::report::html::compare`].

mod errors;
pub use errors::{load_errors, ReportErrors};
mod repeats;
mod shapes;
mod text;

pub use repeats::{compare_repeats, Interval, Spread};
pub use shapes::{compare_shapes, load_shapes, ShapeRows};

use crate::figures::summary::{CommandSummary, ReportSummary};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::path::Path;

/// Why a report could not be compared.
#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    #[error(transparent)]
    Read(#[from] crate::figures::report_file::ReportFileError),
    #[error("report {path} is not JSON: {source}")]
    Json {
        path: String,
        source: serde_json::Error,
    },
    #[error(
        "report {path} has no usable `summary` (is it an analyze or replay report?): {detail}"
    )]
    NoSummary { path: String, detail: String },
}

/// Loads the summary of a report file.
pub fn load_summary(path: &Path) -> Result<ReportSummary, CompareError> {
    let name = path.display().to_string();
    let text = crate::figures::report_file::read(path)?;
    let mut value: serde_json::Value =
        serde_json::from_slice(&text).map_err(|source| CompareError::Json {
            path: name.clone(),
            source,
        })?;
    let doc = match value.get_mut("summary") {
        Some(s) => s.take(),
        None => value,
    };
    serde_json::from_value(doc).map_err(|e| CompareError::NoSummary {
        path: name,
        detail: e.to_string(),
    })
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ColumnHead {
    pub label: String,
    #[schemars(extend("enum" = ["analyze", "replay"]))]
    pub kind: String,
    pub source: String,
    /// The report file it came from (with repeats: the files, comma-separated).
    pub file: String,
    /// How many reports the column holds (more than 1 with `--group`: its values are medians).
    #[serde(default = "one")]
    pub runs: usize,
}

fn one() -> usize {
    1
}

/// One figure across the columns; `ratios[i] = values[i] / values[0]` when both exist.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MetricRow {
    pub metric: String,
    /// `ops/s`, `µs`, `%`, `s`, `` ...
    pub unit: String,
    pub values: Vec<Option<f64>>,
    /// values[i] / values[0], when both exist.
    pub ratios: Vec<Option<f64>>,
    /// With repeats: each column's spread over its runs (`values` are then medians).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub spreads: Vec<Option<Spread>>,
    /// With repeats: each ratio's bootstrap interval over the runs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub intervals: Vec<Option<Interval>>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CommandRows {
    pub command: String,
    pub rows: Vec<MetricRow>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CompareReport {
    /// [`crate::figures::SCHEMA_VERSION`]: the layout of this JSON (docs/schemas/).
    #[serde(default)]
    #[schemars(extend("const" = crate::figures::SCHEMA_VERSION))]
    pub schema_version: u32,
    #[schemars(length(min = 1))]
    pub columns: Vec<ColumnHead>,
    pub overall: Vec<MetricRow>,
    pub per_command: Vec<CommandRows>,
    /// Query shapes of the reports that have them, matched by hash (not with `--group`).
    #[serde(default)]
    pub shapes: Vec<ShapeRows>,
    /// Each report's errors by command and code, in the order given.
    #[serde(default)]
    pub errors_by_code: Vec<ReportErrors>,
}

fn row(metric: &str, unit: &str, values: Vec<Option<f64>>) -> MetricRow {
    let base = values.first().copied().flatten();
    let ratios = values
        .iter()
        .map(|v| match (base, v) {
            (Some(b), Some(v)) if b != 0.0 && b.is_finite() && v.is_finite() => Some(v / b),
            _ => None,
        })
        .collect();
    MetricRow {
        metric: metric.to_owned(),
        unit: unit.to_owned(),
        values,
        ratios,
        spreads: Vec::new(),
        intervals: Vec::new(),
    }
}

fn command_rows(cols: &[&CommandSummary]) -> Vec<MetricRow> {
    let f = |g: fn(&CommandSummary) -> f64| cols.iter().map(|c| Some(g(c))).collect();
    let lat = |g: fn(&CommandSummary) -> f64| {
        cols.iter()
            .map(|c| (c.latency.count > 0).then(|| g(c)))
            .collect()
    };
    vec![
        row("count", "", f(|c| c.count as f64)),
        row("throughput", "ops/s", f(|c| c.ops_per_s)),
        row("errors", "", f(|c| c.errors as f64)),
        row("p50", "µs", lat(|c| c.latency.p50_us)),
        row("p90", "µs", lat(|c| c.latency.p90_us)),
        row("p99", "µs", lat(|c| c.latency.p99_us)),
        row("p99.9", "µs", lat(|c| c.latency.p999_us)),
        row("max", "µs", lat(|c| c.latency.max_us)),
    ]
}

/// Compares summaries; `files[i]` names where `summaries[i]` came from.
pub fn compare(summaries: &[ReportSummary], files: &[String]) -> CompareReport {
    CompareReport {
        schema_version: crate::figures::SCHEMA_VERSION,
        columns: columns(summaries, files),
        overall: overall(summaries),
        per_command: per_command(summaries),
        shapes: Vec::new(),
        errors_by_code: Vec::new(),
    }
}

/// One column per summary, labelled by its label (made unique) or its position.
fn columns(summaries: &[ReportSummary], files: &[String]) -> Vec<ColumnHead> {
    let mut seen = BTreeSet::new();
    summaries
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let base = if s.label.is_empty() {
                format!("#{}", i + 1)
            } else {
                s.label.clone()
            };
            let mut label = base.clone();
            let mut n = 2;
            while !seen.insert(label.clone()) {
                label = format!("{base} #{n}");
                n += 1;
            }
            ColumnHead {
                label,
                kind: s.kind.clone(),
                source: s.source.clone(),
                file: files.get(i).cloned().unwrap_or_default(),
                runs: 1,
            }
        })
        .collect()
}

/// The overall rows: operations, wall time, latency, CPU and client-bound share.
fn overall(summaries: &[ReportSummary]) -> Vec<MetricRow> {
    let overall_cmds: Vec<&CommandSummary> = summaries.iter().map(|s| &s.overall).collect();
    let mut overall = vec![
        row(
            "operations",
            "",
            summaries.iter().map(|s| Some(s.ops as f64)).collect(),
        ),
        row(
            "wall time",
            "s",
            summaries.iter().map(|s| Some(s.wall_s)).collect(),
        ),
    ];
    let mut per_op = command_rows(&overall_cmds);
    per_op.remove(0); // the count is `operations`
    overall.extend(per_op);
    overall.push(row(
        "server CPU per 1,000 ops",
        "s",
        summaries
            .iter()
            .map(|s| s.server_cpu_s_per_1k_ops)
            .collect(),
    ));
    overall.push(row(
        "server CPU per 1,000 ops, net of idle",
        "s",
        summaries
            .iter()
            .map(|s| s.server_cpu_net_s_per_1k_ops)
            .collect(),
    ));
    overall.push(row(
        "client CPU per op",
        "µs",
        summaries.iter().map(|s| s.client_cpu_us_per_op).collect(),
    ));
    overall.push(row(
        "client-bound share",
        "%",
        summaries
            .iter()
            .map(|s| s.client_bound_share.map(|v| v * 100.0))
            .collect(),
    ));
    overall
}

/// The rows of each command any summary has, the busiest first.
fn per_command(summaries: &[ReportSummary]) -> Vec<CommandRows> {
    let names: BTreeSet<&String> = summaries
        .iter()
        .flat_map(|s| s.per_command.keys())
        .collect();
    let empty = CommandSummary::default();
    let mut per_command: Vec<CommandRows> = names
        .into_iter()
        .map(|name| {
            let cols: Vec<&CommandSummary> = summaries
                .iter()
                .map(|s| s.per_command.get(name).unwrap_or(&empty))
                .collect();
            CommandRows {
                command: name.clone(),
                rows: command_rows(&cols),
            }
        })
        .collect();
    let total = |c: &CommandRows| -> f64 { c.rows[0].values.iter().flatten().sum() };
    per_command.sort_by(|a, b| {
        total(b)
            .total_cmp(&total(a))
            .then(a.command.cmp(&b.command))
    });
    per_command
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(label: &str, ops_per_s: f64, p50: f64) -> ReportSummary {
        let mut s = ReportSummary {
            kind: "analyze".into(),
            label: label.into(),
            ops: 100,
            ops_per_s,
            ..Default::default()
        };
        s.overall.ops_per_s = ops_per_s;
        s.overall.latency.count = 100;
        s.overall.latency.p50_us = p50;
        s.per_command.insert("find".into(), s.overall.clone());
        s
    }

    #[test]
    fn ratios_against_the_first_column() {
        let r = compare(
            &[summary("a", 100.0, 200.0), summary("a", 250.0, 100.0)],
            &[],
        );
        assert_eq!(r.columns[1].label, "a #2");
        let tp = r.overall.iter().find(|m| m.metric == "throughput").unwrap();
        assert_eq!(tp.ratios, vec![Some(1.0), Some(2.5)]);
        let cpu = r
            .overall
            .iter()
            .find(|m| m.metric.starts_with("server CPU"))
            .unwrap();
        assert_eq!(cpu.ratios, vec![None, None]);
        assert_eq!(r.per_command[0].command, "find");
        assert!(r.render_text().contains("2.50x"));
    }
}
