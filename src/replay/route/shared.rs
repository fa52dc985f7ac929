//! What every lane shares: the target, the pacing and the replay's clock, the live cursors, the
//! metrics, the read-ahead budget, the connection slots, the abort signal and the counters.

use super::abort::Abort;
use super::budget::Budget;
use super::cursors::Cursors;
use super::slots::ConnSlots;
use crate::replay::client::{Target, Topology};
use crate::replay::measure::metrics::Metrics;
use crate::replay::measure::observed::PairSink;
use crate::replay::pacing::Pacing;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;
use tokio::time::Instant;

/// What every replay connection shares.
pub struct Shared {
    pub target: Target,
    /// Where lanes connect: the server, the replica set's primary (and secondaries), the mongos.
    pub servers: Topology,
    pub pacing: Pacing,
    pub start: Instant,
    pub deadline: Option<Instant>,
    pub cursors: Cursors,
    pub metrics: Mutex<Metrics>,
    pub budget: Budget,
    /// The replay connections open at once (`--max-open-connections`).
    pub slots: std::sync::Arc<ConnSlots>,
    pub abort: Abort,
    pub counters: Counters,
    pub op_timeout: Duration,
    /// How long a getMore waits for the live reply that opens its cursor.
    pub cursor_wait: Duration,
    /// A/B replay (`replay::ab`): the targets every request goes to, each with its own state. Empty
    /// for one target: then this is the target's own state.
    pub targets: Vec<std::sync::Arc<Shared>>,
    /// A/B replay: the per-target observations of each request go here (set on the run's state,
    /// the one the feed and the lanes share).
    pub pairs: Option<std::sync::Arc<dyn PairSink>>,
    /// Keep each reply's body for the A/B comparison (set on each A/B target's state).
    pub observe: bool,
    /// `--explain`: the shapes the feed numbers (the run's state, shared by every target's).
    pub plan_shapes: Option<std::sync::Arc<crate::replay::explain::PlanShapes>>,
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
