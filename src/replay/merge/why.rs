//! Errors by code and the slowest requests of shard reports, added up: counts add per
//! (command, code), and the merged list keeps the K slowest of all the shards' (K: the longest
//! list a shard kept, each shard having kept its own K slowest).

use super::input::ShardInput;
use crate::figures::errors::{ErrorsReport, DEFAULT_MAX_ERROR_ENTRIES};
use crate::figures::slowest::{self, SlowRequest};

pub(super) fn add_up(inputs: &[ShardInput]) -> (ErrorsReport, Vec<SlowRequest>) {
    let mut errors = ErrorsReport::default();
    let mut slow = Vec::new();
    let k = inputs
        .iter()
        .map(|i| i.report.slowest.len())
        .max()
        .unwrap_or(0);
    for i in inputs {
        errors.add(&i.report.errors, DEFAULT_MAX_ERROR_ENTRIES);
        slowest::merge(&mut slow, &i.report.slowest, k);
    }
    (errors, slow)
}
