//! `mongotape replay`: reissues a capture against a server at a chosen pace and concurrency, rewriting
//! what must change, and measures what the server spends. Options and rules: `docs/replay.md`.
//!
//! - [`config`]: the options and the errors before replaying; `progress`: `--progress`.
//! - [`source`]: the capture reader thread (pairing with recorded replies, read-ahead), with
//!   [`filters`] (what is replayed) and [`router`] (which replay connection each copy goes to).
//! - [`request`]: what a recorded request is, decided once; [`legacy`]: legacy opcodes as commands.
//! - [`rewrite`]: what a recorded request becomes in each copy (sessions, databases, cursors, cluster
//!   time), with [`db_map`] (`--db-map` and clones) and [`sessions`] (recorded to live `lsid`s);
//!   [`ids`]: new ObjectId `_id`s for the inserts of every pass after the first.
//! - [`schedule`]: pacing and the state the replay connections share; [`lane`]: one connection.
//! - [`conn`], [`auth`]: a minimal MongoDB connection with its own handshake and SCRAM; [`target`]:
//!   the `--target` URI.
//! - [`cursors`]: recorded to live cursor ids. [`outcome`]: reading and comparing replies.
//! - [`metrics`], [`server`], [`report`]: what is measured and reported; [`phases`]: per step
//!   marker; `--html`: [`crate::report::html::replay`].

pub mod auth;
pub mod config;
pub mod conn;
pub mod cursors;
pub mod db_map;
pub mod filters;
pub mod ids;
pub mod lane;
pub mod legacy;
pub mod metrics;
pub mod outcome;
pub mod phases;
mod progress;
pub mod raw;
pub mod report;
pub mod request;
pub mod rewrite;
pub mod router;
pub mod schedule;
pub mod server;
pub mod sessions;
pub mod source;
pub mod target;

use crate::capture::CaptureReader;
use crate::report::summary::ReportSummary;
use config::options_report;
pub use config::{ReplayConfig, ReplayError};
use conn::{Conn, Target};
pub use filters::Filters;
use metrics::Metrics;
use progress::progress_bar;
use report::{ReplayReport, ReplayerReport, ServerReport};
pub use router::Lanes;
pub use schedule::Pacing;
use schedule::{Abort, Budget, Counters, Shared};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};

/// Replays a capture. Returns a report even when the target failed part-way (`report.error`).
pub fn run(config: ReplayConfig) -> Result<ReplayReport, ReplayError> {
    let target = Target::parse(&config.target)?;
    match config.pacing {
        Pacing::Recorded { speed } if !(speed > 0.0 && speed.is_finite()) => {
            return Err(ReplayError::Option(
                "--speed must be a positive number".into(),
            ))
        }
        Pacing::Rate { ops_per_s } if !(ops_per_s > 0.0 && ops_per_s.is_finite()) => {
            return Err(ReplayError::Option(
                "--rate must be a positive number".into(),
            ))
        }
        _ => {}
    }
    if config.connections == Some(0) || config.clones == 0 {
        return Err(ReplayError::Option(
            "--connections and --clones must be at least 1".into(),
        ));
    }
    // Fails early on a file that is not a capture at all.
    drop(CaptureReader::open(&config.capture)?);
    let file_len = std::fs::metadata(&config.capture)
        .map(|m| m.len())
        .unwrap_or(0);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(ReplayError::Runtime)?;
    Ok(runtime.block_on(replay(config, target, file_len)))
}

async fn replay(config: ReplayConfig, target: Target, file_len: u64) -> ReplayReport {
    let tick = server::clock_tick_s();
    let mut report = ReplayReport {
        mongotape_version: env!("CARGO_PKG_VERSION").into(),
        capture: config.capture.display().to_string(),
        target: Target::redact(&config.target),
        options: options_report(&config),
        ..ReplayReport::default()
    };
    let mut server = ServerReport {
        pid: config.server_pid,
        ..ServerReport::default()
    };
    if config.server_pid.is_some() {
        server.pid_source = Some("--server-pid".into());
    } else if let Some(port) = target
        .addr
        .rsplit_once(':')
        .and_then(|(host, p)| is_local(host).then_some(p))
        .and_then(|p| p.parse().ok())
    {
        server.pid = server::find_listener_pid(port);
        server.pid_source = server.pid.map(|_| "port".into());
    }

    // A first connection: checks the target before anything starts, and reads serverStatus.
    let mut status_conn = match Conn::connect(&target, config.op_timeout).await {
        Ok(c) => Some(c),
        Err(e) => {
            report.error = Some(e.to_string());
            report.server = server;
            return report;
        }
    };
    if config.server_status {
        if let Some(c) = status_conn.as_mut() {
            match server::server_status(c).await {
                Ok(s) => server.status_before = Some(s),
                Err(e) => server.status_error = Some(e),
            }
        }
    }
    let server_cpu_before = server.pid.and_then(|p| server::cpu_seconds(p, tick));
    let own_cpu_before = server::own_cpu_seconds(tick);

    let start = tokio::time::Instant::now();
    let shared = Arc::new(Shared {
        target,
        pacing: config.pacing,
        start,
        deadline: config.duration.map(|d| start + d),
        cursors: cursors::Cursors::default(),
        metrics: Mutex::new(Metrics::new(start.into_std())),
        budget: Budget::new(config.read_ahead_bytes.max(1)),
        abort: Abort::default(),
        counters: Counters::default(),
        op_timeout: config.op_timeout,
        cursor_wait: config.op_timeout,
    });
    if let Some(pid) = server.pid {
        let mut metrics = shared.metrics.lock().expect("metrics lock");
        metrics.phases.measure_server(pid, tick, server_cpu_before);
    }
    let source_cfg = source::SourceConfig {
        capture: config.capture.clone(),
        repeat: match (config.repeat, config.duration) {
            (Some(r), _) => Some(r),
            (None, Some(_)) => None,
            (None, None) => Some(1),
        },
        clones: config.clones,
        lanes: config.connections.map_or(Lanes::PerRecorded, Lanes::Fixed),
        filters: config.filters.clone(),
        db_map: config.db_map.clone(),
        pass_barrier: !config.pacing.open_loop(),
    };
    let progress_pos = Arc::new(AtomicU64::new(0));
    let (done_tx, done_rx) = tokio::sync::oneshot::channel();
    {
        let shared = shared.clone();
        let handle = tokio::runtime::Handle::current();
        let pos = progress_pos.clone();
        std::thread::Builder::new()
            .name("mongotape-capture".into())
            .spawn(move || {
                let result = source::run(source_cfg, shared, handle, pos);
                let _ = done_tx.send(result);
            })
            .expect("spawn the capture reader thread");
    }
    let bar = config.progress.then(|| {
        progress_bar(
            shared.clone(),
            progress_pos.clone(),
            file_len.saturating_mul(config.repeat.unwrap_or(1).max(1)),
        )
    });

    let interrupted = {
        let shared = shared.clone();
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                shared.abort.trigger("interrupted (Ctrl-C)".into());
            }
        })
    };
    let source = done_rx.await.unwrap_or_default();
    for lane in source.lanes {
        if let Err(e) = lane.await {
            shared
                .abort
                .trigger(format!("internal: a replay connection failed: {e}"));
        }
    }
    interrupted.abort();
    let wall = start.elapsed();
    if let Some((bar, task)) = bar {
        task.abort();
        bar.finish_and_clear();
    }

    let server_cpu_after = server.pid.and_then(|p| server::cpu_seconds(p, tick));
    let own_cpu_after = server::own_cpu_seconds(tick);
    if config.server_status && !shared.abort.is_set() {
        if let Some(c) = status_conn.as_mut() {
            match server::server_status(c).await {
                Ok(s) => server.status_after = Some(s),
                Err(e) => server.status_error = Some(e),
            }
        }
    }
    if let (Some(b), Some(a)) = (&server.status_before, &server.status_after) {
        server.delta = Some(serde_json::json!({
            "opcounters": server::delta(&b.opcounters, &a.opcounters),
            "network": server::delta(&b.network, &a.network),
            "connections": server::delta(&b.connections, &a.connections),
        }));
    }

    let mut metrics = shared.metrics.lock().expect("metrics lock");
    metrics.phases.finish(server_cpu_after);
    let ops = metrics.ops();
    let wall_s = wall.as_secs_f64();
    let per_1k = |cpu: f64| (ops > 0).then(|| cpu / ops as f64 * 1000.0);
    if let (Some(b), Some(a)) = (server_cpu_before, server_cpu_after) {
        server.cpu_s = Some(a - b);
        server.cpu_s_per_1k_ops = per_1k(a - b);
    }
    let replayer = match (own_cpu_before, own_cpu_after) {
        (Some(b), Some(a)) => ReplayerReport {
            cpu_s: Some(a - b),
            cpu_us_per_op: per_1k(a - b).map(|ms| ms * 1000.0),
        },
        _ => ReplayerReport::default(),
    };
    let label = config.label.clone().unwrap_or_else(|| {
        config
            .capture
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default()
    });
    report.summary = ReportSummary {
        kind: "replay".into(),
        label,
        source: report.capture.clone(),
        wall_s,
        ops,
        ops_per_s: if wall_s > 0.0 {
            ops as f64 / wall_s
        } else {
            0.0
        },
        overall: metrics.overall(wall_s),
        per_command: metrics.per_command(wall_s),
        server_cpu_s_per_1k_ops: server.cpu_s_per_1k_ops,
        client_cpu_us_per_op: replayer.cpu_us_per_op,
        client_bound_share: None,
    };
    report.per_namespace = metrics.per_namespace(wall_s);
    report.lag = metrics.lag();
    report.divergences = metrics.divergences();
    report.timeline = metrics.timeline();
    report.phases = metrics.phases.reports();
    report.unacknowledged = metrics.unacknowledged;
    drop(metrics);
    let c = &shared.counters;
    report.sent = Counters::get(&c.sent);
    report.compressed = Counters::get(&c.compressed);
    report.connections_opened = Counters::get(&c.connections_opened);
    report.stray_replies = Counters::get(&c.stray_replies);
    report.skipped = source
        .skipped
        .iter()
        .map(|(k, v)| (k.to_string(), *v))
        .collect();
    report.skipped.insert("filtered".into(), source.filtered);
    report.skipped.insert(
        "cursor_not_found".into(),
        Counters::get(&c.cursor_not_found),
    );
    report
        .skipped
        .insert("after_deadline".into(), Counters::get(&c.after_deadline));
    report.requests_read = source.requests_read;
    report.iterations = source.iterations;
    report.recorded_span_s = source.recorded_span_ns as f64 / 1e9;
    report.capture_error = source.capture_error;
    report.error = shared.abort.reason();
    report.complete = report.error.is_none() && report.capture_error.is_none();
    report.server = server;
    report.replayer = replayer;
    report
}

fn is_local(host: &str) -> bool {
    matches!(
        host,
        "127.0.0.1" | "localhost" | "[::1]" | "::1" | "0.0.0.0"
    ) || host.starts_with("127.")
}
