//! Corrupt OP_COMPRESSED and a decompression bomb sent through the proxy to the real server: the
//! proxy forwards them as they came, never inflates past the declared size, keeps serving other
//! clients, and the capture holds them for `cat` to report.

mod common;

use bson::rawdoc;
use common::*;
use mongotape::capture::{CaptureReader, RecordKind};
use mongotape::wire::compressed::{compress, decompress};
use mongotape::wire::{Compressor, Message, MsgFlags, OpMsg, Section};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

fn op_msg(body: bson::RawDocumentBuf) -> Vec<u8> {
    OpMsg {
        flags: MsgFlags::empty(),
        sections: vec![Section::Body(body)],
        checksum: None,
    }
    .encode(7, 0)
}

/// Sends `frame` on a new connection and waits up to 5 s for anything back (or a close).
fn send(addr: &str, frame: &[u8]) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(frame).unwrap();
    let mut buf = [0u8; 1024];
    let _ = s.read(&mut buf);
}

#[test]
fn corrupt_compression_and_a_bomb_are_forwarded_recorded_and_never_inflated() {
    let server = Server::start();
    let dir = tempdir();
    let out = dir.path().join("compressed.mtape");
    let proxy = Proxy::start(server.addr(), &out);

    // 1. A zstd payload with its middle scrambled.
    let ping = op_msg(rawdoc! { "ping": 1, "$db": "admin" });
    let mut corrupt = compress(&ping, Compressor::Zstd).unwrap();
    let mid = corrupt.len() - 6;
    for b in &mut corrupt[25..mid] {
        *b ^= 0x5a;
    }
    assert!(decompress(&corrupt).is_err());
    // 2. A bomb: 40 MB of one letter (a few KB compressed) declared as 100 bytes.
    let big = op_msg(
        rawdoc! { "insert": "c", "$db": "bomb", "documents": [{ "s": "a".repeat(40 << 20) }] },
    );
    let mut bomb = compress(&big, Compressor::Zstd).unwrap();
    assert!(bomb.len() < 100_000, "the bomb is {} bytes", bomb.len());
    bomb[20..24].copy_from_slice(&100i32.to_le_bytes());
    assert!(
        decompress(&bomb).is_err(),
        "inflating stops at the declared size"
    );

    send(proxy.addr(), &corrupt);
    send(proxy.addr(), &bomb);
    // The proxy still serves a real client.
    ping_through(&proxy.uri());
    let rss_kb = rss_kb(proxy.pid());
    assert!(rss_kb < 100_000, "proxy RSS {rss_kb} KB after a 40 MB bomb");
    assert!(proxy.stop().status.success());

    // Both are in the capture as they were sent, and the readers say what is wrong with them.
    let mut reader = CaptureReader::open(&out).unwrap();
    let mut sent_back = Vec::new();
    while let Some(r) = reader.next_record() {
        let r = r.unwrap();
        if r.kind == RecordKind::Request
            && (r.payload[..] == corrupt[..] || r.payload[..] == bomb[..])
        {
            assert!(Message::parse(&r.payload).is_err());
            sent_back.push(r.payload.len());
        }
    }
    assert_eq!(sent_back.len(), 2, "both frames recorded unchanged");
    let cat = mongotape(&["cat".to_string(), out.display().to_string()]);
    assert!(cat.success(), "{}", cat.stderr);
    let errors = cat
        .stdout
        .lines()
        .filter(|l| l.contains("\"error\":\"OP_COMPRESSED"))
        .count();
    assert_eq!(
        errors, 2,
        "cat names both undecodable frames:\n{}",
        cat.stdout
    );
}

fn ping_through(uri: &str) {
    let out = python(
        "import sys\nfrom pymongo import MongoClient\nprint(MongoClient(sys.argv[1], serverSelectionTimeoutMS=10000).admin.command('ping')['ok'])",
        &[uri],
    );
    assert_eq!(out.trim(), "1.0");
}

fn rss_kb(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap()
}
