//! The errors of each report compared (`errors_by_code`): read from the report files beside their
//! summaries, one entry per report, and named in the text under the tables.

use super::read::{load_json, CompareError};
use crate::figures::errors::ErrorsReport;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// One report's errors by command and code.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[schemars(deny_unknown_fields)]
#[serde(default)]
pub struct ReportErrors {
    /// The report's label and file.
    pub label: String,
    pub file: String,
    #[serde(flatten)]
    pub errors: ErrorsReport,
}

/// The `errors_by_code` of a report file (empty for a report written before it had them).
pub fn load_errors(path: &Path) -> Result<ErrorsReport, CompareError> {
    let (_, value) = load_json(path)?;
    Ok(errors_of(value))
}

/// The `errors_by_code` of a report already read.
pub fn errors_of(value: serde_json::Value) -> ErrorsReport {
    serde_json::from_value(value).unwrap_or_default()
}
