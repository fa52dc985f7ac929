//! Signals and a stderr nobody reads: SIGHUP (an ssh session that drops) stops the proxy as SIGTERM
//! does, with the drain, the capture's `end` record and every acknowledged write; a stderr pipe
//! whose reader is gone, at start or mid-run, never panics nor stops the proxy. Real server, real
//! pymongo, the real binary.

mod common;

use common::*;
use mongotape::capture::RecordKind;
use std::io::{BufRead, BufReader};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

#[test]
fn sighup_under_load_drains_and_keeps_every_acknowledged_write() {
    let server = Server::start();
    let dir = tempdir();
    let out = dir.path().join("hangup.mtape");
    let proxy = Proxy::start_with(server.addr(), &out, &["--quiet"]);
    let uri = format!(
        "{}&retryWrites=false&serverSelectionTimeoutMS=1000",
        proxy.uri()
    );
    let load = Load::start(
        uri,
        LoadSpec {
            db: "signals",
            threads: 8,
            inserts: None,
            flowing_after: 200,
            pad: 0,
        },
    );
    load.wait_flowing();
    std::thread::sleep(Duration::from_millis(300));
    let exit = proxy.stop_with(libc::SIGHUP);
    assert!(exit.status.success() && !exit.killed, "{}", exit.stderr);
    assert!(
        exit.stderr.contains("stopping (SIGHUP): draining"),
        "{}",
        exit.stderr
    );
    let acked = load.finish().acked;
    let records = capture_records(&out);
    assert_eq!(
        records.last().unwrap().kind,
        RecordKind::End,
        "no end record"
    );
    let recorded = inserted_ids(&records);
    let missing: Vec<&i64> = acked.iter().filter(|id| !recorded.contains(*id)).collect();
    eprintln!(
        "FIGURE SIGHUP under load: {} acknowledged inserts, {} in the capture, {} missing",
        acked.len(),
        recorded.len(),
        missing.len()
    );
    assert!(acked.len() >= 200, "{}", acked.len());
    assert!(
        missing.is_empty(),
        "acknowledged but not recorded: {missing:?}"
    );
    let cut = capture_closes(&out)
        .into_iter()
        .filter(|c| c.reason == "drain timeout")
        .count();
    assert_eq!(cut, 0, "connections cut at the drain timeout");
}

/// An address nothing listens on (bound, then let go).
fn free_addr() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().to_string()
}

/// `mongotape record` on `listen` with `stderr` as its stderr (no other output read).
fn record_with_stderr(upstream: &str, listen: &str, out: &Path, stderr: Stdio) -> Child {
    Command::new(mongotape_bin())
        .args([
            "record",
            "--listen",
            listen,
            "--upstream",
            upstream,
            "--out",
        ])
        .arg(out)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(stderr)
        .spawn()
        .expect("start mongotape record")
}

/// Waits until `addr` accepts, failing at once if the proxy exits first.
fn wait_listening(child: &mut Child, addr: &str) {
    let deadline = Instant::now() + START_TIMEOUT;
    while TcpStream::connect(addr).is_err() {
        if let Some(status) = child.try_wait().unwrap() {
            panic!("mongotape record exited with {status} before listening");
        }
        assert!(Instant::now() < deadline, "{addr} not listening");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Inserts through the proxy at `addr`, stops it with SIGTERM, and checks that it forwarded,
/// exited 0 (not 101 from a panic) and wrote a whole capture holding every insert.
fn forwards_and_stops_cleanly(mut child: Child, addr: &str, out: &Path) {
    let uri = format!("mongodb://{addr}/?directConnection=true");
    let spec = LoadSpec {
        db: "pipes",
        threads: 1,
        inserts: Some(100),
        flowing_after: 100,
        pad: 0,
    };
    let acked = Load::start(uri.clone(), spec).finish().acked;
    assert_eq!(acked.len(), 100, "the proxy did not forward");
    assert_eq!(count_documents(&uri, "pipes", "k"), 100);
    assert!(child.try_wait().unwrap().is_none(), "the proxy died");
    // SAFETY: kill(2) on the child this test started and has not reaped.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
    let deadline = Instant::now() + STOP_TIMEOUT;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the proxy ignored SIGTERM");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "exit {status} (101 is a panic)");
    let records = capture_records(out);
    assert_eq!(
        records.last().unwrap().kind,
        RecordKind::End,
        "no end record"
    );
    assert_eq!(inserted_ids(&records), acked.into_iter().collect());
}

#[test]
fn a_stderr_pipe_whose_reader_is_gone_at_start_does_not_stop_the_proxy() {
    let server = Server::start();
    let dir = tempdir();
    let out = dir.path().join("deaf.mtape");
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let listen = free_addr();
    let mut child = record_with_stderr(server.addr(), &listen, &out, writer.into());
    wait_listening(&mut child, &listen);
    forwards_and_stops_cleanly(child, &listen, &out);
}

#[test]
fn a_stderr_reader_that_exits_mid_run_does_not_stop_the_proxy() {
    let server = Server::start();
    let dir = tempdir();
    let out = dir.path().join("orphan.mtape");
    let (reader, writer) = std::io::pipe().unwrap();
    let mut child = record_with_stderr(server.addr(), "127.0.0.1:0", &out, writer.into());
    let mut lines = BufReader::new(reader);
    let mut line = String::new();
    let addr = loop {
        line.clear();
        assert!(lines.read_line(&mut line).unwrap() > 0, "stderr ended");
        if let Some(at) = line.find("mongotape: listening on ") {
            let rest = &line[at + "mongotape: listening on ".len()..];
            break rest.split_whitespace().next().unwrap().to_owned();
        }
    };
    // The reader goes away (an ssh session's terminal, a `| tee` killed): what the proxy writes
    // from now on, down to its last line at stop, goes nowhere.
    drop(lines);
    wait_listening(&mut child, &addr);
    forwards_and_stops_cleanly(child, &addr, &out);
}

/// Until the target holds `n` documents in `analyze_test.c` (a bounded wait in one process).
const WAIT_FOR_DOCS: &str = "import sys, time\nfrom pymongo import MongoClient\n\
c = MongoClient(sys.argv[1], serverSelectionTimeoutMS=10000).analyze_test.c\n\
deadline = time.time() + 60\n\
while c.estimated_document_count() < int(sys.argv[2]):\n    assert time.time() < deadline, 'nothing replayed'\n    time.sleep(0.05)\n";

#[test]
fn sighup_ends_a_replay_with_its_report() {
    let server = Server::start();
    // About 6 s of recorded traffic, replayed at its recorded pace.
    let recorded = record_inserts_finds(&server, "paced", 150, 0.02, 0);
    let target = Server::start();
    let report = recorded.dir.path().join("report.json");
    let mut replay = Command::new(mongotape_bin())
        .arg("replay")
        .arg(&recorded.capture)
        .args(["--target", &target.uri(), "--report"])
        .arg(&report)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    python(WAIT_FOR_DOCS, &[target.uri(), "10".into()]);
    // SAFETY: kill(2) on the child this test started and has not reaped.
    unsafe { libc::kill(replay.id() as libc::pid_t, libc::SIGHUP) };
    let deadline = Instant::now() + STOP_TIMEOUT;
    let status = loop {
        if let Some(status) = replay.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = replay.kill();
            panic!("the replay ignored SIGHUP");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.code().is_some(), "killed by a signal: {status}");
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&report).expect("a report after SIGHUP")).unwrap();
    assert_eq!(report["error"], "interrupted (SIGHUP)", "{report}");
}
