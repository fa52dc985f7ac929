//! What belongs to the run, whatever its targets: the clock, the pacing, the read-ahead budget,
//! the run's settings and abort signal, what the feed hands every target, and the counters of the
//! feed and of the order between requests.

use super::abort::Abort;
use super::budget::Budget;
use super::counter::OwnLine;
use crate::replay::measure::observed::PairSink;
use crate::replay::pacing::Pacing;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// One per replay, shared by the feed, every lane and every target (A/B included).
pub struct Run {
    pub pacing: Pacing,
    /// The replay's clock: every due time is an offset from it.
    pub start: Instant,
    /// `--duration`: nothing due after it is sent.
    pub deadline: Option<Instant>,
    /// The read-ahead: how far the feed may run ahead of the lanes.
    pub budget: Budget,
    pub op_timeout: Duration,
    /// How long a getMore waits for the live reply that opens its cursor.
    pub cursor_wait: Duration,
    /// A/B replay: the per-target observations of each request go here.
    pub pairs: Option<Arc<dyn PairSink>>,
    /// `--explain`: the shapes the feed numbers, shared by every target's explains.
    pub plan_shapes: Option<Arc<crate::replay::explain::PlanShapes>>,
    /// Stops the feed and every lane. With one target it is the target's own signal (the
    /// target's failure is the run's); in A/B, each target has its own and this one goes off
    /// when all of them did, or on a stop signal.
    pub abort: Arc<Abort>,
    pub counters: RunCounters,
}

/// The feed's counters and the order's, bumped without the metrics lock.
#[derive(Default)]
pub struct RunCounters {
    /// Requests handed to the lanes (the replay's whole count once the capture is read).
    pub routed: OwnLine,
    /// A/B replay: requests handed to every target by the paired lanes.
    pub paired: AtomicU64,
    /// Requests the feed never handed to a lane: due after `--duration` (each target's lanes
    /// count theirs apart).
    pub after_deadline: AtomicU64,
    /// `--connections N`: requests that followed a write on another connection, those that had to
    /// wait for it, and the time they waited.
    pub ordered: AtomicU64,
    pub order_waits: AtomicU64,
    pub order_wait_ns: AtomicU64,
}
