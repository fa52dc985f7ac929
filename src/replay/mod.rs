//! `mongotape replay`: reissues a capture against a server at a chosen pace and concurrency, rewriting
//! what must change, and measures what the server spends. Options and rules: `docs/replay.md`.
//!
//! The folders are the pipeline, in the order a recorded request goes through it:
//!
//! 1. [`source`]: the capture feed, a thread that reads the capture (once per pass), pairs each
//!    request with its recorded reply, applies the [`source::filters`], and copies each request for
//!    every clone ([`source::markers`]: step markers travel the same way; [`source::shard`]: the
//!    part of the capture a `--shard I/N` process replays).
//! 2. [`request`]: what a recorded request is, decided once ([`request::understand`], legacy
//!    opcodes as commands), and what it becomes in each copy ([`request::rewrite`], with database
//!    mapping, live sessions and new `_id`s).
//! 3. [`route`]: which lane each copy goes to ([`route::Router`]), when ([`pacing`]), as what
//!    ([`route::op::Op`]), after what ([`route::order`]), and the state the lanes share
//!    ([`route::shared`]: the [`route::run`]'s state, with the read-ahead [`route::budget`], and
//!    each [`route::target`]'s, with its live [`route::cursors`]).
//! 4. [`lane`]: one replay connection per lane: wait, patch cursor ids, send, read the reply. Over
//!    [`client`], a minimal MongoDB client (connection, handshake, SCRAM, the `--target` URI).
//! 5. [`measure`]: the reply's outcome against the recorded one, metrics, step phases, server CPU.
//!
//! Several targets at once (`--target A --target B [--target A2]`): [`ab`], the same pipeline with
//! paired lanes (`lane::paired`) and a report comparing the targets.
//!
//! Around the run: [`config`] (options, errors before replaying), [`probe`] (the server measured
//! before and after), `progress` (`--progress`), [`endpoint`] (`--metrics`), [`report`] (the
//! run's report, JSON and text; its `--html` page is [`crate::report::html::replay`]), [`merge`]
//! (`mongotape merge`: the reports of a sharded replay added up exactly), [`gates`] (the pass/fail
//! thresholds judged on the report, and how the run ended). This file starts the run and puts the
//! report together, with `state` building the run's state and each target's, and `tally` filling
//! the report in from what was measured. `check_state` (`--check-state`): each target's end
//! state against the capture's, after the run.
//!
//! Dependencies never point back up the pipeline (checked by `tests/layers.rs`):
//!
//! Layers, bottom up: pacing client names < measure < request report explain < route merge gates < lane endpoint progress < source < config < state tally probe restore check_state < mod.rs < ab
//!
//! `pacing` and `client` know only what is outside `replay/`, and `names` (the command, database
//! and namespace names a request and its copies share) nothing at all; `measure` reads `client` (for
//! `serverStatus`) and `pacing` (the knee); the run's `report` and the shard `merge` beside it
//! sit below `route`, and `gates`, which reads only the report, beside them. This file (`mod.rs`)
//! runs one target; `ab` runs several with its steps (`prepare`, `feed_lanes`, `conclude`): one
//! run, a list of target states.

pub mod ab;
mod check_state;
pub mod client;
pub mod config;
pub mod endpoint;
pub mod explain;
pub mod gates;
pub mod lane;
pub mod measure;
pub mod merge;
pub mod names;
pub mod pacing;
pub mod probe;
mod progress;
pub mod report;
pub mod request;
pub mod restore;
pub mod route;
pub mod source;
mod state;
mod tally;

use crate::capture::CaptureSet;
use crate::fault::FaultsInjected;
use client::{Kind, Target, Topology};
use config::options_report;
pub use config::{ReplayConfig, ReplayError};
pub use pacing::Pacing;
use probe::ServerProbe;
use progress::progress_bar;
use report::ReplayReport;
use route::run::{Run, RunCounters};
use route::shared::Shared;
use route::target::TargetState;
pub use route::Lanes;
pub use source::filters::Filters;
use source::SourceResult;
use state::{run_state, target_state};
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use tokio::time::Instant;

/// Replays a capture. Returns a report even when the target failed part-way (`report.error`).
pub fn run(config: ReplayConfig) -> Result<ReplayReport, ReplayError> {
    config.pacing.validate().map_err(ReplayError::Option)?;
    if config.connections == Some(0) || config.clones == 0 {
        return Err(ReplayError::Option(
            "--connections and --clones must be at least 1".into(),
        ));
    }
    // A bad --metrics address fails before anything starts.
    let metrics = config
        .metrics
        .as_deref()
        .map(crate::metrics::MetricsServer::bind)
        .transpose()?;
    let label = config.label.clone().unwrap_or_else(|| "A".into());
    let mut labels = vec![label, "A".to_owned()];
    labels.dedup();
    restore::check(&config, &labels)?;
    let (file_len, runtime) = open_inputs(&config)?;
    let target = runtime.block_on(Target::parse(&config.target))?;
    let limit = state::connection_limit(&config)?;
    Ok(runtime.block_on(replay(config, target, file_len, metrics, limit)))
}

/// Checks that the inputs are captures (failing early on a file that is not one at all), sums their
/// sizes for the progress bar, and starts the runtime the replay runs on.
fn open_inputs(config: &ReplayConfig) -> Result<(u64, tokio::runtime::Runtime), ReplayError> {
    let set = CaptureSet::open(&config.inputs)?;
    let file_len = set
        .paths()
        .iter()
        .map(|p| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0))
        .sum();
    drop(set);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(config::worker_threads(config.threads))
        .enable_all()
        .build()
        .map_err(ReplayError::Runtime)?;
    Ok((file_len, runtime))
}

async fn replay(
    config: ReplayConfig,
    target: Target,
    file_len: u64,
    metrics: Option<crate::metrics::MetricsServer>,
    (limit, faults): (report::ConnectionLimitReport, Option<FaultsInjected>),
) -> ReplayReport {
    let mut ready = match prepare(&config, target, true).await {
        Ok(r) => r,
        Err(report) => return report,
    };
    ready.report.connection_limit = Some(limit);
    ready.report.faults = faults;
    if let Err(why) = wait_for_start(config.start_at).await {
        ready.report.error = Some(why);
        return ready.report;
    }

    let start = Instant::now();
    let plan_shapes = config
        .explain
        .then(|| Arc::new(explain::PlanShapes::new(config.max_shapes)));
    let run = Arc::new(run_state(&config, start, plan_shapes));
    // One target: its failure is the run's, so it shares the run's abort signal.
    let target = Arc::new(target_state(
        &config,
        &run,
        ready.target.clone(),
        ready.servers,
        run.abort.clone(),
    ));
    ready
        .probe
        .watch_phases(&mut target.metrics.lock().expect("metrics lock").phases);
    let shared = Arc::new(Shared {
        run: run.clone(),
        targets: vec![target.clone()],
    });
    let progress_pos = Arc::new(AtomicU64::new(0));
    let endpoint = metrics.and_then(|server| {
        serve_metrics(server, &config, &run, &target, &progress_pos, file_len)
            .map_err(|e| tracing::warn!("{e}"))
            .ok()
    });
    let before_pass = restore::between_passes(ready.restorer.iter().cloned().collect());
    let source = feed_lanes(&config, &shared, file_len, progress_pos, before_pass).await;
    if let Some(endpoint) = endpoint {
        endpoint.abort();
    }
    let wall_s = start.elapsed().as_secs_f64();
    let run_counters = Some(&run.counters);
    let mut report = conclude(
        &config,
        ready.report,
        ready.probe,
        &target,
        run_counters,
        wall_s,
        &source,
    )
    .await;
    report.restore = ready.restorer.map(|r| r.report());
    check_state::check_one(&config, &mut report).await;
    report
}

/// A target ready to replay into: found, checked with a first connection, measured before.
pub(crate) struct Ready {
    pub report: ReplayReport,
    pub target: Target,
    pub servers: Topology,
    pub probe: ServerProbe,
    /// `--restore`: the target's, already loaded once.
    pub restorer: Option<Arc<restore::Restorer>>,
}

/// Finds the target's servers, restores the snapshot into it (`--restore`), connects the probe
/// and takes the readings before the run. On failure, the report that says why. `single`: the
/// run's only target.
pub(crate) async fn prepare(
    config: &ReplayConfig,
    target: Target,
    single: bool,
) -> Result<Ready, ReplayReport> {
    let mut report = ReplayReport {
        schema_version: crate::figures::SCHEMA_VERSION,
        kind: "replay".into(),
        mongotape_version: env!("CARGO_PKG_VERSION").into(),
        capture: config.capture.display().to_string(),
        target: target.display.clone(),
        options: options_report(config),
        shard: config.shard.map(|s| report::ShardReport {
            index: s.index,
            count: s.count,
            label: s.label(),
        }),
        ..ReplayReport::default()
    };
    let servers = match Topology::discover(&target, config.op_timeout).await {
        Ok(t) => t,
        Err(e) => {
            report.error = Some(e.to_string());
            return Err(report);
        }
    };
    report.topology = describe(&servers.kind());
    let restorer = match restore::first_load(config, single).await {
        Ok(r) => r,
        Err((why, restored)) => {
            report.error = Some(why);
            report.restore = restored;
            return Err(report);
        }
    };
    report.restore = restorer.as_ref().map(|r| r.report());
    let first = servers.lane_host();
    let mut probe = ServerProbe::locate(config, &first);
    if let Err(e) = probe.connect(&target, &first, config.op_timeout).await {
        report.error = Some(e.to_string());
        report.server = probe.into_server_report();
        return Err(report);
    }
    probe.before(config.server_status, config.idle_sample).await;
    Ok(Ready {
        report,
        target,
        servers,
        probe,
        restorer,
    })
}

/// The readings after the run, and the report of one target put together: from the target's
/// state, and the run's counters when the report has them ([`tally::add_counts`]).
pub(crate) async fn conclude(
    config: &ReplayConfig,
    mut report: ReplayReport,
    mut probe: ServerProbe,
    target: &TargetState,
    run: Option<&RunCounters>,
    wall_s: f64,
    source: &SourceResult,
) -> ReplayReport {
    // The explains still running end first: the server's readings after the run include them.
    if let Some(plans) = &target.plans {
        let finished = tokio::select! {
            plans = plans.finish(config.op_timeout) => plans,
            signal = stopped() => {
                let why = format!("interrupted ({signal}) while explaining");
                target.abort.trigger(why.clone());
                plans.cut(&format!("not explained: {why}"))
            }
        };
        report.plans = Some(finished);
    }
    let server_cpu_after = probe
        .after(config.server_status && !target.abort.is_set())
        .await;
    let mut metrics = target.metrics.lock().expect("metrics lock");
    metrics.phases.finish(server_cpu_after);
    report.load = probe.load();
    let (server, replayer) = probe.report(metrics.ops(), wall_s);
    tally::add_measurements(&mut report, config, &metrics, wall_s, &server, &replayer);
    drop(metrics);
    tally::add_counts(&mut report, target, run, source);
    let metrics = target.metrics.lock().expect("metrics lock");
    tally::add_knee(&mut report, config, &metrics, wall_s);
    tally::add_shapes(&mut report, &metrics, source);
    drop(metrics);
    report.server = server;
    let ops = report.summary.ops;
    report.replayer = report::ReplayerReport {
        threads: Some(config::worker_threads(config.threads)),
        reader_cpu_s: source.reader_cpu_s,
        reader_cpu_us_per_op: source
            .reader_cpu_s
            .filter(|_| ops > 0)
            .map(|s| s / ops as f64 * 1e6),
        ..replayer
    };
    report.warn_of_failures();
    report
}

/// `--start-at`: sleeps until then (a time already past starts at once); a stop signal meanwhile
/// ends the wait with the reason the report gives.
pub(crate) async fn wait_for_start(at: Option<std::time::SystemTime>) -> Result<(), String> {
    if let Some(wait) = at.and_then(|t| t.duration_since(std::time::SystemTime::now()).ok()) {
        tokio::select! {
            () = tokio::time::sleep(wait) => {}
            signal = stopped() => return Err(format!("interrupted ({signal}) before --start-at")),
        }
    }
    Ok(())
}

/// Runs the capture feed on its own thread until every lane it started is done, with the progress
/// bar and Ctrl-C watched meanwhile.
pub(crate) async fn feed_lanes(
    config: &ReplayConfig,
    shared: &Arc<Shared>,
    file_len: u64,
    progress_pos: Arc<AtomicU64>,
    before_pass: Option<source::BeforePass>,
) -> SourceResult {
    let source_cfg = source::SourceConfig {
        inputs: config.inputs.clone(),
        repeat: config.passes(),
        clones: config.clones,
        lanes: config.connections.map_or(Lanes::PerRecorded, Lanes::Fixed),
        filters: config.filters.clone(),
        db_map: config.db_map.clone(),
        pass_barrier: !config.pacing.open_loop(),
        shard: config.shard,
        unordered: config.unordered,
        max_shapes: config.max_shapes,
        before_pass,
        snapshot_cut: config.snapshot_cut.clone(),
    };
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
            file_len.saturating_mul(config.passes().unwrap_or(1).max(1)),
            config.duration,
        )
    });
    let interrupted = {
        let shared = shared.clone();
        tokio::spawn(async move {
            if let Some(signal) = stop_signal().await {
                shared.run.abort.trigger(format!("interrupted ({signal})"));
            }
        })
    };
    let mut source: SourceResult = done_rx.await.unwrap_or_default();
    for lane in std::mem::take(&mut source.lanes) {
        if let Err(e) = lane.await {
            shared
                .run
                .abort
                .trigger(format!("internal: a replay connection failed: {e}"));
        }
    }
    interrupted.abort();
    if let Some((bar, task)) = bar {
        task.abort();
        bar.finish_and_clear();
    }
    source
}

/// Ctrl-C, SIGTERM or SIGHUP (an ssh session that drops): each ends the replay with its report.
async fn stop_signal() -> Option<&'static str> {
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut term), Ok(mut hup)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::hangup()),
    ) else {
        return tokio::signal::ctrl_c().await.ok().map(|()| "Ctrl-C");
    };
    tokio::select! {
        r = tokio::signal::ctrl_c() => r.ok().map(|()| "Ctrl-C"),
        _ = term.recv() => Some("SIGTERM"),
        _ = hup.recv() => Some("SIGHUP"),
    }
}

/// The next stop signal; never, where none can be watched.
async fn stopped() -> &'static str {
    match stop_signal().await {
        Some(signal) => signal,
        None => std::future::pending().await,
    }
}

/// `--metrics`: live figures fed by every sample, served until the lanes are done.
fn serve_metrics(
    server: crate::metrics::MetricsServer,
    config: &ReplayConfig,
    run: &Arc<Run>,
    target: &Arc<TargetState>,
    progress_pos: &Arc<AtomicU64>,
    file_len: u64,
) -> Result<tokio::task::JoinHandle<()>, crate::metrics::MetricsError> {
    let live = Arc::new(measure::live::LiveMetrics::default());
    target.metrics.lock().expect("metrics lock").live = Some(live.clone());
    let progress = match (config.passes(), config.duration) {
        (None, Some(duration)) => endpoint::Progress::Time { duration },
        (passes, _) => endpoint::Progress::Bytes {
            total: file_len.saturating_mul(passes.unwrap_or(1).max(1)),
        },
    };
    let registry = endpoint::registry(
        run.clone(),
        target.clone(),
        live,
        progress_pos.clone(),
        progress,
    );
    // An address the user needs: its own target, kept by `-q` (which drops other info lines).
    tracing::info!(target: "mongotape::address", "metrics on http://{}/metrics", server.local_addr());
    server.serve(registry)
}

/// What the target turned out to be, for the report.
fn describe(kind: &Kind) -> String {
    match kind {
        Kind::Single(h) => format!("single server {h}"),
        Kind::ReplicaSet {
            name,
            primary,
            secondaries,
        } => format!(
            "replica set {name}, primary {primary}, {} secondar{}",
            secondaries.len(),
            if secondaries.len() == 1 { "y" } else { "ies" }
        ),
        Kind::Mongos(list) => format!(
            "{} mongos: {}",
            list.len(),
            list.iter()
                .map(|h| h.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}
