//! The JSON Schema of each report kind (`docs/schemas/<kind>.schema.json`, draft 2020-12),
//! generated from the report types: their doc comments are the descriptions. The files are this
//! output; `tests/report_schemas.rs` holds them equal (`MONGOTAPE_BLESS=1` rewrites them).

use crate::figures::errors::ErrorsReport;
use crate::figures::slowest::SlowRequest;
use crate::figures::summary::ReportSummary;
use crate::import::report::ImportReport;
use crate::replay::ab::model::AbReport;
use crate::replay::report::ReplayReport;
use crate::report::analyze::AnalyzeReport;
use crate::report::compare::CompareReport;
use crate::report::inspect::Inspection;
use crate::slice::SliceSummary;
use schemars::generate::SchemaSettings;
use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde_json::Value;

/// Every kind with a schema, in the order of their files.
pub const KINDS: [&str; 12] = [
    "ab", "analyze", "compare", "import", "inspect", "merge", "replay", "restore", "shadow",
    "slice", "summary", "why",
];

/// The schema of `kind` (one of [`KINDS`]) as JSON, `None` for another name.
pub fn schema(kind: &str) -> Option<Value> {
    let (title, description, schema) = match kind {
        "ab" => (
            "mongotape A/B replay report",
            "Written by `mongotape replay CAPTURE --target A --target B [--target A2] --report FILE` (docs/ab.md). Every target's own replay report is under targets[].replay.",
            of::<AbReport>(),
        ),
        "analyze" => (
            "mongotape analyze --json",
            "Is it the server or the client, from a capture alone: server time against client time per connection, per driver and per command (docs/analyze.md).",
            of::<AnalyzeReport>(),
        ),
        "compare" => (
            "mongotape compare --json",
            "Analyze and replay reports side by side; ratios against the first column.",
            of::<CompareReport>(),
        ),
        "import" => (
            "mongotape import --json",
            "What an import read and wrote (docs/import.md): the figures its text gives. `written` and `damaged` for every input; the section of the input's format (`packets`, `mongoreplay` or `mongod`) filled in, the other two null.",
            of::<ImportReport<'static>>(),
        ),
        "inspect" => (
            "mongotape inspect --json",
            "A capture's counts: connections and their drivers, opcodes, commands, namespaces, and where reading stopped if it did.",
            of::<Inspection>(),
        ),
        "merge" => (
            "mongotape merge --report",
            "The reports of a sharded replay added into one: a replay report whose `merge` says which shard reports it adds up (docs/scale.md). Percentiles are exact (histograms merged).",
            merged(),
        ),
        "restore" => (
            "mongotape restore --json",
            "What a restore loaded into its target and how fast (docs/state.md, \"Restoring\"): per collection restored, documents, bytes and indexes; the rates over the whole load.",
            of::<crate::state::restore_plan::RestoreCommandReport>(),
        ),
        "replay" => (
            "mongotape replay --report",
            "What a replay did and measured: latency per command and namespace, a per-second timeline, schedule lag, divergences from the recorded replies, the server's and the replayer's CPU (docs/replay.md). A shard's report (`--shard I/N`) has `shard`; a merged one (merge.schema.json) has `merge`.",
            of::<ReplayReport>(),
        ),
        "shadow" => (
            "mongotape shadow --report",
            "The live shadow's comparison of candidates with production, per target and query shape (docs/shadow.md): reads mirrored, shed, lost while a target was down, matched, discrepancies confirmed by a second read, noise the control shows too, errors by code, latency and the latency ratio with its interval. Rewritten every --report-every seconds and at stop.",
            of::<crate::shadow::report::ShadowReport>(),
        ),
        "slice" => (
            "mongotape slice --json",
            "What a slice kept of a capture and what it left out, by reason (docs/slice.md). The same figures as the text slice writes on stderr.",
            of::<SliceSummary>(),
        ),
        "summary" => (
            "mongotape report summary",
            "The figures every analyze and replay report carries under `summary` (`mongotape compare` reads them). Not a report of its own: each report's schema holds it under `summary`.",
            of::<ReportSummary>(),
        ),
        "why" => (
            "mongotape reports: errors by code and the slowest requests",
            "The parts every report (analyze, replay, the A/B report per target, merge, compare) shares to say why, beyond how much: `errors_by_code`, `errors_by_code_other` and `slowest` (docs/analyze.md, docs/replay.md). Not a report of its own: each report's schema holds them.",
            of::<WhyParts>(),
        ),
        _ => return None,
    };
    let mut schema = schema.to_value();
    tidy(&mut schema, false);
    let object = schema.as_object_mut()?;
    // The title and description of the kind, right after `$schema`.
    let mut out = serde_json::Map::new();
    out.insert("$schema".into(), object.remove("$schema")?);
    out.insert("title".into(), title.into());
    out.insert("description".into(), description.into());
    object.remove("title");
    object.remove("description");
    out.extend(std::mem::take(object));
    Some(Value::Object(out))
}

/// The schema as a reader of the reports wants it: descriptions one line per paragraph, rustdoc's
/// link brackets (`` [`MAX_BODY`] ``) dropped, and no `default`: those are what `serde(default)`
/// fills in when mongotape reads a report back, not part of what it writes. `names` is true for
/// a map keyed by field or definition names (`properties`, `$defs`), whose keys are not keywords.
fn tidy(schema: &mut Value, names: bool) {
    match schema {
        Value::Object(map) => {
            if !names {
                map.remove("default");
            }
            for (key, value) in map.iter_mut() {
                match value {
                    Value::String(text) if !names && key == "description" => *text = plain(text),
                    _ => tidy(
                        value,
                        !names && matches!(key.as_str(), "properties" | "$defs"),
                    ),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|item| tidy(item, false)),
        _ => {}
    }
}

fn plain(text: &str) -> String {
    let paragraphs: Vec<String> = text
        .split("\n\n")
        .map(|p| p.split('\n').map(str::trim).collect::<Vec<_>>().join(" "))
        .collect();
    paragraphs
        .join("\n\n")
        .replace("[`", "`")
        .replace("`]", "`")
}

/// The schema of `T` as the reports are written (the serialized form), draft 2020-12.
fn of<T: JsonSchema>() -> Schema {
    generator().into_root_schema_for::<T>()
}

fn generator() -> SchemaGenerator {
    SchemaSettings::draft2020_12()
        .for_serialize()
        .into_generator()
}

/// A replay report whose `merge` is there: the replay schema's, by reference.
fn merged() -> Schema {
    json_schema!({
        "$schema": generator().settings().meta_schema,
        "allOf": [{ "$ref": "replay.schema.json" }],
        "required": ["merge"],
        "properties": { "merge": { "$ref": "replay.schema.json#/$defs/MergeReport" } }
    })
}

/// The parts of a report that say why (`figures::errors`, `figures::slowest`), for their schema.
#[allow(dead_code)]
#[derive(serde::Serialize, schemars::JsonSchema)]
struct WhyParts {
    #[serde(flatten)]
    errors: ErrorsReport,
    /// The slowest requests, slowest first.
    slowest: Vec<SlowRequest>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_has_a_draft_2020_12_schema() {
        for kind in KINDS {
            let schema = schema(kind).unwrap();
            assert_eq!(
                schema["$schema"],
                "https://json-schema.org/draft/2020-12/schema"
            );
            assert!(schema["title"].is_string(), "{kind}");
        }
        assert!(schema("nothing").is_none());
    }

    #[test]
    fn defaults_go_and_a_field_named_default_stays() {
        let mut schema = serde_json::json!({
            "properties": {
                "default": { "type": "string", "default": "" },
                "n": { "type": "integer", "default": 0, "description": "a\nb" }
            }
        });
        tidy(&mut schema, false);
        assert_eq!(
            schema,
            serde_json::json!({
                "properties": {
                    "default": { "type": "string" },
                    "n": { "type": "integer", "description": "a b" }
                }
            })
        );
    }

    #[test]
    fn descriptions_are_one_line_per_paragraph_without_link_brackets() {
        assert_eq!(
            plain("Up to [`MAX`] shapes\nof the requests.\n\nMore."),
            "Up to `MAX` shapes of the requests.\n\nMore."
        );
    }
}
