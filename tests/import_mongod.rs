//! `mongotape import` of mongod/mongos traffic recordings written by an independent writer
//! (`tools/write_mongod_recording.py`: Python, reading our captures through
//! `tools/read_capture.py`, laying the packets out as the server's `traffic_recorder.cpp` does)
//! from the captures real clients made (`captures/`): every layout imports to the same
//! connections, clients and messages, at the same times cut to the layout's unit; the layout is
//! named; checksums, damage and internal traffic are reported.

mod common;

use common::*;
use mongotape::capture::{Record, RecordKind};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

const LAYOUTS: [&str; 4] = ["addresses-ms", "session-ms", "events3-us", "events4-us"];

fn write_recording(capture: &Path, out: &Path, layout: &str, extra: &[&str]) {
    let mut cmd = Command::new("python3");
    cmd.arg(workspace_root().join("tools/write_mongod_recording.py"))
        .arg(capture)
        .arg(out)
        .args(["--layout", layout])
        .args(extra);
    let run = run_command(cmd, Duration::from_secs(120));
    assert!(run.success(), "write_mongod_recording: {}", run.stderr);
}

fn import(input: &Path, out: &Path, extra: &[&str]) -> CommandOutput {
    let mut args = vec![
        "import".to_string(),
        input.display().to_string(),
        "-o".into(),
        out.display().to_string(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    mongotape(&args)
}

/// A connection's client, and its messages with their times.
type Conn = (String, Vec<(RecordKind, u64, Vec<u8>)>);

/// Per connection (numbered in order of appearance): its client and its messages, each time
/// passed through `time`.
fn by_connection(records: &[Record], time: impl Fn(u64) -> u64) -> BTreeMap<u64, Conn> {
    let mut order = BTreeMap::new();
    let mut out = BTreeMap::new();
    for r in records {
        match r.kind {
            RecordKind::Open => {
                let n = order.len() as u64 + 1;
                order.insert(r.conn_id, n);
                let open: mongotape::capture::OpenEvent = r.event().unwrap();
                out.insert(n, (open.client, Vec::new()));
            }
            RecordKind::Request | RecordKind::Reply => {
                let conn = out.get_mut(&order[&r.conn_id]).unwrap();
                conn.1.push((r.kind, time(r.ts_ns), r.payload.to_vec()));
            }
            _ => {}
        }
    }
    out
}

/// `inspect`'s figures per command but their latency (times are cut to the layout's unit).
fn counts_by_command(capture: &Path) -> serde_json::Value {
    let mut by = inspect_json(capture)["by_command"].clone();
    for (_, entry) in by.as_object_mut().unwrap().iter_mut() {
        entry.as_object_mut().unwrap().remove("total_latency_ns");
    }
    by
}

fn fixture(name: &str) -> PathBuf {
    workspace_root().join("captures").join(name)
}

/// The time the import gives a recorded time: cut to milliseconds of the wall clock, or to
/// microseconds after the recording's start (its first record), anchored at that start's
/// millisecond (the name of the recording's first file).
fn expected_time(layout: &str, start: u64) -> impl Fn(u64) -> u64 {
    let ms = layout.ends_with("-ms");
    move |ts| {
        if ms {
            ts / 1_000_000 * 1_000_000
        } else {
            start / 1_000_000 * 1_000_000 + (ts - start) / 1000 * 1000
        }
    }
}

#[test]
fn every_layout_of_every_client_imports_the_same_messages() {
    let dir = tempdir();
    for name in [
        "pymongo.mtape",
        "mongosh-zlib.mtape",
        "php.mtape",
        "node.mtape",
    ] {
        let capture = fixture(name);
        let records = capture_records(&capture);
        let start = records
            .iter()
            .filter(|r| matches!(r.kind, RecordKind::Open | RecordKind::Request))
            .map(|r| r.ts_ns)
            .min()
            .unwrap();
        for layout in LAYOUTS {
            let want = by_connection(&records, expected_time(layout, start));
            assert!(!want.is_empty(), "{name}");
            let recording = dir.path().join(format!("{name}.{layout}"));
            // Directories rotate every 4 KB: a recording of many files, one connection
            // going on from one into the next.
            write_recording(&capture, &recording, layout, &["--max-file-size", "4000"]);
            let out = dir.path().join(format!("{name}-{layout}.mtape"));
            let run = import(&recording, &out, &[]);
            assert!(
                run.success(),
                "{name} {layout}: {}\n{}",
                run.stderr,
                run.stdout
            );
            assert!(
                run.stdout.contains(&format!("layout: {layout} (")),
                "{name} {layout}: {}",
                run.stdout
            );
            let got = capture_records(&out);
            assert_eq!(by_connection(&got, |t| t), want, "{name} {layout}");
            assert!(got.iter().all(|r| r.kind != RecordKind::Gap), "{name}");
            assert_eq!(
                counts_by_command(&out),
                counts_by_command(&capture),
                "{name} {layout}"
            );
            if layout.starts_with("events") {
                let files = std::fs::read_dir(&recording).unwrap().count() - 1;
                assert!(files > 1, "{name} {layout}: {files} files");
                assert!(
                    run.stdout
                        .contains(&format!("checksums: {files} verified, 0 mismatched")),
                    "{}",
                    run.stdout
                );
            }
        }
    }
}

#[test]
fn a_checksum_that_does_not_match_is_reported_for_its_file() {
    let dir = tempdir();
    let recording = dir.path().join("rec");
    write_recording(
        &fixture("pymongo.mtape"),
        &recording,
        "events4-us",
        &["--max-file-size", "4000"],
    );
    let sums_path = recording.join("checksum.txt");
    let sums = std::fs::read_to_string(&sums_path).unwrap();
    let lines: Vec<&str> = sums.lines().collect();
    let (path, hex) = lines[2].split_once('\t').unwrap();
    let wrong = u32::from_str_radix(hex, 16).unwrap() ^ 1;
    let edited = sums.replace(lines[2], &format!("{path}\t{wrong:x}"));
    std::fs::write(&sums_path, edited).unwrap();
    let name = Path::new(path).file_name().unwrap().to_str().unwrap();
    let run = import(&recording, &dir.path().join("out.mtape"), &[]);
    assert_eq!(run.status.code(), Some(3), "{}\n{}", run.stderr, run.stdout);
    let damaged: Vec<&str> = run
        .stdout
        .lines()
        .filter(|l| l.starts_with("damaged:"))
        .collect();
    assert_eq!(damaged.len(), 1, "{}", run.stdout);
    assert!(
        damaged[0].contains(name) && damaged[0].contains(&format!("{wrong:08x}")),
        "{}",
        damaged[0]
    );
    let verified = format!("checksums: {} verified, 1 mismatched", lines.len() - 1);
    assert!(run.stdout.contains(&verified), "{}", run.stdout);

    // The same figures as JSON, by the schema: the file's layout, its mismatch.
    let out = dir.path().join("json.mtape");
    let json = import(&recording, &out, &["--json"]);
    assert_eq!(json.status.code(), Some(3), "{}", json.stderr);
    let report: serde_json::Value = serde_json::from_str(&json.stdout).expect("import JSON");
    assert_schema("import", &report);
    let m = &report["mongod"];
    assert_eq!(report["format"], "mongod_recording");
    assert!(report["packets"].is_null() && report["mongoreplay"].is_null());
    assert_eq!(m["checksums_verified"], lines.len() - 1, "{m}");
    let mismatches = m["checksum_mismatches"].as_array().unwrap();
    assert!(
        mismatches.len() == 1 && mismatches[0].as_str().unwrap().contains(name),
        "{m}"
    );
    let layouts = m["layouts"].as_array().unwrap();
    assert_eq!(layouts.len(), lines.len(), "one per file: {m}");
    assert!(
        layouts
            .iter()
            .all(|l| l["layout"].as_str().unwrap().starts_with("events4-us")),
        "{m}"
    );
    assert!(layouts.iter().any(|l| l["file"] == name), "{m}");
}

#[test]
fn a_checksum_list_that_is_a_fifo_or_too_large_is_refused_at_once() {
    let dir = tempdir();
    let recording = dir.path().join("rec");
    write_recording(&fixture("pymongo.mtape"), &recording, "events4-us", &[]);
    let sums = recording.join("checksum.txt");
    std::fs::remove_file(&sums).unwrap();
    let made = Command::new("mkfifo").arg(&sums).status().unwrap();
    assert!(made.success());
    let started = std::time::Instant::now();
    let run = import(&recording, &dir.path().join("fifo.mtape"), &[]);
    assert_eq!(run.status.code(), Some(1), "{}\n{}", run.stderr, run.stdout);
    assert!(
        run.stderr.contains("checksum.txt") && run.stderr.contains("FIFO"),
        "{}",
        run.stderr
    );
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "no wait on the FIFO"
    );

    // A list past 16 MiB is refused, not read in part (which would leave files unlisted).
    std::fs::remove_file(&sums).unwrap();
    let file = std::fs::File::create(&sums).unwrap();
    file.set_len(16 * 1024 * 1024 + 1).unwrap();
    let run = import(&recording, &dir.path().join("big.mtape"), &[]);
    assert_eq!(run.status.code(), Some(1), "{}\n{}", run.stderr, run.stdout);
    assert!(
        run.stderr.contains("checksum.txt") && run.stderr.contains("16 MiB"),
        "{}",
        run.stderr
    );
}

#[test]
fn cut_files_import_up_to_the_cut_and_garbage_is_refused_at_its_offset() {
    let dir = tempdir();
    let capture = fixture("pymongo.mtape");
    let all = capture_records(&capture)
        .iter()
        .filter(|r| r.kind == RecordKind::Request)
        .count();
    // A single file cut at two thirds: exit 3, the packets before the cut imported.
    let file = dir.path().join("session.bin");
    write_recording(&capture, &file, "session-ms", &[]);
    let bytes = std::fs::read(&file).unwrap();
    std::fs::write(&file, &bytes[..bytes.len() * 2 / 3]).unwrap();
    let out = dir.path().join("cut.mtape");
    let run = import(&file, &out, &[]);
    assert_eq!(run.status.code(), Some(3), "{}\n{}", run.stderr, run.stdout);
    assert!(
        run.stdout.contains("the file ends inside a packet"),
        "{}",
        run.stdout
    );
    let got = capture_records(&out);
    let n = got.iter().filter(|r| r.kind == RecordKind::Request).count();
    assert!(n > 0 && n < all, "{n} of {all} requests");
    assert_eq!(got.last().unwrap().kind, RecordKind::End);

    // Garbage after whole packets: damaged at exactly the byte where the garbage starts.
    let recording = dir.path().join("rec");
    write_recording(&capture, &recording, "events4-us", &[]);
    let bin = std::fs::read_dir(&recording)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "bin"))
        .unwrap();
    let mut bytes = std::fs::read(&bin).unwrap();
    let clean = bytes.len();
    bytes.extend_from_slice(&[0xffu8; 40]);
    std::fs::write(&bin, &bytes).unwrap();
    let run = import(&recording, &dir.path().join("tail.mtape"), &[]);
    assert_eq!(run.status.code(), Some(3), "{}\n{}", run.stderr, run.stdout);
    assert!(
        run.stdout.contains(&format!("at byte {clean}:")),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("1 mismatched"), "{}", run.stdout);

    // A file no layout fits: refused, each layout's misfit at its byte.
    let garbage: Vec<u8> = (0..4096u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let mut framed = 60u32.to_le_bytes().to_vec();
    framed.extend_from_slice(&garbage);
    let file = dir.path().join("garbage.bin");
    std::fs::write(&file, &framed).unwrap();
    let run = import(&file, &dir.path().join("g.mtape"), &[]);
    assert_eq!(run.status.code(), Some(1), "{}\n{}", run.stderr, run.stdout);
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
}

#[test]
fn internal_traffic_is_left_out_and_counted_unless_kept() {
    let dir = tempdir();
    let capture = fixture("pymongo.mtape");
    let recording = dir.path().join("rec");
    write_recording(&capture, &recording, "events4-us", &["--internal"]);
    let out = dir.path().join("out.mtape");
    let run = import(&recording, &out, &[]);
    assert!(run.success(), "{}\n{}", run.stderr, run.stdout);
    assert!(
        run.stdout
            .contains("internal traffic left out: 1 sessions, 8 messages"),
        "{}",
        run.stdout
    );
    let records = capture_records(&capture);
    let opens = |rs: &[Record]| rs.iter().filter(|r| r.kind == RecordKind::Open).count();
    let messages = |rs: &[Record]| {
        rs.iter()
            .filter(|r| matches!(r.kind, RecordKind::Request | RecordKind::Reply))
            .count()
    };
    let got = capture_records(&out);
    assert_eq!(opens(&got), opens(&records));
    assert_eq!(messages(&got), messages(&records));
    let kept = dir.path().join("kept.mtape");
    let run = import(&recording, &kept, &["--keep-internal"]);
    assert!(run.success(), "{}\n{}", run.stderr, run.stdout);
    let got = capture_records(&kept);
    assert_eq!(opens(&got), opens(&records) + 2);
    assert_eq!(messages(&got), messages(&records) + 8);
    let by_command = inspect_json(&kept)["by_command"].to_string();
    assert!(by_command.contains("replSetHeartbeat"), "{by_command}");
}

#[test]
fn empty_files_of_a_recording_are_said_in_one_line() {
    let dir = tempdir();
    let recording = dir.path().join("rec");
    write_recording(&fixture("pymongo.mtape"), &recording, "events4-us", &[]);
    for i in 0..20_000 {
        std::fs::File::create(recording.join(format!("empty-{i:05}.bin"))).unwrap();
    }
    let started = std::time::Instant::now();
    let run = import(&recording, &dir.path().join("out.mtape"), &[]);
    let took = started.elapsed();
    let all = format!("{}{}", run.stdout, run.stderr);
    let said = "20000 empty files skipped: empty-00000.bin, empty-00001.bin, ..., empty-19999.bin";
    assert!(all.contains(said), "{all}");
    assert!(
        all.lines().count() < 60,
        "{} lines: {all}",
        all.lines().count()
    );
    assert!(!all.contains("empty-00002.bin"), "{all}");
    // The messages are all there.
    let imported = counts_by_command(&dir.path().join("out.mtape"));
    assert_eq!(imported, counts_by_command(&fixture("pymongo.mtape")));
    eprintln!(
        "20,000 empty files: {} lines, {took:?}",
        all.lines().count()
    );
}
