//! `mongotape merge`: the reports of a sharded replay (`replay --shard I/N`) added into one.
//!
//! Exact, not averaged: every shard report carries its histograms (HdrHistogram V2,
//! [`crate::replay::measure::hdr`]); the merge adds them and reads every percentile off the sum, so
//! a merged p99 is the p99 of all operations of all shards, to the histograms' precision. Counts
//! and errors add up; timelines line up by wall-clock second; divergences add up per command. The
//! merge says which shards were merged, which are missing and which failed.
//!
//! - [`input`]: reading the shard reports, and which shards are there.
//! - [`sum`]: adding the histograms, then the report composed of its parts' merges, each written
//!   beside its type (`ReportSummary::merge`, `LagReport::merge`, `PlanEntry::merge`, ...).
//! - `seconds`: the timelines added up by wall-clock second.
//! - `knee`: the knee found again on the merged seconds, with every shard's connections.
//! - `shapes`: adding up per query shape, both sides, matched by hash.
//! - `why`: errors by code added up, and the K slowest requests of all the shards.
//!
//! Layers, bottom up: error seconds < input < knee shapes why < sum

mod error;
mod input;
mod knee;
mod seconds;
mod shapes;
mod sum;
mod why;

use crate::replay::report::ReplayReport;
pub use error::MergeError;
pub use input::ShardInput;
use std::path::PathBuf;

/// Reads the shard reports at `paths` and adds them up.
pub fn merge_files(paths: &[PathBuf]) -> Result<ReplayReport, MergeError> {
    let inputs = paths
        .iter()
        .map(|p| input::read(p))
        .collect::<Result<Vec<_>, _>>()?;
    merge(inputs)
}

/// Adds up shard reports already read.
pub fn merge(inputs: Vec<ShardInput>) -> Result<ReplayReport, MergeError> {
    let census = input::census(&inputs)?;
    let (errors, slowest) = why::add_up(&inputs);
    let mut report = sum::add_up(inputs, census)?;
    report.errors = errors;
    report.slowest = slowest;
    report.warn_of_failures();
    Ok(report)
}
