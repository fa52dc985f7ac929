//! The seconds the knee is looked for in: the timeline's buckets, the run they come from, and
//! each command's baseline gathered from its first seconds. Below the knee and its limit.

use crate::replay::pacing::Pacing;
use hdrhistogram::Histogram;
use std::borrow::Cow;
use std::collections::BTreeMap;

/// One significant digit (steps of ~6%, ~4 KiB live): a command's second, for the 2x rule.
pub fn command_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1_000, 3_600_000_000_000, 1).expect("static bounds are valid")
}

/// One wall-clock second of the timeline.
pub struct Bucket<'a> {
    pub unix_s: u64,
    pub ops: u64,
    pub latency: Cow<'a, Histogram<u64>>,
    /// Time from send to reply of the second's replies, summed.
    pub busy_ns: u64,
    pub max_lag_ns: u64,
    pub commands: Vec<CommandBucket<'a>>,
}

/// One command's replies in one second.
pub struct CommandBucket<'a> {
    pub command: Cow<'a, str>,
    pub replies: u64,
    pub busy_ns: u64,
    pub latency: Cow<'a, Histogram<u64>>,
}

/// The run the seconds come from.
pub struct Schedule<'a> {
    pub pacing: &'a Pacing,
    pub started_at_unix_s: f64,
    pub duration_s: f64,
    /// The replay connections open at once at most (all shards).
    pub connections: u64,
}

/// A baseline being gathered, then frozen.
pub(super) struct Gathered {
    pub(super) latency: Histogram<u64>,
    pub(super) replies: u64,
    pub(super) busy_ns: u64,
    pub(super) from_s: f64,
    pub(super) done: bool,
}

impl Gathered {
    pub(super) fn p99_ns(&self) -> u64 {
        self.latency.value_at_quantile(0.99)
    }

    pub(super) fn service_ns(&self) -> f64 {
        self.busy_ns as f64 / self.replies.max(1) as f64
    }
}

pub(super) type Baselines<'b> = BTreeMap<&'b str, Gathered>;

/// The second's replies added to the baselines still gathering.
pub(super) fn gather<'b>(t: f64, b: &'b Bucket<'_>, baselines: &mut Baselines<'b>) {
    for c in &b.commands {
        let g = baselines.entry(&c.command).or_insert_with(|| Gathered {
            latency: command_histogram(),
            replies: 0,
            busy_ns: 0,
            from_s: t,
            done: false,
        });
        if !g.done {
            let _ = g.latency.add(&*c.latency);
            g.replies += c.replies;
            g.busy_ns += c.busy_ns;
        }
    }
}
