//! The codec against real bytes: the captures in `captures/` were recorded from pymongo, mongosh,
//! PHP and the Node.js and Rust drivers (`tools/record-fixtures`). Every message decodes; OP_MSG and the legacy handshake
//! re-encode to the very same bytes; every cut and every flipped byte is an error, never a panic.

use mongotape::capture::{CaptureReader, Record, RecordKind};
use mongotape::report::inspect::inspect_file;
use mongotape::wire::{Body, FrameSplitter, Message, OpCode, HEADER_LEN};
use std::path::PathBuf;

const FIXTURES: [&str; 10] = [
    "pymongo",
    "pymongo-zstd",
    "pymongo-zlib",
    "pymongo-snappy",
    "mongosh",
    "mongosh-zlib",
    "php",
    "node",
    "node-zlib",
    "rust",
];

fn path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("captures/{name}.mtape"))
}

fn messages(name: &str) -> Vec<Record> {
    let records: Vec<Record> = CaptureReader::open(&path(name))
        .unwrap()
        .map(|r| r.unwrap())
        .collect();
    assert_eq!(records.last().unwrap().kind, RecordKind::End, "{name}");
    records
        .into_iter()
        .filter(|r| matches!(r.kind, RecordKind::Request | RecordKind::Reply))
        .collect()
}

#[test]
fn every_recorded_message_decodes_and_reencodes_byte_for_byte() {
    for name in FIXTURES {
        let msgs = messages(name);
        assert!(msgs.len() > 100, "{name}: {} messages", msgs.len());
        let (mut reencoded, mut legacy) = (0, 0);
        for r in &msgs {
            let m = Message::parse(&r.payload)
                .unwrap_or_else(|e| panic!("{name} conn {} at {}: {e}", r.conn_id, r.ts_ns));
            if m.compressor.is_some() {
                continue;
            }
            let (id, to) = (m.header.request_id, m.header.response_to);
            let again = match &m.body {
                Body::Msg(op) => op.encode(id, to),
                Body::Query(q) => {
                    legacy += 1;
                    q.encode(id)
                }
                Body::Reply(rep) => {
                    legacy += 1;
                    rep.encode(id, to)
                }
                _ => continue,
            };
            assert_eq!(&again[..], &r.payload[..], "{name}: {:?}", m.op_code());
            reencoded += 1;
        }
        assert!(reencoded > 0 || name.contains('-'), "{name}");
        // mongosh, PHP and Node.js say their first hello over OP_QUERY, answered by OP_REPLY; the
        // Rust driver says everything over OP_MSG.
        if name == "mongosh" || name == "php" || name == "node" {
            assert!(legacy >= 2, "{name}: {legacy} legacy messages");
        }
        if name == "rust" {
            assert_eq!(legacy, 0, "{name}: legacy messages");
        }
    }
}

#[test]
fn compressed_fixtures_hold_their_compressor() {
    for (name, compressor) in [
        ("pymongo-zstd", "zstd"),
        ("pymongo-zlib", "zlib"),
        ("pymongo-snappy", "snappy"),
        ("mongosh-zlib", "zlib"),
        ("node-zlib", "zlib"),
    ] {
        let n = messages(name)
            .iter()
            .filter(|r| {
                let m = Message::parse(&r.payload).unwrap();
                m.compressor.map(|c| c.name()) == Some(compressor)
            })
            .count();
        assert!(n > 50, "{name}: {n} {compressor} messages");
    }
}

#[test]
fn drivers_are_named_in_the_fixtures() {
    for (name, driver) in [
        ("pymongo", "PyMongo"),
        ("mongosh", "mongosh"),
        ("php", "PHP"),
        ("node", "nodejs"),
        ("rust", "mongo-rust-driver"),
    ] {
        let report = inspect_file(&path(name)).unwrap();
        let names: Vec<_> = report
            .connections
            .iter()
            .filter_map(|c| c.driver.as_ref()?.name.clone())
            .collect();
        assert!(
            names.iter().any(|n| n.contains(driver)),
            "{name}: {names:?}"
        );
    }
}

#[test]
fn every_cut_of_a_real_message_is_an_error() {
    let (mut total, mut refused) = (0u64, 0u64);
    for name in FIXTURES {
        for r in messages(name).iter().step_by(3) {
            let bytes = &r.payload[..];
            let cuts: Vec<usize> = if bytes.len() <= 1024 {
                (0..bytes.len()).collect()
            } else {
                (0..bytes.len()).step_by(bytes.len() / 256).collect()
            };
            for cut in cuts {
                assert!(Message::parse(&bytes[..cut]).is_err(), "{name} cut {cut}");
                // With the length patched to match, the cut reaches the opcode's own parser.
                if cut >= HEADER_LEN {
                    let mut patched = bytes[..cut].to_vec();
                    patched[..4].copy_from_slice(&(cut as i32).to_le_bytes());
                    total += 1;
                    if Message::parse(&patched).is_err() {
                        refused += 1;
                    }
                }
            }
        }
    }
    // A cut is only accepted where it falls on a boundary the format allows (the end of the last
    // document of a legacy reply or insert, say): nearly every cut is refused.
    assert!(
        refused * 100 >= total * 95,
        "{refused} of {total} cuts refused"
    );
}

#[test]
fn flipped_bytes_never_panic() {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for name in FIXTURES {
        for r in messages(name) {
            for _ in 0..8 {
                let mut bytes = r.payload.to_vec();
                let at = HEADER_LEN + (next() as usize) % (bytes.len() - HEADER_LEN);
                bytes[at] ^= 1 << (next() % 8);
                let _ = Message::parse(&bytes);
                if let Ok(m) = Message::parse(&bytes) {
                    let _ = mongotape::wire::RequestInfo::of(&m);
                    let _ = mongotape::wire::ReplyInfo::of(&m);
                    let _ = mongotape::report::cat::body_json(&m);
                }
            }
        }
    }
}

#[test]
fn a_connection_stream_splits_into_the_same_frames_at_any_chunking() {
    let msgs = messages("mongosh");
    let conn = msgs
        .iter()
        .find(|r| r.kind == RecordKind::Request)
        .unwrap()
        .conn_id;
    let frames: Vec<&[u8]> = msgs
        .iter()
        .filter(|r| r.conn_id == conn && r.kind == RecordKind::Request)
        .map(|r| &r.payload[..])
        .collect();
    let stream = frames.concat();
    for chunk in [1, 2, 3, 7, 16, 17, 100, 4096] {
        let mut s = FrameSplitter::new();
        let mut out = Vec::new();
        for part in stream.chunks(chunk) {
            s.extend_from_slice(part);
            s.validate().unwrap();
            while let Some(f) = s.next_frame().unwrap() {
                out.push(f);
            }
        }
        assert_eq!(out.len(), frames.len(), "chunk {chunk}");
        assert!(out.iter().zip(&frames).all(|(a, b)| &a[..] == *b));
        assert!(out
            .iter()
            .all(|f| Message::parse(f).unwrap().op_code() != OpCode::Unknown(0)));
    }
}
