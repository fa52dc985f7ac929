//! The JSON Schemas of the reports (`docs/schemas/<kind>.schema.json`, draft 2020-12): each file
//! checked against the meta-schema, reports checked against their kind's schema.

use super::workspace_root;
use std::path::PathBuf;

/// Every schema file, as `(kind, path)`: `replay` for `docs/schemas/replay.schema.json`.
pub fn schema_files() -> Vec<(String, PathBuf)> {
    let dir = workspace_root().join("docs/schemas");
    let mut out: Vec<(String, PathBuf)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter_map(|p| {
            let name = p
                .file_name()?
                .to_str()?
                .strip_suffix(".schema.json")?
                .to_owned();
            Some((name, p))
        })
        .collect();
    out.sort();
    out
}

/// The validator for one kind's schema; panics unless the file is JSON, a valid draft 2020-12
/// schema, and every `$ref` (sibling files included) resolves.
pub fn schema_validator(kind: &str) -> jsonschema::Validator {
    let path = workspace_root().join(format!("docs/schemas/{kind}.schema.json"));
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("no schema for {kind} reports: {}: {e}", path.display()));
    let schema: serde_json::Value = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()));
    assert_eq!(
        schema["$schema"],
        "https://json-schema.org/draft/2020-12/schema",
        "{}: draft 2020-12",
        path.display()
    );
    if let Err(e) = jsonschema::meta::validate(&schema) {
        panic!("{} is not a valid JSON Schema: {e}", path.display());
    }
    let base = format!("file://{}", path.canonicalize().unwrap().display());
    jsonschema::options()
        .with_base_uri(base)
        .build(&schema)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The errors of `report` against `kind`'s schema, one line each; empty when it conforms.
pub fn schema_errors(kind: &str, report: &serde_json::Value) -> Vec<String> {
    schema_validator(kind)
        .iter_errors(report)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect()
}

/// Panics, listing every error, unless `report` conforms to `kind`'s schema.
pub fn assert_schema(kind: &str, report: &serde_json::Value) {
    let errors = schema_errors(kind, report);
    assert!(
        errors.is_empty(),
        "{kind} report does not match docs/schemas/{kind}.schema.json:\n{}",
        errors.join("\n")
    );
}
