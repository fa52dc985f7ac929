//! The ceiling `mongotape replay --fast` is measured against: a minimal client that sends
//! pre-encoded OP_MSG inserts and waits for each reply, on 1 or N connections.
//!
//! ```text
//! cargo build --release --example replay_baseline
//! target/release/examples/replay_baseline 127.0.0.1:PORT [COUNT] [CONNECTIONS] [DB]
//!     [--retryable] [--server-pid PID] [--threads N] [--json]
//! ```
//!
//! The documents are those of `tools/workloads/*/inserts` (`{_id: i, name, value, pad}`, 150 bytes),
//! into `DB.items` (default `baseline`). With `--retryable` each insert carries what the real clients'
//! retryable inserts carry once the replayer has rewritten them: an `lsid` (one session per
//! connection) and an increasing `txnNumber`, so the server does the same work as for a replay.
//! Prints ops/s and its own CPU µs per insert (and the server's CPU per 1,000 inserts with
//! `--server-pid`); `--json` prints one JSON object instead. `--threads N`: the runtime's worker
//! threads (default: tokio's, one per core).

use bson::{rawdoc, RawDocumentBuf};
use mongotape::replay::client::{Conn, Target};
use mongotape::replay::measure::server::{clock_tick_s, cpu_seconds, own_cpu_seconds};
use mongotape::wire::op_msg::{MsgFlags, OpMsg, Section};
use rand::RngCore;
use std::time::{Duration, Instant};

struct Args {
    target: Target,
    count: usize,
    conns: usize,
    db: String,
    retryable: bool,
    server_pid: Option<u32>,
    threads: Option<usize>,
    json: bool,
}

fn parse_args() -> anyhow::Result<Args> {
    let mut positional = Vec::new();
    let (mut retryable, mut server_pid, mut json, mut threads) = (false, None, false, None);
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--retryable" => retryable = true,
            "--json" => json = true,
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

fn main() -> anyhow::Result<()> {
    let args = parse_args()?;
    let lanes = encode(&args);
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    if let Some(n) = args.threads {
        builder.worker_threads(n);
    }
    let runtime = builder.enable_all().build()?;
    let tick = clock_tick_s();
    let target = args.target.clone();
    let server_pid = args.server_pid;
    let (wall, cpu, server_cpu) = runtime.block_on(async move {
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
                    for mut m in lane {
                        let id = conn.send(&mut m).await?;
                        let reply = conn.recv(id).await?;
                        let outcome = mongotape::replay::measure::outcome::scan(&reply)?;
                        if !outcome.ok || outcome.write_errors > 0 {
                            anyhow::bail!("insert failed: {outcome:?}");
                        }
                    }
                    anyhow::Ok(())
                })
            })
            .collect();
        for t in tasks {
            t.await??;
        }
        let wall = started.elapsed().as_secs_f64();
        let cpu = own_cpu_seconds(tick).unwrap_or(0.0) - cpu0;
        let server = server0
            .zip(server_pid.and_then(|p| cpu_seconds(p, tick)))
            .map(|(b, a)| a - b);
        anyhow::Ok((wall, cpu, server))
    })?;
    let n = args.count as f64;
    let server_per_1k = server_cpu.map(|s| s / n * 1000.0);
    if args.json {
        println!(
            "{}",
            serde_json::json!({
                "count": args.count, "connections": args.conns, "retryable": args.retryable,
                "threads": args.threads,
                "wall_s": wall, "ops_per_s": n / wall, "client_cpu_s": cpu,
                "client_cpu_us_per_op": cpu / n * 1e6,
                "server_cpu_s": server_cpu, "server_cpu_s_per_1k_ops": server_per_1k,
            })
        );
    } else {
        println!(
            "baseline{}: {} inserts on {} connection(s) in {wall:.2} s: {:.0} ops/s, {:.1} µs CPU per insert{}",
            if args.retryable { " (retryable)" } else { "" },
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
