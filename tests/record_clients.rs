//! Each real client runs the `basic` seed workload directly and through `mongotape record`: it must
//! get exactly the same results, and the capture must hold every request and reply, paired, with the
//! client's driver name (the legacy C++ driver sends none: its capture is OP_QUERY/OP_REPLY only).

mod common;

use common::*;
use mongotape::capture::{CaptureReader, RecordKind};
use mongotape::report::inspect::inspect_file;
use mongotape::wire::{Body, Message, RequestInfo};
use std::collections::BTreeMap;
use std::path::Path;

const SCALE: f64 = 1.0;

/// Runs the workload direct and proxied (same server, the workload drops its database first).
fn record(client: Client, uri_suffix: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let server = Server::start();
    let direct = run_client(
        client,
        "basic",
        &format!("{}{uri_suffix}", server.uri()),
        "bench",
        SCALE,
    );
    let dir = tempdir();
    let out = dir.path().join(format!("{}.mtape", client.name()));
    let proxy = Proxy::start_with(server.addr(), &out, &["--quiet"]);
    let proxied = run_client(
        client,
        "basic",
        &format!("{}{uri_suffix}", proxy.uri()),
        "bench",
        SCALE,
    );
    let exit = proxy.stop();
    assert!(
        exit.status.success() && !exit.killed,
        "proxy: {}",
        exit.stderr
    );
    let strip = |run: &ClientRun| -> Vec<(String, u64, serde_json::Value)> {
        run.steps
            .iter()
            .map(|s| (s.step.clone(), s.ops, s.result.clone()))
            .collect()
    };
    assert_eq!(
        strip(&direct),
        strip(&proxied),
        "{} saw different results through the proxy",
        client.name()
    );
    (dir, out)
}

/// What a capture's requests add up to.
struct Commands {
    counts: BTreeMap<String, u64>,
    /// Requests sent with moreToCome (no reply will come).
    fire_and_forget: u64,
    /// Commands whose write concern is `{w: 0}`, moreToCome or not.
    unacknowledged: u64,
}

fn commands(path: &Path) -> Commands {
    let mut out = Commands {
        counts: BTreeMap::new(),
        fire_and_forget: 0,
        unacknowledged: 0,
    };
    for record in CaptureReader::open(path).unwrap() {
        let record = record.unwrap();
        if record.kind == RecordKind::Request {
            let msg = Message::parse(&record.payload).unwrap();
            let info = RequestInfo::of(&msg);
            if !info.expects_reply {
                out.fire_and_forget += 1;
            }
            // A command's body: OP_MSG's, or a command sent over OP_QUERY on `DB.$cmd`.
            let command = match &msg.body {
                Body::Msg(op) => Some(op.body().as_ref()),
                Body::Query(q) if q.full_collection_name.ends_with(".$cmd") => {
                    Some(q.query.as_ref())
                }
                _ => None,
            };
            let w = command
                .and_then(|body| body.get_document("writeConcern").ok())
                .and_then(|wc| wc.get_i32("w").ok());
            if w == Some(0) {
                out.unacknowledged += 1;
            }
            *out.counts.entry(info.command).or_default() += 1;
        }
    }
    out
}

/// `driver_name`: a part of the name every connection's handshake gives, or `None` for a client
/// whose handshake carries no client metadata at all.
fn check_capture(client: Client, path: &Path, driver_name: Option<&str>) {
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "captures are readable by their owner only");
    let report = inspect_file(path).unwrap();
    assert!(report.error.is_none(), "{:?}", report.error);
    assert!(report.complete, "no end record");
    assert_eq!(report.undecodable_messages, 0);
    assert_eq!(report.dropped_messages, 0);
    // Only monitoring hellos, awaiting a topology change when the client closed, go unanswered; and
    // the Node.js driver's endSessions, which it sends without moreToCome but closes without reading.
    for (command, n) in &report.unanswered_by_command {
        assert!(
            matches!(command.as_str(), "hello" | "isMaster" | "ismaster")
                || (client == Client::Node && command == "endSessions"),
            "{}: {n} {command} requests have no reply",
            client.name()
        );
    }
    let requests: u64 = report.requests_by_opcode.values().map(|c| c.messages).sum();
    let replies: u64 = report.replies_by_opcode.values().map(|c| c.messages).sum();
    let answered: u64 = report.by_command.values().map(|c| c.replies).sum();
    let no_reply: u64 = report
        .by_command
        .values()
        .map(|c| c.no_reply_expected)
        .sum();
    assert_eq!(
        requests,
        answered + no_reply + report.unanswered_requests,
        "every request is answered, fire-and-forget, or a pending monitor"
    );
    assert_eq!(replies, answered + report.unsolicited_replies);
    let drivers: Vec<String> = report
        .connections
        .iter()
        .filter_map(|c| c.driver.as_ref().and_then(|d| d.name.clone()))
        .collect();
    match driver_name {
        Some(name) => assert!(
            drivers.iter().any(|d| d.contains(name)),
            "{}: driver names {drivers:?} lack {name}",
            client.name()
        ),
        None => assert!(drivers.is_empty(), "{}: {drivers:?}", client.name()),
    }

    let Commands {
        counts,
        fire_and_forget,
        unacknowledged,
    } = commands(path);
    // The C++ client reads with aggregate, in one batch (tools/workloads/cxx-legacy/common.hpp).
    let reads: &[&str] = if client == Client::CxxLegacy {
        &["aggregate"]
    } else {
        &["find", "getMore"]
    };
    for expected in ["insert", "update", "delete", "createIndexes"]
        .iter()
        .chain(reads)
    {
        assert!(
            counts.get(*expected).copied().unwrap_or(0) > 0,
            "{}: no {expected} in {counts:?}",
            client.name()
        );
    }
    // The 50 w:0 inserts and 20 w:0 updates of the workload carry their write concern; they travel
    // with moreToCome, except from the Rust driver, which has no unacknowledged writes (the workload
    // sends them through run_command) and reads a reply to every request, and from the C++ client,
    // whose OP_QUERY commands are always answered.
    assert!(
        unacknowledged >= 70,
        "{}: only {unacknowledged} w:0 requests",
        client.name()
    );
    if matches!(client, Client::Rust | Client::CxxLegacy) {
        assert_eq!(fire_and_forget, 0, "{}: moreToCome requests", client.name());
    } else {
        assert!(
            fire_and_forget >= 50,
            "{}: only {fire_and_forget} moreToCome requests",
            client.name()
        );
    }
    if client == Client::CxxLegacy {
        // OP_QUERY commands and OP_REPLY answers only: no OP_MSG, no legacy write opcode.
        let ops = |by: &BTreeMap<String, _>| by.keys().cloned().collect::<Vec<String>>();
        assert_eq!(ops(&report.requests_by_opcode), ["OP_QUERY"]);
        assert_eq!(ops(&report.replies_by_opcode), ["OP_REPLY"]);
    } else {
        assert!(counts["getMore"] >= 5, "{counts:?}");
    }

    // The independent Python reader, written from the spec alone, agrees on every count.
    let py = python_json(
        "import runpy, sys; sys.argv = ['read_capture.py', '--json', sys.argv[1]]; runpy.run_path('tools/read_capture.py', run_name='__main__')",
        &[path],
    );
    let by_kind = &py["by_kind"];
    assert_eq!(by_kind["request"].as_u64(), Some(requests), "{py}");
    assert_eq!(by_kind["reply"].as_u64(), Some(replies), "{py}");
    // The summary the file ends with, read from the spec too, says what reading it through says.
    let summary = &py["file_summary"];
    for key in ["records", "peak_open", "faults"] {
        assert!(py[key].as_u64().is_some(), "{key}: {py}");
        assert_eq!(summary[key], py[key], "the file's summary, {key}: {py}");
    }
}

#[test]
fn pymongo_through_the_proxy() {
    let (_dir, out) = record(Client::Pymongo, "");
    check_capture(Client::Pymongo, &out, Some("PyMongo"));
}

#[test]
fn mongosh_through_the_proxy() {
    let (_dir, out) = record(Client::Mongosh, "");
    check_capture(Client::Mongosh, &out, Some("mongosh"));
}

#[test]
fn php_through_the_proxy() {
    let (_dir, out) = record(Client::Php, "");
    check_capture(Client::Php, &out, Some("PHP"));
}

#[test]
fn node_through_the_proxy() {
    let (_dir, out) = record(Client::Node, "");
    check_capture(Client::Node, &out, Some("nodejs"));
}

#[test]
fn rust_through_the_proxy() {
    let (_dir, out) = record(Client::Rust, "");
    check_capture(Client::Rust, &out, Some("mongo-rust-driver"));
}

#[test]
fn cxx_legacy_through_the_proxy() {
    let (_dir, out) = record(Client::CxxLegacy, "");
    check_capture(Client::CxxLegacy, &out, None);
}
