//! Reading a report file to compare: its `summary`, refused when its schema is newer than this
//! mongotape reads, and why a report could not be read.

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
    #[error(
        "report {path} has schema_version {found}, newer than this mongotape reads ({supported}): \
         compare it with the mongotape that wrote it, or a newer one"
    )]
    NewerSchema {
        path: String,
        found: u64,
        supported: u32,
    },
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
    // A newer layout may mean something else by the same fields: refused, not guessed at.
    let version = value
        .get("schema_version")
        .and_then(serde_json::Value::as_u64);
    if let Some(found) = version.filter(|v| *v > u64::from(crate::figures::SCHEMA_VERSION)) {
        return Err(CompareError::NewerSchema {
            path: name,
            found,
            supported: crate::figures::SCHEMA_VERSION,
        });
    }
    let doc = match value.get_mut("summary") {
        Some(s) => s.take(),
        None => value,
    };
    serde_json::from_value(doc).map_err(|e| CompareError::NoSummary {
        path: name,
        detail: e.to_string(),
    })
}
