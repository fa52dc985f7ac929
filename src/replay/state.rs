//! The run's state and a target's ([`crate::replay::route::shared`]), built from the replay's
//! configuration: for a replay into one target and for each target of an A/B replay alike.

use super::client::{Target, Topology};
use super::config::{ReplayConfig, ReplayError};
use super::explain;
use super::measure::{metrics::Metrics, why::Why};
use super::report::ConnectionLimitReport;
use super::route::abort::Abort;
use super::route::budget::Budget;
use super::route::cursors::Cursors;
use super::route::run::{Run, RunCounters};
use super::route::slots::ConnSlots;
use super::route::target::{TargetCounters, TargetState};
use crate::fault::FaultsInjected;
use std::sync::{Arc, Mutex};
use tokio::time::Instant;

/// What belongs to the run: its clock starting at `start`, its pacing, read-ahead and settings.
pub(crate) fn run_state(
    config: &ReplayConfig,
    start: Instant,
    plan_shapes: Option<Arc<explain::PlanShapes>>,
) -> Run {
    Run {
        pacing: config.pacing.per_shard(config.shard.map_or(1, |s| s.count)),
        start,
        deadline: config.duration.map(|d| start + d),
        budget: Budget::new(config.read_ahead_bytes.max(1)),
        op_timeout: config.op_timeout,
        cursor_wait: config.op_timeout,
        pairs: None,
        plan_shapes,
        abort: Arc::new(Abort::default()),
        counters: RunCounters::default(),
    }
}

/// One target's state in the run `run`, stopped by `abort`.
pub(crate) fn target_state(
    config: &ReplayConfig,
    run: &Run,
    target: Target,
    servers: Topology,
    abort: Arc<Abort>,
) -> TargetState {
    let start = run.start;
    let plans = run.plan_shapes.as_ref().map(|shapes| {
        Arc::new(explain::PlanRunner::start(
            shapes.clone(),
            target.clone(),
            servers.lane_host(),
            config.op_timeout,
        ))
    });
    TargetState {
        target,
        servers,
        cursors: Cursors::default(),
        metrics: Mutex::new(
            Metrics::new(start.into_std())
                .with_why(Why::new(config.slowest, config.capture_redacted()))
                .with_command_seconds(config.pacing.open_loop()),
        ),
        slots: ConnSlots::new(config.connection_limit().0),
        abort,
        counters: TargetCounters::default(),
        observe: false,
        plans,
    }
}

/// The connection limit, and how many connections the replay would open at once without it (from
/// the capture's summary, else the capture read once for it, with one lane per recorded
/// connection); said before starting
/// when some connections will wait. With the faults the capture says were injected while
/// recording (the same read finds them).
pub(super) fn connection_limit(
    config: &ReplayConfig,
) -> Result<(ConnectionLimitReport, Option<FaultsInjected>), ReplayError> {
    let (limit, from) = config.connection_limit();
    let clones = u64::from(config.clones.max(1));
    let (peak, faults) =
        super::source::peak::peak_open(&config.inputs, &config.filters.connections)?;
    let wanted = match config.connections {
        Some(n) => n as u64 * clones,
        None => peak * clones,
    };
    if let Some(f) = &faults {
        tracing::warn!("the capture says {}", f.text());
    }
    if wanted > limit as u64 {
        let why = match config.max_open_connections {
            Some(_) => "--max-open-connections".to_owned(),
            None => format!("--max-open-connections; now {from}"),
        };
        tracing::info!(
            "the capture has {wanted} connections open at once at most; replaying at most {limit} \
             at a time ({why})"
        );
    }
    let report = ConnectionLimitReport {
        limit,
        from,
        wanted,
        ..ConnectionLimitReport::default()
    };
    Ok((report, faults))
}
