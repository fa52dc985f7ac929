//! `mongotape import` of mongoreplay playback files written by an independent writer
//! (`tools/write_mongoreplay.py`: Python, pymongo's `bson`, reading our captures through
//! `tools/read_capture.py`) from the captures real clients made (`captures/`): the import holds
//! the same connections and, per connection, the same messages in the same order at the same times.

mod common;

use common::*;
use mongotape::capture::{Record, RecordKind};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

fn write_playback(capture: &Path, out: &Path, extra: &[&str]) {
    let mut cmd = Command::new("python3");
    cmd.arg(workspace_root().join("tools/write_mongoreplay.py"))
        .arg(capture)
        .arg(out)
        .args(extra);
    let run = run_command(cmd, Duration::from_secs(60));
    assert!(run.success(), "write_mongoreplay: {}", run.stderr);
}

fn import(file: &Path, out: &Path) -> CommandOutput {
    mongotape(&[
        "import".to_string(),
        file.display().to_string(),
        "-o".into(),
        out.display().to_string(),
    ])
}

/// A connection's client, and its messages with their times.
type Conn = (String, Vec<(RecordKind, u64, Vec<u8>)>);

/// Per connection (numbered in order of appearance): its client and its messages, with times.
fn by_connection(records: &[Record]) -> BTreeMap<u64, Conn> {
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
                let n = order[&r.conn_id];
                let conn = out.get_mut(&n).unwrap();
                conn.1.push((r.kind, r.ts_ns, r.payload.to_vec()));
            }
            _ => {}
        }
    }
    out
}

fn fixture(name: &str) -> PathBuf {
    workspace_root().join("captures").join(name)
}

#[test]
fn playback_files_of_every_client_import_equal() {
    let dir = tempdir();
    for name in [
        "pymongo.mtape",
        "mongosh-zlib.mtape",
        "php.mtape",
        "node.mtape",
    ] {
        let capture = fixture(name);
        let want = by_connection(&capture_records(&capture));
        assert!(!want.is_empty(), "{name}");
        for gz in [false, true] {
            let playback = dir
                .path()
                .join(format!("{name}.playback{}", if gz { ".gz" } else { "" }));
            write_playback(&capture, &playback, if gz { &["--gzip"] } else { &[] });
            let out = dir.path().join(format!("{name}-{gz}.mtape"));
            let run = import(&playback, &out);
            assert!(run.success(), "{name}: {}\n{}", run.stderr, run.stdout);
            let records = capture_records(&out);
            assert_eq!(by_connection(&records), want, "{name} gzip={gz}");
            assert!(records.iter().all(|r| r.kind != RecordKind::Gap), "{name}");
            assert_eq!(
                inspect_json(&out)["by_command"],
                inspect_json(&capture)["by_command"]
            );
        }
    }
}

#[test]
fn a_truncated_playback_file_imports_up_to_the_cut_and_exits_3() {
    let dir = tempdir();
    let capture = fixture("pymongo.mtape");
    let playback = dir.path().join("cut.playback");
    write_playback(&capture, &playback, &[]);
    let bytes = std::fs::read(&playback).unwrap();
    std::fs::write(&playback, &bytes[..bytes.len() * 2 / 3]).unwrap();
    let out = dir.path().join("cut.mtape");
    let run = import(&playback, &out);
    assert_eq!(run.status.code(), Some(3), "{}\n{}", run.stderr, run.stdout);
    assert!(
        run.stdout.contains("damaged:") && run.stdout.contains("at byte"),
        "{}",
        run.stdout
    );
    let got = capture_records(&out);
    let n = got.iter().filter(|r| r.kind == RecordKind::Request).count();
    let all = capture_records(&capture)
        .iter()
        .filter(|r| r.kind == RecordKind::Request)
        .count();
    assert!(n > 0 && n < all, "{n} of {all} requests");
    assert_eq!(
        got.last().unwrap().kind,
        RecordKind::End,
        "the capture is whole"
    );

    // The same figures as JSON, by the schema.
    let file = playback.display().to_string();
    let json = mongotape(&[
        "import",
        &file,
        "-o",
        out.to_str().unwrap(),
        "--force",
        "-j",
    ]);
    assert_eq!(json.status.code(), Some(3), "{}", json.stderr);
    let report: serde_json::Value = serde_json::from_str(&json.stdout).expect("import JSON");
    assert_schema("import", &report);
    assert_eq!(report["format"], "mongoreplay");
    assert_eq!(report["damaged"].as_array().unwrap().len(), 1, "{report}");
    let ops = format!(
        "imported {} mongoreplay operations",
        report["mongoreplay"]["ops"]
    );
    assert!(run.stdout.starts_with(&ops), "{ops}: {}", run.stdout);
    let messages = got
        .iter()
        .filter(|r| matches!(r.kind, RecordKind::Request | RecordKind::Reply))
        .count();
    assert_eq!(report["written"]["messages"], messages, "{report}");
}

/// An OP_REPLY is a reply by its opcode: the old shell's replies, answering request 0 in a
/// playback file, are imported as replies and paired with the requests they answer by their
/// order on the connection (mongosh's handshake is OP_QUERY answered by OP_REPLY).
#[test]
fn op_replies_answering_request_0_are_replies_paired_by_order() {
    let dir = tempdir();
    let capture = fixture("mongosh.mtape");
    let playback = dir.path().join("zero.playback");
    write_playback(&capture, &playback, &["--reply-response-to-zero"]);
    let out = dir.path().join("zero.mtape");
    let run = import(&playback, &out);
    assert!(run.success(), "{}\n{}", run.stderr, run.stdout);
    let records = capture_records(&out);
    let zeroed = records
        .iter()
        .filter(|r| r.kind == RecordKind::Reply && r.payload[12..16] == 1i32.to_le_bytes())
        .inspect(|r| assert_eq!(r.payload[8..12], [0; 4]))
        .count();
    assert!(zeroed > 0, "the fixture holds OP_REPLYs");
    assert_eq!(
        by_connection(&records),
        by_connection(&capture_records(&capture))
            .into_iter()
            .map(|(n, (client, msgs))| (n, (client, zero_reply_ids(msgs))))
            .collect::<BTreeMap<_, _>>()
    );
    let (got, want) = (inspect_json(&out), inspect_json(&capture));
    for key in ["unanswered_requests", "unsolicited_replies", "by_command"] {
        assert_eq!(got[key], want[key], "{key}");
    }
    let cat = mongotape(&["cat", out.to_str().unwrap(), "--no-body"]);
    let handshake_reply = cat
        .stdout
        .lines()
        .find(|l| l.contains("\"op\":\"OP_REPLY\""))
        .expect("an OP_REPLY line");
    assert!(
        handshake_reply.contains("\"dir\":\"reply\"")
            && handshake_reply.contains("\"command\":\"ismaster\"")
            && handshake_reply.contains("latency_us"),
        "{handshake_reply}"
    );
}

/// The messages with every OP_REPLY's responseTo set to 0.
fn zero_reply_ids(msgs: Vec<(RecordKind, u64, Vec<u8>)>) -> Vec<(RecordKind, u64, Vec<u8>)> {
    msgs.into_iter()
        .map(|(kind, ts, mut bytes)| {
            if bytes[12..16] == 1i32.to_le_bytes() {
                bytes[8..12].copy_from_slice(&[0; 4]);
            }
            (kind, ts, bytes)
        })
        .collect()
}
