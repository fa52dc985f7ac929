//! Reading a report file to compare: its `summary` (the schema version is checked by
//! `figures::report_file`), and why a report could not be read.

use crate::figures::summary::ReportSummary;
use std::path::Path;

/// Why a report could not be compared.
#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    #[error(transparent)]
    Read(#[from] crate::figures::report_file::ReportFileError),
    #[error("report {path} is not JSON: {source}")]
    Json {
        path: String,
        source: serde_json::Error,
    },
    #[error(
        "report {path} has no usable `summary` (is it an analyze or replay report?): {detail}"
    )]
    NoSummary { path: String, detail: String },
}

/// A report file read (within the reader's bounds) and parsed as JSON, with its name for errors.
pub fn load_json(path: &Path) -> Result<(String, serde_json::Value), CompareError> {
    let name = path.display().to_string();
    let text = crate::figures::report_file::read(path)?;
    match serde_json::from_slice(&text) {
        Ok(value) => Ok((name, value)),
        Err(source) => Err(CompareError::Json { path: name, source }),
    }
}

/// Loads the summary of a report file.
pub fn load_summary(path: &Path) -> Result<ReportSummary, CompareError> {
    let (name, mut value) = load_json(path)?;
    let doc = match value.get_mut("summary") {
        Some(s) => s.take(),
        None => value,
    };
    serde_json::from_value(doc).map_err(|e| CompareError::NoSummary {
        path: name,
        detail: e.to_string(),
    })
}
