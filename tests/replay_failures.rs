//! Bad input and bad targets: a truncated or corrupt capture replays what is readable and says where
//! it stopped; a target that is down or dies mid-replay ends the replay with a clear error and a
//! partial report, never a hang. Also: the committed sample captures (OP_COMPRESSED with zstd, zlib
//! and snappy, OP_QUERY handshakes) replay cleanly.

mod common;

use common::*;
use std::time::{Duration, Instant};

const BULKY: &str = r#"
import sys, random
from pymongo import MongoClient
db = MongoClient(sys.argv[1])["bad"]
db.drop_collection("c")
rnd = random.Random(7)
for i in range(3000):
    db.c.insert_one({"_id": i, "pad": "".join(rnd.choice("abcdefghij") for _ in range(300))})
"#;

/// A folder of segments with a cut one in the middle: the cut one is named, the segments after it
/// are replayed too (before, the replay stopped at the damage and left them out).
#[test]
fn a_damaged_segment_is_named_and_the_segments_after_it_replay() {
    let dir = tempdir();
    let a = Server::start_with(&["--standalone"]);
    let (capture, _) = record_python(&a, dir.path(), "bulky", BULKY);
    drop(a);
    let bytes = std::fs::read(&capture).unwrap();
    let folder = dir.path().join("segments");
    std::fs::create_dir(&folder).unwrap();
    let seg = |n: u32| folder.join(format!("rec-{n:06}.mtape"));
    std::fs::write(seg(1), &bytes).unwrap();
    std::fs::write(seg(2), &bytes[..bytes.len() / 2]).unwrap();
    std::fs::write(seg(3), &bytes).unwrap();
    let b = Server::start_with(&["--standalone"]);
    let r = try_replay(&folder, &b.uri(), &["--fast"]);
    assert_eq!(r.output.status.code(), Some(3), "{}", r.describe());
    let err = r.report["capture_error"].as_str().unwrap_or_default();
    let name = seg(2).display().to_string();
    assert!(
        err.contains(&format!("segment {name}: ")) && err.contains("truncated"),
        "{}",
        r.describe()
    );
    // Segments 1 and 3 whole (3,000 inserts each), and what segment 2 holds before its cut.
    let inserts = r.count("insert");
    assert!(inserts > 6000 && inserts < 9000, "{}", r.describe());
}

#[test]
fn a_truncated_capture_replays_what_is_readable() {
    let dir = tempdir();
    let a = Server::start_with(&["--standalone"]);
    let (capture, _) = record_python(&a, dir.path(), "bulky", BULKY);
    drop(a);
    let bytes = std::fs::read(&capture).unwrap();
    let cut = dir.path().join("cut.mtape");
    std::fs::write(&cut, &bytes[..bytes.len() * 6 / 10]).unwrap();
    let b = Server::start_with(&["--standalone"]);
    let r = try_replay(&cut, &b.uri(), &["--fast"]);
    assert_eq!(r.output.status.code(), Some(3), "{}", r.describe());
    let err = r.report["capture_error"].as_str().unwrap_or_default();
    assert!(err.contains("truncated"), "{}", r.describe());
    // An A/B replay of it exits as a single replay does (it exited 2, a usage error).
    let c = Server::start_with(&["--standalone"]);
    let ab = try_replay(
        &cut,
        &c.uri(),
        &["--fast", "--target", &b.uri(), "--db-map", "bad:bad_ab"],
    );
    assert_eq!(
        ab.report["targets"].as_array().map(Vec::len),
        Some(2),
        "an A/B report: {}",
        ab.describe()
    );
    assert_eq!(ab.output.status.code(), Some(3), "{}", ab.describe());
    assert!(
        ab.output.stderr.contains("capture read only in part"),
        "{}",
        ab.describe()
    );
    let inserts = r.count("insert");
    assert!(inserts > 100 && inserts < 3000, "{}", r.describe());
    assert!(
        r.output.stdout.contains("capture stopped early"),
        "{}",
        r.describe()
    );

    // A flipped byte in the middle: corrupt, the part before it is still replayed.
    let mut bad = bytes.clone();
    let mid = bad.len() / 2;
    bad[mid] ^= 0x55;
    let corrupt = dir.path().join("corrupt.mtape");
    std::fs::write(&corrupt, &bad).unwrap();
    let r = try_replay(&corrupt, &b.uri(), &["--fast", "--db-map", "bad:bad2"]);
    assert_eq!(r.output.status.code(), Some(3), "{}", r.describe());
    assert!(r.report["capture_error"].is_string(), "{}", r.describe());
    assert!(r.count("insert") > 0, "{}", r.describe());

    // Not a capture at all: a plain error before anything is sent.
    let junk = dir.path().join("junk.mtape");
    std::fs::write(&junk, b"hello, not a capture").unwrap();
    let r = try_replay(&junk, &b.uri(), &[]);
    assert!(!r.output.success());
    assert!(
        r.output.stderr.contains("not a mongotape capture"),
        "{}",
        r.describe()
    );
}

#[test]
fn a_target_that_is_down_is_a_clear_error() {
    let dir = tempdir();
    let a = Server::start_with(&["--standalone"]);
    let (capture, _) = record_python(&a, dir.path(), "bulky", "import sys\nfrom pymongo import MongoClient\nMongoClient(sys.argv[1]).bad.c.insert_one({})\n");
    let uri = a.uri();
    drop(a);
    let started = Instant::now();
    let r = try_replay(&capture, &uri, &[]);
    assert!(!r.output.success());
    assert!(started.elapsed() < Duration::from_secs(30));
    assert!(
        r.output.stderr.contains("cannot connect to the target"),
        "{}",
        r.describe()
    );
    assert_eq!(r.report["complete"], false, "{}", r.describe());
    assert_eq!(r.report["summary"]["ops"], 0, "{}", r.describe());
}

#[test]
fn a_target_that_dies_mid_replay_ends_with_a_partial_report() {
    let dir = tempdir();
    let a = Server::start_with(&["--standalone"]);
    let (capture, _) = record_python(&a, dir.path(), "bulky", BULKY);
    drop(a);
    let b = Server::start_with(&["--standalone"]);
    let uri = b.uri();
    let started = Instant::now();
    // Half speed so the replay is still running when the server goes.
    let replaying = std::thread::spawn(move || try_replay(&capture, &uri, &["--speed", "0.5"]));
    std::thread::sleep(Duration::from_millis(1500));
    drop(b);
    let r = replaying.join().unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "took {:?}",
        started.elapsed()
    );
    assert_eq!(r.output.status.code(), Some(1), "{}", r.describe());
    let err = r.report["error"].as_str().unwrap_or_default();
    assert!(err.contains("target"), "{}", r.describe());
    assert_eq!(r.report["complete"], false);
    let inserts = r.count("insert");
    assert!(inserts > 0 && inserts < 3000, "{}", r.describe());
}

#[test]
fn sample_captures_replay_cleanly_compressed_or_not() {
    let root = workspace_root().join("captures");
    let mut dumps = Vec::new();
    for name in [
        "pymongo",
        "pymongo-zstd",
        "pymongo-zlib",
        "pymongo-snappy",
        "mongosh-zlib",
        "php",
    ] {
        let capture = root.join(format!("{name}.mtape"));
        let b = Server::start();
        let r = replay(&capture, &b.uri(), &["--fast"]);
        assert!(r.count("insert") > 0, "{name}: {}", r.describe());
        assert_eq!(r.divergences(), 0, "{name}: {}", r.describe());
        assert_eq!(r.skipped("cursor_not_found"), 0, "{name}: {}", r.describe());
        assert_eq!(
            r.report["summary"]["overall"]["errors"],
            0,
            "{name}: {}",
            r.describe()
        );
        dumps.push((name, dump_db(&b.uri(), "fixtures")));
    }
    for (name, dump) in &dumps[1..] {
        eprintln!("comparing {name} with {}", dumps[0].0);
        assert_same_db(&dumps[0].1, dump);
    }
}
