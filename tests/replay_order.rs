//! Order that holds under `--connections N`: a write and a later request of its namespace keep
//! their order across connections, so the seed workloads replay on 8 connections with no
//! divergence and leave the same database; the report says how much concurrency that left.

mod common;

use common::*;

fn on_eight_connections(workload: &str, scale: f64) {
    let r = on_eight_connections_with(workload, scale, &[]);
    // One fewer than the cores by default, at least one.
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    assert_eq!(
        r.report["replayer"]["threads"].as_u64(),
        Some(cores.saturating_sub(1).max(1) as u64)
    );
    // The capture reader's thread is a part of the replayer's CPU, and the text says how much.
    let replayer = &r.report["replayer"];
    let (all, reader) = (
        replayer["cpu_s"].as_f64(),
        replayer["reader_cpu_s"].as_f64(),
    );
    assert!(
        matches!((all, reader), (Some(a), Some(r)) if r > 0.0 && r <= a),
        "{replayer}"
    );
    assert!(
        r.output.stdout.contains("of it reading the capture"),
        "{}",
        r.output.stdout
    );
}

fn on_eight_connections_with(workload: &str, scale: f64, extra: &[&str]) -> Replay {
    let dir = tempdir();
    let a = Server::start();
    let db = "bench";
    let (capture, _) = record_workload(&a, dir.path(), Client::Pymongo, workload, db, scale);
    let expected = dump_db(&a.uri(), db);
    drop(a);
    let b = Server::start();
    let args = [&["--fast", "--connections", "8"][..], extra].concat();
    let r = replay(&capture, &b.uri(), &args);
    assert_eq!(r.divergences(), 0, "{workload}: {}", r.describe());
    assert_eq!(r.skipped("cursor_not_found"), 0, "{}", r.describe());
    let ordering = &r.report["ordering"];
    assert_eq!(ordering["connections"], 8, "{}", r.describe());
    assert!(
        ordering["followed_a_write"].as_u64() > Some(0),
        "{}",
        r.describe()
    );
    assert!(ordering["mean_in_flight"].as_f64() > Some(0.0));
    // The sentence may wrap at 100 columns: read it with the line breaks undone.
    let flat = r
        .output
        .stdout
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(flat.contains("requests in flight on average"), "{flat}");
    assert_same_db(&expected, &dump_db(&b.uri(), db));
    r
}

#[test]
fn basic_replays_on_eight_connections_without_divergence() {
    on_eight_connections("basic", 1.0);
}

#[test]
fn inserts_replays_on_eight_connections_without_divergence() {
    on_eight_connections("inserts", 0.2);
}

#[test]
fn lookup_replays_on_eight_connections_without_divergence() {
    on_eight_connections("lookup", 0.2);
}

/// Eight lanes sharing two connection slots: a lane waiting for a write on another lane gives its
/// connection up to it, so the order holds and nothing deadlocks.
#[test]
fn basic_replays_on_eight_connections_two_open_at_a_time() {
    on_eight_connections_with("basic", 1.0, &["--max-open-connections", "2"]);
}

/// The lanes spread over more threads than the cores: a write and what follows it on another
/// lane, run by another thread, keep their order all the same. `--threads 0` is a usage error.
#[test]
fn lookup_replays_on_eight_connections_run_by_three_threads() {
    let r = on_eight_connections_with("lookup", 0.2, &["--threads", "3"]);
    assert_eq!(r.report["replayer"]["threads"], 3, "{}", r.describe());
    let zero = mongotape(&[
        "replay",
        "x.mtape",
        "--target",
        "127.0.0.1:1",
        "--threads",
        "0",
    ]);
    assert_eq!(zero.status.code(), Some(2), "{}", zero.stderr);
}
