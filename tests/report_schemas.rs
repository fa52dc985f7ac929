//! Every JSON report carries `schema_version` and matches its schema in `docs/schemas/`: reports
//! made by the binary from the sample captures, replayed against the real server.

mod common;
use common::*;
use serde_json::Value;
use std::path::Path;

const CAPTURES: [&str; 3] = ["pymongo.mtape", "mongosh-zlib.mtape", "php.mtape"];

fn capture(name: &str) -> std::path::PathBuf {
    workspace_root().join("captures").join(name)
}

fn stdout_json(args: &[&str]) -> Value {
    let out = mongotape(args);
    assert!(out.success(), "{args:?}: {}", out.stderr);
    serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

fn read_json(path: &Path) -> Value {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_slice(&bytes).unwrap()
}

/// Checks a report of `kind` and its shared summary; returns it.
fn check(kind: &str, report: Value) -> Value {
    assert_eq!(report["schema_version"], 1, "{kind}: schema_version first");
    assert_eq!(
        report
            .as_object()
            .unwrap()
            .keys()
            .next()
            .map(String::as_str),
        Some("schema_version"),
        "{kind}: schema_version is the first key"
    );
    assert_schema(kind, &report);
    if let Some(summary) = report.get("summary") {
        assert_schema("summary", summary);
    }
    report
}

#[test]
fn every_report_kind_matches_its_schema() {
    let dir = tempdir();
    let path = |name: &str| dir.path().join(name).display().to_string();
    let mut checked = std::collections::BTreeSet::new();

    for name in CAPTURES {
        let file = capture(name).display().to_string();
        check("inspect", stdout_json(&["inspect", &file, "--json"]));
        let analyzed = check("analyze", stdout_json(&["analyze", &file, "--json"]));
        std::fs::write(path(&format!("{name}.analyze.json")), analyzed.to_string()).unwrap();
    }
    checked.extend(["inspect", "analyze", "summary"]);

    let server = Server::start_with(&["--standalone"]);
    let sample = capture("pymongo.mtape");
    let whole = try_replay(
        &sample,
        &server.uri(),
        &["--fast", "--db-map", "fixtures:whole"],
    );
    assert!(whole.output.success(), "{}", whole.describe());
    let whole = check("replay", whole.report);
    assert_eq!(whole["kind"], "replay", "a replay report says what it is");
    // The machine's load around the run, flagged when other work disturbed it.
    let load = &whole["load"];
    assert!(
        load["disturbed"].is_boolean() && load["other_cores"].as_f64() >= Some(0.0),
        "{load}"
    );
    std::fs::write(path("replay.json"), whole.to_string()).unwrap();
    checked.insert("replay");

    // Two shards, merged; then one missing (exit 6), still a valid merged report.
    let mut shards = Vec::new();
    for i in 0..2 {
        let shard = path(&format!("shard{i}.json"));
        let out = mongotape(&[
            "replay",
            sample.to_str().unwrap(),
            "-t",
            &server.uri(),
            "--fast",
            "-q",
            "--db-map",
            &format!("fixtures:shard{i}"),
            "--shard",
            &format!("{i}/2"),
            "-o",
            &shard,
        ]);
        assert!(out.success(), "shard {i}: {}", out.stderr);
        let report = check("replay", read_json(Path::new(&shard)));
        assert_eq!(report["shard"]["label"], format!("{i}/2"));
        shards.push(shard);
    }
    let merged = path("merged.json");
    let out = mongotape(&["merge", &shards[0], &shards[1], "-q", "-o", &merged]);
    assert!(out.success(), "{}", out.stderr);
    let merged_report = check("merge", read_json(Path::new(&merged)));
    assert_eq!(merged_report["kind"], "replay");
    // Its text says what was merged, not that it replayed.
    let text = mongotape(&["merge", &shards[0], &shards[1]]);
    assert!(
        text.stdout
            .starts_with("merged 2 shard report(s) of a replay of "),
        "{}",
        text.stdout
    );
    let partial = path("partial.json");
    let out = mongotape(&["merge", &shards[1], "-q", "-o", &partial]);
    assert_eq!(out.status.code(), Some(6), "{}", out.stderr);
    let partial = check("merge", read_json(Path::new(&partial)));
    assert_eq!(partial["merge"]["missing"][0], "0/2");
    checked.insert("merge");

    let compared = stdout_json(&[
        "compare",
        &path("pymongo.mtape.analyze.json"),
        &path("replay.json"),
        &path("php.mtape.analyze.json"),
        "--json",
    ]);
    check("compare", compared);
    checked.insert("compare");

    // A schema that says nothing would pass anything: each must refuse a broken report.
    let mut broken = whole.clone();
    broken.as_object_mut().unwrap().remove("summary");
    broken["sent"] = Value::from("many");
    let errors = schema_errors("replay", &broken);
    assert!(
        errors.iter().any(|e| e.contains("summary")) && errors.iter().any(|e| e.contains("/sent")),
        "{errors:?}"
    );
    let mut broken = read_json(Path::new(&merged));
    broken["merge"] = Value::Null;
    assert!(!schema_errors("merge", &broken).is_empty());
    let mut broken = read_json(&dir.path().join("php.mtape.analyze.json"));
    broken["summary"]["kind"] = Value::from("replay");
    broken["schema_version"] = Value::from(2);
    assert_eq!(
        schema_errors("analyze", &broken).len(),
        2,
        "kind and version"
    );

    // Every schema file is a valid schema; the kinds this test knows were all checked above.
    for (kind, file) in schema_files() {
        schema_validator(&kind);
        if !checked.contains(kind.as_str()) {
            eprintln!(
                "{}: a valid schema; its reports are checked where they are made",
                file.display()
            );
        }
    }
}

/// `docs/schemas/*.json` are the schemas generated from the report types
/// (`mongotape::report::schema`), so a change to a report shows in the files' diff.
/// `MONGOTAPE_BLESS=1 cargo test --test report_schemas generated` writes them anew.
#[test]
fn schema_files_are_generated_from_the_report_types() {
    use mongotape::report::schema;
    let dir = workspace_root().join("docs/schemas");
    let bless = std::env::var_os("MONGOTAPE_BLESS").is_some_and(|v| v == "1");
    let mut stale = Vec::new();
    for kind in schema::KINDS {
        let generated = schema::schema(kind).expect("a kind of KINDS has a schema");
        let text = serde_json::to_string_pretty(&generated).unwrap() + "\n";
        let path = dir.join(format!("{kind}.schema.json"));
        if bless {
            std::fs::write(&path, &text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        } else if std::fs::read_to_string(&path).ok().as_deref() != Some(text.as_str()) {
            stale.push(path.display().to_string());
        }
    }
    let files: Vec<String> = schema_files().into_iter().map(|(kind, _)| kind).collect();
    assert_eq!(
        files,
        schema::KINDS,
        "docs/schemas/ holds one file per kind, no other"
    );
    assert!(
        stale.is_empty(),
        "not the schemas the report types generate: {}\n\
         after changing a report type, run `MONGOTAPE_BLESS=1 cargo test --test report_schemas \
         generated` and review the files' diff",
        stale.join(", ")
    );
}
