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
