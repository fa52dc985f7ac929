//! The run's report filled in once the lanes are done: the summary and the figures measured per
//! operation, then what was sent, skipped and read, and whether the run completed.

use super::config::ReplayConfig;
use super::measure::{self, metrics::Metrics};
use super::report::{self, ReplayReport, ReplayerReport, ServerReport};
use super::route::counter::get;
use super::route::run::RunCounters;
use super::route::target::TargetState;
use super::source::SourceResult;
use crate::figures::summary::ReportSummary;

/// The summary and the other figures measured per operation.
pub(super) fn add_measurements(
    report: &mut ReplayReport,
    config: &ReplayConfig,
    metrics: &Metrics,
    wall_s: f64,
    server: &ServerReport,
    replayer: &ReplayerReport,
) {
    let label = config.label.clone().unwrap_or_else(|| {
        config
            .capture
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default()
    });
    report.summary = ReportSummary::of(
        "replay",
        label,
        report.capture.clone(),
        wall_s,
        metrics.overall(wall_s),
        metrics.per_command(wall_s),
    );
    report.summary.server_cpu_s_per_1k_ops = server.cpu_s_per_1k_ops;
    report.summary.server_cpu_net_s_per_1k_ops = server.cpu_net_s_per_1k_ops;
    report.summary.client_cpu_us_per_op = replayer.cpu_us_per_op;
    report.per_namespace = metrics.per_namespace(wall_s);
    report.lag = metrics.lag();
    report.divergences = metrics.divergences();
    report.timeline = metrics.timeline();
    report.timeline_buckets = metrics.bucket_timeline();
    report.started_at_unix_s = metrics.started_at_unix_s();
    report.histograms = metrics.histograms();
    report.errors = metrics.why.errors.report();
    report.phases = metrics.phases.reports();
    report.unacknowledged = metrics.unacknowledged;
    if let Some(n) = config.connections {
        let l = &report.summary.overall.latency;
        report.ordering = Some(report::OrderingReport {
            connections: n,
            mean_in_flight: if wall_s > 0.0 {
                l.mean_us * l.count as f64 / 1e6 / wall_s
            } else {
                0.0
            },
            ..report::OrderingReport::default()
        });
    } else {
        report.session_order = Some(report::SessionOrderReport::default());
    }
}

/// The knee of an open-loop run, once the connections opened are counted.
pub(super) fn add_knee(
    report: &mut ReplayReport,
    config: &ReplayConfig,
    metrics: &Metrics,
    wall_s: f64,
) {
    let Some(schedule) = &report.options.open_loop else {
        return;
    };
    let pacing = schedule.pacing();
    let connections = report
        .connection_limit
        .as_ref()
        .map(|l| l.peak_open)
        .filter(|n| *n > 0)
        .or_else(|| config.connections.map(|n| n as u64 * config.clones as u64))
        .unwrap_or(report.connections_opened);
    report.knee = measure::knee::find(
        &measure::knee::Schedule {
            pacing: &pacing,
            started_at_unix_s: report.started_at_unix_s,
            duration_s: config.duration.map_or(wall_s, |d| d.as_secs_f64()),
            connections,
        },
        &metrics.buckets(),
    );
}

/// The query shapes: the feed's (with their recorded figures) and the lanes' replayed figures;
/// the slowest requests with the feed's shapes and applications; the plans' documents examined
/// over the run.
pub(super) fn add_shapes(report: &mut ReplayReport, metrics: &Metrics, source: &SourceResult) {
    let built = report::shapes::of(&source.shapes, &metrics.shapes);
    report.shapes = built.shapes;
    report.histograms.per_shape = built.replayed;
    report.recorded.per_shape = built.recorded;
    report.slowest = metrics.why.slowest(&source.shapes, &source.applications);
    report.count_plans();
}

/// What was sent, skipped and read, and whether the run completed. `run`: the run's own counters
/// (the feed's and the order's), for the report of a replay into one target; an A/B target's
/// report has not counted them so far (`None`: they read 0).
pub(super) fn add_counts(
    report: &mut ReplayReport,
    target: &TargetState,
    run: Option<&RunCounters>,
    source: &SourceResult,
) {
    let c = &target.counters;
    let none = RunCounters::default();
    let r = run.unwrap_or(&none);
    report.sent = get(&c.sent);
    report.compressed = get(&c.compressed);
    report.connections_opened = get(&c.connections_opened);
    report.stray_replies = get(&c.stray_replies);
    report.retried_not_primary = get(&target.servers.retried);
    report.retried_dropped_connection = get(&target.servers.retried_dropped);
    report.skipped = source
        .skipped
        .iter()
        .map(|(k, v)| (k.to_string(), *v))
        .collect();
    report.skipped.insert("filtered".into(), source.filtered);
    report.snapshot_cut = source.snapshot_cut.clone();
    if report.snapshot_cut.is_some() {
        report.skipped.entry("before_snapshot".into()).or_insert(0);
    }
    report.filtered_by = source
        .filtered_by
        .iter()
        .map(|(k, v)| (k.to_string(), *v))
        .collect();
    report
        .skipped
        .insert("cursor_not_found".into(), get(&c.cursor_not_found));
    report.skipped.insert(
        "after_deadline".into(),
        get(&c.after_deadline) + get(&r.after_deadline),
    );
    if let Some(o) = &mut report.ordering {
        o.followed_a_write = get(&r.ordered);
        o.waited = get(&r.order_waits);
        o.wait_s = get(&r.order_wait_ns) as f64 / 1e9;
    }
    // The same counters: with one lane per recorded connection, only sessions make requests wait.
    if let Some(o) = &mut report.session_order {
        o.followed = get(&r.ordered);
        o.waited = get(&r.order_waits);
        o.wait_s = get(&r.order_wait_ns) as f64 / 1e9;
    }
    if let Some(l) = &mut report.connection_limit {
        let s = &target.slots;
        l.peak_open = s.peak.load(std::sync::atomic::Ordering::Relaxed) as u64;
        l.waited = get(&s.waited);
        l.given_up = get(&s.given_up);
    }
    report.requests_read = source.requests_read;
    report.iterations = source.iterations;
    report.recorded_span_s = source.recorded_span_ns as f64 / 1e9;
    report.recorded = report::RecordedReport::of(&source.recorded_latency);
    report.capture_error = source.capture_error.clone();
    report.error = target.abort.reason();
    report.complete = report.error.is_none() && report.capture_error.is_none();
}

/// The run's own counters (the feed's and the order's) as an A/B report's `run`; each target's
/// report counts only its own.
pub(super) fn run_report(config: &ReplayConfig, r: &RunCounters) -> report::run::RunReport {
    let (followed, waited) = (get(&r.ordered), get(&r.order_waits));
    let wait_s = get(&r.order_wait_ns) as f64 / 1e9;
    report::run::RunReport {
        after_deadline: get(&r.after_deadline),
        ordering: config.connections.map(|n| report::OrderingReport {
            connections: n,
            followed_a_write: followed,
            waited,
            wait_s,
            mean_in_flight: 0.0,
        }),
        session_order: config
            .connections
            .is_none()
            .then_some(report::SessionOrderReport {
                followed,
                waited,
                wait_s,
            }),
    }
}
