//! What every lane shares: the run's own state ([`Run`]: the clock, the pacing, the read-ahead
//! budget, the run's settings, and what the feed hands every target), and one target's (its
//! servers, live cursors, metrics, connection slots, abort signal and counters).

use super::abort::Abort;
use super::budget::Budget;
use super::cursors::Cursors;
use super::slots::ConnSlots;
use crate::replay::client::{Target, Topology};
use crate::replay::measure::metrics::Metrics;
use crate::replay::measure::observed::PairSink;
use crate::replay::pacing::Pacing;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

/// What belongs to the run, whatever the targets: one per replay, shared by the feed, every lane
/// and every target's state (A/B included).
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
}

/// What every replay connection shares.
pub struct Shared {
    /// The run's own state, the same for every target.
    pub run: Arc<Run>,
    pub target: Target,
    /// Where lanes connect: the server, the replica set's primary (and secondaries), the mongos.
    pub servers: Topology,
    pub cursors: Cursors,
    pub metrics: Mutex<Metrics>,
    /// The replay connections open at once (`--max-open-connections`).
    pub slots: Arc<ConnSlots>,
    pub abort: Abort,
    pub counters: Counters,
    /// A/B replay (`replay::ab`): the targets every request goes to, each with its own state. Empty
    /// for one target: then this is the target's own state.
    pub targets: Vec<Arc<Shared>>,
    /// Keep each reply's body for the A/B comparison (set on each A/B target's state).
    pub observe: bool,
    /// `--explain`: this target's explains.
    pub plans: Option<std::sync::Arc<crate::replay::explain::PlanRunner>>,
}

impl Shared {
    /// The feed announces a cursor to every target (each resolves its own live id).
    pub fn expect_cursor(&self, scope: crate::replay::request::Scope, recorded: i64) {
        if self.targets.is_empty() {
            self.cursors.expect(scope, recorded);
        }
        for t in &self.targets {
            t.cursors.expect(scope, recorded);
        }
    }
}

/// Counters the connections bump without the metrics lock.
#[derive(Default)]
pub struct Counters {
    pub connections_opened: AtomicU64,
    pub cursor_not_found: AtomicU64,
    pub after_deadline: AtomicU64,
    pub stray_replies: AtomicU64,
    pub sent: AtomicU64,
    /// Requests handed to the lanes (the replay's whole count once the capture is read).
    pub routed: OwnLine,
    /// Requests sent compressed (OP_COMPRESSED with the compressor the target agreed to).
    pub compressed: AtomicU64,
    /// `--connections N`: requests that followed a write on another connection, those that had to
    /// wait for it, and the time they waited.
    pub ordered: AtomicU64,
    pub order_waits: AtomicU64,
    pub order_wait_ns: AtomicU64,
}

/// A counter on a cache line of its own. The capture reader bumps `routed` for every request
/// while the lanes bump `sent`: on one line, the line would move between the cores twice per
/// request.
#[derive(Default)]
#[repr(align(128))]
pub struct OwnLine(pub AtomicU64);

impl Counters {
    pub fn get(c: &AtomicU64) -> u64 {
        c.load(Ordering::Relaxed)
    }

    pub fn bump(c: &AtomicU64) {
        c.fetch_add(1, Ordering::Relaxed);
    }
}
