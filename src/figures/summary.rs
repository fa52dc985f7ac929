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

/// `n` per second over `wall_s`; 0 over an empty span.
pub fn per_s(n: u64, wall_s: f64) -> f64 {
    if wall_s > 0.0 {
        n as f64 / wall_s
    } else {
        0.0
    }
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
    /// `replay`, `analyze`, or `shadow` (a column `compare` makes of a shadow's report).
    #[schemars(extend("enum" = ["analyze", "replay", "shadow"]))]
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

impl CommandSummary {
    /// `count` requests, `errors` of them failed, over `wall_s`, with their latency.
    pub fn of(count: u64, errors: u64, wall_s: f64, latency: LatencySummary) -> CommandSummary {
        CommandSummary {
            count,
            errors,
            ops_per_s: per_s(count, wall_s),
            latency,
        }
    }

    /// Several runs' figures of one key (the shards of a replay) over the span they covered
    /// together: counts add, the latency is read off their summed histogram (`None`: none).
    pub fn merge<'a>(
        parts: impl IntoIterator<Item = &'a CommandSummary>,
        wall_s: f64,
        summed: Option<&Histogram<u64>>,
    ) -> CommandSummary {
        let (count, errors) = parts
            .into_iter()
            .fold((0, 0), |(n, e), c| (n + c.count, e + c.errors));
        let latency = summed
            .map(LatencySummary::from_ns_histogram)
            .unwrap_or_default();
        CommandSummary::of(count, errors, wall_s, latency)
    }

    /// Tables keyed by command (or namespace) merged key by key ([`CommandSummary::merge`]),
    /// each key's latency from its histogram in `summed`.
    pub fn merge_map<'a>(
        parts: impl IntoIterator<Item = &'a BTreeMap<String, CommandSummary>>,
        wall_s: f64,
        summed: &BTreeMap<String, Histogram<u64>>,
    ) -> BTreeMap<String, CommandSummary> {
        let mut by_key: BTreeMap<&str, Vec<&CommandSummary>> = BTreeMap::new();
        for (k, c) in parts.into_iter().flatten() {
            by_key.entry(k).or_default().push(c);
        }
        by_key
            .into_iter()
            .map(|(k, cs)| {
                (
                    k.to_owned(),
                    CommandSummary::merge(cs, wall_s, summed.get(k)),
                )
            })
            .collect()
    }
}

impl ReportSummary {
    /// The summary of a run or a capture (`kind`): `overall`'s requests over `wall_s`. The
    /// measured CPU figures and `client_bound_share` are the product's to set.
    pub fn of(
        kind: &str,
        label: String,
        source: String,
        wall_s: f64,
        overall: CommandSummary,
        per_command: BTreeMap<String, CommandSummary>,
    ) -> ReportSummary {
        ReportSummary {
            kind: kind.to_owned(),
            label,
            source,
            wall_s,
            ops: overall.count,
            ops_per_s: per_s(overall.count, wall_s),
            overall,
            per_command,
            server_cpu_s_per_1k_ops: None,
            server_cpu_net_s_per_1k_ops: None,
            client_cpu_us_per_op: None,
            client_bound_share: None,
        }
    }

    /// Several runs' summaries (the shards of one replay) over the span they covered together,
    /// labelled as the first: operations and errors add, latency is read off the summed
    /// histograms. The CPU figures are left to the merged server and replayer figures.
    pub fn merge(
        parts: &[&ReportSummary],
        wall_s: f64,
        overall: Option<&Histogram<u64>>,
        per_command: &BTreeMap<String, Histogram<u64>>,
    ) -> ReportSummary {
        let ops = parts.iter().map(|s| s.ops).sum();
        let errors = parts.iter().map(|s| s.overall.errors).sum();
        let latency = overall
            .map(LatencySummary::from_ns_histogram)
            .unwrap_or_default();
        let first = parts.first();
        ReportSummary::of(
            first.map_or("replay", |s| s.kind.as_str()),
            first.map(|s| s.label.clone()).unwrap_or_default(),
            first.map(|s| s.source.clone()).unwrap_or_default(),
            wall_s,
            CommandSummary::of(ops, errors, wall_s, latency),
            CommandSummary::merge_map(parts.iter().map(|s| &s.per_command), wall_s, per_command),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hist(values_us: &[u64]) -> Histogram<u64> {
        let mut h = new_ns_histogram();
        for v in values_us {
            h.record(v * 1_000).unwrap();
        }
        h
    }

    #[test]
    fn a_merge_adds_counts_and_reads_latency_off_the_summed_histogram() {
        let a = hist(&[100, 200]);
        let b = hist(&[300]);
        let of = |h: &Histogram<u64>, errors| {
            let latency = LatencySummary::from_ns_histogram(h);
            CommandSummary::of(h.len(), errors, 1.0, latency)
        };
        let shard = |h: &Histogram<u64>, errors| {
            let per_command = BTreeMap::from([("find".to_owned(), of(h, errors))]);
            ReportSummary::of(
                "replay",
                "l".into(),
                "s".into(),
                1.0,
                of(h, errors),
                per_command,
            )
        };
        let (sa, sb) = (shard(&a, 1), shard(&b, 0));
        let mut sum = a.clone();
        sum.add(&b).unwrap();
        let summed = BTreeMap::from([("find".to_owned(), sum.clone())]);
        let m = ReportSummary::merge(&[&sa, &sb], 2.0, Some(&sum), &summed);
        assert_eq!((m.ops, m.overall.count, m.overall.errors), (3, 3, 1));
        assert_eq!((m.ops_per_s, m.overall.ops_per_s), (1.5, 1.5));
        assert_eq!(m.overall.latency, LatencySummary::from_ns_histogram(&sum));
        assert_eq!(m.per_command["find"], m.overall);
        assert_eq!((m.kind.as_str(), m.label.as_str()), ("replay", "l"));
        // No span: no rate, not a division by zero.
        assert_eq!(
            CommandSummary::of(5, 0, 0.0, LatencySummary::default()).ops_per_s,
            0.0
        );
    }
}
