//! TLS through the proxy against plain, side by side in one run on loopback, against real
//! secantusd-rs servers (one plain, one serving TLS with certificates made here):
//!
//! - the round trip of `ping` on one connection: direct to each server, and through
//!   `mongotape record` (recording) in front of each: plain client -> plain proxy -> plain server,
//!   and TLS client -> TLS proxy (`--tls-cert/--tls-key`) -> TLS upstream (`tls=true&tlsCAFile`);
//! - the proxy's CPU time per message (request or reply), from /proc, over the measured round trips
//!   only.
//!
//! What the proxy adds is each proxied path's p50 minus its own direct path's p50 (TLS direct is
//! already slower per message: encryption at both ends). Goal (issue 8): TLS on both legs adds at
//! most 30% to what the plain proxy adds. Rounds are short and interleaved (A B C D, A B C D, ... 50 times).
//!
//! Run: `cargo bench --bench proxy_tls` (needs tools/setup). `BENCH_SCALE=0.2` for a quick run.

#[path = "../tests/common/mod.rs"]
mod common;

use bson::rawdoc;
use common::{Pki, Proxy, Server};
use hdrhistogram::Histogram;
use mongotape::net::ClientTls;
use mongotape::replay::measure::server::{clock_tick_s, cpu_seconds};
use mongotape::wire::{FrameSplitter, MsgFlags, OpMsg, Section};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::Instant;

fn scale() -> f64 {
    std::env::var("BENCH_SCALE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1.0)
}

trait Stream: Read + Write {}
impl<T: Read + Write> Stream for T {}

/// A blocking client: one pre-encoded message out, one whole reply in.
struct Conn {
    stream: Box<dyn Stream>,
    splitter: FrameSplitter,
}

impl Conn {
    fn connect(addr: &str, tls: Option<&Arc<rustls::ClientConfig>>) -> Conn {
        let tcp = TcpStream::connect(addr).expect("connect");
        tcp.set_nodelay(true).unwrap();
        let stream: Box<dyn Stream> = match tls {
            None => Box::new(tcp),
            Some(config) => {
                let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
                let conn = rustls::ClientConnection::new(config.clone(), name).unwrap();
                Box::new(rustls::StreamOwned::new(conn, tcp))
            }
        };
        Conn {
            stream,
            splitter: FrameSplitter::new(),
        }
    }

    fn round_trip(&mut self, msg: &[u8]) {
        self.stream.write_all(msg).expect("send");
        self.stream.flush().expect("flush");
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
    tls: bool,
    /// The proxy's process, for its CPU time.
    proxy_pid: Option<u32>,
}

fn main() {
    // `cargo bench` passes --bench; `cargo test --benches` runs this file too: keep that quick.
    let quick = !std::env::args().any(|a| a == "--bench");
    let s = if quick { 0.02 } else { scale() };
    let pki = Pki::new();
    let plain = Server::start_with(&["--standalone"]);
    let secure = pki.server(&["--standalone"]);
    let dir = common::tempdir();
    // Both proxies get the same kind of upstream string: one server, no discovery.
    let plain_upstream = format!("mongodb://{}/?directConnection=true", plain.addr());
    let plain_proxy = Proxy::start_with(
        &plain_upstream,
        &dir.path().join("plain.mtape"),
        &["--quiet"],
    );
    let upstream = format!(
        "mongodb://{}/?directConnection=true&tls=true&tlsCAFile={}",
        secure.addr(),
        pki.arg("ca.pem")
    );
    let (cert, key) = (pki.arg("server.pem"), pki.arg("server-key.pem"));
    let tls_proxy = Proxy::start_with(
        &upstream,
        &dir.path().join("tls.mtape"),
        &["--quiet", "--tls-cert", &cert, "--tls-key", &key],
    );
    let paths = [
        Path {
            name: "plain, direct",
            addr: plain.addr().to_owned(),
            tls: false,
            proxy_pid: None,
        },
        Path {
            name: "plain, through mongotape record",
            addr: plain_proxy.addr().to_owned(),
            tls: false,
            proxy_pid: Some(plain_proxy.pid()),
        },
        Path {
            name: "TLS, direct",
            addr: secure.addr().to_owned(),
            tls: true,
            proxy_pid: None,
        },
        Path {
            name: "TLS both legs, through mongotape record",
            addr: tls_proxy.addr().to_owned(),
            tls: true,
            proxy_pid: Some(tls_proxy.pid()),
        },
    ];
    let config = ClientTls {
        ca_file: Some(pki.path("ca.pem")),
        ..ClientTls::default()
    }
    .client_config()
    .unwrap();
    let ping = OpMsg {
        flags: MsgFlags::empty(),
        sections: vec![Section::Body(rawdoc! { "ping": 1, "$db": "admin" })],
        checksum: None,
    }
    .encode(1, 0);
    let mut conns: Vec<Conn> = paths
        .iter()
        .map(|p| Conn::connect(&p.addr, p.tls.then_some(&config)))
        .collect();
    for c in &mut conns {
        for _ in 0..200 {
            c.round_trip(&ping);
        }
    }
    let mut hists: Vec<Histogram<u64>> = paths
        .iter()
        .map(|_| Histogram::new_with_bounds(1, 60_000_000_000, 3).unwrap())
        .collect();
    let mut cpu = vec![0f64; paths.len()];
    let tick = clock_tick_s();
    // Short rounds, so bursts of the machine's other load fall on every path alike.
    let rounds = 50;
    let per = ((400.0 * s) as usize).max(4);
    for _ in 0..rounds {
        for ((c, h), (p, cpu)) in conns
            .iter_mut()
            .zip(&mut hists)
            .zip(paths.iter().zip(&mut cpu))
        {
            let before = p.proxy_pid.and_then(|pid| cpu_seconds(pid, tick));
            for _ in 0..per {
                let t = Instant::now();
                c.round_trip(&ping);
                h.record(t.elapsed().as_nanos() as u64).unwrap();
            }
            let after = p.proxy_pid.and_then(|pid| cpu_seconds(pid, tick));
            if let (Some(b), Some(a)) = (before, after) {
                *cpu += a - b;
            }
        }
    }
    let n = rounds * per;
    println!("## Round trip of `ping`, {n} per path, interleaved in {rounds} rounds\n");
    println!("| path | p50 µs | p99 µs | added p50 µs | proxy CPU µs per message |");
    println!("|---|---:|---:|---:|---:|");
    let p50 = |h: &Histogram<u64>| h.value_at_quantile(0.5) as f64 / 1e3;
    let p99 = |h: &Histogram<u64>| h.value_at_quantile(0.99) as f64 / 1e3;
    for (i, (p, h)) in paths.iter().zip(&hists).enumerate() {
        let direct = &hists[i - i % 2];
        let cpu_per_msg = match p.proxy_pid {
            Some(_) => format!("{:.1}", cpu[i] / (2 * n) as f64 * 1e6),
            None => "-".into(),
        };
        println!(
            "| {} | {:.1} | {:.1} | {:.1} | {cpu_per_msg} |",
            p.name,
            p50(h),
            p99(h),
            p50(h) - p50(direct),
        );
    }
    let plain_added = p50(&hists[1]) - p50(&hists[0]);
    let tls_added = p50(&hists[3]) - p50(&hists[2]);
    println!(
        "\nadded p50, TLS both legs / plain: {:.2}x, TLS adds {:+.0}% to the plain proxy's added latency (goal <= +30%)",
        tls_added / plain_added.max(0.001),
        (tls_added / plain_added.max(0.001) - 1.0) * 100.0
    );
    println!(
        "proxy CPU per message, TLS both legs / plain: {:.2}x",
        cpu[3] / cpu[1].max(1e-9)
    );
    drop(conns);
    drop(tls_proxy);
    drop(plain_proxy);
}
