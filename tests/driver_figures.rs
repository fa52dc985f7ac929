//! The statistics of `tools/compare-drivers` (tools/lib/harness.py and driver_figures.py), on
//! figures whose answer is known: the median's distribution-free interval matches the binomial
//! table, and pairing replays block by block cancels a drift of the machine that hides a real
//! difference from unpaired ratios, without inventing one where there is none.

mod common;

use common::*;
use serde_json::Value;

/// Runs `body` (Python, with `harness` and `driver_figures` imported) and parses what it prints.
fn figures(body: &str) -> Value {
    let lib = workspace_root().join("tools/lib");
    let script = format!(
        "import json, sys\nsys.path.insert(0, sys.argv[1])\nimport harness\nimport driver_figures as figures\n{body}"
    );
    python_json(&script, &[lib])
}

#[test]
fn the_median_interval_is_the_sign_tests() {
    let got = figures(
        "out = {}\n\
         for n in (3, 6, 9, 15):\n\
         \x20   for level in (0.95, 0.99):\n\
         \x20       lo, hi, cov = harness.median_interval(list(range(n)), level)\n\
         \x20       out['%d@%s' % (n, level)] = [lo, hi, round(cov, 4)]\n\
         print(json.dumps(out))",
    );
    // k-th smallest and k-th largest (0-based values = ranks) and the exact coverage
    // 1 - 2 P(Binomial(n, 1/2) < k).
    let want = serde_json::json!({
        "3@0.95": [0, 2, 0.75], "3@0.99": [0, 2, 0.75],
        "6@0.95": [0, 5, 0.9688], "6@0.99": [0, 5, 0.9688],
        "9@0.95": [1, 7, 0.9609], "9@0.99": [0, 8, 0.9961],
        "15@0.95": [3, 11, 0.9648], "15@0.99": [2, 12, 0.9926],
    });
    assert_eq!(got, want);
}

#[test]
fn paired_replays_cancel_the_machines_drift() {
    // Nine blocks; the machine slows down threefold over them (both clients alike), and each
    // replay has +-4% of its own noise.
    let got = figures(
        "drift = [100, 180, 300, 120, 260, 150, 210, 280, 110]\n\
         noise = [1.04, 0.97, 1.01, 0.96, 1.03, 0.99, 1.02, 0.98, 1.0]\n\
         base = {i: d for i, d in enumerate(drift)}\n\
         same = {i: d * noise[i] for i, d in enumerate(drift)}\n\
         more = {i: d * 1.3 * noise[::-1][i] for i, d in enumerate(drift)}\n\
         out = {'same': figures.paired(same, base), 'more': figures.paired(more, base),\n\
         \x20      'more_unpaired': figures.ratio(list(more.values()), list(base.values()), 1),\n\
         \x20      'three': figures.paired({i: more[i] for i in range(3)}, base)}\n\
         print(json.dumps(out))",
    );
    let same = &got["same"];
    assert_eq!(same["beyond_noise"], false, "{same}");
    assert_eq!(same["blocks"], 9);
    assert!(
        (same["median"].as_f64().unwrap() - 1.0).abs() < 0.05,
        "{same}"
    );
    // 1.3x in every block: found, with the whole interval above 1.
    let more = &got["more"];
    assert_eq!(more["beyond_noise"], true, "{more}");
    let lo = more["interval"][0].as_f64().unwrap();
    assert!(
        lo > 1.2 && more["median"].as_f64().unwrap() > 1.25,
        "{more}"
    );
    // The same values unpaired: the drift swamps the difference.
    let unpaired = &got["more_unpaired"];
    assert_eq!(unpaired["beyond_noise"], false, "{unpaired}");
    // Three blocks cannot reach 99%: never called beyond noise, however far apart.
    let three = &got["three"];
    assert_eq!(three["beyond_noise"], false, "{three}");
    assert!(three["coverage"].as_f64().unwrap() < 0.99, "{three}");
}

/// Python that builds an experiment's runs: `base` and `other` over 3 rounds x 3 replays, the
/// server's CPU per operation of each replay given block by block, and optionally a confirmation.
const RUNS: &str = r#"
LOAD = {"load_before": 0.1, "load_after": 0.1, "wall_s": 1.0, "other_cpu_s": 0.0, "other_cores": 0.0, "disturbed": False}

def replay(block, us, pair=None):
    p = {"pass": block % 3, "block": block, "load": LOAD,
         "summary": {"server_cpu_s_per_1k_ops": us / 1000, "ops_per_s": 3000, "client_cpu_us_per_op": 50,
                     "per_command": {"insert": {"count": 2000}}},
         "steps": [{"step": "insert", "replayed_s": 0.7, "replayed_ops": 2000, "server_cpu_s": us * 2000 / 1e6}]}
    if pair:
        p["pair"] = pair
    return p

def runs(per_block, confirm=None):
    out = []
    for client, us in per_block.items():
        for rnd in range(3):
            r = {"client": client, "round": rnd, "client_wall_s": 2.0, "load": LOAD,
                 "analyze": {"ops": 2000, "ops_per_s": 1500, "client_bound_share": 0.5},
                 "client_cpu": {"s": 0.6, "us_per_op": 300},
                 "step_times": [{"step": "insert", "ops": 2000, "client_s": 1.4, "recorded_s": 1.4,
                                 "replayed_s": 0.7, "client_cpu_s": 0.6, "server_cpu_s": 0.4,
                                 "server_cpu_ops": 2000}],
                 "replays": [replay(rnd * 3 + p, us[rnd * 3 + p]) for p in range(3)]}
            if confirm:
                r["confirm_replays"] = [replay(b, confirm[client][b], "other") for b in range(9) if b % 3 == rnd]
            out.append(r)
    return out

base = [100, 180, 300, 120, 260, 150, 210, 280, 110]
more = [x * f for x, f in zip(base, [1.3, 1.35, 1.28, 1.4, 1.32, 1.3, 1.36, 1.29, 1.33])]
same = [x * f for x, f in zip(base, [1.02, 0.97, 1.04, 0.95, 1.01, 0.99, 1.03, 0.98, 1.0])]
clients = ["base", "other"]
"#;

#[test]
fn a_server_cost_difference_is_claimed_only_when_measured_again() {
    let got = figures(&format!(
        "{RUNS}\n\
         first = figures.experiment(runs({{'base': base, 'other': more}}), clients, 1)\n\
         found = figures.experiment(runs({{'base': base, 'other': more}}, {{'base': base, 'other': more}}), clients, 1)\n\
         lost = figures.experiment(runs({{'base': base, 'other': more}}, {{'base': base, 'other': same}}), clients, 1)\n\
         print(json.dumps({{'to_confirm': figures.to_confirm(first), 'after': figures.to_confirm(found),\n\
         \x20                 'found': found['verdict'][-1], 'lost': lost['verdict'][-1],\n\
         \x20                 'again': found['confirmations']['other']}}))"
    ));
    // 1.3x in all nine blocks: beyond noise at 99%, so measured again before any claim.
    assert_eq!(got["to_confirm"], serde_json::json!(["other"]));
    assert_eq!(
        got["after"],
        serde_json::json!([]),
        "measured once more, not twice"
    );
    let found = got["found"].as_str().unwrap();
    assert!(
        found.starts_with(
            "Server cost: with other the server's CPU per operation differs beyond noise: 1.32x"
        ) && found.contains(" and again 1.32x (9 paired replays, 95% interval"),
        "{found}"
    );
    assert_eq!(got["again"]["level"], 0.95);
    // The same difference not found again: reported, and not claimed.
    let lost = got["lost"].as_str().unwrap();
    assert!(
        lost.starts_with("Server cost: the server's CPU per operation is the same as with base")
            && lost.contains("other 1.32x (9 paired replays, 99% interval")
            && lost.contains("at first, not found again: 1.00x"),
        "{lost}"
    );
}
