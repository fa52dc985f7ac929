//! What belongs to one target of the run: its servers, live cursors, metrics, connection slots,
//! abort signal, explains and counters. A replay has one; an A/B replay one per target.

use super::abort::Abort;
use super::cursors::Cursors;
use super::slots::ConnSlots;
use crate::replay::client::{Target, Topology};
use crate::replay::measure::metrics::Metrics;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};

/// One target's state, shared by the lanes' connections to it.
pub struct TargetState {
    pub target: Target,
    /// Where lanes connect: the server, the replica set's primary (and secondaries), the mongos.
    pub servers: Topology,
    pub cursors: Cursors,
    pub metrics: Mutex<Metrics>,
    /// The replay connections open at once (`--max-open-connections`).
    pub slots: Arc<ConnSlots>,
    /// The target's failure: its lanes stop. With one target, the run's own signal.
    pub abort: Arc<Abort>,
    pub counters: TargetCounters,
    /// Keep each reply's body for the A/B comparison.
    pub observe: bool,
    /// `--explain`: this target's explains.
    pub plans: Option<Arc<crate::replay::explain::PlanRunner>>,
}

/// Counters the target's connections bump without the metrics lock.
#[derive(Default)]
pub struct TargetCounters {
    pub connections_opened: AtomicU64,
    pub cursor_not_found: AtomicU64,
    pub after_deadline: AtomicU64,
    pub stray_replies: AtomicU64,
    pub sent: AtomicU64,
    /// Requests sent compressed (OP_COMPRESSED with the compressor the target agreed to).
    pub compressed: AtomicU64,
}
