//! Replay beyond one process: `--rate` under `--duration` (one pass's connections), the ramp's
//! knee, `--shard I/N` and `mongotape merge` (exact percentiles, missing shards), and a Kubernetes
//! Indexed Job simulated by processes with `JOB_COMPLETION_INDEX` set.

mod common;

use base64::Engine;
use common::*;
use hdrhistogram::serialization::Deserializer;
use hdrhistogram::Histogram;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

fn f64_of(v: &serde_json::Value) -> f64 {
    v.as_f64().unwrap_or(f64::NAN)
}

fn seed_capture() -> PathBuf {
    workspace_root().join("captures/pymongo.mtape")
}

/// Several pymongo threads over one pool: each its own inserts, a cursor read in batches (its
/// getMores may go over another pooled connection) and a transaction.
const THREADS: &str = r#"
import sys, threading, time
from pymongo import MongoClient
client = MongoClient(sys.argv[1], maxPoolSize=6)
db = client.shards
db.c.drop()
time.sleep(0.3)
db.create_collection('c')
time.sleep(0.3)
def work(t):
    c = db.c
    for i in range(30):
        c.insert_one({'_id': t * 1000 + i, 't': t, 'x': 'a' * 50})
    # Pauses between dependent steps: they may cross connections (and shards), and the replay's
    # recorded timing keeps them in order only with room to spare.
    time.sleep(0.3)
    assert len(list(c.find({'t': t}).batch_size(7))) == 30
    time.sleep(0.3)
    with client.start_session() as s:
        with s.start_transaction():
            c.insert_one({'_id': t * 1000 + 500, 't': t}, session=s)
            c.update_one({'_id': t * 1000}, {'$set': {'in_txn': True}}, session=s)
    time.sleep(0.3)
    c.count_documents({'t': t})
ts = [threading.Thread(target=work, args=(t,)) for t in range(6)]
for t in ts: t.start()
for t in ts: t.join()
print(db.c.count_documents({}))
"#;

/// Replays shard I of N of `capture` for every I at once (all starting at `--start-at`), each
/// writing `dir/shard-I.json`; returns the report paths.
fn replay_shards(capture: &Path, target: &str, n: u32, dir: &Path, extra: &[&str]) -> Vec<PathBuf> {
    let start_at = SystemTime::now() + Duration::from_secs(2);
    let start_at = start_at.duration_since(UNIX_EPOCH).unwrap().as_secs_f64();
    let children: Vec<(PathBuf, std::thread::JoinHandle<CommandOutput>)> = (0..n)
        .map(|i| {
            let report = dir.join(format!("shard-{i}.json"));
            let mut c = Command::new(mongotape_bin());
            c.arg("replay")
                .arg(capture)
                .args(["--target", target, "--quiet", "--report"])
                .arg(&report)
                .args(["--shard", &format!("{i}/{n}")])
                .args(["--start-at", &format!("{start_at:.3}")])
                .args(extra);
            (
                report,
                std::thread::spawn(move || run_command(c, REPLAY_TIMEOUT)),
            )
        })
        .collect();
    children
        .into_iter()
        .map(|(report, handle)| {
            let out = handle.join().expect("replay thread");
            assert!(out.success(), "shard {}: {}", report.display(), out.stderr);
            report
        })
        .collect()
}

fn read_json(path: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(path).expect("read report")).expect("report is JSON")
}

fn merge(reports: &[PathBuf], out: &Path) -> (CommandOutput, serde_json::Value) {
    let mut args: Vec<String> = vec!["merge".into()];
    args.extend(reports.iter().map(|p| p.display().to_string()));
    args.extend([
        "--quiet".into(),
        "--report".into(),
        out.display().to_string(),
    ]);
    let output = mongotape(&args);
    (output, read_json(out))
}

/// A histogram from a report, decoded here with the hdrhistogram crate directly.
fn histogram(text: &serde_json::Value) -> Histogram<u64> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text.as_str().expect("histogram text"))
        .expect("base64");
    Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .expect("HdrHistogram V2")
}

fn per_command_counts(report: &serde_json::Value) -> Vec<(String, u64)> {
    report["summary"]["per_command"]
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), v["count"].as_u64().unwrap_or(0)))
                .collect()
        })
        .unwrap_or_default()
}

/// Each query shape's counts: replayed count, getMores, errors, documents returned, and the
/// recorded count and getMores; by shape text.
fn shape_counts(report: &serde_json::Value) -> std::collections::BTreeMap<String, [u64; 6]> {
    let u = |v: &serde_json::Value| v.as_u64().unwrap_or(u64::MAX);
    report["shapes"]
        .as_array()
        .expect("shapes")
        .iter()
        .map(|s| {
            let r = &s["recorded"];
            (
                s["shape"].as_str().unwrap().to_owned(),
                [
                    u(&s["count"]),
                    u(&s["getmores"]),
                    u(&s["errors"]),
                    u(&s["docs_returned"]),
                    u(&r["count"]),
                    u(&r["getmores"]),
                ],
            )
        })
        .collect()
}

#[test]
fn rate_with_duration_sends_rate_times_duration_over_one_pass_of_connections() {
    let server = Server::start_with(&["--standalone"]);
    let once = replay(&seed_capture(), &server.uri(), &["--fast"]);
    let one_pass = once.report["connections_opened"].as_u64().unwrap();

    let r = replay(
        &seed_capture(),
        &server.uri(),
        &["--rate", "300", "--duration", "5"],
    );
    let ops = r.ops() as f64;
    assert!(
        (1350.0..=1650.0).contains(&ops),
        "{ops} ops: {}",
        r.describe()
    );
    assert!(
        r.report["iterations"].as_u64() > Some(2),
        "{}",
        r.describe()
    );
    assert!(
        r.report["connections_opened"].as_u64() <= Some(one_pass),
        "one pass opens {one_pass}: {}",
        r.describe()
    );
    // The server saw as few: the replay's lanes plus the probe's own connection.
    let created = r.report["server"]["delta"]["connections"]["totalCreated"]
        .as_u64()
        .unwrap_or(u64::MAX);
    assert!(created <= one_pass + 2, "server created {created}");
    // Open loop: latency counts from the intended send time, so never below the send's lag.
    let lag_p50 = f64_of(&r.report["lag"]["latency"]["p50_us"]);
    let p50 = f64_of(&r.report["summary"]["overall"]["latency"]["p50_us"]);
    assert!(p50 >= lag_p50, "p50 {p50} < lag {lag_p50}");
    // The server's idle rate was read before the run, and the net CPU is the gross less that
    // rate over the run's wall time.
    let s = &r.report["server"];
    let idle = f64_of(&s["idle_cpu_cores"]);
    assert!((0.0..2.0).contains(&idle), "idle {idle}: {s}");
    assert_eq!(s["idle_sample_s"].as_f64(), Some(1.0), "{s}");
    let (gross, net) = (f64_of(&s["cpu_s"]), f64_of(&s["cpu_net_s"]));
    let wall = f64_of(&r.report["summary"]["wall_s"]);
    let expected = (gross - idle * wall).max(0.0);
    assert!(
        (net - expected).abs() < 1e-6,
        "net {net}, gross {gross}, idle {idle} x {wall} s"
    );
    let net_per_1k = f64_of(&r.report["summary"]["server_cpu_net_s_per_1k_ops"]);
    assert!(
        (net_per_1k - net / ops * 1000.0).abs() < 1e-9,
        "{net_per_1k}"
    );
    assert!(
        r.output.stdout.contains("server CPU net of idle:"),
        "{}",
        r.output.stdout
    );

    // Server CPU per operation, net of the server's idle rate (the figure comparisons use): a
    // --rate of 0.7x what the one connection sustains, against --fast. (At 0.8x a stall of the
    // shared machine once left it behind its schedule; at 0.5x the server's own wake-ups between
    // requests cost it 1.15-1.26x the CPU per operation, near the bound.)
    let fast = replay(
        &seed_capture(),
        &server.uri(),
        &["--fast", "--duration", "3"],
    );
    let fast_rate = f64_of(&fast.report["summary"]["ops_per_s"]);
    let fast_cpu = f64_of(&fast.report["server"]["cpu_net_s_per_1k_ops"]);
    let rate = format!("{:.0}", fast_rate * 0.7);
    let paced = replay(
        &seed_capture(),
        &server.uri(),
        &["--rate", &rate, "--duration", "3"],
    );
    let paced_cpu = f64_of(&paced.report["server"]["cpu_net_s_per_1k_ops"]);
    eprintln!("server CPU per 1k ops: fast {fast_cpu:.3}, rate {rate}: {paced_cpu:.3}");
    // Issue 22's goal (within 1.3x) is a benchmark figure (docs/benchmarks.md, server CPU net of
    // idle); here the two only have to agree to within what a shared machine's noise leaves.
    assert!(
        (paced_cpu / fast_cpu - 1.0).abs() <= 0.5,
        "fast {fast_cpu} vs rate {rate}: {paced_cpu}: {}",
        paced.describe()
    );
}

/// The knee's fields agree with one another and with its sentence, whatever the machine's speed:
/// which second breaks, and whether the server or the connections held it back, depend on the
/// machine and its load, so neither is asserted.
fn assert_knee_consistent(knee: &serde_json::Value, what: &str) {
    let rate = f64_of(&knee["rate_ops_per_s"]);
    let summary = knee["summary"].as_str().unwrap_or_default();
    assert!(
        summary.starts_with("knee at ~"),
        "{what}: {summary}\n{knee:#}"
    );
    // Rounded: two significant digits, at most one decimal, in every figure of the sentence.
    assert!(
        !summary
            .split(|c: char| !(c.is_ascii_digit() || c == '.'))
            .any(|n| n.split_once('.').is_some_and(|(_, f)| f.len() > 1)),
        "{what}: {summary}"
    );
    let rounded = format!("{:.0}", {
        let step = 10f64.powi(rate.log10().floor() as i32 - 1);
        (rate / step).round() * step
    });
    assert!(
        summary.contains(&format!("~{rounded} ops/s")),
        "{what}: {rate} in {summary}"
    );
    let baselines = knee["baselines"]
        .as_object()
        .expect("baselines per command");
    // A knee in the ramp's first second comes before any baseline.
    assert!(
        baselines.contains_key("insert") || f64_of(&knee["at_s"]) < 1.0,
        "{what}: {knee:#}"
    );
    if knee["reason"] == "p99" {
        let command = knee["command"].as_str().expect("the command that broke");
        let base = f64_of(&baselines[command]["p99_us"]);
        assert_eq!(f64_of(&knee["baseline_p99_us"]), base, "{what}");
        assert!(f64_of(&knee["p99_us"]) > 2.0 * base, "{what}: {knee:#}");
        assert!(
            summary.contains(&format!(": {command} p99 ")),
            "{what}: {summary}"
        );
    }
    let connections = f64_of(&knee["connections"]);
    // A second without a reply (a stall) has no time per operation, and no ceiling.
    if let Some(service) = knee["service_us"].as_f64() {
        let ceiling = f64_of(&knee["ceiling_ops_per_s"]);
        assert!(
            (ceiling - connections * 1e6 / service).abs() < 1e-6 * ceiling,
            "{what}: {knee:#}"
        );
    } else {
        assert!(knee["ceiling_ops_per_s"].is_null(), "{what}: {knee:#}");
    }
    match knee["limit"].as_str() {
        Some("connections") => {
            assert!(summary.contains("ceiling is ~") && summary.contains("try --connections "));
            assert!(knee["try_connections"].as_u64().unwrap() >= 2 * connections as u64);
        }
        Some("server") | Some("replayer") => {
            assert!(summary.contains("the limit is the "), "{what}: {summary}")
        }
        other => panic!("{what}: limit {other:?}"),
    }
}

#[test]
fn a_ramp_reports_its_knee() {
    let server = Server::start_with(&["--standalone"]);
    let r = replay(
        &seed_capture(),
        &server.uri(),
        &["--rate", "100..30000", "--ramp", "6s"],
    );
    let knee = &r.report["knee"];
    let rate = knee["rate_ops_per_s"].as_f64();
    assert!(
        rate.is_some_and(|r| (100.0..30000.0).contains(&r)),
        "one connection cannot take 30,000/s: {}",
        r.describe()
    );
    assert!(knee["definition"]
        .as_str()
        .unwrap()
        .contains("its own baseline"));
    // The capture's one connection.
    assert_eq!(knee["connections"], 1, "{knee:#}");
    assert_knee_consistent(knee, "one process");
    assert_schema("replay", &r.report);
    let summary = knee["summary"].as_str().unwrap();
    // The summary may wrap at 100 columns: compared with the line breaks undone.
    let flat = |t: &str| t.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat(&r.output.stdout).contains(&flat(summary)),
        "{}",
        r.output.stdout
    );
    // Every second carries its busy time, and its commands for the knee.
    let second = &r.report["timeline"][2];
    assert!(f64_of(&second["busy_us"]) > 0.0, "{second:#}");
    assert!(second["per_command"]["insert"]["replies"].as_u64() > Some(0));
    let wall = f64_of(&r.report["summary"]["wall_s"]);
    assert!((5.5..12.0).contains(&wall), "wall {wall}");

    // Two shards, a clone of the capture's connection each: the merge finds the knee again on
    // the seconds of both, over both shards' connections.
    let dir = tempdir();
    let ramp = ["--clones", "2", "--rate", "100..30000", "--ramp", "4s"];
    let shards = replay_shards(&seed_capture(), &server.uri(), 2, dir.path(), &ramp);
    let (out, merged) = merge(&shards, &dir.path().join("merged.json"));
    assert!(out.success(), "{}", out.stderr);
    let knee = &merged["knee"];
    assert_eq!(knee["connections"], 2, "{knee:#}");
    assert_knee_consistent(knee, "merged");
    assert_schema("merge", &merged);
    // The lag's split and the open loop's latency from the send add up over the shards.
    let lag = &merged["lag"];
    let count = |v: &serde_json::Value| v.as_u64().unwrap_or(u64::MAX);
    let of_shards = |f: &dyn Fn(&serde_json::Value) -> u64| -> u64 {
        shards.iter().map(|p| f(&read_json(p)["lag"])).sum()
    };
    assert_eq!(
        count(&lag["clock"]["count"]) + count(&lag["held"]),
        count(&lag["latency"]["count"]),
        "{lag:#}"
    );
    assert_eq!(count(&lag["held"]), of_shards(&|l| count(&l["held"])));
    let replies = count(&lag["from_send"]["count"]);
    assert_eq!(replies, of_shards(&|l| count(&l["from_send"]["count"])));
    assert!(
        replies > 0,
        "an open loop keeps the latency from the send: {lag:#}"
    );
    eprintln!("knee, one process: {}", r.report["knee"]["summary"]);
    eprintln!("knee, merged: {}", knee["summary"]);
}

#[test]
fn four_shards_merge_to_the_unsharded_replay_exactly() {
    let dir = tempdir();
    let a = Server::start();
    let (capture, stdout) = record_python(&a, dir.path(), "threads", THREADS);
    assert_eq!(stdout.trim(), "186");
    drop(a);

    let whole_server = Server::start();
    // Recorded timing: the threads' writes and reads of one collection cross connections (and so
    // shards); the schedule keeps them in their recorded order, on one process as on four.
    let whole = replay(&capture, &whole_server.uri(), &["--clones", "2"]);
    assert_eq!(whole.divergences(), 0, "{}", whole.describe());
    let sharded_server = Server::start();
    let reports = replay_shards(
        &capture,
        &sharded_server.uri(),
        4,
        dir.path(),
        &["--clones", "2"],
    );

    // Each session whole on one shard: no cursor or transaction statement landed on a shard that
    // lacks what opened it.
    let shards: Vec<serde_json::Value> = reports.iter().map(|p| read_json(p)).collect();
    let busy = shards
        .iter()
        .filter(|s| s["summary"]["ops"].as_u64() > Some(0))
        .count();
    assert!(busy >= 2, "the work spread over {busy} shard(s)");
    for (i, s) in shards.iter().enumerate() {
        assert_eq!(s["shard"]["label"], format!("{i}/4"));
        assert_eq!(s["skipped"]["cursor_not_found"], 0, "shard {i}: {s}");
        assert_eq!(s["summary"]["overall"]["errors"], 0, "shard {i}: {s}");
        assert!(
            s["divergences"].as_object().unwrap().is_empty(),
            "shard {i}: {s}"
        );
    }

    let merged_path = dir.path().join("merged.json");
    let (out, merged) = merge(&reports, &merged_path);
    assert!(out.success(), "{}", out.stderr);
    assert_eq!(merged["complete"], true);
    assert_eq!(merged["merge"]["missing"], serde_json::json!([]));
    assert_eq!(
        per_command_counts(&merged),
        per_command_counts(&whole.report)
    );
    assert_eq!(merged["summary"]["ops"], whole.report["summary"]["ops"]);
    // Per query shape too, on both sides: replayed counts, getMores charged to their find,
    // documents, errors; and the capture's figures of the same requests, once over the shards.
    assert_eq!(shape_counts(&merged), shape_counts(&whole.report));
    assert!(
        shape_counts(&merged)
            .iter()
            .any(|(shape, c)| shape.starts_with("find shards.c") && c[1] > 0),
        "the batched finds' getMores: {:#?}",
        shape_counts(&merged)
    );
    assert_eq!(
        merged["shapes"].as_array().map(Vec::len),
        whole.report["shapes"].as_array().map(Vec::len)
    );

    // Every merged percentile is the percentile of all shards' latencies together.
    let mut all: Option<Histogram<u64>> = None;
    for s in &shards {
        let h = histogram(&s["histograms"]["overall"]);
        match &mut all {
            Some(a) => a.add(&h).unwrap(),
            None => all = Some(h),
        }
    }
    let all = all.unwrap();
    let latency = &merged["summary"]["overall"]["latency"];
    for (q, key) in [
        (0.5, "p50_us"),
        (0.9, "p90_us"),
        (0.99, "p99_us"),
        (0.999, "p999_us"),
    ] {
        let expected = all.value_at_quantile(q) as f64 / 1000.0;
        assert_eq!(f64_of(&latency[key]), expected, "{key}");
    }
    assert_eq!(latency["count"].as_u64(), Some(all.len()));
    assert_eq!(histogram(&merged["histograms"]["overall"]), all);
    // Timelines line up by wall-clock second: the merged ops per second add up.
    let timeline_ops: u64 = merged["timeline"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["ops"].as_u64().unwrap())
        .sum();
    assert_eq!(timeline_ops, merged["summary"]["ops"].as_u64().unwrap());
    // compare reads a merged report like any other.
    let cmp = mongotape(&[
        "compare".to_string(),
        merged_path.display().to_string(),
        reports[0].display().to_string(),
    ]);
    assert!(cmp.success(), "{}", cmp.stderr);

    // The same databases as after the unsharded replay.
    for db in ["shards_1", "shards_2"] {
        assert_same_db(
            &dump_db(&whole_server.uri(), db),
            &dump_db(&sharded_server.uri(), db),
        );
    }

    // A shard missing is said, and the merge fails with exit status 6.
    let partial_path = dir.path().join("partial.json");
    let three = [reports[0].clone(), reports[1].clone(), reports[3].clone()];
    let (out, partial) = merge(&three, &partial_path);
    assert_eq!(out.status.code(), Some(6), "{}", out.stderr);
    assert!(
        out.stderr.contains("missing shard(s) 2/4"),
        "{}",
        out.stderr
    );
    assert_eq!(partial["merge"]["missing"], serde_json::json!(["2/4"]));
    assert_eq!(partial["complete"], false);
}

#[test]
fn a_seed_workload_sharded_over_clones_leaves_the_same_databases() {
    let dir = tempdir();
    let a = Server::start();
    let (capture, _) = record_workload(&a, dir.path(), Client::Pymongo, "basic", "bench", 1.0);
    drop(a);
    let whole_server = Server::start();
    let whole = replay(&capture, &whole_server.uri(), &["--clones", "4", "--fast"]);
    let sharded_server = Server::start();
    let reports = replay_shards(
        &capture,
        &sharded_server.uri(),
        4,
        dir.path(),
        &["--clones", "4", "--fast"],
    );
    for p in &reports {
        let s = read_json(p);
        assert!(
            s["summary"]["ops"].as_u64() > Some(0),
            "each shard has a clone: {s}"
        );
    }
    let (out, merged) = merge(&reports, &dir.path().join("merged.json"));
    assert!(out.success(), "{}", out.stderr);
    assert_eq!(
        per_command_counts(&merged),
        per_command_counts(&whole.report)
    );
    for clone in 1..=4 {
        let db = format!("bench_{clone}");
        assert_same_db(
            &dump_db(&whole_server.uri(), &db),
            &dump_db(&sharded_server.uri(), &db),
        );
    }
}

/// The Indexed Job of deploy/kubernetes/replay-job.yaml, without a cluster: N processes that only
/// differ by `JOB_COMPLETION_INDEX`, started together by `--start-at` (RFC 3339, as the manifest
/// passes it), reports to one folder, then the merge step over `shard-*.json`.
#[test]
fn a_simulated_indexed_job_runs_end_to_end() {
    let dir = tempdir();
    let reports_dir = dir.path().join("reports");
    std::fs::create_dir(&reports_dir).unwrap();
    let server = Server::start_with(&["--standalone"]);
    let n = 3;
    let start = SystemTime::now() + Duration::from_secs(3);
    let start_s = start.duration_since(UNIX_EPOCH).unwrap().as_secs();
    let start_at = humantime::format_rfc3339_seconds(UNIX_EPOCH + Duration::from_secs(start_s + 1))
        .to_string();
    let pods: Vec<std::thread::JoinHandle<CommandOutput>> = (0..n)
        .map(|i| {
            let mut c = Command::new(mongotape_bin());
            c.env("JOB_COMPLETION_INDEX", i.to_string())
                .arg("replay")
                .arg(seed_capture())
                .args(["--target", &server.uri()])
                .args(["--shards", &n.to_string(), "--start-at", &start_at])
                .args(["--clones", "3", "--rate", "600", "--duration", "3"])
                .args(["--no-progress", "--quiet", "--report"])
                .arg(reports_dir.join(format!("shard-{i}.json")));
            std::thread::spawn(move || run_command(c, REPLAY_TIMEOUT))
        })
        .collect();
    for pod in pods {
        let out = pod.join().unwrap();
        assert!(out.success(), "{}", out.stderr);
    }
    let mut reports: Vec<PathBuf> = std::fs::read_dir(&reports_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    reports.sort();
    assert_eq!(reports.len(), n);
    let starts: Vec<f64> = reports
        .iter()
        .map(|p| f64_of(&read_json(p)["started_at_unix_s"]))
        .collect();
    for s in &starts {
        assert!(
            (*s - (start_s + 1) as f64).abs() < 0.25,
            "every shard starts at --start-at: {starts:?}"
        );
    }
    let html = dir.path().join("merged.html");
    let mut args: Vec<String> = vec!["merge".into()];
    args.extend(reports.iter().map(|p| p.display().to_string()));
    args.extend([
        "--report".into(),
        dir.path().join("merged.json").display().to_string(),
    ]);
    args.extend(["--html".into(), html.display().to_string()]);
    let out = mongotape(&args);
    assert!(out.success(), "{}", out.stderr);
    let merged = read_json(&dir.path().join("merged.json"));
    assert_eq!(
        merged["merge"]["merged"],
        serde_json::json!(["0/3", "1/3", "2/3"])
    );
    // 600 ops/s for all three together, for 3 s.
    let ops = merged["summary"]["ops"].as_u64().unwrap() as f64;
    assert!((1620.0..=1980.0).contains(&ops), "{ops}: {}", out.stdout);
    assert!(
        out.stdout.contains("merged 3 of 3 shard report(s)"),
        "{}",
        out.stdout
    );
    assert!(std::fs::read_to_string(&html).unwrap().contains("<svg"));
}

/// Four identical workers, each its own client (and connections), the same inserts each.
const FOUR_WORKERS: &str = r#"
import sys, threading
from pymongo import MongoClient
def work(w):
    client = MongoClient(sys.argv[1])
    c = client.balance.c
    for i in range(120):
        c.insert_one({'_id': w * 1000 + i, 'w': w})
    client.close()
ts = [threading.Thread(target=work, args=(w,)) for w in range(4)]
for t in ts: t.start()
for t in ts: t.join()
print(MongoClient(sys.argv[1]).balance.c.count_documents({}))
"#;

#[test]
fn shards_get_whole_sessions_balanced_by_recorded_operations() {
    let dir = tempdir();
    let a = Server::start();
    let (capture, stdout) = record_python(&a, dir.path(), "workers", FOUR_WORKERS);
    assert_eq!(stdout.trim(), "480");
    drop(a);
    let server = Server::start();
    let reports = replay_shards(&capture, &server.uri(), 2, dir.path(), &["--fast"]);
    let inserts: Vec<u64> = reports
        .iter()
        .map(|p| {
            let s = read_json(p);
            s["summary"]["per_command"]["insert"]["count"]
                .as_u64()
                .unwrap_or(0)
        })
        .collect();
    // Two workers a shard: whole sessions, and no shard with three.
    assert_eq!(inserts, [240, 240], "inserts per shard");

    // A shard's text does not divide the whole server's CPU by its own operations.
    let fresh = Server::start();
    let out = mongotape(&[
        "replay",
        capture.to_str().unwrap(),
        "-t",
        &fresh.uri(),
        "--fast",
        "--shard",
        "0/2",
    ]);
    assert!(out.success(), "{}", out.stderr);
    assert!(
        out.stdout
            .contains("the whole server's, shared by every shard")
            && !out.stdout.contains("per 1,000 ops"),
        "{}",
        out.stdout
    );
}

/// A replay report as the replayer writes one with nothing replayed, changed by `forge`.
fn forged_report(dir: &Path, name: &str, forge: impl FnOnce(&mut serde_json::Value)) -> PathBuf {
    let mut report = serde_json::to_value(mongotape::replay::report::ReplayReport::default())
        .expect("a report serializes");
    report["schema_version"] = mongotape::figures::SCHEMA_VERSION.into();
    report["summary"]["kind"] = "replay".into();
    report["complete"] = true.into();
    forge(&mut report);
    let path = dir.join(name);
    std::fs::write(&path, serde_json::to_vec(&report).unwrap()).unwrap();
    path
}

/// Runs mongotape and asserts its status, that stderr says `said`, and that it stayed small.
fn refused_small(args: &[&str], code: i32, said: &str) {
    let run = Command::new(mongotape_bin())
        .args(args)
        .env("JOB_COMPLETION_INDEX", "0")
        .output()
        .expect("run mongotape");
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(code), "{args:?}: {stderr}");
    assert!(stderr.contains(said), "{args:?}: {stderr}");
}

#[test]
fn counts_and_lengths_a_report_or_an_option_claims_are_bounded_before_allocating() {
    let dir = tempdir();
    let d = dir.path();
    let out = d.join("merged.json");
    let o = out.to_str().unwrap();
    let many = forged_report(d, "many.json", |r| {
        r["shard"] =
            serde_json::json!({"index": 0, "count": 4294967295u32, "label": "0/4294967295"});
    });
    let m = many.to_str().unwrap();
    refused_small(&["merge", m, "-o", o], 1, "more than 100000");
    // 40 bytes of HdrHistogram V2 header declaring a 0xFFFFFFFF-byte payload.
    let mut header = vec![0u8; 40];
    header[..4].copy_from_slice(&0x1c84_9313u32.to_be_bytes());
    header[4..8].copy_from_slice(&u32::MAX.to_be_bytes());
    header[12..16].copy_from_slice(&2u32.to_be_bytes());
    let forged = base64::engine::general_purpose::STANDARD.encode(&header);
    let hist = forged_report(d, "hist.json", |r| {
        r["histograms"]["overall"] = forged.into()
    });
    let h = hist.to_str().unwrap();
    refused_small(
        &["merge", h, "-o", o],
        1,
        "4294967295-byte payload, 0 bytes",
    );
    // A file past the bound is not read, by merge nor by compare.
    let big = d.join("big.json");
    std::fs::File::create(&big)
        .unwrap()
        .set_len(100 * 1024 * 1024)
        .unwrap();
    let b = big.to_str().unwrap();
    refused_small(&["merge", b, "-o", o], 1, "larger than any report");
    refused_small(&["compare", b, b], 1, "larger than any report");
    // A layout this build does not know is refused by every reader alike (was: merged by merge).
    let newer = forged_report(d, "newer.json", |r| r["schema_version"] = 99.into());
    let n = newer.to_str().unwrap();
    let said = "newer.json has schema_version 99; this mongotape reads schema_version 1";
    refused_small(&["merge", n, "-o", o], 1, said);
    refused_small(&["compare", n, n], 1, said);
    assert!(!out.exists());
    let capture = seed_capture();
    let c = capture.to_str().unwrap();
    let t = "127.0.0.1:9";
    refused_small(
        &["replay", c, "-t", t, "--shard", "2/4294967295"],
        2,
        "at most 100000 shards",
    );
    refused_small(
        &["replay", c, "-t", t, "--shards", "4294967295"],
        2,
        "at most 100000 shards",
    );
}
