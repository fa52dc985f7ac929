//! The replayer's fault matrix, beyond tests/replay_failures.rs (target down, killed mid-replay,
//! truncated capture): a target that accepts and never answers, and a target that refuses the
//! replayer's authentication. Each ends in bounded time with a clear error and a partial report.
//! A capture whose connections never close replays within the connection limit; a target that
//! answers a request with a reply to another is named as such.

mod common;

use common::*;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn capture(dir: &std::path::Path) -> std::path::PathBuf {
    let server = Server::start_with(&["--standalone"]);
    let (capture, _) = record_python(
        &server,
        dir,
        "few",
        "import sys\nfrom pymongo import MongoClient\nc = MongoClient(sys.argv[1])\n\
         for i in range(20):\n    c.f.c.insert_one({'i': i})\n",
    );
    capture
}

#[test]
fn a_black_holed_target_times_out_with_a_partial_report() {
    let dir = tempdir();
    let capture = capture(dir.path());
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for s in listener.incoming().flatten() {
            held.push(s);
        }
    });
    let started = Instant::now();
    let r = try_replay(&capture, &uri_for(&addr), &["--op-timeout", "2"]);
    let took = started.elapsed();
    eprintln!("FIGURE replay black hole: gave up after {took:?} with --op-timeout 2");
    assert!(!r.output.success(), "{}", r.describe());
    assert!(took < Duration::from_secs(30), "{took:?}");
    let err = r.output.stderr.to_lowercase();
    assert!(
        err.contains("did not answer within 2.0 s"),
        "{}",
        r.describe()
    );
}

#[test]
fn a_target_that_refuses_authentication_is_a_clear_error() {
    let dir = tempdir();
    let capture = capture(dir.path());
    let target = Server::start_with(&["--standalone", "--auth"]);
    python(
        "import sys\nfrom pymongo import MongoClient\n\
         MongoClient(sys.argv[1]).admin.command('createUser', 'root', pwd='right', roles=['root'])\n",
        &[target.uri()],
    );
    let uri = format!(
        "mongodb://root:wrong@{}/?directConnection=true",
        target.addr()
    );
    let started = Instant::now();
    let r = try_replay(&capture, &uri, &[]);
    assert!(!r.output.success(), "{}", r.describe());
    assert!(started.elapsed() < Duration::from_secs(30));
    let err = r.output.stderr.to_lowercase();
    assert!(err.contains("auth"), "{}", r.describe());
    assert!(
        !r.output.stderr.contains("wrong"),
        "the password is not printed: {}",
        r.describe()
    );
}

/// What a proxy SIGKILLed in front of connection-per-request clients leaves: `n` connections that
/// never close, each with one insert and its reply, taken from the real pymongo capture (each
/// insert given its own `_id` and session, as each client would have). Returns the capture and
/// its database and collection.
fn never_closed(dir: &Path, n: u64) -> PathBuf {
    use mongotape::capture::{CaptureReader, CaptureWriter, Record, RecordKind};
    use mongotape::wire::{OpMsg, Section};
    let from = workspace_root().join("captures/pymongo.mtape");
    let mut reader = CaptureReader::open(&from).unwrap();
    let meta = reader.metadata().clone();
    let records: Vec<Record> = reader.by_ref().map(|r| r.unwrap()).collect();
    let is_insert = |r: &Record| {
        r.kind == RecordKind::Request && memchr::memmem::find(&r.payload, b"insert\0").is_some()
    };
    let insert = records
        .iter()
        .find(|r| is_insert(r))
        .expect("a recorded insert");
    let open = records
        .iter()
        .find(|r| r.kind == RecordKind::Open && r.conn_id == insert.conn_id)
        .expect("its connection's open record");
    let request_id = i32::from_le_bytes(insert.payload[4..8].try_into().unwrap());
    let reply = records
        .iter()
        .find(|r| {
            r.kind == RecordKind::Reply
                && i32::from_le_bytes(r.payload[8..12].try_into().unwrap()) == request_id
        })
        .expect("its recorded reply");
    let msg = OpMsg::parse(&insert.payload).unwrap();
    let to = dir.join("never-closed.mtape");
    let mut w = CaptureWriter::create(&to, &meta, 1).unwrap();
    for i in 0..n {
        let mut copy = msg.clone();
        for section in &mut copy.sections {
            *section = match section {
                Section::Body(b) => Section::Body(with_id_and_session(b, i)),
                Section::Sequence {
                    identifier,
                    documents,
                } => Section::Sequence {
                    identifier: identifier.clone(),
                    documents: documents.iter().map(|d| with_id(d, i)).collect(),
                },
            };
        }
        let ts = open.ts_ns + i * 1_000;
        w.write(&Record::new(
            RecordKind::Open,
            i + 1,
            ts,
            open.payload.clone(),
        ))
        .unwrap();
        let bytes = copy.encode(request_id, 0);
        w.write(&Record::new(RecordKind::Request, i + 1, ts + 10, bytes))
            .unwrap();
        w.write(&Record::new(
            RecordKind::Reply,
            i + 1,
            ts + 20,
            reply.payload.clone(),
        ))
        .unwrap();
    }
    w.finish().unwrap();
    to
}

fn with_id(doc: &bson::RawDocumentBuf, i: u64) -> bson::RawDocumentBuf {
    let mut d = bson::Document::try_from(doc.as_ref()).unwrap();
    d.insert("_id", format!("never-closed-{i}"));
    bson::RawDocumentBuf::try_from(&d).unwrap()
}

/// The body with its inline documents' `_id`s and its `lsid` made unique to copy `i`.
fn with_id_and_session(body: &bson::RawDocumentBuf, i: u64) -> bson::RawDocumentBuf {
    let mut d = bson::Document::try_from(body.as_ref()).unwrap();
    if let Ok(docs) = d.get_array_mut("documents") {
        for doc in docs.iter_mut() {
            if let bson::Bson::Document(doc) = doc {
                doc.insert("_id", format!("never-closed-{i}"));
            }
        }
    }
    let mut id = [0u8; 16];
    id[..8].copy_from_slice(&i.to_le_bytes());
    id[8..].copy_from_slice(b"neverclo");
    d.insert(
        "lsid",
        bson::doc! { "id": bson::Binary { subtype: bson::spec::BinarySubtype::Uuid, bytes: id.to_vec() } },
    );
    bson::RawDocumentBuf::try_from(&d).unwrap()
}

/// `mongotape replay --fast` over `capture`, started through `wrapper` (e.g. prlimit), with its
/// report and peak RSS.
fn replay_peak(wrapper: &[&str], capture: &Path, target: &str, args: &[&str]) -> (Replay, u64) {
    let dir = tempdir();
    let report_path = dir.path().join("report.json");
    let mut command = Command::new(wrapper[0]);
    command
        .args(&wrapper[1..])
        .arg(mongotape_bin())
        .arg("replay")
        .arg(capture)
        // Not --quiet: the connection limit is said in an info line, which -q drops.
        .args(["--target", target, "--fast", "--report"])
        .arg(&report_path)
        .args(args);
    let (output, peak) = run_command_peak_rss(command, REPLAY_TIMEOUT);
    let report = std::fs::read(&report_path)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default();
    (Replay { output, report }, peak)
}

/// 5,000 recorded connections that never close, replayed at most 64 at a time: a lane with
/// nothing left to send gives its connection up to one that waits, so every insert is replayed
/// with at most 64 connections open, and memory stays flat.
#[test]
fn connections_that_never_close_replay_within_the_connection_limit() {
    let dir = tempdir();
    let capture = never_closed(dir.path(), 5_000);
    let server = Server::start_with(&["--standalone"]);
    let (r, peak) = replay_peak(
        &["env"],
        &capture,
        server.addr(),
        &["--max-open-connections", "64"],
    );
    eprintln!(
        "FIGURE never-closed 5000 connections, --max-open-connections 64: peak RSS {:.1} MB, {}",
        peak as f64 / 1e6,
        r.report["connection_limit"]
    );
    assert!(r.output.success(), "{}", r.describe());
    assert_eq!(r.report["complete"], true, "{}", r.describe());
    assert!(
        r.output.stderr.contains(
            "the capture has 5000 connections open at once at most; replaying at most 64 at a time (--max-open-connections)"
        ),
        "{}",
        r.describe()
    );
    let limit = &r.report["connection_limit"];
    assert_eq!(limit["limit"], 64, "{}", r.describe());
    assert_eq!(limit["wanted"], 5000, "{}", r.describe());
    assert!(limit["peak_open"].as_u64().unwrap() <= 64, "{limit}");
    assert!(limit["waited"].as_u64().unwrap() > 0, "{limit}");
    assert_eq!(r.count("insert"), 5_000, "{}", r.describe());
    assert_eq!(count_documents(&server.uri(), "fixtures", "items"), 5_000);
    assert!(peak < 150 * 1024 * 1024, "peak RSS {peak} B");
    assert_schema("replay", &r.report);
}

/// The same capture under `ulimit -n 256` and no option: the limit comes from the file limit
/// (256 less 64), said before starting, and no connect fails with EMFILE.
#[test]
fn the_default_connection_limit_follows_the_file_limit() {
    let dir = tempdir();
    let capture = never_closed(dir.path(), 5_000);
    let server = Server::start_with(&["--standalone"]);
    let (r, _) = replay_peak(
        &["prlimit", "--nofile=256:256"],
        &capture,
        server.addr(),
        &[],
    );
    assert!(r.output.success(), "{}", r.describe());
    assert!(
        !r.output.stderr.contains("Too many open files"),
        "{}",
        r.describe()
    );
    assert!(
        r.output
            .stderr
            .contains("replaying at most 192 at a time (--max-open-connections; now the file limit, ulimit -n 256, less 64)"),
        "{}",
        r.describe()
    );
    assert_eq!(r.report["connection_limit"]["limit"], 192);
    assert_eq!(count_documents(&server.uri(), "fixtures", "items"), 5_000);
}

/// How the relay in [`misanswering_relay`] answers the first insert.
#[derive(Clone, Copy)]
enum Misanswer {
    /// With a reply to a request id the replayer never sent.
    NeverSent,
    /// With a reply to the request before it (and never to the insert itself).
    Earlier,
}

/// The (request, responseTo) pair a misanswering relay sent, once it has.
type Misanswered = Arc<Mutex<Option<(i32, i32)>>>;

/// A target of the test's own: a relay in front of the real server that forwards everything, but
/// answers the first insert with a wrong `responseTo`. Returns its address and the (request,
/// responseTo) pair it sent.
fn misanswering_relay(upstream: &str, how: Misanswer) -> (String, Misanswered) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let upstream = upstream.to_owned();
    let wrong = Arc::new(Mutex::new(None));
    let seen = wrong.clone();
    std::thread::spawn(move || {
        for client in listener.incoming().flatten() {
            let (upstream, seen) = (upstream.clone(), seen.clone());
            std::thread::spawn(move || relay_misanswering(client, &upstream, how, &seen));
        }
    });
    (addr, wrong)
}

fn relay_misanswering(
    mut client: std::net::TcpStream,
    upstream: &str,
    how: Misanswer,
    wrong: &Mutex<Option<(i32, i32)>>,
) {
    use mongotape::wire::{FrameSplitter, Message, MsgHeader, RequestInfo};
    use std::io::Write;
    let mut server = std::net::TcpStream::connect(upstream).unwrap();
    let (mut from_client, mut from_server) = (FrameSplitter::new(), FrameSplitter::new());
    let mut previous = 0;
    while let Some(frame) = read_frame(&mut client, &mut from_client) {
        let request_id = MsgHeader::parse(&frame).unwrap().unwrap().request_id;
        let req = RequestInfo::of(&Message::parse(&frame).unwrap());
        server.write_all(&frame).unwrap();
        if !req.expects_reply {
            continue;
        }
        let Some(mut reply) = read_frame(&mut server, &mut from_server) else {
            return;
        };
        let mut guard = wrong.lock().unwrap();
        if req.command == "insert" && guard.is_none() {
            let to = match how {
                Misanswer::NeverSent => request_id + 1000,
                Misanswer::Earlier => previous,
            };
            reply[8..12].copy_from_slice(&to.to_le_bytes());
            *guard = Some((request_id, to));
        }
        drop(guard);
        previous = request_id;
        if client.write_all(&reply).is_err() {
            return;
        }
    }
}

/// A reply to a request the connection never sent is said as such at once, naming both ids, the
/// connection and the target (it was "did not answer within 60.0 s" after the whole timeout).
#[test]
fn a_reply_to_a_request_never_sent_is_named_at_once() {
    let dir = tempdir();
    let capture = capture(dir.path());
    let server = Server::start_with(&["--standalone"]);
    let (relay, wrong) = misanswering_relay(server.addr(), Misanswer::NeverSent);
    // An --op-timeout longer than the test's own bound: only the new error ends the replay in time.
    let r = try_replay(
        &capture,
        &uri_for(&relay),
        &["--fast", "--op-timeout", "3600"],
    );
    let (request, response_to) = wrong
        .lock()
        .unwrap()
        .expect("the relay misanswered an insert");
    assert!(!r.output.success(), "{}", r.describe());
    let expected = format!(
        "the target {relay} answered request {request} with a reply to {response_to}, a request \
         this connection (127.0.0.1:"
    );
    assert!(
        r.output.stderr.contains(&expected),
        "{expected}\n{}",
        r.describe()
    );
    assert!(
        !r.output.stderr.contains("did not answer"),
        "{}",
        r.describe()
    );
    assert_eq!(r.report["complete"], false);
}

/// A late reply to an earlier request is skipped (the one awaited may still come); when none
/// comes, the timeout says which reply came instead.
#[test]
fn a_reply_to_an_earlier_request_is_named_when_the_wait_runs_out() {
    let dir = tempdir();
    let capture = capture(dir.path());
    let server = Server::start_with(&["--standalone"]);
    let (relay, wrong) = misanswering_relay(server.addr(), Misanswer::Earlier);
    let r = try_replay(&capture, &uri_for(&relay), &["--fast", "--op-timeout", "2"]);
    let (request, response_to) = wrong
        .lock()
        .unwrap()
        .expect("the relay misanswered an insert");
    assert!(!r.output.success(), "{}", r.describe());
    let expected = format!(
        "the target {relay} answered request {request} with a reply to {response_to} (an earlier \
         request on connection 127.0.0.1:"
    );
    assert!(
        r.output.stderr.contains(&expected),
        "{expected}\n{}",
        r.describe()
    );
    assert!(
        r.output
            .stderr
            .contains(&format!("sent no reply to {request} within 2.0 s")),
        "{}",
        r.describe()
    );
}

/// `--duration` ends the run at its deadline even when the capture holds far more connections
/// than may be open: the lanes still waiting for a connection slot then give up (counted as
/// `after_deadline`), instead of each opening its connection in turn long after the deadline.
#[test]
fn the_duration_deadline_ends_lanes_waiting_for_a_connection_slot() {
    let dir = tempdir();
    let capture = never_closed(dir.path(), 20_000);
    let server = Server::start_with(&["--standalone"]);
    let started = Instant::now();
    let r = try_replay(
        &capture,
        server.addr(),
        &["--duration", "2", "--max-open-connections", "16"],
    );
    let took = started.elapsed();
    eprintln!(
        "FIGURE --duration 2 over 20,000 never-closed connections, 16 at a time: {took:?}, {} \
         inserts sent, {} after the deadline",
        r.count("insert"),
        r.skipped("after_deadline")
    );
    assert!(r.output.success(), "{}", r.describe());
    assert!(took < Duration::from_secs(10), "{took:?}\n{}", r.describe());
    assert!(r.count("insert") < 20_000, "{}", r.describe());
    assert!(r.skipped("after_deadline") > 0, "{}", r.describe());
}
