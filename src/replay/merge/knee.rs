//! The knee of a sharded open-loop run, found again on the merged seconds: the knee's rules read
//! every shard's operations together, and the connections of all the shards.

use super::input::ShardInput;
use super::seconds::Second;
use crate::replay::measure::knee::{self, Bucket, KneeReport};
use crate::replay::report::OpenLoopReport;
use std::collections::BTreeMap;

pub(super) fn find(
    inputs: &[ShardInput],
    seconds: &BTreeMap<u64, Second>,
    schedule: &OpenLoopReport,
    start: f64,
    duration_s: f64,
) -> Option<KneeReport> {
    let buckets: Vec<Bucket<'_>> = seconds.iter().map(|(&t, s)| s.bucket(t)).collect();
    // Each shard's connections open at once at most, added up.
    let connections = inputs
        .iter()
        .map(|i| {
            let r = &i.report;
            match r.connection_limit.as_ref().map_or(0, |l| l.peak_open) {
                0 => r.connections_opened,
                peak => peak,
            }
        })
        .sum();
    let pacing = schedule.pacing();
    let schedule = knee::Schedule {
        pacing: &pacing,
        started_at_unix_s: start,
        duration_s,
        connections,
    };
    knee::find(&schedule, &buckets)
}
