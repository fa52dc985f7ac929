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

/// Loads the summary of a report file.
pub fn load_summary(path: &Path) -> Result<ReportSummary, CompareError> {
    let name = path.display().to_string();
    let text = crate::figures::report_file::read(path)?;
    let mut value: serde_json::Value =
        serde_json::from_slice(&text).map_err(|source| CompareError::Json {
            path: name.clone(),
            source,
        })?;
    let doc = match value.get_mut("summary") {
        Some(s) => s.take(),
        None => value,
    };
    serde_json::from_value(doc).map_err(|e| CompareError::NoSummary {
        path: name,
        detail: e.to_string(),
    })
}
