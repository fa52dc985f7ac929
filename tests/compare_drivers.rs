//! The README's main job, end to end at a small scale: every seed workload runs in every real client
//! through the proxy, its capture analyzes and replays into a fresh server with the same outcome, and
//! the tables and reports come out; with repeats, every cell has a median and a spread, and the
//! verdict tells an artificially slow client (pymongo sleeping after each reply) from the server.

mod common;

use common::*;
use serde_json::Value;
use std::path::Path;
use std::process::Command;

fn compare_drivers(out: &Path, args: &[&str]) -> CommandOutput {
    let mut command = Command::new(workspace_root().join("tools/compare-drivers"));
    command
        .arg("--no-setup")
        .args(args)
        .arg("--out")
        .arg(out)
        .env("MONGOTAPE", mongotape_bin())
        .env("MONGOTAPE_SECANTUSD", secantusd_path())
        .env("MONGOTAPE_RUST_WORKLOAD", rust_workload_bin());
    let run = run_command(command, std::time::Duration::from_secs(900));
    assert!(run.success(), "{}\n{}", run.stdout, run.stderr);
    run
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

#[test]
fn every_seed_workload_from_every_client_records_analyzes_and_replays() {
    require_clients();
    let out = tempdir();
    let run = compare_drivers(
        out.path(),
        &["--scale", "0.01", "--repeats", "1", "--replays", "1"],
    );
    for heading in [
        "own s",
        "rec s",
        "replay s",
        "own/rep",
        "client CPU µs/op",
        "server CPU µs/op",
        "Verdict:",
    ] {
        assert!(run.stdout.contains(heading), "{heading} missing");
    }
    for title in [
        "1. Embedded vs separate documents",
        "2. Small (~130 B) and large",
        "3. Write concerns",
        "4. Random 26-letter strings",
        "5. Insert, random lookups",
    ] {
        assert!(
            run.stdout.contains(title),
            "{title} missing:\n{}",
            run.stdout
        );
    }
    let all = read_json(&out.path().join("compare-drivers.json"));
    let workloads = all["experiments"].as_object().unwrap();
    assert_eq!(workloads.len(), 5);
    let mut server_cpu = 0.0;
    for (workload, experiment) in workloads {
        let results = experiment["runs"].as_array().unwrap();
        let clients: Vec<&str> = results
            .iter()
            .map(|r| r["client"].as_str().unwrap())
            .collect();
        assert_eq!(
            clients,
            ["pymongo", "mongosh", "php", "node", "rust", "cxx-legacy"],
            "{workload}"
        );
        for r in results {
            let who = format!("{workload} {}", r["client"]);
            let replays = r["replays"].as_array().unwrap();
            assert_eq!(replays.len(), 1, "{who}");
            let (a, p) = (&r["analyze"], &replays[0]["summary"]);
            assert!(a["ops"].as_u64().unwrap() > 50, "{who}: {a}");
            assert_eq!(
                a["ops"], p["ops"],
                "{who}: every recorded operation replayed"
            );
            assert_eq!(a["overall"]["errors"], p["overall"]["errors"], "{who}");
            let replay = read_json(Path::new(replays[0]["file"].as_str().unwrap()));
            assert_eq!(replay["complete"], true, "{who}");
            assert!(
                replay["divergences"]
                    .as_object()
                    .is_none_or(|d| d.is_empty()),
                "{who}: {}",
                replay["divergences"]
            );
            // Measured for every replay; the kernel counts CPU in 10 ms ticks, so a short one may
            // read zero, but not all of them together.
            let cpu = p["server_cpu_s_per_1k_ops"].as_f64().unwrap();
            assert!(cpu >= 0.0, "{who}");
            server_cpu += cpu;
            // Every step the client reported has its phase in the recording and in the replay.
            let steps = r["steps"].as_array().unwrap();
            let times = r["step_times"].as_array().unwrap();
            assert_eq!(times.len(), steps.len(), "{who}");
            for (step, t) in steps.iter().zip(times) {
                let at = format!("{who} {}", step["step"]);
                assert_eq!(t["step"], step["step"], "{at}");
                assert!(t["client_s"].as_f64().is_some(), "{at}: {t}");
                for key in ["recorded_s", "replayed_s"] {
                    let v = t[key]
                        .as_f64()
                        .unwrap_or_else(|| panic!("{at}: no {key}: {t}"));
                    assert!(v > 0.0, "{at}: {key} {v}");
                }
                // The phases hold the step's operations, plus the untimed verification queries
                // the workloads run after the clock stops (and, replayed, the odd operation of
                // mongosh's other connections whose reply came in that phase).
                let ops = t["ops"].as_u64().unwrap();
                for (key, extra) in [("recorded_ops", 3), ("replayed_ops", 4)] {
                    let n = t[key].as_u64().unwrap();
                    assert!(
                        n >= ops && n <= ops + extra,
                        "{at}: {key} {n} for {ops} ops"
                    );
                }
            }
        }
        for suffix in ["compare.html", "compare.json"] {
            assert!(out.path().join(format!("{workload}.{suffix}")).is_file());
        }
    }
    assert!(server_cpu > 0.0, "no replay measured any server CPU");
}

/// Replays per capture in the repeats test (the default): 9 blocks of paired replays, at which
/// identical traffic was called a different server cost 0.3-0.4% of the time when resampled from 60
/// measured blocks (docs/compare-drivers.md).
const REPLAYS: usize = 3;

#[test]
fn repeats_give_medians_spreads_and_a_verdict_that_tells_the_client_from_the_server() {
    require_clients();
    let out = tempdir();
    let args = [
        "--workloads",
        "inserts",
        "--clients",
        "pymongo,pymongo-slow,pymongo-indexed",
        "--repeats",
        "3",
        "--scale",
        "0.1",
        "--slow-ms",
        "3",
        "--extra-indexes",
        "40",
        "--replays",
        &REPLAYS.to_string(),
    ];
    let run = compare_drivers(out.path(), &args);
    let text = &run.stdout;
    assert!(text.contains("median (min-max) over 3 rounds"), "{text}");
    let all = read_json(&out.path().join("compare-drivers.json"));
    let e = &all["experiments"]["inserts"];
    assert_eq!(e["runs"].as_array().unwrap().len(), 9);
    for r in e["runs"].as_array().unwrap() {
        // Every round's capture replayed REPLAYS times, each in its own block.
        let blocks: Vec<u64> = r["replays"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["block"].as_u64().unwrap())
            .collect();
        let round = r["round"].as_u64().unwrap();
        let first = round * REPLAYS as u64;
        assert_eq!(blocks, (first..first + REPLAYS as u64).collect::<Vec<_>>());
    }
    for client in ["pymongo", "pymongo-slow", "pymongo-indexed"] {
        let totals = &e["per_client"][client]["totals"];
        // The recordings give a value per round, the replays one per replay.
        for (key, n) in [
            ("own_s", 3),
            ("replay_s", 3),
            ("client_cpu_us_per_op", 3),
            ("server_cpu_us_per_op", 3 * REPLAYS),
        ] {
            let s = &totals[key];
            let (min, median, max) = (
                s["min"]
                    .as_f64()
                    .unwrap_or_else(|| panic!("{client} {key}: {s}")),
                s["median"].as_f64().unwrap(),
                s["max"].as_f64().unwrap(),
            );
            assert!(
                min > 0.0 && min <= median && median <= max,
                "{client} {key}: {s}"
            );
            assert_eq!(s["values"].as_array().unwrap().len(), n, "{client} {key}");
        }
        // The insert step carries its own spread and both CPUs.
        let step = &e["per_client"][client]["steps"]["insert"];
        for key in ["client_s", "client_cpu_us_per_op", "server_cpu_us_per_op"] {
            assert!(
                step[key]["median"].as_f64().is_some(),
                "{client} {key}: {step}"
            );
        }
    }
    // Sleeping after each reply: the client's time, beyond noise; the server's cost: the same.
    let slow = &e["ratios"]["pymongo-slow"];
    assert_eq!(slow["own_s"]["beyond_noise"], true, "{slow}");
    assert!(slow["own_s"]["median"].as_f64().unwrap() > 1.5, "{slow}");
    let verdict: Vec<&str> = e["verdict"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(
        verdict[0].starts_with("pymongo-slow is client-bound")
            && verdict[0].contains("pymongo's time")
            && verdict[0].contains("beyond noise"),
        "{verdict:#?}"
    );
    // The server's cost: the same operations, so the same within noise, judged on the replays
    // paired block by block (every block replays both captures back to back).
    let server = &slow["server_cpu_us_per_op"];
    assert_eq!(server["blocks"], 3 * REPLAYS, "{server}");
    let server_verdict = verdict.last().unwrap();
    assert!(
        server_verdict.starts_with(
            "Server cost: the server's CPU per operation is the same as with pymongo within noise \
             for pymongo-slow"
        ),
        "{verdict:#?}\n{slow}"
    );
    // 40 more indexes for every insert: the client's traffic costs the server more. Found at
    // 99%, measured again on 9 new pairs of replays, and claimed with what differs.
    let indexed = &e["ratios"]["pymongo-indexed"]["server_cpu_us_per_op"];
    assert_eq!(indexed["beyond_noise"], true, "{indexed}");
    assert!(indexed["median"].as_f64().unwrap() > 1.3, "{indexed}");
    let again = &e["confirmations"]["pymongo-indexed"];
    assert_eq!(again["beyond_noise"], true, "{again}");
    assert_eq!(again["blocks"], 3 * REPLAYS, "{again}");
    assert!(
        server_verdict
            .contains("With pymongo-indexed the server's CPU per operation differs beyond noise")
            && server_verdict.contains(" and again ")
            && server_verdict.contains("step insert +")
            && server_verdict.contains("createIndexes: 40 commands against 0"),
        "{server_verdict}"
    );
    assert!(
        e["confirmations"].get("pymongo-slow").is_none(),
        "only a difference is measured again: {}",
        e["confirmations"]
    );
    assert!(verdict.last().unwrap().starts_with("Server cost: "));
    assert!(text.contains(verdict[0]), "the verdict is printed:\n{text}");
    // The machine's load around every recording and replay.
    let loads = e["loads"].as_array().unwrap();
    // 9 recordings, 9 x REPLAYS replays, and the confirmation's 2 x 3 x REPLAYS.
    assert_eq!(loads.len(), 9 + 9 * REPLAYS + 6 * REPLAYS);
    for l in loads {
        assert!(
            l["load_before"].as_f64().is_some() && l["other_cores"].as_f64().is_some(),
            "{l}"
        );
    }
    assert!(text.contains("Load: 1-min load average"), "{text}");
    // `mongotape compare --group` of the same runs: one column per client and kind, with spreads
    // and intervals.
    let compare = read_json(&out.path().join("inserts.compare.json"));
    let columns = compare["columns"].as_array().unwrap();
    assert_eq!(columns.len(), 6, "{compare}");
    let runs: Vec<u64> = columns
        .iter()
        .map(|c| c["runs"].as_u64().unwrap())
        .collect();
    runs.iter()
        .for_each(|&n| assert!(n == 3 || n == 3 * REPLAYS as u64, "{compare}"));
    let throughput = compare["overall"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["metric"] == "throughput")
        .unwrap();
    assert_eq!(throughput["spreads"].as_array().unwrap().len(), 6);
    assert_eq!(
        throughput["intervals"][1]["beyond_noise"], true,
        "{throughput}"
    );
}

/// `--experiment faults --app-retry 1 --uri-options retryWrites=false`: the application retries
/// what failed, the drivers retry no write. An upsert `{$inc}` whose reply was lost (the plan's
/// `lost_update`) was applied; the application's retry applies it again, and the experiment counts
/// it from the database (the counter beyond the upserts meant) and from the capture (analyze's
/// resends the server acknowledged).
#[test]
fn an_application_retry_after_a_lost_reply_is_counted_applied_twice() {
    require_clients();
    let out = tempdir();
    compare_drivers(
        out.path(),
        &[
            "--experiment",
            "faults",
            "--rounds",
            "1",
            "--scale",
            "0.02",
            "--clients",
            "pymongo,cxx-legacy",
            "--app-retry",
            "1",
            "--uri-options",
            "retryWrites=false",
        ],
    );
    let all = read_json(&out.path().join("compare-drivers.json"));
    let e = &all["experiments"]["faults"];
    assert_eq!(e["app_retry"], 1, "{e}");
    assert!(
        e["uri_options"]
            .as_str()
            .unwrap()
            .ends_with("&retryWrites=false"),
        "{e}"
    );
    for c in ["pymongo", "cxx-legacy"] {
        let f = &e["per_client"][c];
        let median = |k: &str| {
            f[k]["median"]
                .as_f64()
                .unwrap_or_else(|| panic!("{c}: {k}: {f}"))
        };
        assert!(
            f["per_rule"]["lost_update"].as_f64().unwrap() > 0.0,
            "{c}: {f}"
        );
        assert_eq!(
            median("retried"),
            0.0,
            "{c}: retryWrites=false, yet the driver retried a write: {f}"
        );
        assert!(median("app_retried") > 0.0, "{c}: {f}");
        assert!(
            median("applied_twice") > 0.0,
            "{c}: the duplicate was not counted: {f}"
        );
        assert!(
            median("applied_twice_seen") > 0.0,
            "{c}: analyze saw no resend applied twice: {f}"
        );
    }
    for r in e["runs"].as_array().unwrap() {
        let (views, meant) = (
            r["views"].as_i64().unwrap(),
            r["intended_views"].as_i64().unwrap(),
        );
        if r["faulted"].as_bool().unwrap() {
            assert!(views > meant, "no increment applied twice: {r}");
            assert_eq!(
                r["applied_twice"].as_i64().unwrap() - (views - meant),
                (r["documents"].as_i64().unwrap() - r["intended_inserts"].as_i64().unwrap()).max(0),
                "{r}"
            );
        } else {
            assert_eq!(views, meant, "{r}");
        }
    }
}

/// `--experiment faults` (docs/faults.md): all six clients run the lookup workload with the
/// resilience plan and without; its JSON has each of them with every figure, every rule of the plan
/// fired in each faulted run (but lost_reply at the legacy C++ client, whose inserts all meet the
/// stepdown), the fault-free runs have no fault, and nothing is left out. Speed is not asserted.
#[test]
fn the_fault_experiment_fires_the_plan_at_every_client_and_counts_what_each_saw() {
    require_clients();
    let out = tempdir();
    let run = compare_drivers(
        out.path(),
        &["--experiment", "faults", "--rounds", "1", "--scale", "0.02"],
    );
    assert!(
        run.stdout.contains("Resilience: the lookup workload"),
        "{}",
        run.stdout
    );
    let all = read_json(&out.path().join("compare-drivers.json"));
    let e = &all["experiments"]["faults"];
    let clients: Vec<&str> = e["clients"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    let left_out: Vec<&str> = e["left_out"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    for c in ["pymongo", "mongosh", "php", "node", "rust", "cxx-legacy"] {
        assert!(
            clients.contains(&c),
            "{c} missing from {clients:?}; log:\n{}",
            run.stderr
        );
    }
    assert!(left_out.is_empty(), "{left_out:?}");
    assert_eq!(clients.len(), 6, "{clients:?}");
    for c in &clients {
        let f = &e["per_client"][c];
        for figure in [
            "ok",
            "failed",
            "faults",
            "failing",
            "retried",
            "read_retried",
            "given_up",
            "app_retried",
            "applied_twice",
            "applied_twice_seen",
            "own_s",
            "clean_s",
            "lost_s",
        ] {
            assert!(
                f[figure]["median"].is_number(),
                "{c}: {figure} not filled: {f}"
            );
        }
        assert!(f["ok"]["median"].as_f64().unwrap() > 0.0, "{c}: {f}");
        // The legacy C++ client waits for nothing: all its inserts fall into the 2 s stepdown,
        // so none is left for lost_reply.
        let rules: &[&str] = if *c == "cxx-legacy" {
            &["stepdown", "lost_update", "shutdown_reads", "slow"]
        } else {
            &[
                "stepdown",
                "lost_reply",
                "lost_update",
                "shutdown_reads",
                "slow",
            ]
        };
        for rule in rules {
            assert!(
                f["per_rule"][rule].as_f64().unwrap_or(0.0) > 0.0,
                "{c}: rule {rule} never fired: {f}"
            );
        }
        if *c == "cxx-legacy" {
            // No sessions, no retryable writes or reads: nothing retried, faults given up.
            assert_eq!(f["retried"]["max"].as_f64(), Some(0.0), "{c}: {f}");
            assert!(f["given_up"]["median"].as_f64().unwrap() > 0.0, "{c}: {f}");
        }
        // The stepdown outlasts one retry: the application sees some of it.
        assert!(f["failed"]["median"].as_f64().unwrap() > 0.0, "{c}: {f}");
        // The counter's upserts whose replies were lost: the current drivers retry them with the
        // same lsid and txnNumber, which the server applies once; the legacy client gives them
        // up. Without an application retry no increment is in the database twice.
        assert_eq!(f["applied_twice"]["max"].as_f64(), Some(0.0), "{c}: {f}");
        assert_eq!(f["app_retried"]["max"].as_f64(), Some(0.0), "{c}: {f}");
    }
    for r in e["runs"].as_array().unwrap() {
        let fired = r["faults"].as_u64().unwrap();
        if r["faulted"].as_bool().unwrap() {
            let per_rule: u64 = r["per_rule"]
                .as_object()
                .unwrap()
                .values()
                .map(|v| v.as_u64().unwrap())
                .sum();
            assert_eq!(fired, per_rule, "{r}");
        } else {
            assert_eq!(fired, 0, "a run without the plan had faults: {r}");
        }
    }
}
