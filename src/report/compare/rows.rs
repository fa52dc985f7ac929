//! The rows every comparison is made of: a figure across the columns with its ratios against the
//! first, and, with repeats, each column's spread and each ratio's interval.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ColumnHead {
    pub label: String,
    #[schemars(extend("enum" = ["analyze", "replay", "shadow"]))]
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

/// A column's values over its runs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Spread {
    pub min: f64,
    pub max: f64,
    /// Runs that had the value.
    pub runs: usize,
}

/// A ratio's 95% bootstrap interval; `beyond_noise` when it excludes 1.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Interval {
    pub low: f64,
    pub high: f64,
    pub beyond_noise: bool,
}

pub(super) fn row(metric: &str, unit: &str, values: Vec<Option<f64>>) -> MetricRow {
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
