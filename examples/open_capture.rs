//! Writes a capture that ends with requests still unanswered, as a killed proxy leaves one: the
//! readers' bound on pending requests is measured on it (docs/reliability.md).
//!
//! cargo run --example open_capture -- conns 200000 out.mtape   # 200,000 connections, one find each
//! cargo run --example open_capture -- pending 1000000 out.mtape  # one connection, 1M finds
//! cargo run --example open_capture -- shapes 50000 out.mtape     # 50,000 distinct query shapes
//!
//! `tests/memory_bounds.rs` includes this file (`write_open_capture`).

use mongotape::capture::{
    CaptureWriter, CloseEvent, EndEvent, Metadata, OpenEvent, Record, RecordKind, Side,
};
use mongotape::wire::{MsgFlags, OpMsg, Section};
use std::path::Path;

#[allow(dead_code)] // unused where a test includes this file
fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [mode, n, to] = &args[..] else {
        anyhow::bail!("usage: open_capture conns|pending|shapes N OUT.mtape");
    };
    let n: u64 = n.parse()?;
    if mode == "shapes" {
        write_shapes_capture(Path::new(to), n)?;
        println!("{n} finds of as many distinct shapes, each answered");
        return Ok(());
    }
    let (conns, per_conn) = match mode.as_str() {
        "conns" => (n, 1),
        "pending" => (1, n),
        _ => anyhow::bail!("mode is conns, pending or shapes"),
    };
    write_open_capture(Path::new(to), conns, per_conn)?;
    println!("{conns} connections, {per_conn} unanswered requests each");
    Ok(())
}

/// `conns` connections that open, handshake-free, and send `per_conn` finds that no reply answers;
/// no close, no end record.
pub fn write_open_capture(to: &Path, conns: u64, per_conn: u64) -> anyhow::Result<()> {
    let mut w = CaptureWriter::create(to, &Metadata::default(), 1)?;
    let mut ts = 0;
    for conn in 1..=conns {
        let client = format!("127.0.0.1:{}", 10_000 + conn % 50_000);
        let open = OpenEvent {
            client,
            upstream: "127.0.0.1:27017".into(),
            continued: false,
        };
        w.write(&Record::json(RecordKind::Open, conn, ts, &open))?;
        for i in 0..per_conn {
            ts += 1_000;
            let find = OpMsg {
                flags: MsgFlags::empty(),
                sections: vec![Section::Body(
                    bson::rawdoc! { "find": "c", "filter": { "i": i as i64 }, "$db": "t" },
                )],
                checksum: None,
            }
            .encode(i as i32 + 1, 0);
            w.write(&Record::new(RecordKind::Request, conn, ts, find))?;
        }
    }
    w.finish()?;
    Ok(())
}

/// One connection sending `n` finds, each on a field of its own (`{f17: 1}`): as many distinct
/// query shapes, each answered; a complete capture.
#[allow(dead_code)] // unused where a test includes this file for the other captures
pub fn write_shapes_capture(to: &Path, n: u64) -> anyhow::Result<()> {
    let mut w = CaptureWriter::create(to, &Metadata::default(), 1)?;
    let open = OpenEvent {
        client: "127.0.0.1:40000".into(),
        upstream: "127.0.0.1:27017".into(),
        continued: false,
    };
    w.write(&Record::json(RecordKind::Open, 1, 0, &open))?;
    let mut ts = 0;
    for i in 0..n {
        let mut filter = bson::Document::new();
        filter.insert(format!("f{i}"), 1i32);
        let body = bson::RawDocumentBuf::try_from(&bson::doc! {
            "find": "c", "filter": filter, "$db": "t"
        })?;
        let id = (i % i32::MAX as u64) as i32 + 1;
        let find = OpMsg {
            flags: MsgFlags::empty(),
            sections: vec![Section::Body(body)],
            checksum: None,
        };
        ts += 1_000;
        w.write(&Record::new(RecordKind::Request, 1, ts, find.encode(id, 0)))?;
        let reply = OpMsg {
            flags: MsgFlags::empty(),
            sections: vec![Section::Body(bson::rawdoc! {
                "cursor": { "firstBatch": [], "id": 0i64, "ns": "t.c" }, "ok": 1.0
            })],
            checksum: None,
        };
        ts += 100;
        w.write(&Record::new(RecordKind::Reply, 1, ts, reply.encode(id, id)))?;
    }
    let close = CloseEvent {
        side: Side::Client,
        reason: "closed".into(),
    };
    w.write(&Record::json(RecordKind::Close, 1, ts + 1, &close))?;
    let end = EndEvent {
        connections: 1,
        messages: 2 * n,
        ..EndEvent::default()
    };
    w.write(&Record::json(RecordKind::End, 0, ts + 1, &end))?;
    w.finish()?;
    Ok(())
}
