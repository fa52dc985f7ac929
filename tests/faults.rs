//! Fault rules (`record --fault`, docs/faults.md) against the real server and real clients:
//! what each client saw (the error code and labels, a connection error, a timeout), what the
//! database holds, the `fault` records of the capture, the seeded draws, and `/faults` changed
//! while a client is writing.

mod common;

use common::*;
use mongotape::capture::{FaultEvent, RecordKind, FAULT};
use serde_json::Value;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

const STEPDOWN: &str = "code=10107 codeName=NotWritablePrimary labels=RetryableWriteError";

fn faults_of(capture: &Path) -> Vec<FaultEvent> {
    capture_records(capture)
        .iter()
        .filter(|r| r.kind == FAULT)
        .map(|r| r.event().expect("a fault record is JSON"))
        .collect()
}

fn start(server: &Server, dir: &Path, rules: &[&str], extra: &[&str]) -> Proxy {
    let mut args: Vec<&str> = Vec::new();
    for r in rules {
        args.extend(["--fault", r]);
    }
    args.extend(extra);
    Proxy::start_with(&server.uri(), &dir.join("faults.mtape"), &args)
}

const PYMONGO_ERRORS: &str = r#"
import sys, json
from pymongo import MongoClient
from pymongo.errors import PyMongoError
# NotWritablePrimary and ShutdownInProgress raise NotPrimaryError, whose code is in `details`.
uri = sys.argv[1]
out = {}
c = MongoClient(uri + "&retryWrites=false", serverSelectionTimeoutMS=10000)
try:
    c.faults.noretry.insert_one({"_id": 1})
    out["noretry"] = "no error"
except PyMongoError as e:
    out["noretry"] = {"code": getattr(e, "code", None) or (e.details or {}).get("code"),
                      "label": e.has_error_label("RetryableWriteError")}
r = MongoClient(uri + "&retryWrites=true&serverMonitoringMode=poll&heartbeatFrequencyMS=500",
                serverSelectionTimeoutMS=10000)
r.faults.retry.insert_one({"_id": 1, "x": "once"})
out["retry_docs"] = r.faults.retry.count_documents({})
print(json.dumps(out))
"#;

#[test]
fn pymongo_gets_the_error_and_retries_a_retryable_write_once() {
    let _one = one_at_a_time();
    let server = Server::start();
    let dir = tempdir();
    let noretry = format!("command=insert ns=faults.noretry -> error {STEPDOWN}");
    let retry = format!("stepdown: command=insert ns=faults.retry times=1 -> error {STEPDOWN}");
    let proxy = start(&server, dir.path(), &[&noretry, &retry], &[]);
    assert!(
        proxy.stderr().contains("faults ON: 2 rules"),
        "{}",
        proxy.stderr()
    );
    let out = python_json(PYMONGO_ERRORS, &[proxy.uri()]);
    assert_eq!(out["noretry"]["code"], 10107, "{out}");
    assert_eq!(out["noretry"]["label"], true, "{out}");
    // The retry went through the proxy again (times=1) and the document is there once.
    assert_eq!(out["retry_docs"], 1, "{out}");
    assert_eq!(count_documents(&server.uri(), "faults", "noretry"), 0);
    let capture = proxy.out().to_path_buf();
    proxy.stop();
    let faults = faults_of(&capture);
    let retried: Vec<_> = faults.iter().filter(|f| f.name == "stepdown").collect();
    assert_eq!(retried.len(), 1, "{faults:?}");
    assert_eq!(
        (
            retried[0].action.as_str(),
            retried[0].command.as_str(),
            retried[0].ns.as_str()
        ),
        ("error", "insert", "faults.retry")
    );
    assert!(!retried[0].forwarded);
    let first = faults
        .iter()
        .find(|f| f.ns == "faults.noretry")
        .expect("noretry fault");
    assert_eq!(first.rule, 0);
    // Every request a fault fired on is in the capture.
    let requests = capture_records(&capture)
        .iter()
        .filter(|r| r.kind == RecordKind::Request && r.conn_id == first.conn_id)
        .count();
    assert!(requests >= 1);
    // The reports say so: analyze (text and JSON) and inspect.
    let analysis = analyze_json(&capture, &[]);
    let rows = analysis["faults"]["rules"]
        .as_array()
        .expect("analyze faults")
        .clone();
    assert_eq!(
        analysis["faults"]["total"],
        faults.len(),
        "{}",
        analysis["faults"]
    );
    let stepdown = rows.iter().find(|r| r["name"] == "stepdown").unwrap();
    assert_eq!(
        (stepdown["action"].as_str(), u(&stepdown["count"])),
        (Some("error"), 1)
    );
    let text = mongotape(&["analyze", capture.to_str().unwrap()]);
    assert!(
        text.stdout.contains("faults were injected"),
        "{}",
        text.stdout
    );
    let inspection = inspect_json(&capture);
    assert_eq!(inspection["faults"]["total"], faults.len(), "{inspection}");
    // And the replay of the faulted capture.
    let target = Server::start();
    let replayed = replay(&capture, &target.uri(), &[]);
    assert_eq!(
        replayed.report["faults"]["total"],
        faults.len(),
        "{}",
        replayed.describe()
    );
}

#[test]
fn close_after_applies_the_write_and_the_client_gets_a_connection_error() {
    let _one = one_at_a_time();
    let server = Server::start();
    let dir = tempdir();
    let proxy = start(
        &server,
        dir.path(),
        &["command=insert ns=faults.lost -> close_after"],
        &[],
    );
    let out = python_json(
        r#"
import sys, json
from pymongo import MongoClient
from pymongo.errors import ConnectionFailure
c = MongoClient(sys.argv[1] + "&retryWrites=false", serverSelectionTimeoutMS=10000)
try:
    c.faults.lost.insert_one({"_id": 1})
    print(json.dumps({"error": None}))
except ConnectionFailure as e:
    print(json.dumps({"error": type(e).__name__}))
"#,
        &[proxy.uri()],
    );
    assert_eq!(out["error"], "AutoReconnect", "{out}");
    assert_eq!(count_documents(&server.uri(), "faults", "lost"), 1);
    let capture = proxy.out().to_path_buf();
    proxy.stop();
    let closes = capture_closes(&capture);
    assert!(
        closes.iter().any(|c| c.reason.contains("close_after")),
        "{closes:?}"
    );
    let faults = faults_of(&capture);
    assert!(
        faults
            .iter()
            .all(|f| f.action == "close_after" && f.forwarded),
        "{faults:?}"
    );
}

#[test]
fn mongosh_and_php_see_the_error_code() {
    let _one = one_at_a_time();
    let server = Server::start();
    let dir = tempdir();
    let rule = "command=insert ns=faults.clients -> error code=10107 codeName=NotWritablePrimary";
    let proxy = start(&server, dir.path(), &[rule], &[]);
    let uri = format!("{}&retryWrites=false", proxy.uri());
    let mut sh = Command::new("mongosh");
    sh.args([
        &uri,
        "--quiet",
        "--norc",
        "--eval",
        "db.getSiblingDB('faults').clients.insertOne({_id: 1})",
    ]);
    let sh = run_command(sh, Duration::from_secs(120));
    let said = format!("{}{}", sh.stdout, sh.stderr);
    assert!(!sh.success(), "mongosh: {said}");
    assert!(
        said.contains("NotWritablePrimary") || said.contains("10107"),
        "mongosh: {said}"
    );
    let mut php = Command::new("php");
    php.args([
        "-r",
        r#"$m = new MongoDB\Driver\Manager($argv[1]);
$b = new MongoDB\Driver\BulkWrite; $b->insert(["_id" => 1]);
try { $m->executeBulkWrite("faults.clients", $b); echo "no error\n"; }
catch (Exception $e) { echo "code=" . $e->getCode() . " " . $e->getMessage() . "\n"; }"#,
        "--",
        &uri,
    ]);
    let php = run_command(php, Duration::from_secs(120));
    assert!(
        php.stdout.contains("code=10107"),
        "php: {}{}",
        php.stdout,
        php.stderr
    );
    assert_eq!(count_documents(&server.uri(), "faults", "clients"), 0);
    proxy.stop();
}

#[test]
fn delays_come_late_and_a_stall_times_the_client_out() {
    let _one = one_at_a_time();
    let server = Server::start();
    let dir = tempdir();
    let rules = [
        "command=find ns=faults.slow -> delay_reply ms=400",
        "command=find ns=faults.stuck -> stall",
    ];
    let proxy = start(&server, dir.path(), &rules, &[]);
    let out = python_json(
        r#"
import sys, json, time
from pymongo import MongoClient
from pymongo.errors import NetworkTimeout
c = MongoClient(sys.argv[1] + "&socketTimeoutMS=1500", serverSelectionTimeoutMS=10000)
c.admin.command("ping")
t = time.monotonic(); c.faults.slow.find_one({}); slow = time.monotonic() - t
t = time.monotonic()
try:
    c.faults.stuck.find_one({}); stuck = "answered"
except NetworkTimeout:
    stuck = "timeout"
print(json.dumps({"slow": slow, "stuck": stuck, "stuck_s": time.monotonic() - t,
                  "after": c.faults.other.count_documents({})}))
"#,
        &[proxy.uri()],
    );
    // Lower bounds only: the delay is at least what the rule says; the stall lasts until the
    // client's own socket timeout.
    assert!(out["slow"].as_f64().unwrap() >= 0.4, "{out}");
    assert_eq!(out["stuck"], "timeout", "{out}");
    assert!(out["stuck_s"].as_f64().unwrap() >= 1.5, "{out}");
    // The client goes on on a new connection.
    assert_eq!(out["after"], 0, "{out}");
    proxy.stop();
}

const DRAWS: &str = r#"
import sys, json
from pymongo import MongoClient
from pymongo.errors import PyMongoError
c = MongoClient(sys.argv[1] + "&retryWrites=false", serverSelectionTimeoutMS=10000)
failed = []
for i in range(60):
    try:
        c.faults.draws.insert_one({"i": i})
    except PyMongoError as e:
        failed.append(i)
print(json.dumps(failed))
"#;

#[test]
fn a_seeded_probability_rule_fires_on_the_same_requests_in_two_runs() {
    let _one = one_at_a_time();
    let rule = "command=insert ns=faults.draws probability=0.4 -> error code=2 codeName=BadValue";
    let run = |seed: &str| {
        let server = Server::start();
        let dir = tempdir();
        let proxy = start(&server, dir.path(), &[rule], &["--fault-seed", seed]);
        let failed = python_json(DRAWS, &[proxy.uri()]);
        let capture = proxy.out().to_path_buf();
        proxy.stop();
        let faults = faults_of(&capture);
        (failed, faults.len())
    };
    let (a, fired_a) = run("7");
    let (b, fired_b) = run("7");
    let n = a.as_array().unwrap().len();
    assert!(n > 5 && n < 55, "{a}");
    assert_eq!(a, b);
    assert_eq!((fired_a, fired_b), (n, n));
    let (c, _) = run("8");
    assert_ne!(a, c);
}

fn http(addr: &str, request: &str) -> (String, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(request.as_bytes()).unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let (head, body) = out.split_once("\r\n\r\n").unwrap();
    (head.to_owned(), body.to_owned())
}

fn put(addr: &str, body: &str) -> (String, String) {
    http(
        addr,
        &format!(
            "PUT /faults HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        ),
    )
}

const WRITER: &str = r#"
import sys, json, time
from pymongo import MongoClient
from pymongo.errors import PyMongoError
# Poll monitoring: after a ShutdownInProgress pymongo finds the server again within 500 ms
# (the streaming monitor can take longer than the selection timeout).
c = MongoClient(sys.argv[1] + "&retryWrites=false&serverMonitoringMode=poll&heartbeatFrequencyMS=500",
                serverSelectionTimeoutMS=10000)
ok, codes, deadline = 0, [], time.monotonic() + 90
while time.monotonic() < deadline:
    try:
        c.faults.load.insert_one({"n": ok})
        ok += 1
    except PyMongoError as e:
        codes.append(getattr(e, "code", None) or (e.details or {}).get("code") or repr(e))
        if len(codes) >= 3:
            break
print(json.dumps({"ok": ok, "codes": codes}))
"#;

#[test]
fn put_faults_changes_the_rules_under_load() {
    let _one = one_at_a_time();
    let server = Server::start();
    let dir = tempdir();
    let proxy = start(
        &server,
        dir.path(),
        &["idle: ns=nothing.here -> stall"],
        &["--metrics", "127.0.0.1:0"],
    );
    let addr = metrics_addr(&proxy.stderr()).expect("metrics address");
    let mut writer = Command::new("python3");
    writer
        .args(["-c", WRITER, &proxy.uri()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let writer = writer.spawn().unwrap();
    while count_documents(&server.uri(), "faults", "load") < 20 {
        std::thread::sleep(Duration::from_millis(50));
    }
    let (head, _) = put(addr.as_str(), "[{\"name\": \"x\", \"action\": \"what\"}]");
    assert!(head.starts_with("HTTP/1.1 400"), "{head}");
    let body = r#"{"rules": [{"name": "shutdown", "failCommands": ["insert"],
        "namespace": "faults.load", "errorCode": 91, "codeName": "ShutdownInProgress"}]}"#;
    let (head, answer) = put(&addr, body);
    assert!(head.starts_with("HTTP/1.1 200"), "{head}\n{answer}");
    let out = writer.wait_with_output().unwrap();
    let out: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    // Nothing but the faults: every insert before the change succeeded, every error is 91.
    assert_eq!(out["codes"], serde_json::json!([91, 91, 91]), "{out}");
    assert!(out["ok"].as_u64().unwrap() >= 20, "{out}");
    let (head, listed) = http(&addr, "GET /faults HTTP/1.1\r\n\r\n");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let listed: Value = serde_json::from_str(&listed).unwrap();
    assert_eq!(listed["rules"][0]["name"], "shutdown", "{listed}");
    assert_eq!(listed["rules"][0]["fired"], 3, "{listed}");
    let metrics = scrape(&addr);
    assert!(
        metrics.contains("mongotape_faults_injected_total{rule=\"shutdown\",action=\"error\"} 3"),
        "{metrics}"
    );
    proxy.stop();
}

#[test]
fn a_bad_rule_exits_2_naming_the_position() {
    let dir = tempdir();
    let out = mongotape(&[
        "record",
        "--upstream",
        "127.0.0.1:1",
        "--out",
        dir.path().join("x.mtape").to_str().unwrap(),
        "--fault",
        "command=insert -> eror code=1",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", out.stderr);
    assert!(out.stderr.contains("at character 19"), "{}", out.stderr);
    assert!(
        out.stderr.contains("unknown action `eror`"),
        "{}",
        out.stderr
    );
    let file = dir.path().join("rules.json");
    std::fs::write(&file, "[{\"failCommands\": [\"insert\"]}]").unwrap();
    let out = mongotape(&[
        "record",
        "--upstream",
        "127.0.0.1:1",
        "--out",
        dir.path().join("y.mtape").to_str().unwrap(),
        "--faults",
        file.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", out.stderr);
    assert!(out.stderr.contains("rule 0: no action"), "{}", out.stderr);
}

/// In front of a replica set the faulted path still rewrites hello replies (streamed ones too):
/// the driver knows only the proxy, and a stepdown error on a write is retried there.
#[test]
fn a_replica_set_behind_faults_is_still_named_by_the_proxy() {
    let _one = one_at_a_time();
    let server = Server::start();
    let dir = tempdir();
    let out = dir.path().join("rs.mtape");
    let rule = format!("command=insert times=1 -> error {STEPDOWN}");
    let proxy = Proxy::start_with(server.addr(), &out, &["--fault", &rule]);
    let uri = format!(
        "mongodb://{}/?replicaSet=secantus&heartbeatFrequencyMS=500",
        proxy.addr()
    );
    let seen = python_json(
        r#"
import sys, json, time
from pymongo import MongoClient
c = MongoClient(sys.argv[1], serverSelectionTimeoutMS=10000)
for i in range(10):
    c.faults.rs.insert_one({"_id": i})
time.sleep(2)
print(json.dumps({"servers": ['%s:%d' % a for a in c.topology_description.server_descriptions()],
                  "docs": c.faults.rs.count_documents({})}))
"#,
        &[&uri],
    );
    assert_eq!(seen["servers"], serde_json::json!([proxy.addr()]), "{seen}");
    assert_eq!(seen["docs"], 10, "{seen}");
    let exit = proxy.stop();
    assert!(!exit.stderr.contains("UNSERVED"), "{}", exit.stderr);
    let records = capture_records(&out);
    let rewrites = records
        .iter()
        .filter(|r| r.kind == mongotape::capture::record::HELLO_REWRITE)
        .count();
    assert!(rewrites >= 2, "{rewrites} hello rewrites");
    assert_eq!(faults_of(&out).len(), 1);
}
