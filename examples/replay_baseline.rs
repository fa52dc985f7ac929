//! The ceiling `mongotape replay --fast` is measured against: a minimal client that sends
//! pre-encoded OP_MSG inserts and waits for each reply, on 1 or N connections.
//!
//! ```text
//! cargo build --release --example replay_baseline
//! target/release/examples/replay_baseline 127.0.0.1:PORT [COUNT] [CONNECTIONS] [DB]
//!     [--retryable] [--server-pid PID] [--threads N] [--blocking] [--json]
//! ```
//!
//! The documents are those of `tools/workloads/*/inserts` (`{_id: i, name, value, pad}`, 150 bytes),
//! into `DB.items` (default `baseline`). With `--retryable` each insert carries what the real clients'
//! retryable inserts carry once the replayer has rewritten them: an `lsid` (one session per
//! connection) and an increasing `txnNumber`, so the server does the same work as for a replay.
//! Prints ops/s and its own CPU µs per insert (and the server's CPU per 1,000 inserts with
//! `--server-pid`) and the round trip's p50 and p99; `--json` prints one JSON object instead.
//! `--threads N`: the runtime's worker threads (default: tokio's, one per core). `--blocking`: no
//! runtime at all, one OS thread per connection with a blocking socket (write the insert, read its
//! reply, repeat): on few cores the strongest closed-loop load, the floor every ratio is taken
//! against (`tools/bench-sink`).

use bson::{rawdoc, RawDocumentBuf};
use hdrhistogram::Histogram;
use mongotape::replay::client::{Conn, Target};
use mongotape::replay::measure::server::{clock_tick_s, cpu_seconds, own_cpu_seconds};
use mongotape::wire::op_msg::{MsgFlags, OpMsg, Section};
use rand::RngCore;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

struct Args {
    target: Target,
    count: usize,
    conns: usize,
    db: String,
    retryable: bool,
    server_pid: Option<u32>,
    threads: Option<usize>,
    blocking: bool,
    json: bool,
}

fn parse_args() -> anyhow::Result<Args> {
    let mut positional = Vec::new();
    let (mut retryable, mut server_pid, mut json, mut threads) = (false, None, false, None);
    let mut blocking = false;
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--retryable" => retryable = true,
            "--json" => json = true,
            "--blocking" => blocking = true,
            "--server-pid" => {
                let pid = it
                    .next()
                    .ok_or_else(|| anyhow::anyhow!("--server-pid PID"))?;
                server_pid = Some(pid.parse()?);
            }
            "--threads" => {
                let n: usize = it
                    .next()
                    .ok_or_else(|| anyhow::anyhow!("--threads N"))?
                    .parse()?;
                anyhow::ensure!(n > 0, "--threads must be at least 1");
                threads = Some(n);
            }
            _ if a.starts_with("--") => anyhow::bail!("unknown option {a}"),
            _ => positional.push(a),
        }
    }
    let conns: usize = positional.get(2).map_or(Ok(1), |s| s.parse())?;
    anyhow::ensure!(conns > 0, "CONNECTIONS must be at least 1");
    Ok(Args {
        target: Target::parse_blocking(
            positional.first().map_or("127.0.0.1:27017", String::as_str),
        )?,
        count: positional.get(1).map_or(Ok(20_000), |s| s.parse())?,
        conns,
        db: positional
            .get(3)
            .cloned()
            .unwrap_or_else(|| "baseline".into()),
        retryable,
        server_pid,
        threads,
        blocking,
        json,
    })
}

fn session_id() -> [u8; 16] {
    let mut id = [0u8; 16];
    rand::rng().fill_bytes(&mut id);
    id[6] = (id[6] & 0x0f) | 0x40;
    id[8] = (id[8] & 0x3f) | 0x80;
    id
}

/// The messages of each connection, encoded before the clock starts: the client does no BSON work
/// while measured. Insert `i` goes to connection `i % conns`.
fn encode(args: &Args) -> Vec<Vec<Vec<u8>>> {
    let pad = "x".repeat(94);
    let mut lanes: Vec<Vec<Vec<u8>>> = vec![Vec::new(); args.conns];
    let sessions: Vec<[u8; 16]> = (0..args.conns).map(|_| session_id()).collect();
    for i in 0..args.count {
        let lane = i % args.conns;
        let doc = rawdoc! {
            "_id": i as i32, "name": format!("item-{i}"), "value": (i * 7 % 13) as i32, "pad": pad.as_str(),
        };
        let mut body = rawdoc! { "insert": "items", "ordered": true };
        if args.retryable {
            let lsid = bson::Binary {
                subtype: bson::spec::BinarySubtype::Uuid,
                bytes: sessions[lane].to_vec(),
            };
            body.append(bson::cstr!("lsid"), rawdoc! { "id": lsid });
            body.append(bson::cstr!("txnNumber"), lanes[lane].len() as i64 + 1);
        }
        body.append(bson::cstr!("$db"), args.db.as_str());
        lanes[lane].push(insert(body, doc));
    }
    lanes
}

fn insert(body: RawDocumentBuf, doc: RawDocumentBuf) -> Vec<u8> {
    OpMsg {
        flags: MsgFlags::empty(),
        sections: vec![
            Section::Body(body),
            Section::Sequence {
                identifier: "documents".into(),
                documents: vec![doc],
            },
        ],
        checksum: None,
    }
    .encode(0, 0)
}

/// What one run measured.
struct Measured {
    wall: f64,
    cpu: f64,
    server_cpu: Option<f64>,
    /// Round trips, µs.
    rtt: Histogram<u64>,
}

fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 60_000_000, 3).expect("static bounds")
}

fn check(reply: &[u8]) -> anyhow::Result<()> {
    let outcome = mongotape::replay::measure::outcome::scan(reply)?;
    if !outcome.ok || outcome.write_errors > 0 {
        anyhow::bail!("insert failed: {outcome:?}");
    }
    Ok(())
}

fn run_tokio(args: &Args, lanes: Vec<Vec<Vec<u8>>>) -> anyhow::Result<Measured> {
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    if let Some(n) = args.threads {
        builder.worker_threads(n);
    }
    let runtime = builder.enable_all().build()?;
    let tick = clock_tick_s();
    let target = args.target.clone();
    let server_pid = args.server_pid;
    runtime.block_on(async move {
        let mut connected = Vec::new();
        for lane in lanes {
            connected.push((
                Conn::connect(&target, &target.seeds[0], Duration::from_secs(10)).await?,
                lane,
            ));
        }
        let server0 = server_pid.and_then(|p| cpu_seconds(p, tick));
        let cpu0 = own_cpu_seconds(tick).unwrap_or(0.0);
        let started = Instant::now();
        let tasks: Vec<_> = connected
            .into_iter()
            .map(|(mut conn, lane)| {
                tokio::spawn(async move {
                    let mut rtt = histogram();
                    for mut m in lane {
                        let sent = Instant::now();
                        let id = conn.send(&mut m).await?;
                        let reply = conn.recv(id).await?;
                        rtt.saturating_record(sent.elapsed().as_micros() as u64);
                        check(&reply)?;
                    }
                    anyhow::Ok(rtt)
                })
            })
            .collect();
        let mut rtt = histogram();
        for t in tasks {
            rtt.add(t.await??)?;
        }
        let wall = started.elapsed().as_secs_f64();
        let cpu = own_cpu_seconds(tick).unwrap_or(0.0) - cpu0;
        let server_cpu = server0
            .zip(server_pid.and_then(|p| cpu_seconds(p, tick)))
            .map(|(b, a)| a - b);
        Ok(Measured {
            wall,
            cpu,
            server_cpu,
            rtt,
        })
    })
}

/// One OS thread per connection, blocking reads and writes, no runtime.
fn run_blocking(args: &Args, lanes: Vec<Vec<Vec<u8>>>) -> anyhow::Result<Measured> {
    let seed = &args.target.seeds[0];
    let addr = format!("{}:{}", seed.host, seed.port);
    let mut connected = Vec::new();
    for lane in lanes {
        let stream = TcpStream::connect(&addr)?;
        stream.set_nodelay(true)?;
        connected.push((stream, lane));
    }
    let tick = clock_tick_s();
    let server0 = args.server_pid.and_then(|p| cpu_seconds(p, tick));
    let cpu0 = own_cpu_seconds(tick).unwrap_or(0.0);
    let started = Instant::now();
    let threads: Vec<_> = connected
        .into_iter()
        .map(|(mut stream, lane)| {
            std::thread::spawn(move || {
                let mut rtt = histogram();
                let mut reply = Vec::with_capacity(256);
                for m in lane {
                    let sent = Instant::now();
                    stream.write_all(&m)?;
                    let mut len = [0u8; 4];
                    stream.read_exact(&mut len)?;
                    let n = i32::from_le_bytes(len);
                    anyhow::ensure!((16..=48_000_000).contains(&n), "reply length {n}");
                    reply.clear();
                    reply.extend_from_slice(&len);
                    reply.resize(n as usize, 0);
                    stream.read_exact(&mut reply[4..])?;
                    rtt.saturating_record(sent.elapsed().as_micros() as u64);
                    check(&reply)?;
                }
                anyhow::Ok(rtt)
            })
        })
        .collect();
    let mut rtt = histogram();
    for t in threads {
        let lane = t
            .join()
            .map_err(|_| anyhow::anyhow!("a connection's thread panicked"))??;
        rtt.add(lane)?;
    }
    let wall = started.elapsed().as_secs_f64();
    let cpu = own_cpu_seconds(tick).unwrap_or(0.0) - cpu0;
    let server_cpu = server0
        .zip(args.server_pid.and_then(|p| cpu_seconds(p, tick)))
        .map(|(b, a)| a - b);
    Ok(Measured {
        wall,
        cpu,
        server_cpu,
        rtt,
    })
}

fn main() -> anyhow::Result<()> {
    let args = parse_args()?;
    let lanes = encode(&args);
    let Measured {
        wall,
        cpu,
        server_cpu,
        rtt,
    } = if args.blocking {
        run_blocking(&args, lanes)?
    } else {
        run_tokio(&args, lanes)?
    };
    let (p50, p99) = (rtt.value_at_quantile(0.5), rtt.value_at_quantile(0.99));
    let n = args.count as f64;
    let server_per_1k = server_cpu.map(|s| s / n * 1000.0);
    if args.json {
        println!(
            "{}",
            serde_json::json!({
                "count": args.count, "connections": args.conns, "retryable": args.retryable,
                "threads": args.threads, "blocking": args.blocking,
                "wall_s": wall, "ops_per_s": n / wall, "client_cpu_s": cpu,
                "client_cpu_us_per_op": cpu / n * 1e6,
                "rtt_p50_us": p50, "rtt_p99_us": p99,
                "server_cpu_s": server_cpu, "server_cpu_s_per_1k_ops": server_per_1k,
            })
        );
    } else {
        println!(
            "baseline{}{}: {} inserts on {} connection(s) in {wall:.2} s: {:.0} ops/s, {:.1} µs CPU per insert, round trip p50 {p50} µs p99 {p99} µs{}",
            if args.retryable { " (retryable)" } else { "" },
            if args.blocking { " (blocking)" } else { "" },
            args.count,
            args.conns,
            n / wall,
            cpu / n * 1e6,
            server_per_1k
                .map(|s| format!(", server {s:.3} s CPU per 1,000"))
                .unwrap_or_default()
        );
    }
    Ok(())
}
