//! What held an open-loop run back at its knee: the server, the replayer's connections, or the
//! replayer itself. The rule, in the knee's second (`docs/replay.md`, "The knee"):
//!
//! - the server's time per operation (send to reply, which leaves out the time a request waited
//!   for its connection) against the same commands' baselines, weighted by the second's replies:
//!   `service_ratio`. Up to [`SERVICE_HELD`] (or with no baseline to compare with), the server
//!   answered as fast as before.
//! - the connections' busy share: that time summed over the second's replies, over
//!   `connections` x 1 s. A connection has one request in flight at a time, so at a share near 1
//!   every connection was waiting for a reply all the time, and the most they can carry is
//!   `connections / time per operation` (`ceiling_ops_per_s`, the time per operation taken over
//!   all the second's operations: the achieved rate over the busy share).
//!
//! `connections` when the server's time held and the busy share is at least [`BUSY_SHARE`];
//! `replayer` when the server's time held, the connections were mostly idle and yet requests went
//! out [`LATE_NS`] or more behind their schedule (the replayer's own CPU or clock); else `server`.

use super::seconds::{Baselines, Bucket, Schedule};
use crate::figures::units;
use serde::{Deserialize, Serialize};

/// The server's time per operation at most this many times its baseline: it held.
pub const SERVICE_HELD: f64 = 1.5;
/// The connections busy at least this share of the knee's second: they were the ceiling.
pub const BUSY_SHARE: f64 = 0.5;
/// Requests sent this late at least, connections idle and the server as fast as before: the
/// replayer fell behind.
pub const LATE_NS: u64 = 10_000_000;
/// The busy share a suggested `--connections` leaves at the schedule's top rate.
const HEADROOM: f64 = 0.7;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    Server,
    Connections,
    Replayer,
}

impl Limit {
    pub fn name(self) -> &'static str {
        match self {
            Limit::Server => "server",
            Limit::Connections => "connections",
            Limit::Replayer => "replayer",
        }
    }

    pub fn of_name(name: &str) -> Option<Limit> {
        [Limit::Server, Limit::Connections, Limit::Replayer]
            .into_iter()
            .find(|l| l.name() == name)
    }
}

/// The figures behind the limit, in the knee's second.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default)]
pub struct Figures {
    /// The replay connections open at once at most (all shards).
    pub connections: u64,
    /// Time from send to reply per operation of the second (a moreToCome request adds none).
    #[schemars(range(min = 0))]
    pub service_us: Option<f64>,
    /// That time against the same commands' baselines, weighted by the second's replies.
    #[schemars(range(min = 0))]
    pub service_ratio: Option<f64>,
    /// The share of `connections` x 1 s spent waiting for replies.
    #[schemars(range(min = 0))]
    pub busy_share: Option<f64>,
    /// `connections / service_us`: the most the connections carry at that time per operation.
    #[schemars(range(min = 0))]
    pub ceiling_ops_per_s: Option<f64>,
    /// Requests sent this late at most in that second.
    #[schemars(range(min = 0))]
    pub max_lag_us: Option<f64>,
    /// The limit is the connections: the `--connections` that would carry the schedule's top
    /// rate with room to spare.
    pub try_connections: Option<u64>,
}

/// The limit at the knee's second `b`, and its figures.
pub(super) fn at(s: &Schedule<'_>, b: &Bucket<'_>, baselines: &Baselines<'_>) -> (Limit, Figures) {
    let connections = s.connections.max(1);
    let (mut actual, mut expected) = (0.0, 0.0);
    for c in &b.commands {
        if let Some(g) = baselines.get(&*c.command).filter(|g| g.replies > 0) {
            actual += c.busy_ns as f64;
            expected += c.replies as f64 * g.service_ns();
        }
    }
    // Per operation of the second, answered or not: a moreToCome request holds its connection
    // only while it is sent.
    let service_ns = (b.ops > 0 && b.busy_ns > 0).then(|| b.busy_ns as f64 / b.ops as f64);
    let service_ratio = (expected > 0.0).then(|| actual / expected);
    let busy_share = b.busy_ns as f64 / (connections as f64 * 1e9);
    // No command of the second has a baseline: nothing says the server slowed.
    let held = service_ratio.is_none_or(|r| r <= SERVICE_HELD);
    let limit = if held && busy_share >= BUSY_SHARE {
        Limit::Connections
    } else if held && b.max_lag_ns >= LATE_NS {
        Limit::Replayer
    } else {
        Limit::Server
    };
    let ceiling = service_ns.map(|ns| connections as f64 * 1e9 / ns);
    let top = [0.0, f64::MAX]
        .into_iter()
        .filter_map(|t| s.pacing.rate_at(t))
        .reduce(f64::max);
    let try_connections = match (limit, service_ns, top) {
        (Limit::Connections, Some(ns), Some(top)) => {
            let needed = (top * ns / 1e9 / HEADROOM).ceil() as u64;
            Some(needed.max(2 * connections).next_power_of_two().min(4096))
        }
        _ => None,
    };
    let figures = Figures {
        connections,
        service_us: service_ns.map(|ns| ns / 1e3),
        service_ratio,
        busy_share: Some(busy_share),
        ceiling_ops_per_s: ceiling,
        max_lag_us: Some(b.max_lag_ns as f64 / 1e3),
        try_connections,
    };
    (limit, figures)
}

/// What held the run back, in words.
pub(super) fn sentence(limit: Limit, f: &Figures) -> String {
    let per_op = units::rounded_us(f.service_us.unwrap_or_default());
    let n = f.connections;
    let busy = format!("{:.0}%", f.busy_share.unwrap_or_default() * 100.0);
    match limit {
        Limit::Connections => format!(
            "the limit is the connections: {} ceiling is ~{} ({n} connection{} x {per_op} per operation, busy {busy} of the time): try --connections {}",
            if n == 1 { "one connection's".to_owned() } else { format!("{n} connections'") },
            units::rounded_rate(f.ceiling_ops_per_s.unwrap_or_default()),
            if n == 1 { "" } else { "s" },
            f.try_connections.unwrap_or(2 * n),
        ),
        Limit::Replayer => format!(
            "the limit is the replayer: the server answered as fast as before ({per_op} per operation) and the {n} connection(s) were busy {busy} of the time, yet requests went out up to {} late (see the replayer's CPU)",
            units::rounded_us(f.max_lag_us.unwrap_or_default()),
        ),
        Limit::Server => match f.service_ratio {
            Some(r) => format!(
                "the limit is the server: {per_op} per operation, {r:.1}x its commands' baseline"
            ),
            None => "the limit is the server".to_owned(),
        },
    }
}
