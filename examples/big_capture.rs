//! A large capture for memory and throughput checks: the records of a small capture written over
//! and over (each copy on new connection ids, later in time) until it holds N messages.
//!
//! ```text
//! cargo run --release --example big_capture -- captures/pymongo.mtape big.mtape 10000000
//! ```
//!
//! `tests/memory_bounds.rs` includes this file (`write_big_capture`) to make its captures.

use mongotape::capture::{CaptureReader, CaptureWriter, Record, RecordKind};
use std::path::{Path, PathBuf};

#[allow(dead_code)] // unused where a test includes this file
fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [from, to, n] = args.as_slice() else {
        anyhow::bail!("usage: big_capture FROM.mtape TO.mtape MESSAGES");
    };
    let (written, copies) =
        write_big_capture(&PathBuf::from(from), &PathBuf::from(to), n.parse()?)?;
    println!("{written} messages in {copies} copies of {from}");
    Ok(())
}

/// Writes `to` with the records of `from` copied until it holds at least `want` messages; returns
/// the messages written and the number of copies.
pub fn write_big_capture(from: &Path, to: &Path, want: u64) -> anyhow::Result<(u64, u64)> {
    let mut reader = CaptureReader::open(from)?;
    let meta = reader.metadata().clone();
    let mut records = Vec::new();
    let mut end = None;
    while let Some(r) = reader.next_record() {
        let r = r?;
        if matches!(r.kind, RecordKind::End) {
            end = Some(r);
        } else {
            records.push(r);
        }
    }
    let first = records.first().map_or(0, |r| r.ts_ns);
    let span = records.last().map_or(0, |r| r.ts_ns) - first + 1_000_000;
    let max_conn = records.iter().map(|r| r.conn_id).max().unwrap_or(0) + 1;
    let messages_per_copy = records
        .iter()
        .filter(|r| matches!(r.kind, RecordKind::Request | RecordKind::Reply))
        .count() as u64;
    anyhow::ensure!(
        messages_per_copy > 0,
        "{} holds no messages",
        from.display()
    );
    let mut w = CaptureWriter::create(to, &meta, 1)?;
    let (mut written, mut copy) = (0u64, 0u64);
    while written < want {
        for r in &records {
            w.write(&Record::new(
                r.kind,
                r.conn_id + copy * max_conn,
                r.ts_ns - first + copy * span,
                r.payload.clone(),
            ))?;
        }
        written += messages_per_copy;
        copy += 1;
    }
    // Closed as the recorder closes a capture, so the readers see a clean end.
    if let Some(end) = end {
        let ts = copy * span;
        w.write(&Record::new(end.kind, end.conn_id, ts, end.payload))?;
    }
    w.finish()?;
    Ok((written, copy))
}
