//! Step markers (`{ping: 1, comment: "mongotape:step:NAME"}`, sent by every workload before each
//! step's clock) cut a real pymongo capture into phases in `analyze`, and its replay into the same
//! phases in `replay`, whose `--html` page renders in headless Chromium.

mod common;

use common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// Records pymongo running `randstring` (10 steps, 2 × 200 inserts and 8 one-operation steps).
fn record_randstring(server: &Server, dir: &Path) -> (PathBuf, ClientRun) {
    let capture = dir.join("randstring.mtape");
    let run = record_through(server, &capture, |uri| {
        run_client(Client::Pymongo, "randstring", uri, "bench", 0.02)
    });
    (capture, run)
}

fn names(phases: &Value) -> Vec<String> {
    phases
        .as_array()
        .expect("a phases list")
        .iter()
        .map(|p| p["name"].as_str().unwrap().to_owned())
        .collect()
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

#[test]
fn analyze_cuts_a_pymongo_capture_at_its_step_markers() {
    let _serial = one_at_a_time();
    let server = Server::start();
    let dir = tempdir();
    let (capture, run) = record_randstring(&server, dir.path());
    let steps: Vec<String> = run.steps.iter().map(|s| s.step.clone()).collect();
    assert_eq!(steps.len(), 10);

    let r = analyze_json(&capture, &[]);
    let phases = &r["phases"];
    assert_eq!(names(phases), steps, "one phase per step, in order");
    let phases = phases.as_array().unwrap();
    // Every operation a replay replays lands in the phase it was sent in; the marker pings are
    // not operations.
    let ops: u64 = phases.iter().map(|p| u(&p["ops"])).sum();
    assert_eq!(ops, u(&r["summary"]["ops"]), "{phases:?}");
    assert!(r["commands"]
        .as_array()
        .unwrap()
        .iter()
        .any(|c| c["command"] == "ping"
            && c["category"] == "handshake"
            && u(&c["requests"]) >= 11));
    for (p, step) in phases.iter().zip(&run.steps) {
        let at = &step.step;
        assert!(u(&p["ops"]) >= step.ops, "{at}: {p}");
        // Step lines count a step's timed operations; its phase adds the verification count.
        assert!(u(&p["ops"]) <= step.ops + 1, "{at}: {p}");
        assert_eq!(
            u(&p["latency"]["count"]),
            u(&p["ops"]),
            "{at}: all acknowledged"
        );
        let wall = f(&p["wall_s"]);
        assert!(wall > 0.0, "{at}");
        // One workload connection: its server and client time cover the phase, to the ns, but
        // for the time before the connection's first operation (a start-up gap, not the
        // client's time: docs/analyze.md).
        let covered = f(&p["server_s"]) + f(&p["client_s"]);
        if at == "drop_database" {
            assert!(
                covered <= wall + 1e-9 && covered > 0.0,
                "{at}: {covered} vs {wall}"
            );
        } else {
            assert!((covered - wall).abs() < 1e-6, "{at}: {covered} vs {wall}");
        }
        // The client's own clock runs inside the phase (which adds the verification count and
        // the driver's time before the first and after the last operation).
        assert!(
            wall + 0.0005 >= step.seconds,
            "{at}: phase {wall} s, client {} s",
            step.seconds
        );
    }
    // The phases run end to end from the first marker to the end marker, but for the markers'
    // own round trips: about the summary's span, from the first operation to the last reply.
    let walls: f64 = phases.iter().map(|p| f(&p["wall_s"])).sum();
    let span = f(&r["summary"]["wall_s"]);
    assert!(
        (walls - span).abs() < 0.05 * span + 0.005,
        "phases {walls} s, span {span} s"
    );
    let starts: Vec<f64> = phases.iter().map(|p| f(&p["start_s"])).collect();
    assert!(starts.windows(2).all(|w| w[0] < w[1]), "{starts:?}");

    let html = dir.path().join("analyze.html");
    let text = mongotape(&[
        "analyze".to_string(),
        capture.display().to_string(),
        "--html".into(),
        html.display().to_string(),
    ]);
    assert!(text.success(), "{}", text.stderr);
    assert!(text.stdout.contains("Phases, from each step marker"));
    assert!(text.stdout.contains("delete_all_index"));
    let page = std::fs::read_to_string(&html).unwrap();
    let rendered = render(&html);
    assert_page_ok(&page, &rendered, 8);
    for title in [
        "Time per phase",
        "Latency per phase",
        "rest of the wall time",
    ] {
        assert!(rendered.dom.contains(title), "{title:?} missing");
    }
}

#[test]
fn replay_reports_phases_and_draws_them_in_chromium() {
    let _serial = one_at_a_time();
    let recorded_on = Server::start();
    let dir = tempdir();
    let (capture, run) = record_randstring(&recorded_on, dir.path());
    drop(recorded_on);
    let steps: Vec<String> = run.steps.iter().map(|s| s.step.clone()).collect();
    let analyzed = analyze_json(&capture, &[]);

    let target = Server::start();
    let report = dir.path().join("replay.json");
    let html = dir.path().join("replay.html");
    let out = mongotape(&[
        "replay".to_string(),
        capture.display().to_string(),
        "--target".into(),
        target.uri(),
        "--fast".into(),
        "--server-pid".into(),
        target.pid().to_string(),
        "--report".into(),
        report.display().to_string(),
        "--html".into(),
        html.display().to_string(),
        "--no-progress".into(),
    ]);
    assert!(out.success(), "{}\n{}", out.stdout, out.stderr);
    assert!(out
        .stdout
        .contains("phases, from the first connection reaching"));
    let r: Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    assert_eq!(r["complete"], true);
    let phases = &r["phases"];
    assert_eq!(names(phases), steps, "{phases}");
    let phases = phases.as_array().unwrap();
    let recorded = analyzed["phases"].as_array().unwrap();
    let ops: u64 = phases.iter().map(|p| u(&p["ops"])).sum();
    assert_eq!(ops, u(&r["summary"]["ops"]));
    for (p, rec) in phases.iter().zip(recorded) {
        let at = p["name"].as_str().unwrap();
        // One connection, replayed in order: the same operations in each phase.
        assert_eq!(p["ops"], rec["ops"], "{at}");
        assert!(f(&p["wall_s"]) > 0.0, "{at}");
        assert!(
            f(&p["server_cpu_s"]) >= 0.0,
            "{at}: the server's CPU read at each marker"
        );
        assert_eq!(
            p["server_s"],
            Value::Null,
            "{at}: a replay does not split time"
        );
    }
    let cpu: f64 = phases.iter().map(|p| f(&p["server_cpu_s"])).sum();
    let total = f(&r["server"]["cpu_s"]);
    assert!(
        cpu <= total + 1e-9,
        "phases {cpu} s of the replay's {total} s"
    );

    let page = std::fs::read_to_string(&html).unwrap();
    let rendered = render(&html);
    // Throughput and latency per command, throughput and latency over time, time and latency per
    // phase.
    assert_page_ok(&page, &rendered, 6);
    for title in [
        "Latency percentiles per command",
        "Throughput: operations per second",
        "Latency over time",
        "Wall time per phase",
        "Latency per phase",
        "insert_noindex",
    ] {
        assert!(rendered.dom.contains(title), "{title:?} missing");
    }
    screenshot_ok(&html, &dir.path().join("replay.png"));

    // Two clones reach every marker: still one phase per step, started by the first to get there.
    let again = Server::start();
    let report2 = dir.path().join("clones.json");
    let out = mongotape(&[
        "replay".to_string(),
        capture.display().to_string(),
        "--target".into(),
        again.uri(),
        "--fast".into(),
        "--clones".into(),
        "2".into(),
        "--report".into(),
        report2.display().to_string(),
        "--quiet".into(),
        "--no-progress".into(),
    ]);
    assert!(out.success(), "{}", out.stderr);
    let r: Value = serde_json::from_slice(&std::fs::read(&report2).unwrap()).unwrap();
    assert_eq!(names(&r["phases"]), steps);
    let ops: u64 = r["phases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| u(&p["ops"]))
        .sum();
    assert!(ops <= u(&r["summary"]["ops"]) && ops > 0, "{}", r["phases"]);
}
