use super::*;
use crate::figures::summary::new_ns_histogram;
use hdrhistogram::Histogram;
use std::borrow::Cow;

fn hist(latency_ns: u64, n: u64) -> Histogram<u64> {
    let mut h = new_ns_histogram();
    h.record_n(latency_ns, n).unwrap();
    h
}

/// One command's second: `n` replies at `latency_ns` (from the intended send), `service_ns` of
/// which from send to reply.
struct Cmd {
    name: &'static str,
    n: u64,
    latency_ns: u64,
    service_ns: u64,
}

fn second(unix_s: u64, ops: u64, lag_ns: u64, cmds: &[Cmd]) -> Bucket<'static> {
    let mut all = new_ns_histogram();
    let commands: Vec<CommandBucket<'static>> = cmds
        .iter()
        .filter(|c| c.n > 0)
        .map(|c| {
            let h = hist(c.latency_ns, c.n);
            all.add(&h).unwrap();
            CommandBucket {
                command: Cow::Borrowed(c.name),
                replies: c.n,
                busy_ns: c.n * c.service_ns,
                latency: Cow::Owned(h),
            }
        })
        .collect();
    Bucket {
        unix_s,
        ops,
        latency: Cow::Owned(all),
        busy_ns: commands.iter().map(|c| c.busy_ns).sum(),
        max_lag_ns: lag_ns,
        commands,
    }
}

fn schedule(pacing: &Pacing, start: f64, duration_s: f64, connections: u64) -> Schedule<'_> {
    Schedule {
        pacing,
        started_at_unix_s: start,
        duration_s,
        connections,
    }
}

const RAMP: Pacing = Pacing::Ramp {
    from: 100.0,
    to: 1000.0,
    over_s: 10.0,
    steps: 0,
};

fn due(i: u64) -> u64 {
    (RAMP.sent_by(i as f64 + 1.0) - RAMP.sent_by(i as f64)) as u64
}

/// Inserts first, then (from second 5) finds five times slower: the mix changing is not the knee;
/// the knee is where the finds' own p99 doubles. 16 connections: the server is the limit.
#[test]
fn a_ramp_compares_each_command_with_its_own_baseline() {
    let buckets: Vec<Bucket<'static>> = (0..10)
        .map(|i| {
            let (insert, find) = if i < 5 { (due(i), 0) } else { (0, due(i)) };
            let find_ns = if i < 7 { 500_000 } else { 2_000_000 };
            let cmds = [
                Cmd {
                    name: "insert",
                    n: insert,
                    latency_ns: 100_000,
                    service_ns: 100_000,
                },
                Cmd {
                    name: "find",
                    n: find,
                    latency_ns: find_ns,
                    service_ns: find_ns,
                },
            ];
            second(1_000 + i, due(i), 0, &cmds)
        })
        .collect();
    let k = find(&schedule(&RAMP, 1_000.0, 10.0, 16), &buckets).unwrap();
    assert_eq!(k.at_s, Some(7.0), "{k:?}");
    assert_eq!(k.reason.as_deref(), Some("p99"));
    assert_eq!(k.command.as_deref(), Some("find"));
    assert!((k.rate_ops_per_s.unwrap() - 775.0).abs() < 1e-6);
    assert!(
        (k.baseline_p99_us - 500.0).abs() < 20.0,
        "{}",
        k.baseline_p99_us
    );
    assert!(
        (k.baselines["find"].from_s - 5.0).abs() < 1e-9,
        "first seen at 5 s"
    );
    assert_eq!(k.limit.as_deref(), Some("server"));
    assert!((k.figures.service_ratio.unwrap() - 4.0).abs() < 0.01);
    assert!(
        k.summary
            .starts_with("knee at ~780 ops/s (7.0 s in): find p99 2.0 ms vs its baseline 510 µs"),
        "{}",
        k.summary
    );
    assert!(k
        .summary
        .contains("the limit is the server: 2.0 ms per operation, 4.0x"));
}

/// One connection at 1.3 ms a request carries ~770/s: past it requests queue (p99 from the
/// intended send grows) while the server answers as fast as ever: the connections are the limit.
#[test]
fn a_saturated_connection_is_named_with_its_ceiling() {
    let buckets: Vec<Bucket<'static>> = (0..10)
        .map(|i| {
            let done = due(i).min(770);
            let queued = if due(i) > 770 { 40_000_000 } else { 1_300_000 };
            let cmds = [Cmd {
                name: "insert",
                n: done,
                latency_ns: queued,
                service_ns: 1_300_000,
            }];
            second(1_000 + i, done, queued - 1_300_000, &cmds)
        })
        .collect();
    let k = find(&schedule(&RAMP, 1_000.0, 10.0, 1), &buckets).unwrap();
    assert_eq!(k.at_s, Some(7.0), "{k:?}");
    assert_eq!(k.limit.as_deref(), Some("connections"));
    let f = &k.figures;
    assert!((f.service_ratio.unwrap() - 1.0).abs() < 1e-9);
    assert!(f.busy_share.unwrap() > 0.99);
    assert!((f.ceiling_ops_per_s.unwrap() - 769.2).abs() < 0.1);
    // 1,000/s at 1.3 ms with 30% to spare: 1.86 connections, at least 2x the one: 2.
    assert_eq!(f.try_connections, Some(2));
    assert!(
        k.summary.ends_with("the limit is the connections: one connection's ceiling is ~770 ops/s (1 connection x 1.3 ms per operation, busy 100% of the time): try --connections 2"),
        "{}",
        k.summary
    );
    // The same seconds over 8 connections: mostly idle, sent 39 ms late: the replayer.
    let k = find(&schedule(&RAMP, 1_000.0, 10.0, 8), &buckets).unwrap();
    assert_eq!(k.limit.as_deref(), Some("replayer"), "{k:?}");
    assert!(
        k.summary.contains("requests went out up to 39 ms late"),
        "{}",
        k.summary
    );
}

#[test]
fn too_few_replies_are_not_compared() {
    // The find has 5 replies a second: its p99 is not compared, however high.
    let buckets: Vec<Bucket<'static>> = (0..10)
        .map(|i| {
            let find_ns = if i < 5 { 100_000 } else { 90_000_000 };
            let cmds = [
                Cmd {
                    name: "insert",
                    n: due(i),
                    latency_ns: 100_000,
                    service_ns: 100_000,
                },
                Cmd {
                    name: "find",
                    n: 5,
                    latency_ns: find_ns,
                    service_ns: find_ns,
                },
            ];
            second(1_000 + i, due(i) + 5, 0, &cmds)
        })
        .collect();
    let k = find(&schedule(&RAMP, 1_000.0, 10.0, 4), &buckets).unwrap();
    assert_eq!(k.rate_ops_per_s, None, "{k:?}");
    assert_eq!(k.command.as_deref(), Some("insert"), "the busiest");
    assert_eq!(k.summary, "no knee: the run kept up to 960 ops/s");
}

#[test]
fn a_run_that_holds_has_no_knee() {
    let pacing = Pacing::Rate { ops_per_s: 100.0 };
    let cmd = [Cmd {
        name: "insert",
        n: 100,
        latency_ns: 1_000_000,
        service_ns: 1_000_000,
    }];
    let buckets: Vec<Bucket<'static>> = (0..5).map(|i| second(50 + i, 100, 0, &cmd)).collect();
    let k = find(&schedule(&pacing, 49.5, 6.0, 1), &buckets).unwrap();
    assert_eq!(k.rate_ops_per_s, None);
    assert_eq!(k.last_held_ops_per_s, Some(100.0));
    assert_eq!(k.limit, None);
    assert!(find(&schedule(&Pacing::Fast, 49.5, 6.0, 1), &buckets).is_none());
}

/// A constant rate whose capture moves from fast inserts to slower finds: p99 goes up 5x, the
/// rate never changed, every second completed what was due: no knee.
#[test]
fn a_constant_rate_has_no_knee_when_the_mix_changes() {
    let pacing = Pacing::Rate { ops_per_s: 500.0 };
    let at = |i: u64, ops: u64| {
        let ns = if i < 4 { 100_000 } else { 500_000 };
        second(
            10 + i,
            ops,
            0,
            &[Cmd {
                name: "find",
                n: ops,
                latency_ns: ns,
                service_ns: ns,
            }],
        )
    };
    let buckets: Vec<Bucket<'static>> = (0..8).map(|i| at(i, 500)).collect();
    let k = find(&schedule(&pacing, 10.0, 8.0, 1), &buckets).unwrap();
    assert_eq!(k.rate_ops_per_s, None, "{k:?}");
    // Falling behind still counts.
    let slow: Vec<Bucket<'static>> = (0..8)
        .map(|i| at(i, if i < 5 { 500 } else { 300 }))
        .collect();
    let k = find(&schedule(&pacing, 10.0, 8.0, 1), &slow).unwrap();
    assert_eq!(k.reason.as_deref(), Some("throughput"));
    assert_eq!(k.at_s, Some(5.0));
    assert!(
        k.summary
            .contains("(5.0 s in): 300 ops/s achieved, below 90% of the schedule"),
        "{}",
        k.summary
    );
}

/// A ramp whose first whole second already falls behind (one connection at 2 ms carries 500/s;
/// 600 are due): the knee is there, not the baseline; with nothing to compare the server's time
/// with, the busy connection names itself.
#[test]
fn a_ramp_that_falls_behind_at_once_has_its_knee_in_the_first_second() {
    let pacing = Pacing::Ramp {
        from: 600.0,
        to: 6000.0,
        over_s: 20.0,
        steps: 0,
    };
    let cmd = |_| {
        [Cmd {
            name: "insert",
            n: 500,
            latency_ns: 50_000_000,
            service_ns: 2_000_000,
        }]
    };
    let buckets: Vec<Bucket<'static>> = (0..20u64)
        .map(|i| second(1_000 + i, 500, 48_000_000, &cmd(i)))
        .collect();
    let k = find(&schedule(&pacing, 1_000.0, 20.0, 1), &buckets).unwrap();
    assert_eq!(k.at_s, Some(0.0), "{k:?}");
    assert_eq!(k.reason.as_deref(), Some("throughput"));
    assert_eq!(k.last_held_ops_per_s, None);
    assert_eq!(k.limit.as_deref(), Some("connections"), "{k:?}");
    assert_eq!(k.figures.service_ratio, None);
    assert!(
        k.summary
            .starts_with("knee at ~740 ops/s (0.0 s in): 500 ops/s achieved"),
        "{}",
        k.summary
    );
}
