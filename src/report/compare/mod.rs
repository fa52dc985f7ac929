//! `mongotape compare`: reports side by side, per command and overall, with ratios against the first
//! column. Reads the `summary` key ([`ReportSummary`]) of any report JSON (analyze or replay), or a
//! bare `ReportSummary`; an A/B report is a column per target, a shadow's report a column for
//! production and one per target (`shadow`).
//!
//! This file lines the summaries up (the report's schema): `read` loads them, `rows` is one figure
//! across the columns; `repeats` folds reports that repeat one run (same label) into one column
//! with a median, a spread and ratio intervals; the renderings are in `text` and
//! [`crate::report::html::compare`].
//!
//! Layers, bottom up: shadow < read rows < errors shapes < mod.rs < repeats text

mod errors;
mod read;
mod repeats;
mod rows;
mod shadow;
mod shapes;
mod text;

pub use errors::{load_errors, ReportErrors};
pub use read::{load_reports, load_summary, CompareError};
pub use repeats::compare_repeats;
pub use rows::{ColumnHead, CommandRows, Interval, MetricRow, Spread};
pub use shapes::{compare_shapes, load_shapes, ShapeRows};

use crate::figures::errors::ErrorsReport;
use crate::figures::summary::{CommandSummary, ReportSummary};
use rows::row;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

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

/// The reports of some files, one column each: a file is one report, an A/B report one per
/// target (its replay report).
#[derive(Debug, Default)]
pub struct Loaded {
    /// The file of each column (`FILE [LABEL]` for an A/B report's target).
    pub files: Vec<String>,
    pub summaries: Vec<ReportSummary>,
    pub errors: Vec<ErrorsReport>,
    pub shapes: Vec<Vec<crate::shape::ShapeReport>>,
}

/// Reads `paths` in order into columns ([`Loaded`]).
pub fn load_columns(paths: &[std::path::PathBuf]) -> Result<Loaded, CompareError> {
    let mut loaded = Loaded::default();
    for path in paths {
        for (name, value) in load_reports(path)? {
            loaded
                .shapes
                .push(shapes::shapes_of(name.clone(), value.clone())?);
            loaded.errors.push(errors::errors_of(value.clone()));
            loaded
                .summaries
                .push(read::summary_of(name.clone(), value)?);
            loaded.files.push(name);
        }
    }
    Ok(loaded)
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

impl CompareReport {
    /// Adds each report's errors (`errors[i]` from `files[i]`, labelled as the summaries were).
    pub fn with_errors(
        mut self,
        labels: &[String],
        files: &[String],
        errors: Vec<ErrorsReport>,
    ) -> Self {
        self.errors_by_code = errors
            .into_iter()
            .enumerate()
            .map(|(i, errors)| ReportErrors {
                label: labels.get(i).cloned().unwrap_or_default(),
                file: files.get(i).cloned().unwrap_or_default(),
                errors,
            })
            .collect();
        self
    }

    /// `label: errors 1,600: DuplicateKey (11000) 1,600 on insert`, a line per report with errors.
    pub fn errors_text(&self) -> String {
        let mut s = String::new();
        for r in &self.errors_by_code {
            if let Some(line) = r.errors.line() {
                s.push_str(&format!("{:<16} {line}\n", r.label));
            }
        }
        if !s.is_empty() {
            s.insert_str(0, "\nErrors by code\n");
        }
        s
    }
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
/// A column per summary, labelled by its report's label: an analyze and a replay report of one
/// capture carry the same one, and are told apart by their kind (`app (analyze)`, `app
/// (replay)`); reports of one kind and label are numbered (`app #2`).
fn columns(summaries: &[ReportSummary], files: &[String]) -> Vec<ColumnHead> {
    let labels: Vec<String> = (summaries.iter().enumerate())
        .map(|(i, s)| match s.label.is_empty() {
            true => format!("#{}", i + 1),
            false => s.label.clone(),
        })
        .collect();
    let kinds_differ = |i: usize| {
        (labels.iter().zip(summaries)).any(|(l, s)| *l == labels[i] && s.kind != summaries[i].kind)
    };
    let mut seen = BTreeSet::new();
    summaries
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let base = match kinds_differ(i) && !s.kind.is_empty() {
                true => format!("{} ({})", labels[i], s.kind),
                false => labels[i].clone(),
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
        // An analyze and a replay report of one capture: their kinds tell them apart.
        let mut replay = summary("a", 250.0, 100.0);
        replay.kind = "replay".into();
        let mixed = compare(&[summary("a", 100.0, 200.0), replay], &[]);
        let labels: Vec<&str> = mixed.columns.iter().map(|c| c.label.as_str()).collect();
        assert_eq!(labels, ["a (analyze)", "a (replay)"]);
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
