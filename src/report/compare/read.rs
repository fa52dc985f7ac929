//! Reading a report file to compare: its `summary` (the schema version is checked by
//! `figures::report_file`), and why a report could not be read. An A/B report is the replay
//! reports of its targets, each compared as a report of its own (labelled A, B, A2).

use crate::figures::summary::ReportSummary;
use serde_json::Value;
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

/// The reports a file holds, each with its name for errors: the file itself, or for an A/B
/// report (`kind: ab`) each target's replay report, its summary labelled by the target, or for a
/// shadow's report (`kind: shadow`) production and each target (`super::shadow`).
pub fn load_reports(path: &Path) -> Result<Vec<(String, Value)>, CompareError> {
    let (name, mut value) = load_json(path)?;
    match value.get("kind").and_then(Value::as_str) {
        Some("ab") => {}
        Some("shadow") => {
            let report = serde_json::from_value(value).map_err(|e| CompareError::NoSummary {
                path: name.clone(),
                detail: format!("a shadow's report that does not read: {e}"),
            })?;
            return Ok(super::shadow::columns(&name, &report));
        }
        _ => return Ok(vec![(name, value)]),
    }
    let no_targets = |detail: &str| CompareError::NoSummary {
        path: name.clone(),
        detail: format!("an A/B report whose {detail}"),
    };
    let Some(Value::Array(targets)) = value.get_mut("targets").map(Value::take) else {
        return Err(no_targets("`targets` are missing"));
    };
    let mut reports = Vec::with_capacity(targets.len());
    for mut target in targets {
        let label = target.get("label").and_then(Value::as_str).unwrap_or("?");
        let label = label.to_owned();
        let mut replay = match target.get_mut("replay").map(Value::take) {
            Some(r @ Value::Object(_)) => r,
            _ => {
                return Err(no_targets(&format!(
                    "target {label} has no `replay` report"
                )))
            }
        };
        if let Some(Value::Object(summary)) = replay.get_mut("summary") {
            summary.insert("label".into(), Value::String(label.clone()));
        }
        reports.push((format!("{name} [{label}]"), replay));
    }
    Ok(reports)
}

/// Loads the summary of a report file.
pub fn load_summary(path: &Path) -> Result<ReportSummary, CompareError> {
    let (name, value) = load_json(path)?;
    summary_of(name, value)
}

/// The summary of a report already read (`name` for errors).
pub fn summary_of(name: String, mut value: Value) -> Result<ReportSummary, CompareError> {
    let doc = match value.get_mut("summary") {
        Some(s) => s.take(),
        None => value,
    };
    serde_json::from_value(doc).map_err(|e| CompareError::NoSummary {
        path: name,
        detail: e.to_string(),
    })
}
