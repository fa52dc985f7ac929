//! The replayer's fault matrix, beyond tests/replay_failures.rs (target down, killed mid-replay,
//! truncated capture): a target that accepts and never answers, and a target that refuses the
//! replayer's authentication. Each ends in bounded time with a clear error and a partial report.

mod common;

use common::*;
use std::net::TcpListener;
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
