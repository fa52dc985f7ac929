//! `compare` across report kinds: the analyze report of a real pymongo capture next to two real
//! replays of it (closed loop, and at the recorded pace) against fresh servers. The shared
//! `summary` lines them up: same operations, CPU figures only where measured.

mod common;

use common::*;
use serde_json::Value;
use std::path::Path;

fn row<'a>(rows: &'a Value, metric: &str) -> &'a Value {
    rows.as_array()
        .unwrap()
        .iter()
        .find(|r| r["metric"] == metric)
        .unwrap_or_else(|| panic!("no {metric} in {rows}"))
}

fn replay(capture: &Path, report: &Path, label: &str, pace: &[&str]) {
    let server = Server::start_with(&["--standalone"]);
    let mut args = vec![
        "replay".to_string(),
        capture.display().to_string(),
        "--target".into(),
        server.addr().to_string(),
        "--server-pid".into(),
        server.pid().to_string(),
        "--report".into(),
        report.display().to_string(),
        "--label".into(),
        label.into(),
        "--quiet".into(),
    ];
    args.extend(pace.iter().map(|s| s.to_string()));
    let out = mongotape(&args);
    assert!(
        out.success(),
        "replay {label} failed:\n{}\n{}",
        out.stdout,
        out.stderr
    );
}

#[test]
fn analyze_and_two_replays_side_by_side() {
    let _serial = one_at_a_time();
    let server = Server::start_with(&["--standalone"]);
    // 5 ms between operations: the recorded pace stays far below what a closed loop reaches, however
    // busy the machine.
    let rec = record_inserts_finds(&server, "recorded", 60, 0.005, 0);
    drop(server);
    let dir = tempdir();
    let a = dir.path().join("analyze.json");
    let analyzed = analyze_json(&rec.capture, &["--label", "recorded"]);
    std::fs::write(&a, analyzed.to_string()).unwrap();
    let fast = dir.path().join("fast.json");
    let paced = dir.path().join("paced.json");
    replay(&rec.capture, &fast, "fast", &["--fast"]);
    replay(&rec.capture, &paced, "paced", &["--speed", "1"]);

    let files = [&a, &fast, &paced].map(|p| p.display().to_string());
    let mut args = vec!["compare".to_string()];
    args.extend(files.iter().cloned());
    let html = dir.path().join("compare.html");
    args.extend(["--json".into(), "--html".into(), html.display().to_string()]);
    let out = mongotape(&args);
    assert!(out.success(), "{}", out.stderr);
    let cmp: Value = serde_json::from_str(&out.stdout).unwrap();
    let kinds: Vec<&str> = cmp["columns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["analyze", "replay", "replay"]);

    // The replays replayed what the capture holds, and compare says so.
    let ops = row(&cmp["overall"], "operations");
    assert_eq!(ops["ratios"], serde_json::json!([1.0, 1.0, 1.0]), "{ops}");
    let insert = cmp["per_command"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["command"] == "insert")
        .unwrap();
    assert_eq!(
        row(&insert["rows"], "count")["values"],
        serde_json::json!([60.0, 60.0, 60.0])
    );
    // CPU is measured by replays only; the client-bound share by analyze only.
    let cpu = &row(&cmp["overall"], "server CPU per 1,000 ops")["values"];
    assert!(cpu[0].is_null(), "{cpu}");
    assert!(
        // Measured (a number, not n/a); a short replay can take less than one 10 ms clock tick.
        cpu[1].as_f64().unwrap() >= 0.0 && cpu[2].as_f64().unwrap() >= 0.0,
        "{cpu}"
    );
    let share = &row(&cmp["overall"], "client-bound share")["values"];
    assert!(
        share[0].as_f64().unwrap() > 0.0 && share[1].is_null(),
        "{share}"
    );
    // A closed-loop replay outpaces the recorded pace.
    let tp = &row(&cmp["overall"], "throughput")["values"];
    eprintln!("throughput recorded/fast/paced: {tp}; server CPU per 1k ops: {cpu}");
    assert!(tp[1].as_f64().unwrap() > tp[2].as_f64().unwrap(), "{tp}");

    let page = std::fs::read_to_string(&html).unwrap();
    let rendered = render(&html);
    assert_page_ok(&page, &rendered, 6);
    assert!(rendered.dom.contains("Server CPU per 1,000 operations"));
}

/// An A/B report compares beside a replay report: each target is a column (A, B), then the
/// replay.
#[test]
fn an_ab_report_is_a_column_per_target_beside_a_replay() {
    let _serial = one_at_a_time();
    let server = Server::start_with(&["--standalone"]);
    let rec = record_inserts_finds(&server, "recorded", 30, 0.0, 0);
    drop(server);
    let dir = tempdir();
    let (a, b) = (
        Server::start_with(&["--standalone"]),
        Server::start_with(&["--standalone"]),
    );
    let ab = dir.path().join("ab.json");
    let capture = rec.capture.display().to_string();
    let out = mongotape(&[
        "replay",
        &capture,
        "-t",
        a.addr(),
        "-t",
        b.addr(),
        "--fast",
        "--quiet",
        "--report",
        ab.to_str().unwrap(),
    ]);
    assert!(out.success(), "{}\n{}", out.stdout, out.stderr);
    drop((a, b));
    let single = dir.path().join("replay.json");
    replay(&rec.capture, &single, "later", &["--fast"]);
    let (ab, single) = (ab.display().to_string(), single.display().to_string());
    let out = mongotape(&["compare", &ab, &single, "--json"]);
    assert!(out.success(), "{}", out.stderr);
    let cmp: Value = serde_json::from_str(&out.stdout).unwrap();
    let labels: Vec<&str> = cmp["columns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["label"].as_str().unwrap())
        .collect();
    assert_eq!(labels, ["A", "B", "later"], "{}", cmp["columns"]);
    let insert = cmp["per_command"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["command"] == "insert")
        .unwrap();
    assert_eq!(
        row(&insert["rows"], "count")["values"],
        serde_json::json!([30.0, 30.0, 30.0])
    );
    let text = mongotape(&["compare", &ab, &single]);
    assert!(
        text.success() && text.stdout.contains("later"),
        "{}",
        text.stderr
    );
}
