//! The errors of each report compared (`errors_by_code`): read from the report files beside their
//! summaries, one entry per report, and named in the text under the tables.

use super::read::CompareError;
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
    let name = path.display().to_string();
    let text = crate::figures::report_file::read(path)?;
    let value: serde_json::Value = serde_json::from_slice(&text)
        .map_err(|source| CompareError::Json { path: name, source })?;
    Ok(serde_json::from_value(value).unwrap_or_default())
}
