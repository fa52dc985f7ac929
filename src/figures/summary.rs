//! The figures every report shares, so `compare` can put a replay report next to an analyze report.
//! Replay and analyze reports each carry one `ReportSummary` under the key `summary`.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Latency percentiles in microseconds, over `count` operations with a reply.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LatencySummary {
    pub count: u64,
    #[schemars(range(min = 0))]
    pub mean_us: f64,
    #[schemars(range(min = 0))]
    pub p50_us: f64,
    #[schemars(range(min = 0))]
    pub p90_us: f64,
    #[schemars(range(min = 0))]
    pub p99_us: f64,
    #[schemars(range(min = 0))]
    pub p999_us: f64,
    #[schemars(range(min = 0))]
    pub max_us: f64,
}

impl LatencySummary {
    /// From a histogram of nanoseconds.
    pub fn from_ns_histogram(h: &Histogram<u64>) -> LatencySummary {
        if h.is_empty() {
            return LatencySummary::default();
        }
        let us = |ns: u64| ns as f64 / 1_000.0;
        LatencySummary {
            count: h.len(),
            mean_us: h.mean() / 1_000.0,
            p50_us: us(h.value_at_quantile(0.50)),
            p90_us: us(h.value_at_quantile(0.90)),
            p99_us: us(h.value_at_quantile(0.99)),
            p999_us: us(h.value_at_quantile(0.999)),
            max_us: us(h.max()),
        }
    }
}

/// A histogram of nanoseconds from 100 ns to 1 hour with 3 significant digits.
pub fn new_ns_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(100, 3_600_000_000_000, 3).expect("static bounds are valid")
}

/// The figures of one command (or of all: `overall`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CommandSummary {
    pub count: u64,
    pub errors: u64,
    #[schemars(range(min = 0))]
    pub ops_per_s: f64,
    pub latency: LatencySummary,
}

/// The figures every analyze and replay report carries under `summary` (`mongotape compare` reads
/// them).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ReportSummary {
    /// `replay` or `analyze`.
    #[schemars(extend("enum" = ["analyze", "replay"]))]
    pub kind: String,
    /// The column's name in `compare` (the capture's file stem by default).
    pub label: String,
    /// The capture the report came from.
    pub source: String,
    #[schemars(range(min = 0))]
    pub wall_s: f64,
    pub ops: u64,
    #[schemars(range(min = 0))]
    pub ops_per_s: f64,
    pub overall: CommandSummary,
    /// By command name (insert, find, ...).
    pub per_command: BTreeMap<String, CommandSummary>,
    /// Server CPU seconds per 1,000 operations, when measured.
    #[schemars(range(min = 0))]
    pub server_cpu_s_per_1k_ops: Option<f64>,
    /// The same net of the server's idle CPU rate (read before a replay): what comparisons use.
    #[serde(default)]
    #[schemars(range(min = 0))]
    pub server_cpu_net_s_per_1k_ops: Option<f64>,
    /// Client (or replayer) CPU microseconds per operation, when measured.
    #[schemars(range(min = 0))]
    pub client_cpu_us_per_op: Option<f64>,
    /// Share of wall time the client spent between a reply and its next request (analyze).
    #[schemars(range(min = 0, max = 1))]
    pub client_bound_share: Option<f64>,
}
