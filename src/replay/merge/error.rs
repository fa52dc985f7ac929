//! Why shard reports cannot be merged: below every part of the merge, each of which may fail.

use thiserror::Error;

#[derive(Debug, Error)]
pub enum MergeError {
    #[error("shard report: {0}")]
    Read(#[from] crate::figures::report_file::ReportFileError),
    #[error("shard report {path} is not a replay report: {detail}")]
    NotAReport { path: String, detail: String },
    #[error("shard report {path}: {detail}")]
    Histogram { path: String, detail: String },
    #[error("shard reports disagree: {0}")]
    Mismatch(String),
    #[error("no shard report to merge")]
    Empty,
}
