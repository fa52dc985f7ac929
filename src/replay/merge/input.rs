//! Reading shard reports, and which shards of `N` are there, missing or failed.

use super::error::MergeError;
use crate::replay::report::{MergeReport, ReplayReport, MAX_SHARDS};
use std::collections::BTreeMap;
use std::path::Path;

/// One shard report and where it came from.
pub struct ShardInput {
    pub path: String,
    pub report: ReplayReport,
}

pub fn read(path: &Path) -> Result<ShardInput, MergeError> {
    let shown = path.display().to_string();
    let bytes = crate::figures::report_file::read(path)?;
    let report: ReplayReport =
        serde_json::from_slice(&bytes).map_err(|e| MergeError::NotAReport {
            path: shown.clone(),
            detail: e.to_string(),
        })?;
    if report.summary.kind != "replay" {
        return Err(MergeError::NotAReport {
            path: shown,
            detail: format!("its summary is of kind {:?}", report.summary.kind),
        });
    }
    Ok(ShardInput {
        path: shown,
        report,
    })
}

/// Which shards are there: every report must name the same N (a report without a shard label
/// counts as shard 0/1), no shard twice.
pub fn census(inputs: &[ShardInput]) -> Result<MergeReport, MergeError> {
    if inputs.is_empty() {
        return Err(MergeError::Empty);
    }
    let shard_of = |i: &ShardInput| {
        i.report
            .shard
            .as_ref()
            .map_or((0, 1), |s| (s.index, s.count))
    };
    let count = shard_of(&inputs[0]).1;
    if count > MAX_SHARDS {
        return Err(MergeError::Mismatch(format!(
            "{} says it is one of {count} shards, more than {MAX_SHARDS}",
            inputs[0].path
        )));
    }
    let mut seen: BTreeMap<u32, &str> = BTreeMap::new();
    let mut failed = BTreeMap::new();
    for i in inputs {
        let (index, n) = shard_of(i);
        if n != count {
            return Err(MergeError::Mismatch(format!(
                "{} is shard {index}/{n}, {} is of {count} shards",
                i.path, inputs[0].path
            )));
        }
        if let Some(other) = seen.insert(index, &i.path) {
            return Err(MergeError::Mismatch(format!(
                "shard {index}/{n} twice: {other} and {}",
                i.path
            )));
        }
        if i.report.capture != inputs[0].report.capture {
            return Err(MergeError::Mismatch(format!(
                "{} replayed {}, {} replayed {}",
                i.path, i.report.capture, inputs[0].path, inputs[0].report.capture
            )));
        }
        let why = i
            .report
            .error
            .clone()
            .or_else(|| i.report.capture_error.clone())
            .or_else(|| (!i.report.complete).then(|| "incomplete".to_string()));
        if let Some(why) = why {
            failed.insert(format!("{index}/{count}"), why);
        }
    }
    Ok(MergeReport {
        shards_expected: count,
        merged: seen.keys().map(|i| format!("{i}/{count}")).collect(),
        missing: (0..count)
            .filter(|i| !seen.contains_key(i))
            .map(|i| format!("{i}/{count}"))
            .collect(),
        failed,
        files: inputs.iter().map(|i| i.path.clone()).collect(),
    })
}
