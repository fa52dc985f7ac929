//! Every wait of a replay ends: `--explain` against a target that never answers its explains
//! costs one `--op-timeout` for all the shapes together, not one per shape, and a stop signal
//! while explaining ends the run at once with the reason in its report.

mod common;

use common::*;
use mongotape::wire::{FrameSplitter, Message, RequestInfo};
use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Finds of six shapes (each answered, so each is explained), recorded from pymongo.
fn six_shapes(dir: &std::path::Path) -> PathBuf {
    let server = Server::start_with(&["--standalone"]);
    let (capture, _) = record_python(
        &server,
        dir,
        "shapes",
        "import sys\nfrom pymongo import MongoClient\nc = MongoClient(sys.argv[1])\n\
         c.shop.orders.insert_many([{'a': i, 'b': i, 'c': i, 'd': i, 'e': i, 'f': i} for i in range(50)])\n\
         for f in 'abcdef':\n    list(c.shop.orders.find({f: 3}))\n",
    );
    capture
}

/// A target of the test's own: a relay in front of the real server that forwards everything but
/// `explain`, which it swallows and never answers. Returns its address and the explains it held.
fn relay_without_explains(upstream: &str) -> (String, Arc<AtomicU64>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let upstream = upstream.to_owned();
    let held = Arc::new(AtomicU64::new(0));
    let seen = held.clone();
    std::thread::spawn(move || {
        for client in listener.incoming().flatten() {
            let (upstream, seen) = (upstream.clone(), seen.clone());
            std::thread::spawn(move || relay(client, &upstream, &seen));
        }
    });
    (addr, held)
}

fn relay(mut client: TcpStream, upstream: &str, held: &AtomicU64) {
    let mut server = TcpStream::connect(upstream).unwrap();
    let (mut from_client, mut from_server) = (FrameSplitter::new(), FrameSplitter::new());
    while let Some(frame) = read_frame(&mut client, &mut from_client) {
        let req = RequestInfo::of(&Message::parse(&frame).unwrap());
        if req.command == "explain" {
            held.fetch_add(1, Ordering::SeqCst);
            continue;
        }
        server.write_all(&frame).unwrap();
        if !req.expects_reply {
            continue;
        }
        let Some(reply) = read_frame(&mut server, &mut from_server) else {
            return;
        };
        if client.write_all(&reply).is_err() {
            return;
        }
    }
}

/// Six shapes whose explains are never answered, at `--op-timeout 3`: the run waits for them
/// once (about 3 s), not once per shape (18 s), and each plan says why it is missing.
#[test]
fn unanswered_explains_cost_one_timeout_for_all_shapes() {
    let dir = tempdir();
    let capture = six_shapes(dir.path());
    let server = Server::start_with(&["--standalone"]);
    let (relay, held) = relay_without_explains(server.addr());
    let started = Instant::now();
    let r = try_replay(
        &capture,
        &uri_for(&relay),
        &["--fast", "--explain", "--op-timeout", "3"],
    );
    let took = started.elapsed();
    eprintln!("FIGURE replay --explain, explains never answered: {took:?} at --op-timeout 3");
    assert!(held.load(Ordering::SeqCst) >= 1, "{}", r.describe());
    assert!(took < Duration::from_secs(12), "{took:?}\n{}", r.describe());
    let plans = r.report["plans"].as_array().expect("plans in the report");
    let finds: Vec<_> = plans.iter().filter(|p| p["command"] == "find").collect();
    assert_eq!(finds.len(), 6, "{}", r.describe());
    for p in finds {
        let error = p["error"].as_str().unwrap_or_default();
        assert!(
            error.contains("not explained") || error.contains("within 3.0 s"),
            "{p}\n{}",
            r.describe()
        );
    }
    assert_eq!(r.report["summary"]["per_command"]["find"]["count"], 6);
}

/// SIGINT while the explains wait (`--op-timeout 60`) ends the run within seconds, its report
/// saying it was interrupted.
#[test]
fn a_stop_signal_ends_the_explain_wait() {
    let dir = tempdir();
    let capture = six_shapes(dir.path());
    let server = Server::start_with(&["--standalone"]);
    let (relay, held) = relay_without_explains(server.addr());
    let report = dir.path().join("report.json");
    let mut replay = Command::new(mongotape_bin())
        .arg("replay")
        .arg(&capture)
        .args(["--target", &uri_for(&relay), "--report"])
        .arg(&report)
        .args(["--fast", "--explain", "--op-timeout", "60"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while held.load(Ordering::SeqCst) == 0 {
        assert!(Instant::now() < deadline, "no explain reached the relay");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(300));
    let signalled = Instant::now();
    // SAFETY: kill(2) on the child this test started and has not reaped.
    unsafe { libc::kill(replay.id() as libc::pid_t, libc::SIGINT) };
    let status = loop {
        if let Some(status) = replay.try_wait().unwrap() {
            break status;
        }
        if signalled.elapsed() > Duration::from_secs(10) {
            let _ = replay.kill();
            panic!("the replay ignored SIGINT while explaining");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    eprintln!(
        "FIGURE replay --explain stopped by SIGINT in {:?}",
        signalled.elapsed()
    );
    assert!(status.code().is_some(), "killed by a signal: {status}");
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&report).expect("a report after SIGINT")).unwrap();
    assert_eq!(
        report["error"], "interrupted (Ctrl-C) while explaining",
        "{report}"
    );
    assert_eq!(report["complete"], false, "{report}");
}
