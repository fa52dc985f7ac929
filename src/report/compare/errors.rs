//! The errors of each report compared (`errors_by_code`): read from the report files beside their
//! summaries, one entry per report, and named in the text under the tables.

use super::{CompareError, CompareReport};
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

impl CompareReport {
    /// Adds each report's errors (`errors[i]` from `files[i]`, labelled as the summaries were).
    pub fn with_errors(
        mut self,
        labels: &[String],
        files: &[String],
        errors: Vec<ErrorsReport>,
    ) -> Self {
        self.errors_by_code = errors
            .into_iter()
            .enumerate()
            .map(|(i, errors)| ReportErrors {
                label: labels.get(i).cloned().unwrap_or_default(),
                file: files.get(i).cloned().unwrap_or_default(),
                errors,
            })
            .collect();
        self
    }

    /// `label: errors 1,600: DuplicateKey (11000) 1,600 on insert`, a line per report with errors.
    pub fn errors_text(&self) -> String {
        let mut s = String::new();
        for r in &self.errors_by_code {
            if let Some(line) = r.errors.line() {
                s.push_str(&format!("{:<16} {line}\n", r.label));
            }
        }
        if !s.is_empty() {
            s.insert_str(0, "\nErrors by code\n");
        }
        s
    }
}
