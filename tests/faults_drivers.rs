//! What each client did after a fault (`analyze`'s `faults`, docs/faults.md#what-the-client-did-next),
//! against the real server and the real clients: the Node.js and Rust drivers and the legacy C++
//! driver running their seed workload through a proxy with a fault rule, pymongo retrying a read,
//! and an application's own retry of a write whose reply was lost applying it twice.

mod common;

use common::*;
use serde_json::Value;
use std::path::Path;

const STEPDOWN: &str = "code=10107 codeName=NotWritablePrimary labels=RetryableWriteError";
const DB: &str = "fdrv";

/// `client`'s `basic` workload through a proxy with `rule`: the run, and `analyze --json` of it.
fn under(server: &Server, dir: &Path, client: Client, rule: &str) -> (ClientRun, Value) {
    let name = rule.split(':').next().unwrap_or("rule");
    let out = dir.join(format!("{}-{name}.mtape", client.name()));
    let proxy = Proxy::start_with(&server.uri(), &out, &["--fault", rule]);
    let run = try_run_client(client, "basic", &proxy.uri(), DB, 1.0);
    proxy.stop();
    let text = mongotape(&["analyze", out.to_str().unwrap()]);
    assert!(text.stdout.contains("after the faults"), "{}", text.stdout);
    (run, analyze_json(&out, &[]))
}

/// The figures of what followed the faults of the rule named `name`.
fn after<'a>(analysis: &'a Value, name: &str) -> &'a Value {
    let rules = analysis["faults"]["rules"].as_array();
    let row = rules.and_then(|rows| rows.iter().find(|r| r["name"] == name));
    &row.unwrap_or_else(|| panic!("no rule {name}: {}", analysis["faults"]))["after"]
}

/// The `drivers` row whose name starts with `driver`.
fn driver<'a>(analysis: &'a Value, driver: &str) -> &'a Value {
    let rows = analysis["faults"]["drivers"].as_array();
    rows.and_then(|rows| {
        rows.iter()
            .find(|r| r["name"].as_str().unwrap_or("").starts_with(driver))
    })
    .unwrap_or_else(|| panic!("no driver {driver}: {}", analysis["faults"]))
}

fn n(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

/// The step results of a run, in order.
fn results(run: &ClientRun) -> Vec<(String, Value)> {
    run.steps
        .iter()
        .map(|s| (s.step.clone(), s.result.clone()))
        .collect()
}

/// The drivers with retryable writes on by default retry `rule`'s fault on an insert with the
/// same `lsid` and `txnNumber` and end as a run without faults does (each document once); the
/// legacy C++ driver (no sessions, no client metadata) gives the error up: its workload stops.
fn drivers_under(server: &Server, rule_name: &str, action: &str) -> Vec<(ClientRun, Value)> {
    let dir = tempdir();
    let rule = format!("{rule_name}: command=insert ns={DB}.items times=1 -> {action}");
    let mut out = Vec::new();
    for client in [Client::Node, Client::Rust] {
        let clean = try_run_client(client, "basic", &server.uri(), DB, 1.0);
        assert!(
            clean.status.success(),
            "{}: {}",
            client.name(),
            clean.stderr
        );
        let items = count_documents(&server.uri(), DB, "items");
        let (run, analysis) = under(server, dir.path(), client, &rule);
        assert!(run.status.success(), "{}: {}", client.name(), run.stderr);
        assert_eq!(results(&run), results(&clean), "{}", client.name());
        assert_eq!(count_documents(&server.uri(), DB, "items"), items);
        let a = after(&analysis, rule_name);
        assert_eq!((n(&a["faults"]), n(&a["write_retried"])), (1, 1), "{a}");
        assert_eq!((n(&a["given_up"]), n(&a["applied_twice"])), (0, 0), "{a}");
        let name = if client == Client::Node {
            "nodejs"
        } else {
            "mongo-rust-driver"
        };
        assert_eq!(n(&driver(&analysis, name)["write_retried"]), 1);
        out.push((run, analysis));
    }
    let (run, analysis) = under(server, dir.path(), Client::CxxLegacy, &rule);
    assert!(!run.status.success(), "cxx-legacy went on: {}", run.stdout);
    let a = after(&analysis, rule_name);
    assert_eq!((n(&a["given_up"]), n(&a["write_retried"])), (1, 0), "{a}");
    assert_eq!(n(&driver(&analysis, "unknown driver")["given_up"]), 1);
    out.push((run, analysis));
    out
}

#[test]
fn node_and_rust_retry_a_stepdown_on_insert_and_the_legacy_cxx_driver_gives_it_up() {
    let _one = one_at_a_time();
    let server = Server::start();
    let runs = drivers_under(&server, "stepdown", &format!("error {STEPDOWN}"));
    let (cxx, analysis) = runs.last().unwrap();
    // The legacy driver's exception carries the made-up reply whole: code and label.
    assert!(
        cxx.stderr.contains("code: 10107") && cxx.stderr.contains("RetryableWriteError"),
        "{}",
        cxx.stderr
    );
    assert_eq!(n(&analysis["faults"]["rules"][0]["forwarded"]), 0);
    // Not forwarded: the first insert is not in the database.
    assert_eq!(count_documents(&server.uri(), DB, "items"), 0);
}

#[test]
fn node_and_rust_retry_an_insert_whose_connection_closed_and_apply_it_once() {
    let _one = one_at_a_time();
    let server = Server::start();
    let runs = drivers_under(&server, "lost", "close_after");
    let (cxx, analysis) = runs.last().unwrap();
    assert!(cxx.stderr.contains("transport error"), "{}", cxx.stderr);
    assert_eq!(n(&analysis["faults"]["rules"][0]["forwarded"]), 1);
    // Applied although the legacy client saw its connection close.
    assert_eq!(count_documents(&server.uri(), DB, "items"), 1);
}

const PYMONGO_READ: &str = r#"
import sys, json
from pymongo import MongoClient
# pymongo 4.20 retries a read on ShutdownInProgress (91) by its code (helpers_shared's
# _RETRYABLE_ERROR_CODES); poll monitoring finds the server again within 500 ms.
c = MongoClient(sys.argv[1] + "&retryReads=true&serverMonitoringMode=poll&heartbeatFrequencyMS=500",
                serverSelectionTimeoutMS=10000)
c.fdrv.reads.insert_one({"_id": 1, "x": "read me"})
print(json.dumps({"found": c.fdrv.reads.find_one({"_id": 1})}))
"#;

#[test]
fn pymongo_retries_a_read_after_shutdown_in_progress() {
    let _one = one_at_a_time();
    let server = Server::start();
    let dir = tempdir();
    let rule = format!(
        "reads: command=find ns={DB}.reads times=1 -> error code=91 codeName=ShutdownInProgress"
    );
    let proxy = Proxy::start_with(
        &server.uri(),
        &dir.path().join("reads.mtape"),
        &["--fault", &rule],
    );
    let out = python_json(PYMONGO_READ, &[proxy.uri()]);
    assert_eq!(out["found"]["x"], "read me", "{out}");
    let capture = proxy.out().to_path_buf();
    proxy.stop();
    let analysis = analyze_json(&capture, &[]);
    let a = after(&analysis, "reads");
    assert_eq!((n(&a["faults"]), n(&a["read_retried"])), (1, 1), "{a}");
    assert_eq!(
        (n(&a["given_up"]), n(&a["write_retried"]), n(&a["resent"])),
        (0, 0, 0),
        "{a}"
    );
    assert_eq!(n(&driver(&analysis, "PyMongo")["read_retried"]), 1);
    // A "shutting down" error clears pymongo's pool (SDAM): the retry came on a new connection.
    assert_eq!(n(&a["reconnected"]), 1, "{a}");
}

const PYMONGO_APP_RETRY: &str = r#"
import sys, json
from pymongo import MongoClient
from pymongo.errors import AutoReconnect
# Retryable writes off: the lost reply is the application's problem, and its own retry builds
# the document again (a new ObjectId _id).
c = MongoClient(sys.argv[1] + "&retryWrites=false&serverMonitoringMode=poll&heartbeatFrequencyMS=500",
                serverSelectionTimeoutMS=10000)
out = {}
try:
    c.fdrv.twice.insert_one({"order": 7, "qty": 2})
    out["first"] = "ok"
except AutoReconnect as e:
    out["first"] = type(e).__name__
    c.fdrv.twice.insert_one({"order": 7, "qty": 2})
out["docs"] = c.fdrv.twice.count_documents({"order": 7})
print(json.dumps(out))
"#;

#[test]
fn an_application_retry_after_a_lost_reply_applies_the_write_twice() {
    let _one = one_at_a_time();
    let server = Server::start();
    let dir = tempdir();
    let rule = format!("lost: command=insert ns={DB}.twice times=1 -> close_after");
    let proxy = Proxy::start_with(
        &server.uri(),
        &dir.path().join("twice.mtape"),
        &["--fault", &rule],
    );
    let out = python_json(PYMONGO_APP_RETRY, &[proxy.uri()]);
    assert_eq!(out["first"], "AutoReconnect", "{out}");
    assert_eq!(out["docs"], 2, "{out}");
    assert_eq!(count_documents(&server.uri(), DB, "twice"), 2);
    let capture = proxy.out().to_path_buf();
    proxy.stop();
    let analysis = analyze_json(&capture, &[]);
    let a = after(&analysis, "lost");
    assert_eq!((n(&a["resent"]), n(&a["applied_twice"])), (1, 1), "{a}");
    assert_eq!((n(&a["write_retried"]), n(&a["given_up"])), (0, 0), "{a}");
    // pymongo's pool was cleared by the network error: the retry needed a new connection.
    assert_eq!(n(&a["reconnected"]), 1, "{a}");
    let text = mongotape(&["analyze", capture.to_str().unwrap()]);
    assert!(
        text.stdout.contains("rule lost: close_after"),
        "{}",
        text.stdout
    );
}
