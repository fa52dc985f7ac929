//! The shadow's latency finding: a candidate that lacks production's index on `g` answers the
//! finds by `g` slower (a collection scan); the shadow flags that shape's latency shift, explains
//! it on both sides on its own (no read differs), and reports the plan change, while the finds
//! by `_id` (the same plan on both) get no plan change, no latency finding, and nothing differs.
//! Real servers (secantusd-rs as production, candidate and control), pymongo reading through the
//! shadow.

mod common;
use common::*;
use serde_json::Value;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

const DOCS: usize = 5_000;

/// `shop.items` with DOCS documents; an index on `g` when `indexed`.
fn fill(uri: &str, indexed: bool) {
    python(
        "import sys\nfrom pymongo import MongoClient\n\
         c = MongoClient(sys.argv[1]); n = int(sys.argv[2])\n\
         c.shop.items.drop()\n\
         c.shop.items.insert_many([{'_id': i, 'g': i % 2000, 'pad': 'x' * 40} for i in range(n)])\n\
         if sys.argv[3] == '1': c.shop.items.create_index('g')\n",
        &[uri, &DOCS.to_string(), if indexed { "1" } else { "0" }],
    );
}

/// Two threads, 150 finds by `g` and 150 by `_id` each, interleaved.
const READS: &str = r#"
import sys, threading
from pymongo import MongoClient
client = MongoClient(sys.argv[1], maxPoolSize=2)
coll = client.shop.items
def work(t):
    for i in range(150):
        list(coll.find({'g': (t * 700 + i * 13) % 2000}))
        list(coll.find({'_id': (t * 7000 + i * 31) % 5000}))
ts = [threading.Thread(target=work, args=(t,)) for t in range(2)]
for t in ts: t.start()
for t in ts: t.join()
"#;

fn report(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap_or_default()).unwrap_or(Value::Null)
}

fn shape<'a>(report: &'a Value, field: &str) -> &'a Value {
    report["targets"][0]["shapes"]
        .as_array()
        .and_then(|s| {
            s.iter().find(|s| {
                s["command"] == "find" && s["shape"].as_str().unwrap_or("").contains(field)
            })
        })
        .unwrap_or(&Value::Null)
}

#[test]
fn a_candidate_without_an_index_is_a_latency_shift_explained_with_its_plan_change() {
    let dir = tempdir();
    let (prod, cand, control) = (Server::start(), Server::start(), Server::start());
    fill(&prod.uri(), true);
    fill(&cand.uri(), false);
    fill(&control.uri(), true);
    let json = dir.path().join("shadow.json");
    let mut command = Command::new(mongotape_bin());
    command
        .args(["shadow", "--listen", "127.0.0.1:0", "-u", &prod.uri()])
        .args(["--candidate", &cand.uri(), "--report-every", "1"])
        // A copy of production, mirrored as the candidate is: whatever it differs by is how
        // the shadow's two sides differ on this machine, not a finding (the A2 rule).
        .args(["--control", &control.uri()])
        .args(["--max-outstanding", "100000"])
        // The clients keep both cores busy: at the default (SCHED_IDLE) the mirror would get
        // almost none of them before the deadline.
        .args(["--mirror-priority", "low"])
        .arg("--report")
        .arg(&json);
    let proxy = Proxy::spawn(command, &dir.path().join("unused.mtape"));
    python(READS, &[proxy.uri()]);
    // Every read accounted for, and the shift's explain back (it runs beside the lane).
    let deadline = Instant::now() + Duration::from_secs(90);
    let done = |r: &Value| {
        let t = &r["targets"][0]["totals"];
        let accounted: u64 = ["mirrored", "shed", "gaps", "orphans"]
            .iter()
            .filter_map(|k| t[*k].as_u64())
            .sum();
        accounted >= 600 && !shape(r, "g:")["plan_reason"].is_null()
    };
    while !done(&report(&json)) {
        assert!(
            Instant::now() < deadline,
            "no explained shift: {}",
            report(&json)
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let exit = proxy.stop();
    assert!(exit.status.success(), "{}", exit.stderr);
    let r = report(&json);
    let target = &r["targets"][0];
    assert_eq!(target["totals"]["shed"], 0, "{target}");
    assert_eq!(target["totals"]["discrepancies"], 0, "{target}");
    let by_g = shape(&r, "g:");
    assert_eq!(by_g["latency_shift"], "slower", "{by_g}");
    assert!(
        by_g["median_ratio"]["low"].as_f64().unwrap() > 1.2,
        "{by_g}"
    );
    assert_eq!(by_g["plan_reason"], "latency", "{by_g}");
    assert_eq!(by_g["plan_changed"], true, "{by_g}");
    let (p, t) = (
        by_g["plan_production"].as_str().unwrap(),
        by_g["plan_target"].as_str().unwrap(),
    );
    assert!(p.contains("IXSCAN") && t.contains("COLLSCAN"), "{by_g}");
    // No other finding: the finds by _id keep their plan, and nothing differs.
    let by_id = shape(&r, "_id:");
    assert_eq!(by_id["mirrored"], 300, "{by_id}");
    assert_ne!(by_id["plan_changed"], true, "{by_id}");
    // The same plan on both sides is no latency finding.
    eprintln!(
        "by _id: {} control {}",
        by_id["median_ratio"], by_id["control"]["baseline_ratio"]
    );
    assert!(by_id["latency_shift"].is_null(), "{by_id}");
    for s in target["shapes"].as_array().unwrap() {
        assert_eq!(s["discrepancies"], 0, "{s}");
        if s != by_g {
            assert_ne!(s["plan_changed"], true, "{s}");
        }
    }
}
