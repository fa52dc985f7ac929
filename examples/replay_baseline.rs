//! The ceiling `mongotape replay --fast` is measured against: a minimal client that sends
//! pre-encoded OP_MSG inserts and waits for each reply, on 1 or N connections.
//!
//! `cargo run --release --example replay_baseline -- 127.0.0.1:PORT [COUNT] [CONNECTIONS] [DB]`
//! prints ops/s and its own CPU microseconds per insert.

use bson::rawdoc;
use mongotape::replay::conn::{Conn, Target};
use mongotape::replay::server::{clock_tick_s, own_cpu_seconds};
use mongotape::wire::op_msg::{MsgFlags, OpMsg, Section};
use std::time::{Duration, Instant};

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let target = Target::parse(args.get(1).map_or("127.0.0.1:27017", String::as_str))?;
    let count: usize = args.get(2).map_or(Ok(20_000), |s| s.parse())?;
    let conns: usize = args.get(3).map_or(Ok(1), |s| s.parse())?;
    let db = args.get(4).cloned().unwrap_or_else(|| "baseline".into());
    // Encoded before the clock starts: the client does no BSON work while measured.
    let messages: Vec<Vec<u8>> = (0..count)
        .map(|i| {
            let doc = rawdoc! { "_id": i as i64, "name": format!("item-{i}"), "value": (i * 7 % 13) as i32, "pad": "x".repeat(80) };
            OpMsg {
                flags: MsgFlags::empty(),
                sections: vec![
                    Section::Body(rawdoc! { "insert": "c", "ordered": true, "$db": db.as_str() }),
                    Section::Sequence { identifier: "documents".into(), documents: vec![doc] },
                ],
                checksum: None,
            }
            .encode(0, 0)
        })
        .collect();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let tick = clock_tick_s();
    let (wall, cpu) = runtime.block_on(async move {
        let mut lanes: Vec<Vec<Vec<u8>>> = vec![Vec::new(); conns];
        for (i, m) in messages.into_iter().enumerate() {
            lanes[i % conns].push(m);
        }
        let mut connected = Vec::new();
        for lane in lanes {
            connected.push((Conn::connect(&target, Duration::from_secs(10)).await?, lane));
        }
        let cpu0 = own_cpu_seconds(tick).unwrap_or(0.0);
        let started = Instant::now();
        let tasks: Vec<_> = connected
            .into_iter()
            .map(|(mut conn, lane)| {
                tokio::spawn(async move {
                    for mut m in lane {
                        let id = conn.send(&mut m).await?;
                        conn.recv(id).await?;
                    }
                    Ok::<_, mongotape::replay::conn::ConnError>(())
                })
            })
            .collect();
        for t in tasks {
            t.await??;
        }
        let wall = started.elapsed().as_secs_f64();
        let cpu = own_cpu_seconds(tick).unwrap_or(0.0) - cpu0;
        anyhow::Ok((wall, cpu))
    })?;
    println!(
        "baseline: {count} inserts on {conns} connection(s) in {wall:.2} s: {:.0} ops/s, {:.1} µs CPU per insert",
        count as f64 / wall,
        cpu / count as f64 * 1e6
    );
    Ok(())
}
