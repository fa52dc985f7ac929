//! One finished operation, as the lanes hand it to the run's [`super::metrics::Metrics`] and to the
//! live figures of `--metrics` ([`super::live::LiveMetrics`]).

use crate::replay::names::Name;
use crate::shape::ShapeId;
use std::time::Instant;

/// One finished operation.
pub struct Sample<'a> {
    pub command: &'a Name,
    pub namespace: &'a Name,
    /// None for moreToCome requests.
    pub latency_ns: Option<u64>,
    pub error: bool,
    /// The server's error code, when the reply gave one.
    pub code: Option<i32>,
    pub lag_ns: u64,
    /// The lane reached the request only after its intended time (earlier replies on its
    /// connection, the order's rules): its lag is not the pacing clock's.
    pub held: bool,
    /// Open loop, where the latency counts from the intended send time: the latency from the
    /// actual send (the server's own). None in closed loop, where the latency is that already.
    pub from_send_ns: Option<u64>,
    pub done: Instant,
    /// The request's query shape, and what its reply returned.
    pub shape: Option<ShapeSample>,
}

/// What an operation adds to its query shape besides its latency.
#[derive(Debug, Clone, Copy)]
pub struct ShapeSample {
    pub id: ShapeId,
    /// A getMore or killCursors, charged to its cursor's shape.
    pub continues: bool,
    /// Documents in the reply's batch.
    pub docs: u64,
    /// Bytes of the reply.
    pub bytes: u64,
}
