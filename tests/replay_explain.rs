//! Query plans (`replay --explain`, A/B with `--explain`, `analyze --explain URI`; docs/shapes.md,
//! "Plans") against real secantusd-rs servers, on a capture of pymongo: two find shapes and an
//! update shape. Plans are COLLSCAN with the documents examined the data says; the explained
//! update is not applied a second time; B with an index on one find's field changes that shape's
//! plan (IXSCAN) and not the other's; a failed explain is recorded and the replay completes.

mod common;

use common::*;
use serde_json::Value;

/// 30 orders (status A/B, sku s0..s4), finds on `status` and on `sku` (three values each), and
/// one update that adds 1 to `hits` of one order. The capture creates nothing else: the targets
/// get the collection as the test sets them up.
const WORKLOAD: &str = r#"
import sys
from pymongo import MongoClient
client = MongoClient(sys.argv[1], serverSelectionTimeoutMS=10000)
c = client.shop.orders
c.insert_many([{'_id': i, 'status': 'AB'[i % 2], 'sku': 's%d' % (i % 5), 'qty': i} for i in range(30)])
for status in ['A', 'B', 'C']:
    list(c.find({'status': status}))
for sku in ['s1', 's2', 'none']:
    list(c.find({'sku': sku}))
c.update_one({'sku': 's3', 'qty': 3}, {'$inc': {'hits': 1}})
print(c.count_documents({}))
client.close()
"#;

/// Creates `shop.orders` empty, with an index on `status` when the second argument is "1".
const SETUP: &str = r#"
import sys
from pymongo import MongoClient
db = MongoClient(sys.argv[1], serverSelectionTimeoutMS=10000).shop
db.drop_collection('orders')
db.create_collection('orders')
if sys.argv[2] == '1':
    db.orders.create_index('status')
"#;

/// Prints `[documents, documents with hits 1, documents with hits > 1]` of `shop.orders`.
const COUNTS: &str = r#"
import sys, json
from pymongo import MongoClient
c = MongoClient(sys.argv[1], serverSelectionTimeoutMS=10000).shop.orders
print(json.dumps([c.count_documents({}), c.count_documents({'hits': 1}),
                  c.count_documents({'hits': {'$gt': 1}})]))
"#;

const FIND_STATUS: &str = "find shop.orders {status: ?string}";
const FIND_SKU: &str = "find shop.orders {sku: ?string}";

fn record(dir: &std::path::Path) -> std::path::PathBuf {
    let recording = Server::start_with(&["--standalone"]);
    python(SETUP, &[recording.uri().as_str(), "0"]);
    let (capture, stdout) = record_python(&recording, dir, "plans", WORKLOAD);
    assert_eq!(stdout.trim(), "30");
    capture
}

/// The plans of a report, by shape text (and target, in an A/B report).
fn plans(report: &Value) -> Vec<Value> {
    report["plans"]
        .as_array()
        .unwrap_or_else(|| panic!("no plans: {report}"))
        .clone()
}

fn plan_of<'a>(plans: &'a [Value], shape: &str, target: Option<&str>) -> &'a Value {
    plans
        .iter()
        .find(|p| p["shape"] == shape && target.is_none_or(|t| p["target"] == t))
        .unwrap_or_else(|| panic!("no plan for {shape} {target:?}: {plans:#?}"))
}

fn counts(uri: &str) -> Vec<u64> {
    serde_json::from_str(python(COUNTS, &[uri]).trim()).unwrap()
}

#[test]
fn replay_explain_gives_each_shape_its_plan_and_applies_no_write_twice() {
    let _serial = one_at_a_time();
    let dir = tempdir();
    let capture = record(dir.path());
    let target = Server::start_with(&["--standalone"]);
    python(SETUP, &[target.uri().as_str(), "0"]);
    let page = dir.path().join("replay.html");
    let page_arg = page.to_str().unwrap();
    let run = replay(
        &capture,
        target.addr(),
        &["--fast", "--explain", "--html", page_arg],
    );
    assert_schema("replay", &run.report);
    let plans = plans(&run.report);
    // Two find shapes, the update and count_documents' aggregate: explained once each; the
    // insert is not explained.
    let shapes: Vec<&str> = plans.iter().map(|p| p["shape"].as_str().unwrap()).collect();
    assert_eq!(plans.len(), 4, "{shapes:?}");
    assert!(plans.iter().all(|p| p["command"] != "insert"), "{shapes:?}");
    let status = plan_of(&plans, FIND_STATUS, None);
    let sku = plan_of(&plans, FIND_SKU, None);
    for (p, returned) in [(status, 15), (sku, 6)] {
        assert_eq!(p["plan"], "COLLSCAN", "{p}");
        assert_eq!(p["error"], Value::Null, "{p}");
        assert_eq!(p["keys_examined"], 0, "{p}");
        assert_eq!(p["docs_examined"], 30, "{p}");
        // The first request of the shape was explained: status A (15), sku s1 (6).
        assert_eq!(p["n_returned"], returned, "{p}");
        assert_eq!(p["hash"].as_str().unwrap().len(), 16);
        // Three requests of the shape, each a scan of the 30 orders.
        assert_eq!(p["docs_examined_run"], 90, "{p}");
    }
    let update = plans
        .iter()
        .find(|p| p["command"] == "update")
        .expect("the update's plan");
    assert!(
        update["plan"].as_str().unwrap().contains("UPDATE"),
        "{update}"
    );
    // An update of one document stops at the first match: _id 3, the fourth scanned.
    assert_eq!(update["docs_examined"], 4, "{update}");
    assert_eq!(update["docs_examined_run"], 4, "{update}");
    let count = plans
        .iter()
        .find(|p| p["command"] == "aggregate")
        .expect("count_documents' plan");
    assert_eq!(count["plan"], "COLLSCAN -> $group", "{count}");
    // The update was replayed once and explained without being applied: one order has hits 1.
    assert_eq!(counts(&target.uri()), vec![30, 1, 0]);
    assert!(
        run.output.stdout.contains("plans (4 explained, 0 failed"),
        "{}",
        run.output.stdout
    );
    assert!(run
        .output
        .stdout
        .lines()
        .any(|l| l.starts_with("find shop.orders {status: ?string}") && l.contains("COLLSCAN")));
    // The text table and the page show the documents examined over the run.
    let lines = || run.output.stdout.lines().map(str::trim_end);
    assert!(
        lines().any(|l| l.starts_with("shape ") && l.ends_with("run docs")),
        "{}",
        run.output.stdout
    );
    assert!(
        lines().any(|l| l.starts_with(FIND_STATUS) && l.contains("COLLSCAN") && l.ends_with(" 90")),
        "{}",
        run.output.stdout
    );
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("run docs"), "no run docs column in the page");
    // Each shape's documents examined per request, from its plan: in the shape's entry (not on
    // the recorded side, not on the insert, which has no plan), the text's and the page's tables.
    let status = shape_of(&run.report["shapes"], FIND_STATUS);
    assert_eq!(status["docs_per_request"], 30, "{status}");
    assert!(status["recorded"].get("docs_per_request").is_none());
    let insert = run.report["shapes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["command"] == "insert")
        .expect("the insert's shape");
    assert!(insert.get("docs_per_request").is_none(), "{insert}");
    assert!(
        lines().any(|l| l.starts_with("shape ") && l.ends_with("examined/req")),
        "{}",
        run.output.stdout
    );
    assert!(
        lines().any(|l| l.starts_with("find shop.orders {s")
            && !l.contains("COLLSCAN")
            && l.ends_with(" 30")),
        "{}",
        run.output.stdout
    );
    assert!(
        html.contains("examined/req"),
        "no examined/req column in the page"
    );
    // Without --explain: no plans, and no figure from them.
    python(SETUP, &[target.uri().as_str(), "0"]);
    let plain = replay(&capture, target.addr(), &["--fast"]);
    assert!(plain.report.get("plans").is_none());
    let shapes = plain.report["shapes"].as_array().unwrap();
    assert!(shapes.iter().all(|s| s.get("docs_per_request").is_none()));
    assert!(!plain.output.stdout.contains("examined/req"));
}

/// A report's shape entry of this text.
fn shape_of(shapes: &Value, text: &str) -> Value {
    shapes
        .as_array()
        .and_then(|a| a.iter().find(|s| s["shape"] == text))
        .cloned()
        .unwrap_or_else(|| panic!("no shape {text}: {shapes:#}"))
}

#[test]
fn an_index_on_b_changes_that_shapes_plan_and_no_other() {
    let _serial = one_at_a_time();
    let dir = tempdir();
    let capture = record(dir.path());
    let a = Server::start_with(&["--standalone"]);
    let b = Server::start_with(&["--standalone"]);
    python(SETUP, &[a.uri().as_str(), "0"]);
    python(SETUP, &[b.uri().as_str(), "1"]);
    let run = ab_replay(&capture, &[a.addr(), b.addr()], &["--fast", "--explain"]);
    run.assert_schema();
    assert_schema("ab", &run.report);
    let plans = plans(&run.report);
    let on = |shape, t| plan_of(&plans, shape, Some(t));
    assert_eq!(on(FIND_STATUS, "A")["plan"], "COLLSCAN");
    assert_eq!(on(FIND_STATUS, "B")["plan"], "IXSCAN {status: 1} -> FETCH");
    assert_eq!(
        on(FIND_STATUS, "B")["indexes"],
        serde_json::json!(["status_1"])
    );
    assert_eq!(on(FIND_STATUS, "B")["keys_examined"], 15);
    assert_eq!(on(FIND_STATUS, "B")["docs_examined"], 15);
    // The capture changes no index: every plan was explained at its first schema change.
    assert!(plans.iter().all(|p| p["schema_changes"] == 0), "{plans:#?}");
    // Per target: three requests each, 15 documents a request through the index on B, the 30
    // scanned on A.
    assert_eq!(on(FIND_STATUS, "B")["docs_examined_run"], 45);
    assert_eq!(on(FIND_STATUS, "A")["docs_examined_run"], 90);
    assert!(
        run.html.contains("run docs"),
        "no run docs column in the page"
    );
    // The shape's documents examined per request on each target, side by side.
    let status = shape_of(&run.report["shapes"], FIND_STATUS);
    assert_eq!(status["targets"][0]["docs_per_request"], 30, "{status}");
    assert_eq!(status["targets"][1]["docs_per_request"], 15, "{status}");
    assert!(
        run.output
            .stdout
            .lines()
            .any(|l| l.starts_with("find shop.orders {status") && l.trim_end().ends_with(" 30/15")),
        "{}",
        run.output.stdout
    );
    assert!(run.html.contains("examined/req A/B"), "not in the page");
    // Only the target whose plan differs from the control's is marked.
    assert_eq!(on(FIND_STATUS, "A")["plan_changed"], false);
    assert_eq!(on(FIND_STATUS, "B")["plan_changed"], true);
    for t in ["A", "B"] {
        assert_eq!(on(FIND_SKU, t)["plan_changed"], false);
        assert_eq!(on(FIND_SKU, t)["plan"], "COLLSCAN");
    }
    let findings: Vec<&str> = run.report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .filter(|f| f.starts_with("plan changed"))
        .collect();
    // The finding names both plans, then the shape's latency ratio when the run has one.
    let changed = "plan changed on `find shop.orders {status: ?string}`: COLLSCAN on A, \
                   IXSCAN {status: 1} -> FETCH on B";
    assert_eq!(findings.len(), 1, "{findings:?}");
    let mean = run.report["shapes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["shape"] == FIND_STATUS)
        .and_then(|s| s["ratios"].as_array()?.first().cloned())
        .map(|r| r["mean"].clone())
        .filter(|m| !m.is_null());
    match mean {
        Some(m) => {
            let latency = format!("; latency B/A {:.2}x (", m["ratio"].as_f64().unwrap());
            assert!(
                findings[0].starts_with(changed) && findings[0].contains(&latency),
                "{findings:?} {m}"
            );
        }
        None => assert_eq!(findings[0], changed),
    }
    assert!(
        run.output
            .stdout
            .contains("plan changed on `find shop.orders {status: ?string}`"),
        "{}",
        run.describe()
    );
    // The targets' own reports carry no second copy.
    assert!(run.target("A")["replay"].get("plans").is_none());
    // Each side applied the update once.
    assert_eq!(counts(&a.uri()), vec![30, 1, 0]);
    assert_eq!(counts(&b.uri()), vec![30, 1, 0]);
}

#[test]
fn analyze_explain_asks_the_server_it_is_given() {
    let _serial = one_at_a_time();
    let dir = tempdir();
    let capture = record(dir.path());
    let server = Server::start_with(&["--standalone"]);
    python(SETUP, &[server.uri().as_str(), "1"]);
    let report = analyze_json(&capture, &["--explain", &server.uri()]);
    assert_schema("analyze", &report);
    let plans = plans(&report);
    assert_eq!(plans.len(), 4, "{plans:#?}");
    // The collection is empty there: the plans are the index's and a scan of nothing.
    assert_eq!(
        plan_of(&plans, FIND_STATUS, None)["plan"],
        "IXSCAN {status: 1} -> FETCH"
    );
    assert_eq!(plan_of(&plans, FIND_SKU, None)["plan"], "COLLSCAN");
    assert_eq!(plan_of(&plans, FIND_SKU, None)["docs_examined"], 0);
    // analyze counts no run.
    assert!(plans.iter().all(|p| p.get("docs_examined_run").is_none()));
    // Nothing was written there by the explained update.
    assert_eq!(counts(&server.uri()), vec![0, 0, 0]);
    let text = mongotape(&[
        "analyze".as_ref(),
        capture.as_os_str(),
        "--explain".as_ref(),
        server.uri().as_ref(),
    ]);
    assert!(text.success(), "{}", text.stderr);
    assert!(
        text.stdout.contains("plans (4 explained"),
        "{}",
        text.stdout
    );
    // Without --explain: no plans.
    assert!(analyze_json(&capture, &[]).get("plans").is_none());
}

#[test]
fn analyze_records_a_server_it_cannot_reach_as_each_plans_error() {
    let _serial = one_at_a_time();
    let dir = tempdir();
    let capture = record(dir.path());
    // analyze against a port nothing listens on: every plan has the connection's error.
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().to_string()
    };
    let report = analyze_json(&capture, &["--explain", &closed, "--explain-timeout", "2"]);
    assert_schema("analyze", &report);
    let plans = plans(&report);
    assert_eq!(plans.len(), 4);
    for p in &plans {
        assert_eq!(p["plan"], Value::Null, "{p}");
        let e = p["error"].as_str().expect("an error");
        assert!(e.contains(&closed), "{e}");
    }
    assert!(u(&report["summary"]["ops"]) > 0);
}

/// A forwarder in front of `server` that drops any connection on which an `explain` arrives
/// (a target where explain fails); everything else goes through unchanged.
fn explain_dropping_forwarder(server: &str) -> String {
    use mongotape::wire::{FrameSplitter, OpMsgView};
    use std::io::Write;
    use std::net::{Shutdown, TcpListener, TcpStream};
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let server = server.to_owned();
    std::thread::spawn(move || {
        for client in listener.incoming() {
            let Ok(mut client) = client else { return };
            let Ok(mut upstream) = TcpStream::connect(&server) else {
                continue;
            };
            let (mut c2, mut u2) = (client.try_clone().unwrap(), upstream.try_clone().unwrap());
            std::thread::spawn(move || {
                let _ = std::io::copy(&mut u2, &mut c2);
                let _ = c2.shutdown(Shutdown::Both);
            });
            std::thread::spawn(move || {
                let mut splitter = FrameSplitter::new();
                while let Some(frame) = read_frame(&mut client, &mut splitter) {
                    let explain = OpMsgView::new(&frame)
                        .and_then(|v| v.body())
                        .ok()
                        .and_then(|b| bson::RawDocument::from_bytes(b).ok()?.iter().next()?.ok())
                        .is_some_and(|(k, _)| k == "explain");
                    if explain || upstream.write_all(&frame).is_err() {
                        break;
                    }
                }
                let _ = client.shutdown(Shutdown::Both);
                let _ = upstream.shutdown(Shutdown::Both);
            });
        }
    });
    addr
}

#[test]
fn an_explain_the_target_refuses_is_recorded_and_the_replay_completes() {
    let _serial = one_at_a_time();
    let dir = tempdir();
    let capture = record(dir.path());
    let target = Server::start_with(&["--standalone"]);
    python(SETUP, &[target.uri().as_str(), "0"]);
    let front = explain_dropping_forwarder(target.addr());
    let run = replay(&capture, &front, &["--fast", "--explain"]);
    assert_schema("replay", &run.report);
    let plans = plans(&run.report);
    assert_eq!(plans.len(), 4, "{plans:#?}");
    for p in &plans {
        assert_eq!(p["plan"], Value::Null, "{p}");
        let e = p["error"].as_str().expect("an error");
        assert!(e.contains("closed the connection"), "{e}");
    }
    // Every request was replayed, and the update applied once.
    assert_eq!(run.report["complete"], true);
    assert_eq!(run.count("find"), 6, "{}", run.describe());
    assert_eq!(counts(&target.uri()), vec![30, 1, 0]);
    assert!(run.output.stdout.contains("plans (4 explained, 4 failed"));
}

#[test]
fn merge_keeps_each_shapes_plan_once_from_the_shard_reports() {
    let _serial = one_at_a_time();
    let dir = tempdir();
    let capture = record(dir.path());
    let target = Server::start_with(&["--standalone"]);
    python(SETUP, &[target.uri().as_str(), "0"]);
    let mut reports = Vec::new();
    for i in 0..2 {
        let report = dir.path().join(format!("shard-{i}.json"));
        let out = mongotape(&[
            "replay",
            capture.to_str().unwrap(),
            "--target",
            target.addr(),
            "--fast",
            "--explain",
            "--quiet",
            "--shard",
            &format!("{i}/2"),
            "--report",
            report.to_str().unwrap(),
        ]);
        assert!(out.success(), "{}", out.stderr);
        reports.push(report.display().to_string());
    }
    let merged = dir.path().join("merged.json");
    let mut args = vec!["merge".to_owned()];
    args.extend(reports.iter().cloned());
    args.extend([
        "--quiet".into(),
        "--report".into(),
        merged.display().to_string(),
    ]);
    let out = mongotape(&args);
    assert!(out.success(), "{}", out.stderr);
    let report: Value = serde_json::from_slice(&std::fs::read(&merged).unwrap()).unwrap();
    assert_schema("merge", &report);
    let shard_plans: usize = reports
        .iter()
        .map(|r| {
            let v: Value = serde_json::from_slice(&std::fs::read(r).unwrap()).unwrap();
            plans(&v).len()
        })
        .sum();
    let plans = plans(&report);
    // The workload's one connection went to one shard: its four shapes, each once.
    assert_eq!(shard_plans, 4);
    assert_eq!(plans.len(), 4, "{plans:#?}");
    assert_eq!(plan_of(&plans, FIND_STATUS, None)["plan"], "COLLSCAN");
    // Counted again over the merged shapes: three requests of 30 documents.
    assert_eq!(plan_of(&plans, FIND_STATUS, None)["docs_examined_run"], 90);
    // And each merged shape's documents examined per request, from the merged plans.
    assert_eq!(
        shape_of(&report["shapes"], FIND_STATUS)["docs_per_request"],
        30
    );
}

/// Finds on `status`, then the index on it, then the same finds: each target's explain of the
/// shape runs beside its lanes, before or after the replayed createIndexes.
const WORKLOAD_THEN_INDEX: &str = r#"
import sys
from pymongo import MongoClient
client = MongoClient(sys.argv[1], serverSelectionTimeoutMS=10000)
c = client.shop.orders
c.insert_many([{'_id': i, 'status': 'AB'[i % 2], 'qty': i} for i in range(30)])
for status in ['A', 'B', 'C']:
    list(c.find({'status': status}))
c.create_index('status')
for status in ['A', 'B', 'C']:
    list(c.find({'status': status}))
print(c.count_documents({}))
client.close()
"#;

#[test]
fn identical_targets_never_show_a_plan_change_from_an_index_the_capture_creates() {
    let _serial = one_at_a_time();
    let dir = tempdir();
    let recording = Server::start_with(&["--standalone"]);
    python(SETUP, &[recording.uri().as_str(), "0"]);
    let (capture, stdout) = record_python(&recording, dir.path(), "index", WORKLOAD_THEN_INDEX);
    assert_eq!(stdout.trim(), "30");
    let servers: Vec<Server> = (0..3)
        .map(|_| Server::start_with(&["--standalone"]))
        .collect();
    for s in &servers {
        python(SETUP, &[s.uri().as_str(), "0"]);
    }
    let addrs: Vec<&str> = servers.iter().map(Server::addr).collect();
    let run = ab_replay(&capture, &addrs, &["--fast", "--explain"]);
    assert_schema("ab", &run.report);
    let plans = plans(&run.report);
    let status: Vec<&Value> = plans.iter().filter(|p| p["shape"] == FIND_STATUS).collect();
    assert_eq!(status.len(), 3, "{plans:#?}");
    let control = status[0];
    assert_eq!(control["target"], "A");
    for p in &status {
        assert_eq!(p["plan_changed"], false, "{plans:#?}");
        // Each explain says how many of the capture's schema changes (here its one
        // createIndexes) its target had answered, unless that one was in flight.
        let at = &p["schema_changes"];
        // A lane sends the createIndexes only once the explains asked before it are done:
        // every target explains the shape on the indexes its first request met.
        assert_eq!(p["plan"], "COLLSCAN", "{plans:#?}");
        assert_eq!(at, 0, "{plans:#?}");
    }
    let findings = run.report["findings"].as_array().unwrap();
    assert!(
        !findings
            .iter()
            .any(|f| f.as_str().is_some_and(|f| f.starts_with("plan changed"))),
        "{findings:?}"
    );
}
