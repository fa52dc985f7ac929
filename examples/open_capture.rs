//! Writes a capture that ends with requests still unanswered, as a killed proxy leaves one: the
//! readers' bound on pending requests is measured on it (docs/reliability.md).
//!
//! cargo run --example open_capture -- conns 200000 out.mtape   # 200,000 connections, one find each
//! cargo run --example open_capture -- pending 1000000 out.mtape  # one connection, 1M finds
//!
//! `tests/memory_bounds.rs` includes this file (`write_open_capture`).

use mongotape::capture::{CaptureWriter, Metadata, OpenEvent, Record, RecordKind};
use mongotape::wire::{MsgFlags, OpMsg, Section};
use std::path::Path;

#[allow(dead_code)] // unused where a test includes this file
fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [mode, n, to] = &args[..] else {
        anyhow::bail!("usage: open_capture conns|pending N OUT.mtape");
    };
    let n: u64 = n.parse()?;
    let (conns, per_conn) = match mode.as_str() {
        "conns" => (n, 1),
        "pending" => (1, n),
        _ => anyhow::bail!("mode is conns or pending"),
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
