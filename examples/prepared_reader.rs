//! What the capture reader of `replay` would cost per request if the capture were prepared ahead
//! (issue 38, item 3): the requests written out once as ready-to-send messages, with no recorded
//! reply to read and nothing to understand. It writes such a file from a capture (every request's
//! bytes as recorded, request id and responseTo zeroed), then reads it back five times doing only
//! what such a reader must: the next record, its bytes moved into an op of the replay's size,
//! boxed and sent on a channel to another thread. Prints the reading thread's CPU per request,
//! to set beside the report's `replayer.reader_cpu_us_per_op` of a replay of the same capture.
//!
//! ```text
//! cargo run --release --example prepared_reader -- ins.mtape /tmp/prepared.mtape
//! ```

use mongotape::capture::{CaptureReader, CaptureWriter, Record, RecordKind};
use std::path::Path;

/// The size of the replay's op (`replay::route::op::Op`, 392 bytes with its message's `Vec`).
struct ReadyOp {
    bytes: Vec<u8>,
    _rest: [u64; 46],
}

fn thread_cpu_s() -> f64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    t.tv_sec as f64 + t.tv_nsec as f64 * 1e-9
}

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [from, to] = args.as_slice() else {
        anyhow::bail!("usage: prepared_reader FROM.mtape PREPARED.mtape");
    };
    let requests = prepare(Path::new(from), Path::new(to))?;
    println!("{requests} requests written to {to}");
    for _ in 0..5 {
        let (ops, cpu_s) = read_prepared(Path::new(to))?;
        println!(
            "reader: {:.3} µs CPU per request over {ops} requests",
            cpu_s * 1e6 / ops.max(1) as f64
        );
    }
    Ok(())
}

/// Writes the requests of `from` to `to`, ready to send; returns how many.
fn prepare(from: &Path, to: &Path) -> anyhow::Result<u64> {
    let mut reader = CaptureReader::open(from)?;
    let meta = reader.metadata().clone();
    let mut writer = CaptureWriter::create(to, &meta, 1)?;
    let mut n = 0;
    for record in reader.by_ref() {
        let record = record?;
        if record.kind != RecordKind::Request || record.payload.len() < 16 {
            continue;
        }
        let mut bytes = record.payload.to_vec();
        bytes[4..12].fill(0);
        writer.write(&Record::new(
            RecordKind::Request,
            record.conn_id,
            record.ts_ns,
            bytes,
        ))?;
        n += 1;
    }
    writer.finish()?;
    Ok(n)
}

/// Reads `path` as a prepared capture's reader would; returns the requests and the reading
/// thread's CPU seconds.
fn read_prepared(path: &Path) -> anyhow::Result<(u64, f64)> {
    let (tx, rx) = std::sync::mpsc::sync_channel::<Box<ReadyOp>>(100_000);
    let lanes = std::thread::spawn(move || rx.iter().map(|op| op.bytes.len() as u64).sum::<u64>());
    let before = thread_cpu_s();
    let mut reader = CaptureReader::open(path)?;
    let mut ops = 0;
    while let Some(record) = reader.next_record() {
        let record = record?;
        if record.kind != RecordKind::Request {
            continue;
        }
        let op = Box::new(ReadyOp {
            bytes: Vec::from(record.payload),
            _rest: [0; 46],
        });
        if tx.send(op).is_err() {
            break;
        }
        ops += 1;
    }
    let cpu_s = thread_cpu_s() - before;
    drop(tx);
    let _ = lanes.join();
    Ok((ops, cpu_s))
}
