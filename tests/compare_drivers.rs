//! The README's main job, end to end at a small scale: every seed workload runs in every real client
//! through the proxy, its capture analyzes and replays into a fresh server with the same outcome, and
//! the tables and reports come out.

mod common;

use std::process::Command;

#[test]
fn every_seed_workload_from_every_client_records_analyzes_and_replays() {
    common::require_clients();
    let out = common::tempdir();
    let mut command = Command::new(common::workspace_root().join("tools/compare-drivers"));
    command
        .args(["--no-setup", "--scale", "0.01", "--out"])
        .arg(out.path())
        .env("MONGOTAPE", common::mongotape_bin())
        .env("MONGOTAPE_SECANTUSD", common::secantusd_path());
    let run = common::run_command(command, std::time::Duration::from_secs(900));
    assert!(run.success(), "{}\n{}", run.stdout, run.stderr);
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
    for (workload, results) in workloads {
        let results = results.as_array().unwrap();
        assert_eq!(results.len(), 3, "{workload}");
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
            assert!(
                p["server_cpu_s_per_1k_ops"].as_f64().unwrap() > 0.0,
                "{who}"
            );
        }
        for suffix in ["compare.html", "compare.json"] {
            assert!(out.path().join(format!("{workload}.{suffix}")).is_file());
        }
    }
}
