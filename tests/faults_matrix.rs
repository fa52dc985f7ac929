//! The fault actions (docs/faults.md, "Actions") against all six real clients (issue 37): every
//! client's `basic` workload through a proxy whose one rule fires once on the workload's first
//! acknowledged insert (`items` `_id: 0`, the first insert every client sends), asserting what the
//! client saw (the code, codeName and labels its error names, or its steps), what the database holds,
//! and what `analyze` says followed the fault. The table in docs/faults.md ("The matrix") is this
//! file's assertions.

mod common;

use common::*;
use serde_json::Value;
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const DB: &str = "fmx";
/// All six: the five current drivers and the legacy C++ one.
const CLIENTS: [Client; 6] = [
    Client::Pymongo,
    Client::Mongosh,
    Client::Php,
    Client::Node,
    Client::Rust,
    Client::CxxLegacy,
];
/// The drivers with retryable writes on by default (all but the legacy C++ one).
const MODERN: [Client; 5] = Client::ALL;
/// `items` after a whole `basic` run: 100 inserted, `delete_one` and `delete_many` (10) removed.
const ITEMS_AFTER_CLEAN_RUN: usize = 89;
/// The socket timeout of the stall test, for the clients that take one in their URI.
const SOCKET_TIMEOUT_MS: u64 = 2000;

/// One client's run under one rule.
struct Cell {
    run: ClientRun,
    analysis: Value,
    /// `items` in the database after the run.
    items: usize,
}

fn rule(name: &str, action: &str) -> String {
    format!("{name}: command=insert ns={DB}.items times=1 -> {action}")
}

/// `client`'s `basic` through a proxy with `rule`; `uri_extra` is appended to the proxy's URI.
fn under(server: &Server, dir: &Path, client: Client, rule: &str, uri_extra: &str) -> Cell {
    let out = dir.join(format!("{}.mtape", client.name()));
    let proxy = Proxy::start_with(&server.uri(), &out, &["--fault", rule]);
    let uri = format!("{}{uri_extra}", proxy.uri());
    let run = try_run_client(client, "basic", &uri, DB, 1.0);
    proxy.stop();
    let items = count_documents(&server.uri(), DB, "items");
    Cell {
        run,
        analysis: analyze_json(&out, &[]),
        items,
    }
}

/// A run without faults (PHP's, the fastest to start; every client's `basic` prints the same
/// results: tools/workloads/check-equal): the step results a faultless run ends with.
fn clean_results(server: &Server) -> Vec<(String, Value)> {
    let run = run_client(Client::Php, "basic", &server.uri(), DB, 1.0);
    assert_eq!(
        count_documents(&server.uri(), DB, "items"),
        ITEMS_AFTER_CLEAN_RUN
    );
    results(&run)
}

/// The step results of a run, in order.
fn results(run: &ClientRun) -> Vec<(String, Value)> {
    run.steps
        .iter()
        .map(|s| (s.step.clone(), s.result.clone()))
        .collect()
}

fn step_names(run: &ClientRun) -> Vec<&str> {
    run.steps.iter().map(|s| s.step.as_str()).collect()
}

/// What followed the faults of the rule named `name` (`analyze --json`'s `faults.rules[].after`).
fn after<'a>(analysis: &'a Value, name: &str) -> &'a Value {
    let rules = analysis["faults"]["rules"].as_array();
    let row = rules.and_then(|rows| rows.iter().find(|r| r["name"] == name));
    &row.unwrap_or_else(|| panic!("no rule {name}: {}", analysis["faults"]))["after"]
}

fn n(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

/// (faults, write_retried, given_up) of the rule `name`.
fn followed(cell: &Cell, name: &str) -> (u64, u64, u64) {
    let a = after(&cell.analysis, name);
    (n(&a["faults"]), n(&a["write_retried"]), n(&a["given_up"]))
}

fn describe(cell: &Cell) -> String {
    format!(
        "{} ({}, {:?}, {} items)\nstderr:\n{}\nstdout:\n{}",
        cell.run.client.name(),
        cell.run.status,
        cell.run.elapsed,
        cell.items,
        cell.run.stderr,
        cell.run.stdout
    )
}

/// The stderr text by which `client` names a server error's code 2 `BadValue` and label
/// `TestLabel`: its own exception text (pymongo, Rust, C++), or the `error:` line its workload
/// prints (tools/workloads/js/errors.js, php/common.php). PHP's driver keeps no codeName.
fn names_bad_value(client: Client) -> &'static [&'static str] {
    match client {
        Client::Pymongo => &["'code': 2, 'codeName': 'BadValue', 'errorLabels': ['TestLabel']"],
        Client::Mongosh => &["error: MongoServerError code=2 codeName=BadValue labels=TestLabel"],
        Client::Node => &["error: MongoServerError code=2 codeName=BadValue labels=TestLabel"],
        Client::Php => &["error: MongoDB\\Driver\\Exception\\BulkWriteException code=2 codeName= labels=TestLabel"],
        Client::Rust => &["Error code 2 (BadValue)", "labels: {\"TestLabel\"}"],
        Client::CxxLegacy => {
            &["OperationException: { ok: 0.0, errmsg: \"fault injected by mongotape (code 2)\", code: 2, codeName: \"BadValue\", errorLabels: [ \"TestLabel\" ] }"]
        }
    }
}

/// The stderr text by which `client` names a writeConcernError 64 `WriteConcernFailed`. PHP's
/// driver keeps no codeName; the legacy C++ driver rebuilds the error as `{code, errmsg}`.
fn names_write_concern_failed(client: Client) -> &'static [&'static str] {
    match client {
        Client::Pymongo => &[
            "pymongo.errors.WriteConcernError",
            "'code': 64, 'codeName': 'WriteConcernFailed'",
        ],
        Client::Mongosh => {
            &["error: MongoWriteConcernError code=64 codeName=WriteConcernFailed labels="]
        }
        Client::Node => {
            &["error: MongoWriteConcernError code=64 codeName=WriteConcernFailed labels="]
        }
        Client::Php => {
            &["error: MongoDB\\Driver\\Exception\\BulkWriteException code=64 codeName= labels="]
        }
        Client::Rust => &["WriteConcernError { code: 64, code_name: \"WriteConcernFailed\""],
        Client::CxxLegacy => &[
            "OperationException: { code: 64, errmsg: \"fault injected by mongotape (code 64)\" }",
        ],
    }
}

fn assert_says(cell: &Cell, needles: &[&str]) {
    for needle in needles {
        assert!(
            cell.run.stderr.contains(needle),
            "no {needle:?} in {}",
            describe(cell)
        );
    }
}

/// A workload that stopped at its first insert: the error given up, the step never reported.
fn assert_stopped_at_first_insert(cell: &Cell) {
    assert!(!cell.run.status.success(), "went on: {}", describe(cell));
    assert_eq!(
        step_names(&cell.run),
        ["drop_database"],
        "{}",
        describe(cell)
    );
}

const BAD_VALUE: &str = "code=2 codeName=BadValue labels=TestLabel";

#[test]
fn error_is_surfaced_by_every_client_and_nothing_is_applied() {
    let _one = one_at_a_time();
    let server = Server::start();
    let dir = tempdir();
    let rule = rule("bad", &format!("error {BAD_VALUE}"));
    for client in CLIENTS {
        let cell = under(&server, dir.path(), client, &rule, "");
        assert_stopped_at_first_insert(&cell);
        assert_says(&cell, names_bad_value(client));
        assert_eq!(cell.items, 0, "{}", describe(&cell));
        assert_eq!(followed(&cell, "bad"), (1, 0, 1), "{}", describe(&cell));
    }
}

#[test]
fn reply_error_is_surfaced_by_every_client_although_the_write_was_applied() {
    let _one = one_at_a_time();
    let server = Server::start();
    let dir = tempdir();
    let rule = rule("lie", &format!("reply_error {BAD_VALUE}"));
    for client in CLIENTS {
        let cell = under(&server, dir.path(), client, &rule, "");
        assert_stopped_at_first_insert(&cell);
        assert_says(&cell, names_bad_value(client));
        assert_eq!(cell.items, 1, "{}", describe(&cell));
        assert_eq!(followed(&cell, "lie"), (1, 0, 1), "{}", describe(&cell));
    }
}

#[test]
fn write_concern_error_is_surfaced_by_every_client_and_the_write_applied() {
    let _one = one_at_a_time();
    let server = Server::start();
    let dir = tempdir();
    let rule = rule("wce", "write_concern_error");
    for client in CLIENTS {
        let cell = under(&server, dir.path(), client, &rule, "");
        assert_stopped_at_first_insert(&cell);
        assert_says(&cell, names_write_concern_failed(client));
        assert_eq!(cell.items, 1, "{}", describe(&cell));
        assert_eq!(followed(&cell, "wce"), (1, 0, 1), "{}", describe(&cell));
    }
}

/// `close_before` / `close_after`: the five current drivers retry the insert (same `lsid` and
/// `txnNumber`) and end like a run without faults, each document once; the legacy C++ driver
/// gives up with a transport error, the document applied only when the request was forwarded.
fn closed_connection(action: &str, forwarded: bool) {
    let _one = one_at_a_time();
    let server = Server::start();
    let clean = clean_results(&server);
    let dir = tempdir();
    let rule = rule("cut", action);
    for client in MODERN {
        let cell = under(&server, dir.path(), client, &rule, "");
        assert!(cell.run.status.success(), "{}", describe(&cell));
        assert_eq!(results(&cell.run), clean, "{}", describe(&cell));
        assert_eq!(cell.items, ITEMS_AFTER_CLEAN_RUN, "{}", describe(&cell));
        assert_eq!(followed(&cell, "cut"), (1, 1, 0), "{}", describe(&cell));
        assert_eq!(n(&after(&cell.analysis, "cut")["applied_twice"]), 0);
    }
    let cell = under(&server, dir.path(), Client::CxxLegacy, &rule, "");
    assert_stopped_at_first_insert(&cell);
    assert_says(&cell, &["DBClientBase::findN: transport error"]);
    assert_eq!(cell.items, usize::from(forwarded), "{}", describe(&cell));
    assert_eq!(followed(&cell, "cut"), (1, 0, 1), "{}", describe(&cell));
}

#[test]
fn close_before_is_retried_by_the_current_drivers_and_given_up_by_the_legacy_one() {
    closed_connection("close_before", false);
}

#[test]
fn close_after_is_retried_by_the_current_drivers_and_given_up_by_the_legacy_one() {
    closed_connection("close_after", true);
}

/// The delays: every client ends as without faults, the insert 300 ms late.
fn delayed(action: &str) {
    let _one = one_at_a_time();
    let server = Server::start();
    let clean = clean_results(&server);
    let dir = tempdir();
    let rule = rule("slow", &format!("{action} ms=300"));
    for client in CLIENTS {
        let cell = under(&server, dir.path(), client, &rule, "");
        assert!(cell.run.status.success(), "{}", describe(&cell));
        assert_eq!(results(&cell.run), clean, "{}", describe(&cell));
        assert_eq!(cell.items, ITEMS_AFTER_CLEAN_RUN, "{}", describe(&cell));
        assert!(
            cell.run.step("insert_ack").seconds >= 0.3,
            "{}",
            describe(&cell)
        );
        assert_eq!(
            n(&cell.analysis["faults"]["total"]),
            1,
            "{}",
            describe(&cell)
        );
        // Neither retried nor resent, nor given up: the client got its reply, late.
        let a = after(&cell.analysis, "slow");
        assert_eq!(
            (
                n(&a["faults"]),
                n(&a["write_retried"]),
                n(&a["resent"]),
                n(&a["given_up"])
            ),
            (1, 0, 0, 0),
            "{}",
            describe(&cell)
        );
    }
}

#[test]
fn delay_request_only_slows_every_client() {
    delayed("delay_request");
}

#[test]
fn delay_reply_only_slows_every_client() {
    delayed("delay_reply");
}

/// `stall`: the clients that take `socketTimeoutMS` (pymongo, mongosh, PHP, Node) time out after it
/// and then retry the insert like after a lost connection: they end as without faults, the
/// `insert_ack` step one timeout long. The legacy C++ driver (`socketTimeoutMS` is its so_timeout
/// in tools/workloads/cxx-legacy) gives up with a transport error. The Rust driver 3.9 has no
/// socket timeout (it refuses `socketTimeoutMS`) nor `timeoutMS`: it waits for the reply forever.
#[test]
fn stall_times_out_where_the_client_has_a_socket_timeout() {
    let _one = one_at_a_time();
    let server = Server::start();
    let clean = clean_results(&server);
    // Compiled (or found in its cache) before anything is timed.
    let cxx_clean = run_client(Client::CxxLegacy, "basic", &server.uri(), DB, 1.0);
    assert_eq!(results(&cxx_clean), clean);
    let dir = tempdir();
    let rule = rule("hang", "stall");
    let timeout = Duration::from_millis(SOCKET_TIMEOUT_MS);
    let extra = format!("&socketTimeoutMS={SOCKET_TIMEOUT_MS}");
    for client in [Client::Pymongo, Client::Mongosh, Client::Php, Client::Node] {
        let cell = under(&server, dir.path(), client, &rule, &extra);
        assert!(cell.run.status.success(), "{}", describe(&cell));
        assert_eq!(results(&cell.run), clean, "{}", describe(&cell));
        assert_eq!(cell.items, ITEMS_AFTER_CLEAN_RUN, "{}", describe(&cell));
        let waited = Duration::from_secs_f64(cell.run.step("insert_ack").seconds);
        assert!(
            waited >= timeout && waited < timeout * 3,
            "insert_ack took {waited:?}: {}",
            describe(&cell)
        );
        assert_eq!(followed(&cell, "hang"), (1, 1, 0), "{}", describe(&cell));
    }

    let cell = under(&server, dir.path(), Client::CxxLegacy, &rule, &extra);
    assert_stopped_at_first_insert(&cell);
    assert_says(&cell, &["DBClientBase::findN: transport error"]);
    assert!(
        cell.run.elapsed >= timeout && cell.run.elapsed < timeout * 4,
        "{}",
        describe(&cell)
    );
    assert_eq!(cell.items, 0, "{}", describe(&cell));
    assert_eq!(followed(&cell, "hang"), (1, 0, 1), "{}", describe(&cell));

    // The Rust driver: still blocked on the insert long after the others gave up; killed by pid.
    let out = dir.path().join("rust.mtape");
    let proxy = Proxy::start_with(&server.uri(), &out, &["--fault", &rule]);
    let mut child = Command::new(rust_workload_bin())
        .args(["basic", "--uri", &proxy.uri(), "--db", DB, "--scale", "1"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the Rust workload");
    let started = Instant::now();
    let blocked_for = timeout * 4;
    while started.elapsed() < blocked_for {
        if let Some(status) = child.try_wait().expect("wait for the Rust workload") {
            panic!("the Rust workload ended under a stall ({status})");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    child.kill().expect("kill the Rust workload");
    child.wait().expect("reap the Rust workload");
    let mut stdout = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut stdout)
        .unwrap();
    let steps = parse_steps(&stdout).unwrap();
    let names: Vec<&str> = steps.iter().map(|s| s.step.as_str()).collect();
    assert_eq!(names, ["drop_database"], "{stdout}");
    proxy.stop();
    let analysis = analyze_json(&out, &[]);
    assert_eq!(n(&after(&analysis, "hang")["faults"]), 1);
    assert_eq!(count_documents(&server.uri(), DB, "items"), 0);
}
