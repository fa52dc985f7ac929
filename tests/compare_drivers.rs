//! The README's main job, end to end at a small scale: every seed workload runs in every real client
//! through the proxy, its capture analyzes and replays into a fresh server with the same outcome, and
//! the tables and reports come out.

mod common;

use common::*;
use std::process::Command;

#[test]
fn every_seed_workload_from_every_client_records_analyzes_and_replays() {
    require_clients();
    let out = tempdir();
    let mut command = Command::new(workspace_root().join("tools/compare-drivers"));
    command
        .args(["--no-setup", "--scale", "0.01", "--out"])
        .arg(out.path())
        .env("MONGOTAPE", mongotape_bin())
        .env("MONGOTAPE_SECANTUSD", secantusd_path())
        .env("MONGOTAPE_RUST_WORKLOAD", rust_workload_bin());
    let run = run_command(command, std::time::Duration::from_secs(900));
    assert!(run.success(), "{}\n{}", run.stdout, run.stderr);
    for heading in ["own s", "rec s", "replay s", "own/rep", "CPU µs/op"] {
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
    let all: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(out.path().join("compare-drivers.json")).unwrap(),
    )
    .unwrap();
    let workloads = all.as_object().unwrap();
    assert_eq!(workloads.len(), 5);
    let mut server_cpu = 0.0;
    for (workload, results) in workloads {
        let results = results.as_array().unwrap();
        let clients: Vec<&str> = results
            .iter()
            .map(|r| r["client"].as_str().unwrap())
            .collect();
        assert_eq!(
            clients,
            ["pymongo", "mongosh", "php", "node", "rust"],
            "{workload}"
        );
        for r in results {
            let who = format!("{workload} {}", r["client"]);
            let (a, p) = (&r["analyze"], &r["replay"]);
            assert!(a["ops"].as_u64().unwrap() > 50, "{who}: {a}");
            assert_eq!(
                a["ops"], p["ops"],
                "{who}: every recorded operation replayed"
            );
            assert_eq!(a["overall"]["errors"], p["overall"]["errors"], "{who}");
            let replay: serde_json::Value = serde_json::from_str(
                &std::fs::read_to_string(r["files"]["replay"].as_str().unwrap()).unwrap(),
            )
            .unwrap();
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
