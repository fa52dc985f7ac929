//! The readers (`inspect`, `analyze`, `cat`) and the replayer keep their memory bounded however
//! long the capture is (issue 10): each runs as a child over two captures of the same traffic, one
//! ten times longer than the other (`examples/big_capture.rs`), and its peak RSS (wait4's
//! `ru_maxrss` of that one process) must be the same within a margin, and under an absolute bound.

mod common;

#[path = "../examples/big_capture.rs"]
mod big_capture;
#[path = "../examples/open_capture.rs"]
mod open_capture;

use common::*;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

const MB: u64 = 1024 * 1024;
/// No reader nor the replayer needs more than this on these captures (release figures on 10 M
/// messages: 21-24 MB; a debug build holds a little more).
const ABSOLUTE_BOUND: u64 = 96 * MB;
/// Ten times the messages may cost at most this much more peak memory (allocator noise, lazily
/// grown buffers); anything that grows with the capture grows by far more than this over 10x.
const MARGIN: u64 = 12 * MB;

fn big(dir: &Path, name: &str, messages: u64) -> PathBuf {
    let to = dir.join(name);
    let from = workspace_root().join("captures/pymongo.mtape");
    let (written, _) = big_capture::write_big_capture(&from, &to, messages)
        .unwrap_or_else(|e| panic!("write {}: {e}", to.display()));
    assert!(written >= messages);
    to
}

/// Peak RSS of `mongotape ARGS`, which must succeed.
fn peak(args: &[&str]) -> u64 {
    peak_exiting(args, 0)
}

/// Peak RSS of `mongotape ARGS`, which must exit with `code`.
fn peak_exiting(args: &[&str], code: i32) -> u64 {
    let mut command = Command::new(mongotape_bin());
    command.args(args);
    let (out, peak) = run_command_peak_rss(command, Duration::from_secs(300));
    assert!(
        out.status.code() == Some(code),
        "mongotape {args:?} failed ({}):\n{}",
        out.status,
        out.stderr
    );
    assert!(peak > 0, "no ru_maxrss for mongotape {args:?}");
    peak
}

/// The same command over the small and the large capture: flat within `margin`, under the bound.
fn assert_flat(what: &str, small: u64, large: u64, margin: u64) {
    eprintln!(
        "{what}: peak RSS {:.1} MB small, {:.1} MB large (10x the messages)",
        small as f64 / MB as f64,
        large as f64 / MB as f64
    );
    assert!(
        large <= small + margin,
        "{what}: peak RSS grew with the capture: {small} B on the small one, {large} B on one 10x longer"
    );
    assert!(
        large <= ABSOLUTE_BOUND,
        "{what}: peak RSS {large} B over the {ABSOLUTE_BOUND} B bound"
    );
}

#[test]
fn readers_memory_stays_flat_as_the_capture_grows() {
    let dir = tempdir();
    let small = big(dir.path(), "small.mtape", 40_000);
    let large = big(dir.path(), "large.mtape", 400_000);
    let (small, large) = (small.to_str().unwrap(), large.to_str().unwrap());
    for reader in [
        vec!["inspect", "--json"],
        vec!["analyze", "--json"],
        // One line per copy: every message is still read and paired, and the test process does
        // not hold hundreds of MB of JSON.
        vec!["cat", "--command", "ismaster"],
    ] {
        let run = |file: &str| {
            let mut args = reader.clone();
            args.insert(1, file);
            peak(&args)
        };
        assert_flat(reader[0], run(small), run(large), MARGIN);
    }
}

/// `slice` streams (docs/slice.md, Memory): over 10x the messages, with a filter that keeps
/// nearly everything (every message paired, every cursor tracked, every record written) and with
/// ones that keep little (a command, one connection), its peak stays the same.
#[test]
fn slice_memory_stays_flat_as_the_capture_grows() {
    let dir = tempdir();
    let small = big(dir.path(), "small.mtape", 40_000);
    let large = big(dir.path(), "large.mtape", 400_000);
    let out = dir.path().join("slice.mtape");
    for filter in [
        vec!["--since", "2s"],
        vec!["--command", "find,getMore"],
        vec!["--connection", "2"],
    ] {
        let run = |file: &Path| {
            let mut command = Command::new(mongotape_bin());
            command
                .args(["slice", file.to_str().unwrap(), "--json", "--force", "-o"])
                .arg(&out)
                .args(&filter);
            let (run, peak) = run_command_peak_rss(command, Duration::from_secs(300));
            assert!(run.status.success(), "slice {filter:?}: {}", run.stderr);
            let summary: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
            assert_schema("slice", &summary);
            let kept = summary["kept"]["requests"].as_u64().unwrap();
            assert!(kept > 0, "slice {filter:?} kept nothing: {summary}");
            (peak, summary["read"]["requests"].as_u64().unwrap())
        };
        let ((small_peak, small_read), (large_peak, large_read)) = (run(&small), run(&large));
        assert!(
            large_read >= 9 * small_read,
            "{small_read} then {large_read} requests read"
        );
        let what = format!("slice {}", filter.join(" "));
        assert_flat(&what, small_peak, large_peak, MARGIN);
    }
}

/// Captures a killed proxy leaves: one connection with 50,000 against 500,000 requests never
/// answered (all three readers), and 20,000 against 200,000 connections still open with a
/// request each. The readers keep at most 10,000 unanswered requests (1,000 on one connection),
/// `inspect` lists 10,000 connections and `analyze` follows 10,000 open at once (the rest folded);
/// before, 1M unanswered requests took 652 MB, and `analyze` 268 MB on 200,000 open
/// connections. No end record: each reader exits 3.
#[test]
fn readers_memory_stays_flat_over_connections_left_open() {
    let dir = tempdir();
    let write = |name: &str, conns: u64, per_conn: u64| {
        let path = dir.path().join(name);
        open_capture::write_open_capture(&path, conns, per_conn).unwrap();
        path.to_str().unwrap().to_owned()
    };
    let inspect = vec!["inspect", "--json"];
    let cat = vec!["cat", "--command", "ismaster"];
    let pairs = [
        (
            write("p1.mtape", 1, 50_000),
            write("p10.mtape", 1, 500_000),
            vec![inspect.clone(), vec!["analyze", "--json"], cat.clone()],
        ),
        (
            write("c1.mtape", 20_000, 1),
            write("c10.mtape", 200_000, 1),
            vec![inspect, vec!["analyze", "--json"], cat],
        ),
    ];
    for (small, large, readers) in &pairs {
        for reader in readers {
            let run = |file: &str| {
                let mut args = reader.clone();
                args.insert(1, file);
                peak_exiting(&args, 3)
            };
            let what = format!("{} {small}", reader[0]);
            assert_flat(&what, run(small), run(large), MARGIN);
        }
    }
}

/// Query shapes stay within their cap in memory: `analyze` over 50,000 distinct shapes and over
/// 200,000 keeps 10,000 of them, counts the rest under `shapes_other`, and peaks the same.
#[test]
fn analyze_memory_stays_flat_past_the_shape_cap() {
    let dir = tempdir();
    let run = |n: u64| {
        let path = dir.path().join(format!("shapes{n}.mtape"));
        open_capture::write_shapes_capture(&path, n).unwrap();
        let mut command = Command::new(mongotape_bin());
        command.args(["analyze", "--json", path.to_str().unwrap()]);
        let (out, peak) = run_command_peak_rss(command, Duration::from_secs(300));
        assert!(out.status.success(), "analyze failed: {}", out.stderr);
        let report: serde_json::Value = serde_json::from_str(&out.stdout).expect("analyze JSON");
        assert_eq!(report["shapes_cap"], 10_000, "n={n}");
        assert_eq!(
            report["shapes"].as_array().map(Vec::len),
            Some(10_000),
            "n={n}"
        );
        assert_eq!(report["shapes_other"]["count"], n - 10_000, "n={n}");
        peak
    };
    let (small, large) = (run(50_000), run(200_000));
    assert_flat("analyze, 50,000 and 200,000 shapes", small, large, MARGIN);
}

/// The replayer's own growth over 10x the messages: its timeline keeps up to 1,000 buckets of
/// latency (4 MB at most), and a longer run touches more code and allocator arenas. Measured, debug
/// build, 30k against 300k messages: peak RSS 38-43 against 49-51 MB, peak heap 10.9 against
/// 14.7 MB (heaptrack). A leak of 60 bytes a message, or of 15 KB a recorded connection (the large
/// capture has 10x the connections too), goes past it.
const REPLAY_MARGIN: u64 = 16 * MB;

#[test]
fn replay_memory_stays_flat_as_the_capture_grows() {
    let server = Server::start_with(&["--standalone"]);
    let dir = tempdir();
    // Past the first seconds (buckets, buffers, arenas warming up), and a small read-ahead so that
    // both captures fill it: what is left to grow is what the replay keeps.
    let small = big(dir.path(), "small.mtape", 30_000);
    let large = big(dir.path(), "large.mtape", 300_000);
    let run = |file: &Path| {
        let report = dir.path().join("report.json");
        peak(&[
            "replay",
            file.to_str().unwrap(),
            "--target",
            server.addr(),
            "--fast",
            "--quiet",
            "--read-ahead-mb",
            "2",
            "--report",
            report.to_str().unwrap(),
        ])
    };
    assert_flat("replay", run(&small), run(&large), REPLAY_MARGIN);
}

/// One connection's one-document inserts: the first insert of the real pymongo capture, its `_id`
/// counted up, `n` times (each with its recorded reply).
fn small_inserts(dir: &Path, n: u32) -> PathBuf {
    use mongotape::capture::{CaptureReader, CaptureWriter, Record, RecordKind};
    let from = workspace_root().join("captures/pymongo.mtape");
    let mut reader = CaptureReader::open(&from).unwrap();
    let meta = reader.metadata().clone();
    let records: Vec<Record> = reader.by_ref().map(|r| r.unwrap()).collect();
    let insert = records
        .iter()
        .find(|r| {
            r.kind == RecordKind::Request && memchr::memmem::find(&r.payload, b"insert\0").is_some()
        })
        .expect("a recorded insert");
    let request_id = &insert.payload[4..8];
    let reply = records
        .iter()
        .find(|r| r.kind == RecordKind::Reply && &r.payload[8..12] == request_id)
        .expect("its reply");
    // The document's int32 `_id` (type 0x10).
    let id_at = memchr::memmem::find(&insert.payload, b"\x10_id\x00").expect("an int32 _id") + 5;
    let to = dir.join("small-inserts.mtape");
    let mut w = CaptureWriter::create(&to, &meta, 1).unwrap();
    let mut bytes = insert.payload.to_vec();
    for i in 0..n {
        bytes[id_at..id_at + 4].copy_from_slice(&(i as i32).to_le_bytes());
        let ts = insert.ts_ns + u64::from(i) * 100_000;
        w.write(&Record::new(RecordKind::Request, 1, ts, bytes.clone()))
            .unwrap();
        w.write(&Record::new(
            RecordKind::Reply,
            1,
            ts + 50_000,
            reply.payload.clone(),
        ))
        .unwrap();
    }
    w.finish().unwrap();
    to
}

/// `--read-ahead-mb` bounds what the queued requests hold, not only their bytes: with 300-byte
/// inserts a read-ahead of 32 MiB took 55 MB more than one of 2 MiB (each queued request holds
/// its struct, its reply's outcome and its completion besides its bytes). It may now take about
/// the 30 MiB between them, with a quarter more for the allocator.
#[test]
fn replay_read_ahead_bounds_small_messages_too() {
    let server = Server::start_with(&["--standalone"]);
    let dir = tempdir();
    // 62 MB of messages, read faster than one connection replays them: both read-aheads fill.
    let capture = small_inserts(dir.path(), 200_000);
    let run = |read_ahead_mb: &str| {
        let report = dir.path().join("report.json");
        peak(&[
            "replay",
            capture.to_str().unwrap(),
            "--target",
            server.addr(),
            "--fast",
            "--quiet",
            "--no-server-status",
            "--read-ahead-mb",
            read_ahead_mb,
            "--report",
            report.to_str().unwrap(),
        ])
    };
    let (small, large) = (run("2"), run("32"));
    eprintln!(
        "FIGURE replay of 200,000 one-document inserts: peak RSS {:.1} MB with --read-ahead-mb 2, {:.1} MB with 32",
        small as f64 / 1e6,
        large as f64 / 1e6
    );
    assert!(
        large <= small + 30 * MB * 5 / 4,
        "the read-ahead took {} B more than its 30 MiB difference allows",
        large.saturating_sub(small)
    );
}

/// Writes a hostile pcap with tools/write_hostile_pcap.py.
fn hostile_pcap(dir: &Path, name: &str, args: &[&str]) -> String {
    let out = dir.join(name);
    let status = Command::new("python3")
        .arg(workspace_root().join("tools/write_hostile_pcap.py"))
        .arg(args[0])
        .arg(&out)
        .args(&args[1..])
        .status()
        .expect("python3 runs");
    assert!(status.success(), "write_hostile_pcap.py {args:?}");
    out.display().to_string()
}

/// `import`'s reassembly keeps its memory within --max-connections and --reassembly-mb however
/// many connections the file holds, however many hold unfinished messages, however many wait
/// behind a hole (issue 33: 1.8 GB for a million one-packet connections, 520 MB for ten 40 MB
/// messages never finished, 473 MB for 4 MB behind a 1-byte hole in 100 connections).
#[test]
fn import_memory_stays_flat_over_connections_and_what_they_hold() {
    let dir = tempfile::tempdir().unwrap();
    let bounds = ["--max-connections", "4096", "--reassembly-mb", "32"];
    let cases: [(&str, [&str; 5], [&str; 5]); 3] = [
        (
            "one-packet connections (20,000 / 200,000)",
            ["flows", "--flows", "20000", "--mb", "1"],
            ["flows", "--flows", "200000", "--mb", "1"],
        ),
        (
            "unfinished messages (10 x 4 MB / 10 x 40 MB)",
            ["unfinished", "--flows", "10", "--mb", "4"],
            ["unfinished", "--flows", "10", "--mb", "40"],
        ),
        (
            "4 MB behind a 1-byte hole (10 / 100 connections)",
            ["hole", "--flows", "10", "--mb", "4"],
            ["hole", "--flows", "100", "--mb", "4"],
        ),
    ];
    for (what, small, large) in cases {
        let mut peaks = Vec::new();
        for (i, args) in [small, large].iter().enumerate() {
            let pcap = hostile_pcap(dir.path(), &format!("{}{i}.pcap", args[0]), args);
            let out = dir.path().join(format!("{}{i}.mtape", args[0]));
            let out = out.display().to_string();
            let mut cmd = vec!["import", &pcap, "-o", &out];
            cmd.extend_from_slice(&bounds);
            peaks.push(peak(&cmd));
            std::fs::remove_file(&pcap).unwrap();
        }
        assert_flat(what, peaks[0], peaks[1], 2 * MARGIN);
    }
}

/// What one recorded connection left open costs the replayer: its lane (a task and its queue),
/// kept until the capture ends, and its request, held until then since no reply answers it.
/// Measured, 2,000 against 20,000 connections open with one find each, `--max-open-connections
/// 200`, debug build: 2.7 KB a connection. It was 4.5 KB while a lane took its op out of its box
/// (every level of the lane's future was 392 bytes larger) and held its two connections inline
/// (208 bytes each, connected or not). Ops sent to a lane's queue unboxed would cost 12.5 KB a
/// lane more, since a tokio queue allocates 32 slots at once (`replay::route`).
const PER_OPEN_CONNECTION: u64 = 4 * 1024;

#[test]
fn replay_memory_per_connection_left_open_stays_bounded() {
    let server = Server::start_with(&["--standalone"]);
    let dir = tempdir();
    let run = |conns: u64| {
        let path = dir.path().join(format!("open{conns}.mtape"));
        open_capture::write_open_capture(&path, conns, 1).unwrap();
        let report = dir.path().join(format!("open{conns}.json"));
        let mut command = Command::new(mongotape_bin());
        command.args([
            "replay",
            path.to_str().unwrap(),
            "--target",
            server.addr(),
            "--fast",
            "--quiet",
            "--no-server-status",
            "--max-open-connections",
            "200",
            "--report",
            report.to_str().unwrap(),
        ]);
        let (out, peak) = run_command_peak_rss(command, Duration::from_secs(300));
        assert!(out.status.success(), "replay failed: {}", out.stderr);
        let report: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).expect("report JSON");
        // Every connection's find went out and was answered, 200 connections at a time.
        assert_eq!(report["summary"]["ops"], conns, "{conns} connections");
        assert_eq!(report["summary"]["overall"]["errors"], 0);
        assert_eq!(report["connection_limit"]["wanted"], conns);
        assert_eq!(report["connection_limit"]["peak_open"], 200);
        peak
    };
    let (small, large) = (run(2_000), run(20_000));
    let per_conn = large.saturating_sub(small) / 18_000;
    eprintln!(
        "FIGURE replay of 2,000 and 20,000 connections left open: peak RSS {:.1} and {:.1} MB, \
         {per_conn} B a connection",
        small as f64 / 1e6,
        large as f64 / 1e6
    );
    assert!(
        per_conn <= PER_OPEN_CONNECTION,
        "each connection left open costs the replay {per_conn} B (bound {PER_OPEN_CONNECTION} B)"
    );
}
