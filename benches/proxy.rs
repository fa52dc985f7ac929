//! Proxy benchmark: one run, side by side on loopback against a real secantusd-rs.
//!
//! - round-trip latency of a small command (`ping`): direct, through a minimal thread-per-direction
//!   byte relay (the floor), through `mongotape record --no-record`, and through `mongotape record`;
//! - acknowledged insert throughput the same four ways;
//! - the recorder alone: messages per second written by its thread;
//! - capture size against wire bytes for the seeds' workloads (pymongo through the proxy).
//!
//! Rounds are interleaved (A B C D, A B C D, ...) so a noisy neighbour hits every path alike.
//!
//! Run: `cargo bench --bench proxy` (needs tools/setup). `BENCH_SCALE=0.2` for a quick run.

#[path = "../tests/common/mod.rs"]
mod common;
/// The floor: the minimal thread-per-direction relay of examples/relay.rs, in process.
#[path = "../examples/relay.rs"]
#[allow(dead_code)]
mod relay;

use bson::rawdoc;
use common::{Proxy, Server};
use hdrhistogram::Histogram;
use mongotape::capture::{Metadata, Record, RecordKind, SegmentPlan};
use mongotape::proxy::recorder::{Recorder, RecorderOptions};
use mongotape::proxy::stats::Stats;
use mongotape::wire::{FrameSplitter, MsgFlags, OpMsg, Section};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::sync::Arc;
use std::time::Instant;

fn scale() -> f64 {
    std::env::var("BENCH_SCALE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1.0)
}

fn op_msg(body: bson::RawDocumentBuf) -> Vec<u8> {
    OpMsg {
        flags: MsgFlags::empty(),
        sections: vec![Section::Body(body)],
        checksum: None,
    }
    .encode(1, 0)
}

/// A blocking client that sends one pre-encoded message and reads one whole reply.
struct Conn {
    stream: TcpStream,
    splitter: FrameSplitter,
}

impl Conn {
    fn connect(addr: &str) -> Conn {
        let stream = TcpStream::connect(addr).expect("connect");
        stream.set_nodelay(true).unwrap();
        Conn {
            stream,
            splitter: FrameSplitter::new(),
        }
    }

    fn round_trip(&mut self, msg: &[u8]) {
        self.stream.write_all(msg).expect("send");
        let mut buf = [0u8; 16 * 1024];
        loop {
            if let Some(_reply) = self.splitter.next_frame().expect("valid reply") {
                return;
            }
            let n = self.stream.read(&mut buf).expect("read");
            assert!(n > 0, "connection closed");
            self.splitter.extend_from_slice(&buf[..n]);
        }
    }
}

struct Path {
    name: &'static str,
    addr: String,
}

fn latency(paths: &[Path], rounds: usize, per_round: usize) -> Vec<Histogram<u64>> {
    let ping = op_msg(rawdoc! { "ping": 1, "$db": "admin" });
    let mut conns: Vec<Conn> = paths.iter().map(|p| Conn::connect(&p.addr)).collect();
    let mut hists: Vec<Histogram<u64>> = paths
        .iter()
        .map(|_| Histogram::new_with_bounds(1, 60_000_000_000, 3).unwrap())
        .collect();
    for c in &mut conns {
        for _ in 0..200 {
            c.round_trip(&ping);
        }
    }
    for _ in 0..rounds {
        for (c, h) in conns.iter_mut().zip(&mut hists) {
            for _ in 0..per_round {
                let t = Instant::now();
                c.round_trip(&ping);
                h.record(t.elapsed().as_nanos() as u64).unwrap();
            }
        }
    }
    hists
}

fn insert_rate(paths: &[Path], rounds: usize, per_round: usize) -> Vec<f64> {
    let insert = op_msg(rawdoc! {
        "insert": "bench_proxy", "$db": "bench",
        "documents": [{ "name": "a".repeat(60), "n": 42, "tags": ["x", "y", "z"], "score": 1.5 }],
    });
    let mut conns: Vec<Conn> = paths.iter().map(|p| Conn::connect(&p.addr)).collect();
    let mut totals = vec![(0usize, 0f64); paths.len()];
    for _ in 0..rounds {
        for (c, total) in conns.iter_mut().zip(&mut totals) {
            let t = Instant::now();
            for _ in 0..per_round {
                c.round_trip(&insert);
            }
            total.0 += per_round;
            total.1 += t.elapsed().as_secs_f64();
        }
    }
    totals.iter().map(|(n, s)| *n as f64 / s).collect()
}

fn recorder_rate(messages: usize) -> f64 {
    let dir = common::tempdir();
    let stats = Arc::new(Stats::default());
    let meta = Metadata {
        format_version: 1,
        ..Default::default()
    };
    let payload = bytes::Bytes::from(op_msg(rawdoc! {
        "insert": "c", "$db": "bench", "documents": [{ "_id": 1, "name": "a".repeat(100) }],
    }));
    let opts = RecorderOptions {
        queue_records: 1 << 20,
        max_queued_bytes: 1 << 30,
        ..Default::default()
    };
    let plan = SegmentPlan {
        path: dir.path().join("r.mtape"),
        ..SegmentPlan::default()
    };
    let recorder = Recorder::start(plan, &meta, opts, stats.clone()).unwrap();
    let handle = recorder.handle();
    let start = Instant::now();
    for i in 0..messages {
        let kind = if i % 2 == 0 {
            RecordKind::Request
        } else {
            RecordKind::Reply
        };
        handle.submit(Record::new(
            kind,
            1 + (i as u64 % 8),
            i as u64,
            payload.clone(),
        ));
    }
    drop(handle);
    recorder.finish().unwrap();
    let secs = start.elapsed().as_secs_f64();
    let dropped = stats.snapshot().dropped_messages;
    assert_eq!(dropped, 0, "the recorder queue overflowed");
    messages as f64 / secs
}

fn compression(server: &Server, workload: &str, scale: f64) -> (u64, u64) {
    let dir = common::tempdir();
    let out = dir.path().join("w.mtape");
    let proxy = Proxy::start_with(server.addr(), &out, &["--quiet"]);
    common::run_client(
        common::Client::Pymongo,
        workload,
        &proxy.uri(),
        "bench_ratio",
        scale,
    );
    proxy.stop();
    let inspected = mongotape::report::inspect::inspect_file(&out).unwrap();
    (inspected.wire_bytes, inspected.compressed_file_bytes)
}

fn main() {
    // `cargo bench` passes --bench; `cargo test --benches` runs this file too: keep that quick.
    let quick = !std::env::args().any(|a| a == "--bench");
    let s = if quick { 0.02 } else { scale() };
    let server = Server::start_with(&["--standalone"]);
    let dir = common::tempdir();
    let relay = relay::start_relay(server.addr().to_string());
    let norec = Proxy::spawn(
        {
            let mut c = Command::new(common::mongotape_bin());
            c.args([
                "record",
                "--listen",
                "127.0.0.1:0",
                "--upstream",
                server.addr(),
                "--no-record",
                "--quiet",
            ]);
            c
        },
        &dir.path().join("none"),
    );
    let rec = Proxy::start_with(server.addr(), &dir.path().join("bench.mtape"), &["--quiet"]);
    let paths = [
        Path {
            name: "direct",
            addr: server.addr().to_string(),
        },
        Path {
            name: "minimal relay",
            addr: relay,
        },
        Path {
            name: "mongotape, recording off",
            addr: norec.addr().to_string(),
        },
        Path {
            name: "mongotape, recording",
            addr: rec.addr().to_string(),
        },
    ];

    let rounds = 10;
    let per = ((2_000.0 * s) as usize).max(20);
    let hists = latency(&paths, rounds, per);
    println!(
        "## Round trip of `ping`, {} per path, interleaved in {rounds} rounds\n",
        rounds * per
    );
    println!("| path | p50 µs | p99 µs | added p50 µs |");
    println!("|---|---:|---:|---:|");
    let p50 = |h: &Histogram<u64>| h.value_at_quantile(0.5) as f64 / 1e3;
    let p99 = |h: &Histogram<u64>| h.value_at_quantile(0.99) as f64 / 1e3;
    for (p, h) in paths.iter().zip(&hists) {
        println!(
            "| {} | {:.1} | {:.1} | {:.1} |",
            p.name,
            p50(h),
            p99(h),
            p50(h) - p50(&hists[0])
        );
    }
    let relay_added = p50(&hists[1]) - p50(&hists[0]);
    let rec_added = p50(&hists[3]) - p50(&hists[0]);
    println!(
        "\nadded p50, mongotape recording / minimal relay: {:.2}x (goal <= 1.5x)\n",
        rec_added / relay_added.max(0.001)
    );

    let per = ((1_000.0 * s) as usize).max(20);
    let rates = insert_rate(&paths, rounds, per);
    println!(
        "## Acknowledged inserts on one connection, {} per path\n",
        rounds * per
    );
    println!("| path | inserts/s | vs direct |");
    println!("|---|---:|---:|");
    for (p, r) in paths.iter().zip(&rates) {
        println!("| {} | {:.0} | {:.2} |", p.name, r, r / rates[0]);
    }
    println!(
        "\nrecording costs {:.1}% of throughput against recording off (goal < 5%)\n",
        (1.0 - rates[3] / rates[2]) * 100.0
    );
    drop(rec);
    drop(norec);

    let n = ((1_000_000.0 * s) as usize).max(10_000);
    let rate = recorder_rate(n);
    println!("## Recorder thread alone\n\n{n} messages of ~150 bytes: {rate:.0} messages/s (goal >= 100,000)\n");

    println!("## Capture size, pymongo through the proxy\n");
    println!("| workload | wire bytes | file bytes | ratio |");
    println!("|---|---:|---:|---:|");
    for w in [
        "embedded",
        "docsize",
        "writeconcern",
        "randstring",
        "lookup",
    ] {
        let (wire, file) = compression(&server, w, (0.05 * s / 0.2).clamp(0.005, 0.05));
        println!(
            "| {w} | {wire} | {file} | {:.1}x |",
            wire as f64 / file.max(1) as f64
        );
    }
}
