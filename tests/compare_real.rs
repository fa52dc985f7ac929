//! `mongotape compare` on two real analyze reports (a sleeping and a tight pymongo client through the
//! proxy): columns, ratios against the first, per command rows, text and HTML.

mod common;

use common::*;
use serde_json::Value;

fn overall<'a>(report: &'a Value, metric: &str) -> &'a Value {
    report["overall"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["metric"] == metric)
        .unwrap_or_else(|| panic!("no {metric} in {}", report["overall"]))
}

#[test]
fn compares_two_real_analyze_reports() {
    let _serial = one_at_a_time();
    let server = Server::start_with(&["--standalone"]);
    let sleepy = record_inserts_finds(&server, "sleepy", 10, 0.02, 0);
    let tight = record_inserts_finds(&server, "tight", 100, 0.0, 0);
    let dir = tempdir();
    let a = dir.path().join("sleepy.json");
    let b = dir.path().join("tight.json");
    let ra = analyze_json(&sleepy.capture, &["--label", "sleepy"]);
    let rb = analyze_json(&tight.capture, &["--label", "tight"]);
    std::fs::write(&a, ra.to_string()).unwrap();
    std::fs::write(&b, rb.to_string()).unwrap();

    let out = mongotape(&[
        "compare".to_string(),
        a.display().to_string(),
        b.display().to_string(),
        "--json".into(),
    ]);
    assert!(out.success(), "{}", out.stderr);
    let cmp: Value = serde_json::from_str(&out.stdout).unwrap();
    let labels: Vec<&str> = cmp["columns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["label"].as_str().unwrap())
        .collect();
    assert_eq!(labels, ["sleepy", "tight"]);
    assert_eq!(cmp["columns"][1]["kind"], "analyze");

    // Values are the reports' summaries; ratios are against the first column.
    let tp = overall(&cmp, "throughput");
    let (ta, tb) = (
        tp["values"][0].as_f64().unwrap(),
        tp["values"][1].as_f64().unwrap(),
    );
    assert!((ta - ra["summary"]["ops_per_s"].as_f64().unwrap()).abs() < 1e-9);
    assert!((tb - rb["summary"]["ops_per_s"].as_f64().unwrap()).abs() < 1e-9);
    assert_eq!(tp["ratios"][0].as_f64(), Some(1.0));
    assert!((tp["ratios"][1].as_f64().unwrap() - tb / ta).abs() < 1e-9);
    assert!(
        tb > 3.0 * ta,
        "the tight loop is much faster: {ta} vs {tb} ops/s"
    );
    let share = overall(&cmp, "client-bound share");
    assert!(share["ratios"][1].as_f64().unwrap() < 1.0, "{share}");
    let ops = overall(&cmp, "operations");
    assert_eq!(ops["values"][0], ra["summary"]["ops"].as_f64().unwrap());
    assert_eq!(ops["values"][1], rb["summary"]["ops"].as_f64().unwrap());
    assert!(ops["values"][1].as_f64().unwrap() > 2.0 * 100.0);
    // A capture has no CPU figures: absent, no ratio.
    let cpu = overall(&cmp, "server CPU per 1,000 ops");
    assert_eq!(cpu["values"], serde_json::json!([null, null]));

    let per_command = cmp["per_command"].as_array().unwrap();
    let insert = per_command
        .iter()
        .find(|c| c["command"] == "insert")
        .expect("insert rows");
    let count = insert["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["metric"] == "count")
        .unwrap();
    assert_eq!(count["values"], serde_json::json!([10.0, 100.0]));
    assert_eq!(count["ratios"][1].as_f64(), Some(10.0));
    assert!(per_command.iter().any(|c| c["command"] == "getMore"));

    // Text and HTML.
    let html = dir.path().join("cmp.html");
    let out = mongotape(&[
        "compare".to_string(),
        a.display().to_string(),
        b.display().to_string(),
        "--html".into(),
        html.display().to_string(),
    ]);
    assert!(out.success(), "{}", out.stderr);
    for needle in [
        "sleepy",
        "tight",
        "vs sleepy",
        "throughput",
        "client-bound share",
        "10.00x",
    ] {
        assert!(
            out.stdout.contains(needle),
            "{needle:?} missing:\n{}",
            out.stdout
        );
    }
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("<svg class=\"chart"));

    // A file without a summary is refused with its name.
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, r#"{"hello": 1}"#).unwrap();
    let out = mongotape(&[
        "compare".to_string(),
        a.display().to_string(),
        bad.display().to_string(),
    ]);
    assert!(!out.success());
    assert!(out.stderr.contains("bad.json"), "{}", out.stderr);
}

#[test]
fn a_report_of_a_newer_schema_version_is_refused_with_its_name() {
    // An analyze report needs no server: the sample capture.
    let sample = workspace_root().join("captures/pymongo.mtape");
    let mut report = analyze_json(&sample, &[]);
    let dir = tempdir();
    let (ok, newer) = (dir.path().join("ok.json"), dir.path().join("newer.json"));
    std::fs::write(&ok, report.to_string()).unwrap();
    report["schema_version"] = 99.into();
    std::fs::write(&newer, report.to_string()).unwrap();
    let args = |b: &std::path::Path| {
        [
            "compare".into(),
            ok.display().to_string(),
            b.display().to_string(),
        ]
    };
    assert!(mongotape(&args(&ok)).success());
    let out = mongotape(&args(&newer));
    // 1, not 2: the command line is right; this build cannot read that file.
    assert_eq!(out.status.code(), Some(1), "{}", out.stderr);
    assert!(
        out.stderr
            .contains("newer.json has schema_version 99; this mongotape reads schema_version 1"),
        "{}",
        out.stderr
    );
}
