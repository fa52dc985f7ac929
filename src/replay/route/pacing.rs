//! Pacing: when each request goes out (`--speed`, `--fast`, `--rate`).

use super::op::Op;
use std::time::Duration;
use tokio::time::Instant;

/// When requests are sent.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Pacing {
    /// At their recorded times divided by `speed`, each connection waiting for its replies.
    Recorded { speed: f64 },
    /// As fast as the server answers, each connection waiting for its replies (closed loop).
    Fast,
    /// Request `i` is due at `start + i / ops_per_s`; latency counts from that intended time, so a
    /// server that falls behind shows its queueing instead of slowing the schedule down.
    Rate { ops_per_s: f64 },
}

impl Pacing {
    /// The intended send time of an op, `None` for "now".
    pub fn due(&self, start: Instant, op: &Op) -> Option<Instant> {
        match *self {
            Pacing::Recorded { speed } => {
                Some(start + Duration::from_nanos((op.offset_ns as f64 / speed) as u64))
            }
            Pacing::Fast => None,
            Pacing::Rate { ops_per_s } => {
                Some(start + Duration::from_secs_f64(op.seq as f64 / ops_per_s))
            }
        }
    }

    /// Whether latency counts from the intended send time rather than the actual one.
    pub fn open_loop(&self) -> bool {
        matches!(self, Pacing::Rate { .. })
    }

    pub fn describe(&self) -> String {
        match self {
            Pacing::Recorded { speed } => format!("recorded timing x{speed}"),
            Pacing::Fast => "fast (closed loop)".into(),
            Pacing::Rate { ops_per_s } => format!("rate {ops_per_s} ops/s (open loop)"),
        }
    }
}
