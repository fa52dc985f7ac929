//! Adding shard reports up: histograms first, every figure that derives from them read off the sums.

use super::seconds::Second;
use crate::figures::summary::{new_ns_histogram, CommandSummary, LatencySummary, ReportSummary};
use crate::replay::measure::buckets::BucketTimeline;
use crate::replay::measure::hdr;
use crate::replay::measure::knee::command_histogram;
use crate::replay::measure::metrics::{
    coarse_histogram, DivergenceReport, HistogramsReport, LagReport, SecondReport,
    DIVERGENCE_EXAMPLES,
};
use crate::replay::measure::timeline::CommandSecondReport;

use super::error::MergeError;
use crate::replay::merge::input::ShardInput;
use crate::replay::report::{
    MergeReport, RecordedReport, ReplayReport, ReplayerReport, SessionOrderReport,
};
use hdrhistogram::Histogram;
use std::collections::BTreeMap;

/// Skips counted over the whole capture by every shard alike (before the shard's part is taken):
/// the merge keeps one shard's figure, not the sum.
const PER_CAPTURE_SKIPS: &[&str] = &["handshake", "ping", "unsupported_opcode", "filtered"];

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

/// The lag of all the shards: percentiles from the summed histograms, counts summed.
fn lag(inputs: &[ShardInput], sums: &Sums) -> LagReport {
    let of = |h: &Option<Histogram<u64>>| {
        h.as_ref()
            .map(LatencySummary::from_ns_histogram)
            .unwrap_or_default()
    };
    let count = |f: fn(&LagReport) -> u64| inputs.iter().map(|i| f(&i.report.lag)).sum();
    LagReport {
        latency: of(&sums.lag),
        behind_1ms: count(|l| l.behind_1ms),
        behind_100ms: count(|l| l.behind_100ms),
        clock: of(&sums.clock_lag),
        held: count(|l| l.held),
        from_send: of(&sums.from_send),
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
}

fn command(count: u64, errors: u64, wall_s: f64, h: Option<&Histogram<u64>>) -> CommandSummary {
    CommandSummary {
        count,
        errors,
        ops_per_s: if wall_s > 0.0 {
            count as f64 / wall_s
        } else {
            0.0
        },
        latency: h.map(LatencySummary::from_ns_histogram).unwrap_or_default(),
    }
}

/// Counts per key added up, latency from the summed histogram.
fn commands(
    inputs: &[ShardInput],
    pick: impl Fn(&ReplayReport) -> &BTreeMap<String, CommandSummary>,
    hists: &BTreeMap<String, Histogram<u64>>,
    wall_s: f64,
) -> BTreeMap<String, CommandSummary> {
    let mut counts: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for i in inputs {
        for (k, c) in pick(&i.report) {
            let e = counts.entry(k.clone()).or_default();
            e.0 += c.count;
            e.1 += c.errors;
        }
    }
    counts
        .into_iter()
        .map(|(k, (n, e))| {
            let s = command(n, e, wall_s, hists.get(&k));
            (k, s)
        })
        .collect()
}

fn divergences(inputs: &[ShardInput]) -> BTreeMap<String, DivergenceReport> {
    let mut out: BTreeMap<String, DivergenceReport> = BTreeMap::new();
    for i in inputs {
        for (cmd, d) in &i.report.divergences {
            let e = out.entry(cmd.clone()).or_default();
            e.count += d.count;
            for (f, n) in &d.fields {
                *e.fields.entry(f.clone()).or_default() += n;
            }
            let room = DIVERGENCE_EXAMPLES.saturating_sub(e.examples.len());
            e.examples.extend(d.examples.iter().take(room).cloned());
        }
    }
    out
}

fn timeline(sums: &Sums) -> Vec<SecondReport> {
    let first = sums.seconds.keys().next().copied().unwrap_or_default();
    let us = |ns: u64| ns as f64 / 1000.0;
    sums.seconds
        .iter()
        .map(|(&unix_s, s)| SecondReport {
            second: (unix_s - first) as usize,
            unix_s,
            ops: s.ops,
            errors: s.errors,
            p50_us: us(s.latency.value_at_quantile(0.5)),
            p99_us: us(s.latency.value_at_quantile(0.99)),
            max_us: us(s.latency.max()),
            max_lag_us: s.max_lag_us,
            hdr: hdr::encode(&s.latency),
            replies: s.replies,
            busy_us: s.busy_us,
            per_command: s
                .per_command
                .iter()
                .map(|(cmd, (replies, busy_us, h))| {
                    let c = CommandSecondReport {
                        replies: *replies,
                        busy_us: *busy_us,
                        p99_us: us(h.value_at_quantile(0.99)),
                        hdr: hdr::encode(h),
                    };
                    (cmd.clone(), c)
                })
                .collect(),
        })
        .collect()
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
    r.summary = summary(&inputs, &sums, wall_s);
    r.recorded = RecordedReport::of(&sums.recorded);
    r.per_namespace = commands(&inputs, |r| &r.per_namespace, &sums.per_namespace, wall_s);
    r.skipped = skipped(&inputs);
    r.lag = lag(&inputs, &sums);
    r.divergences = divergences(&inputs);
    r.timeline = timeline(&sums);
    r.timeline_buckets = buckets(&inputs)?;
    add_cpu(&mut r, &inputs);
    r.plans = plans(&inputs);
    if let Some(schedule) = &r.options.open_loop {
        let duration_s = r.options.duration_s.unwrap_or(wall_s);
        r.knee = super::knee::find(&inputs, &sums.seconds, schedule, start, duration_s);
    }
    r.histograms = HistogramsReport {
        format: hdr::FORMAT.into(),
        overall: sums.overall.as_ref().map(hdr::encode).unwrap_or_default(),
        per_command: encode_all(&sums.per_command),
        per_namespace: encode_all(&sums.per_namespace),
        lag: sums.lag.as_ref().map(hdr::encode).unwrap_or_default(),
        clock_lag: sums.clock_lag.as_ref().map(hdr::encode).unwrap_or_default(),
        from_send: sums.from_send.as_ref().map(hdr::encode).unwrap_or_default(),
        per_shape: BTreeMap::new(),
    };
    let shapes = super::shapes::add_up(&inputs)?;
    r.shapes = shapes.shapes;
    r.histograms.per_shape = shapes.replayed;
    r.recorded.per_shape = shapes.recorded;
    r.complete = census.missing.is_empty() && census.failed.is_empty();
    r.capture_error = inputs.iter().find_map(|i| i.report.capture_error.clone());
    r.error = (!census.failed.is_empty()).then(|| {
        let which: Vec<&str> = census.failed.keys().map(String::as_str).collect();
        format!("shard(s) {} failed", which.join(", "))
    });
    r.merge = Some(census);
    Ok(r)
}

/// `--explain`: each shape's plan once, from the first shard that explained it without an error
/// (else the first that tried), in the order the shards list them.
fn plans(inputs: &[ShardInput]) -> Option<Vec<crate::plan::PlanEntry>> {
    let mut out: Vec<crate::plan::PlanEntry> = Vec::new();
    for entry in inputs
        .iter()
        .filter_map(|i| i.report.plans.as_ref())
        .flatten()
    {
        match out.iter_mut().find(|e| e.hash == entry.hash) {
            Some(kept) if kept.error.is_some() && entry.error.is_none() => *kept = entry.clone(),
            Some(_) => {}
            None => out.push(entry.clone()),
        }
    }
    inputs
        .iter()
        .any(|i| i.report.plans.is_some())
        .then_some(out)
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
        session_order: session_order(inputs.iter().map(|i| &i.report)),
        ..ReplayReport::default()
    }
}

/// The summary over the whole run: the shards' operations over the span they covered together.
fn summary(inputs: &[ShardInput], sums: &Sums, wall_s: f64) -> ReportSummary {
    let first = &inputs[0].report;
    let ops = inputs.iter().map(|i| i.report.summary.ops).sum::<u64>();
    let errors = inputs.iter().map(|i| i.report.summary.overall.errors).sum();
    ReportSummary {
        kind: "replay".into(),
        label: first.summary.label.clone(),
        source: first.summary.source.clone(),
        wall_s,
        ops,
        ops_per_s: if wall_s > 0.0 {
            ops as f64 / wall_s
        } else {
            0.0
        },
        overall: command(ops, errors, wall_s, sums.overall.as_ref()),
        per_command: commands(
            inputs,
            |r| &r.summary.per_command,
            &sums.per_command,
            wall_s,
        ),
        server_cpu_s_per_1k_ops: None,
        server_cpu_net_s_per_1k_ops: None,
        client_cpu_us_per_op: None,
        client_bound_share: None,
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

/// The server's CPU: every shard that could see the server measured all of it over nearly the
/// same time, so the widest measurement stands for the run (not their sum). The replayers' CPU adds.
fn add_cpu(r: &mut ReplayReport, inputs: &[ShardInput]) {
    let ops = r.summary.ops.max(1) as f64;
    if let Some(widest) = inputs
        .iter()
        .filter(|i| i.report.server.cpu_s.is_some())
        .max_by(|a, b| {
            a.report
                .server
                .cpu_s
                .partial_cmp(&b.report.server.cpu_s)
                .unwrap_or(std::cmp::Ordering::Equal)
        })
    {
        r.server = widest.report.server.clone();
        r.server.cpu_s_per_1k_ops = r.server.cpu_s.map(|c| c / ops * 1000.0);
        r.server.cpu_net_s_per_1k_ops = r.server.cpu_net_s.map(|c| c / ops * 1000.0);
    } else if let Some(i) = inputs.first() {
        r.server = i.report.server.clone();
    }
    r.summary.server_cpu_s_per_1k_ops = r.server.cpu_s_per_1k_ops;
    r.summary.server_cpu_net_s_per_1k_ops = r.server.cpu_net_s_per_1k_ops;
    let replayer: Vec<f64> = inputs
        .iter()
        .filter_map(|i| i.report.replayer.cpu_s)
        .collect();
    if !replayer.is_empty() {
        let cpu: f64 = replayer.iter().sum();
        let reader: Option<f64> = inputs.iter().map(|i| i.report.replayer.reader_cpu_s).sum();
        r.replayer = ReplayerReport {
            cpu_s: Some(cpu),
            cpu_us_per_op: Some(cpu / ops * 1e6),
            threads: None,
            reader_cpu_s: reader,
            reader_cpu_us_per_op: reader.map(|c| c / ops * 1e6),
        };
        r.summary.client_cpu_us_per_op = r.replayer.cpu_us_per_op;
    }
}

/// The shards' session waits added up; `None` when no shard kept sessions in order.
fn session_order<'a>(
    reports: impl Iterator<Item = &'a ReplayReport>,
) -> Option<SessionOrderReport> {
    reports.filter_map(|r| r.session_order.as_ref()).fold(
        None,
        |sum: Option<SessionOrderReport>, o| {
            let s = sum.unwrap_or_default();
            Some(SessionOrderReport {
                followed: s.followed + o.followed,
                waited: s.waited + o.waited,
                wait_s: s.wait_s + o.wait_s,
            })
        },
    )
}
