//! A/B replay: one capture replayed into several targets at once (`replay --target A --target B
//! [--target A2]`), through the same pipeline as a single target. The capture is read, understood
//! and rewritten once; each lane is a paired lane (`lane::paired`) that sends every request to
//! each target on a connection of that target's own, due at the same time. Each target keeps its
//! own cursors, connections, metrics, server CPU probe and report (`replay::conclude`); the
//! [`collect::Collector`] pairs their latencies and replies for each request. Then
//! [`report::AbReport`]: the targets side by side with ratio intervals ([`stats`]) and the reply
//! differences with the noise a second baseline shows taken out ([`diff`]). `docs/ab.md`.
//!
//! Layers, bottom up: order stats < control diff < verdict < collect model < config findings tables < report < shapes < text

pub mod collect;
mod config;
pub mod control;
pub mod diff;
pub mod findings;
pub mod model;
pub mod order;
pub mod report;
pub mod shapes;
pub mod stats;
pub mod tables;
mod text;
pub mod verdict;

use super::client::{Target, Topology};
use super::route::abort::Abort;
use super::route::run::Run;
use super::route::shared::Shared;
use super::route::target::TargetState;
use super::state::{run_state, target_state};
use super::{conclude, feed_lanes, prepare, wait_for_start, Ready, ReplayConfig, ReplayError};
use collect::Collector;
pub use config::{AbConfig, AbTarget};
use report::AbReport;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use tokio::time::Instant;

/// Fields every server fills from its own clock: not compared without a second baseline to show
/// them as noise.
pub const SERVER_CLOCK_FIELDS: &[&str] = &[
    "$clusterTime.clusterTime",
    "$clusterTime.signature.hash",
    "operationTime",
    "electionId",
    "opTime.ts",
    "opTime.t",
    "localTime",
    "connectionId",
];

/// Replays `config`'s capture into every target of `ab`.
pub fn run(config: ReplayConfig, mut ab: AbConfig) -> Result<AbReport, ReplayError> {
    if !(2..=3).contains(&ab.targets.len()) {
        return Err(ReplayError::Option(
            "an A/B replay takes two or three --target (A, B, and optionally A2)".into(),
        ));
    }
    if config.metrics.is_some() || config.shard.is_some() {
        return Err(ReplayError::Option(
            "--metrics and --shard replay into one target only".into(),
        ));
    }
    config.pacing.validate().map_err(ReplayError::Option)?;
    if config.connections == Some(0) || config.clones == 0 {
        return Err(ReplayError::Option(
            "--connections and --clones must be at least 1".into(),
        ));
    }
    if ab.roles().baseline.is_none() {
        ab.diff
            .ignored
            .extend(SERVER_CLOCK_FIELDS.iter().map(|s| s.to_string()));
    }
    let labels: Vec<String> = ab.targets.iter().map(|t| t.label.clone()).collect();
    super::restore::check(&config, &labels)?;
    let (file_len, runtime) = super::open_inputs(&config)?;
    let mut targets = Vec::new();
    for t in &ab.targets {
        targets.push(runtime.block_on(Target::parse(&t.uri))?);
    }
    Ok(runtime.block_on(replay(config, ab, targets, file_len)))
}

/// Each target's own configuration: its URI, label and server process.
fn config_of(config: &ReplayConfig, t: &AbTarget) -> ReplayConfig {
    let mut c = config.clone();
    c.target = t.uri.clone();
    c.label = Some(t.label.clone());
    c.server_pid = t.server_pid;
    c
}

/// Each target's state, with its own abort signal: one failing, the others go on.
fn target_states(
    ready: &mut [Ready],
    configs: &[ReplayConfig],
    run: &Arc<Run>,
) -> Vec<Arc<TargetState>> {
    ready
        .iter_mut()
        .zip(configs)
        .map(|(r, c)| {
            let host = r.servers.lane_host();
            let servers = std::mem::replace(&mut r.servers, Topology::single(host));
            let abort = Arc::new(Abort::default());
            let mut s = target_state(c, run, r.target.clone(), servers, abort);
            s.observe = true;
            r.probe
                .watch_phases(&mut s.metrics.lock().expect("metrics lock").phases);
            Arc::new(s)
        })
        .collect()
}

async fn replay(
    config: ReplayConfig,
    ab: AbConfig,
    targets: Vec<Target>,
    file_len: u64,
) -> AbReport {
    let configs: Vec<ReplayConfig> = ab.targets.iter().map(|t| config_of(&config, t)).collect();
    let mut ready = Vec::new();
    for (c, target) in configs.iter().zip(targets) {
        match prepare(c, target, false).await {
            Ok(r) => ready.push(r),
            Err(failed) => return AbReport::failed(&config, &ab, failed),
        }
    }
    if let Err(why) = wait_for_start(config.start_at).await {
        let mut first = ready.swap_remove(0).report;
        first.error = Some(why);
        return AbReport::failed(&config, &ab, first);
    }
    let start = Instant::now();
    let plan_shapes = config
        .explain
        .then(|| Arc::new(super::explain::PlanShapes::new(config.max_shapes)));
    let collector = Arc::new(Collector::new(
        ab.roles(),
        ab.diff.clone(),
        ab.bootstrap.seed,
    ));
    // The run's own state, the same for every target: one clock, one pacing, one read-ahead.
    let mut run = run_state(&config, start, plan_shapes);
    run.pairs = Some(collector.clone());
    let run = Arc::new(run);
    let sides = target_states(&mut ready, &configs, &run);
    let shared = Arc::new(Shared {
        run,
        targets: sides.clone(),
    });
    let restorers = ready.iter().filter_map(|r| r.restorer.clone()).collect();
    let before_pass = super::restore::between_passes(restorers);
    let progress = Arc::new(AtomicU64::new(0));
    let source = feed_lanes(&config, &shared, file_len, progress, before_pass).await;
    let wall_s = start.elapsed().as_secs_f64();
    let run = super::tally::run_report(&config, &shared.run.counters);
    let mut reports = Vec::new();
    for ((r, side), c) in ready.into_iter().zip(&sides).zip(&configs) {
        // The run's counters (the order's, the feed's skips) are not in the targets' reports:
        // they are the A/B report's `run`.
        let restorer = r.restorer.clone();
        let mut report = conclude(c, r.report, r.probe, side, None, wall_s, &source).await;
        report.restore = restorer.map(|r| r.report());
        reports.push(report);
    }
    drop(shared);
    let uris: Vec<(String, String)> = (ab.targets.iter())
        .map(|t| (t.label.clone(), t.uri.clone()))
        .collect();
    let between = super::check_state::check_all(&config, &uris, &mut reports).await;
    let mut collected = collector.take();
    let labels: Vec<String> = ab.targets.iter().map(|t| t.label.clone()).collect();
    let shapes = shapes::rows(
        &ab,
        &labels,
        &reports.iter().collect::<Vec<_>>(),
        &source.shapes,
        std::mem::take(&mut collected.per_shape),
    );
    let mut report = AbReport::build(&config, &ab, reports, collected, shapes, run, wall_s);
    report.state_between = between;
    report
}
