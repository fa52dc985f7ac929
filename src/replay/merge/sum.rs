//! Adding shard reports up: histograms first, then the report composed of its parts' merges, each
//! written beside its type (`ReportSummary::merge`, `CommandSummary::merge_map`, `LagReport::merge`,
//! ...), the figures that derive from histograms read off the sums.

use super::error::MergeError;
use super::input::ShardInput;
use super::seconds::{self, Second};
use crate::figures::summary::{new_ns_histogram, CommandSummary, ReportSummary};
use crate::plan::PlanEntry;
use crate::replay::measure::buckets::BucketTimeline;
use crate::replay::measure::hdr;
use crate::replay::measure::knee::command_histogram;
use crate::replay::measure::metrics::{
    coarse_histogram, DivergenceReport, HistogramsReport, LagHistograms, LagReport,
};
use crate::replay::report::{
    MergeReport, RecordedReport, ReplayReport, ReplayerReport, ServerReport, SessionOrderReport,
};
use hdrhistogram::Histogram;
use std::collections::BTreeMap;

/// Skips counted over the whole capture by every shard alike (before the shard's part is taken):
/// the merge keeps one shard's figure, not the sum.
const PER_CAPTURE_SKIPS: &[&str] = &[
    "handshake",
    "ping",
    "unsupported_opcode",
    "op_command",
    "filtered",
    // The cut is decided before a request goes to its shard: every shard counts all of it.
    "before_snapshot",
];

struct Decoder<'a> {
    path: &'a str,
}

impl Decoder<'_> {
    fn decode(&self, what: &str, text: &str) -> Result<Histogram<u64>, MergeError> {
        hdr::decode(text).map_err(|detail| MergeError::Histogram {
            path: self.path.to_owned(),
            detail: format!("{what}: {detail} (a report from before histograms were kept?)"),
        })
    }

    fn add_into(
        &self,
        into: &mut Histogram<u64>,
        what: &str,
        text: &str,
    ) -> Result<(), MergeError> {
        let h = self.decode(what, text)?;
        if hdr::add(into, &h) {
            Ok(())
        } else {
            Err(MergeError::Histogram {
                path: self.path.to_owned(),
                detail: format!("{what}: values outside the histogram's range"),
            })
        }
    }
}

fn ns_sum() -> Histogram<u64> {
    new_ns_histogram()
}

#[derive(Default)]
struct Sums {
    overall: Option<Histogram<u64>>,
    per_command: BTreeMap<String, Histogram<u64>>,
    per_namespace: BTreeMap<String, Histogram<u64>>,
    recorded: BTreeMap<String, Histogram<u64>>,
    lag: Option<Histogram<u64>>,
    clock_lag: Option<Histogram<u64>>,
    from_send: Option<Histogram<u64>>,
    seconds: BTreeMap<u64, Second>,
}

impl Sums {
    fn add(&mut self, input: &ShardInput) -> Result<(), MergeError> {
        let d = Decoder { path: &input.path };
        let h = &input.report.histograms;
        d.add_into(
            self.overall.get_or_insert_with(ns_sum),
            "overall",
            &h.overall,
        )?;
        d.add_into(self.lag.get_or_insert_with(coarse_histogram), "lag", &h.lag)?;
        // Absent from the reports of older binaries.
        for (into, what, text) in [
            (&mut self.clock_lag, "clock_lag", &h.clock_lag),
            (&mut self.from_send, "from_send", &h.from_send),
        ] {
            if !text.is_empty() {
                d.add_into(into.get_or_insert_with(coarse_histogram), what, text)?;
            }
        }
        for (cmd, text) in &h.per_command {
            let into = self.per_command.entry(cmd.clone()).or_insert_with(ns_sum);
            d.add_into(into, cmd, text)?;
        }
        for (ns, text) in &h.per_namespace {
            let into = self
                .per_namespace
                .entry(ns.clone())
                .or_insert_with(coarse_histogram);
            d.add_into(into, ns, text)?;
        }
        for (cmd, text) in &input.report.recorded.histograms {
            let into = self.recorded.entry(cmd.clone()).or_insert_with(ns_sum);
            d.add_into(into, &format!("recorded {cmd}"), text)?;
        }
        for s in &input.report.timeline {
            let e = self.seconds.entry(s.unix_s).or_insert_with(Second::new);
            e.ops += s.ops;
            e.errors += s.errors;
            e.max_lag_us = e.max_lag_us.max(s.max_lag_us);
            e.replies += s.replies;
            e.busy_us += s.busy_us;
            let what = format!("timeline second {}", s.unix_s);
            d.add_into(&mut e.latency, &what, &s.hdr)?;
            for (cmd, c) in &s.per_command {
                let into = e
                    .per_command
                    .entry(cmd.clone())
                    .or_insert_with(|| (0, 0.0, command_histogram()));
                into.0 += c.replies;
                into.1 += c.busy_us;
                d.add_into(&mut into.2, &format!("{what} {cmd}"), &c.hdr)?;
            }
        }
        Ok(())
    }

    fn lag_histograms(&self) -> LagHistograms<'_> {
        LagHistograms {
            lag: self.lag.as_ref(),
            clock: self.clock_lag.as_ref(),
            from_send: self.from_send.as_ref(),
        }
    }

    fn histograms(&self) -> HistogramsReport {
        let one = |h: &Option<Histogram<u64>>| h.as_ref().map(hdr::encode).unwrap_or_default();
        HistogramsReport {
            format: hdr::FORMAT.into(),
            overall: one(&self.overall),
            per_command: encode_all(&self.per_command),
            per_namespace: encode_all(&self.per_namespace),
            lag: one(&self.lag),
            clock_lag: one(&self.clock_lag),
            from_send: one(&self.from_send),
            per_shape: BTreeMap::new(),
        }
    }
}

/// The merged report.
pub fn add_up(inputs: Vec<ShardInput>, census: MergeReport) -> Result<ReplayReport, MergeError> {
    let mut sums = Sums::default();
    for i in &inputs {
        sums.add(i)?;
    }
    let start = inputs
        .iter()
        .map(|i| i.report.started_at_unix_s)
        .fold(f64::INFINITY, f64::min);
    let end = inputs
        .iter()
        .map(|i| i.report.started_at_unix_s + i.report.summary.wall_s)
        .fold(0.0, f64::max);
    let wall_s = (end - start).max(0.0);
    let mut r = counts(&inputs, start);
    let parts = |f: fn(&ReplayReport) -> &ReportSummary| -> Vec<&ReportSummary> {
        inputs.iter().map(|i| f(&i.report)).collect()
    };
    r.summary = ReportSummary::merge(
        &parts(|r| &r.summary),
        wall_s,
        sums.overall.as_ref(),
        &sums.per_command,
    );
    r.recorded = RecordedReport::of(&sums.recorded);
    r.per_namespace = CommandSummary::merge_map(
        inputs.iter().map(|i| &i.report.per_namespace),
        wall_s,
        &sums.per_namespace,
    );
    r.skipped = skipped(&inputs);
    r.snapshot_cut = inputs.iter().find_map(|i| i.report.snapshot_cut.clone());
    r.lag = LagReport::merge(
        &inputs.iter().map(|i| &i.report.lag).collect::<Vec<_>>(),
        sums.lag_histograms(),
    );
    r.divergences = DivergenceReport::merge_map(inputs.iter().map(|i| &i.report.divergences));
    r.timeline = seconds::timeline(&sums.seconds);
    r.timeline_buckets = buckets(&inputs)?;
    add_cpu(&mut r, &inputs);
    r.plans = PlanEntry::merge(inputs.iter().map(|i| i.report.plans.as_deref()));
    if let Some(schedule) = &r.options.open_loop {
        let duration_s = r.options.duration_s.unwrap_or(wall_s);
        r.knee = super::knee::find(&inputs, &sums.seconds, schedule, start, duration_s);
    }
    r.histograms = sums.histograms();
    let shapes = super::shapes::add_up(&inputs)?;
    r.shapes = shapes.shapes;
    r.histograms.per_shape = shapes.replayed;
    r.recorded.per_shape = shapes.recorded;
    r.count_plans();
    r.complete = census.missing.is_empty() && census.failed.is_empty();
    r.capture_error = inputs.iter().find_map(|i| i.report.capture_error.clone());
    r.error = (!census.failed.is_empty()).then(|| {
        let which: Vec<&str> = census.failed.keys().map(String::as_str).collect();
        format!("shard(s) {} failed", which.join(", "))
    });
    r.merge = Some(census);
    Ok(r)
}

/// The report's head: what every shard shares, and the counters that add up.
fn counts(inputs: &[ShardInput], start: f64) -> ReplayReport {
    let first = &inputs[0].report;
    let total = |f: fn(&ReplayReport) -> u64| inputs.iter().map(|i| f(&i.report)).sum::<u64>();
    let most = |f: fn(&ReplayReport) -> u64| inputs.iter().map(|i| f(&i.report)).max();
    ReplayReport {
        schema_version: crate::figures::SCHEMA_VERSION,
        kind: "replay".into(),
        mongotape_version: env!("CARGO_PKG_VERSION").into(),
        capture: first.capture.clone(),
        target: first.target.clone(),
        options: first.options.clone(),
        started_at_unix_s: start,
        recorded_span_s: first.recorded_span_s,
        iterations: most(|r| r.iterations).unwrap_or_default(),
        requests_read: most(|r| r.requests_read).unwrap_or_default(),
        sent: total(|r| r.sent),
        compressed: total(|r| r.compressed),
        unacknowledged: total(|r| r.unacknowledged),
        connections_opened: total(|r| r.connections_opened),
        stray_replies: total(|r| r.stray_replies),
        retried_not_primary: total(|r| r.retried_not_primary),
        retried_dropped_connection: total(|r| r.retried_dropped_connection),
        session_order: SessionOrderReport::merge(
            inputs
                .iter()
                .filter_map(|i| i.report.session_order.as_ref()),
        ),
        ..ReplayReport::default()
    }
}

/// Requests skipped, by reason: a reason every shard sees in the whole capture counts once.
fn skipped(inputs: &[ShardInput]) -> BTreeMap<String, u64> {
    let mut out: BTreeMap<String, u64> = BTreeMap::new();
    for i in inputs {
        for (k, n) in &i.report.skipped {
            let e = out.entry(k.clone()).or_default();
            *e = if PER_CAPTURE_SKIPS.contains(&k.as_str()) {
                (*e).max(*n)
            } else {
                *e + n
            };
        }
    }
    out
}

/// The shards' timeline buckets joined at the widest width any of them used.
fn buckets(inputs: &[ShardInput]) -> Result<BucketTimeline, MergeError> {
    let widest = inputs
        .iter()
        .map(|i| i.report.timeline_buckets.width_ns)
        .max();
    let mut buckets = BucketTimeline::empty(widest.unwrap_or_default());
    for i in inputs {
        buckets = buckets
            .joined(&i.report.timeline_buckets)
            .map_err(|detail| MergeError::Histogram {
                path: i.path.clone(),
                detail,
            })?;
    }
    Ok(buckets)
}

fn encode_all(m: &BTreeMap<String, Histogram<u64>>) -> BTreeMap<String, String> {
    m.iter().map(|(k, h)| (k.clone(), hdr::encode(h))).collect()
}

/// The server's CPU ([`ServerReport::merge`]) and the replayers' ([`ReplayerReport::merge`]),
/// and the summary's figures read off them.
fn add_cpu(r: &mut ReplayReport, inputs: &[ShardInput]) {
    let ops = r.summary.ops;
    r.server = ServerReport::merge(
        &inputs.iter().map(|i| &i.report.server).collect::<Vec<_>>(),
        ops,
    );
    r.summary.server_cpu_s_per_1k_ops = r.server.cpu_s_per_1k_ops;
    r.summary.server_cpu_net_s_per_1k_ops = r.server.cpu_net_s_per_1k_ops;
    let replayers: Vec<&ReplayerReport> = inputs.iter().map(|i| &i.report.replayer).collect();
    if let Some(replayer) = ReplayerReport::merge(&replayers, ops) {
        r.replayer = replayer;
        r.summary.client_cpu_us_per_op = r.replayer.cpu_us_per_op;
    }
}
