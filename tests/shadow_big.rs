//! A candidate that answers with a 15 MB document where production has a small one: the shadow
//! compares it, finds the discrepancy, keeps its memory bounded and never changes what the client
//! gets. Real servers (secantusd-rs as production and candidate), pymongo through the shadow.

mod common;
use common::*;
use serde_json::Value;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// `shop.items`: 200 small documents; with `big`, `_id` 7 holds a 15 MB string.
fn fill(uri: &str, big: bool) {
    python(
        "import sys\nfrom pymongo import MongoClient\n\
         c = MongoClient(sys.argv[1])\n\
         c.shop.items.drop()\n\
         c.shop.items.insert_many([{'_id': i, 'g': i % 10, 'v': 'x%d' % i} for i in range(200)])\n\
         if sys.argv[2] == '1': c.shop.items.replace_one({'_id': 7}, {'g': 7, 'v': 'y' * 15000000})\n",
        &[uri, if big { "1" } else { "0" }],
    );
}

/// 40 rounds of: the big document's find, and a find by `g` that never reaches it (g < 7);
/// prints a digest of what the client got.
const READS: &str = "import sys, hashlib, json\nfrom pymongo import MongoClient\n\
c = MongoClient(sys.argv[1]).shop.items\n\
out = []\n\
for i in range(40):\n\
\x20   out.append(list(c.find({'_id': 7})))\n\
\x20   out.append(list(c.find({'g': i % 7}).sort('_id', 1)))\n\
print(hashlib.sha256(json.dumps(out, sort_keys=True).encode()).hexdigest())\n";

fn report(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap_or_default()).unwrap_or(Value::Null)
}

/// The peak resident memory of `pid`, in MB.
fn peak_rss_mb(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kb: u64 = status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap();
    kb / 1024
}

#[test]
fn a_candidate_answering_15_mb_documents_is_compared_and_survived() {
    let (prod, cand) = (Server::start(), Server::start());
    fill(&prod.uri(), false);
    fill(&cand.uri(), true);
    let dir = tempdir();
    let json = dir.path().join("shadow.json");
    let mut command = Command::new(mongotape_bin());
    command
        .args(["shadow", "--listen", "127.0.0.1:0", "-u", &prod.uri()])
        .args(["--candidate", &cand.uri(), "--report-every", "1"])
        .args(["--max-outstanding", "1000"])
        // The suite keeps both cores busy: at the default (SCHED_IDLE) the mirror would get
        // almost none of them. These tests are about what is mirrored and compared.
        .args(["--mirror-priority", "low"])
        .arg("--report")
        .arg(&json);
    let proxy = Proxy::spawn(command, &dir.path().join("unused.mtape"));
    let direct = python(READS, &[prod.uri()]);
    assert_eq!(
        python(READS, &[proxy.uri()]),
        direct,
        "the client's results"
    );
    let deadline = Instant::now() + Duration::from_secs(90);
    let accounted = |r: &Value| -> u64 {
        let t = &r["targets"][0]["totals"];
        ["mirrored", "shed", "gaps", "orphans"]
            .iter()
            .filter_map(|k| t[*k].as_u64())
            .sum()
    };
    while accounted(&report(&json)) < 80 {
        assert!(Instant::now() < deadline, "reads never accounted for");
        std::thread::sleep(Duration::from_millis(200));
    }
    let peak = peak_rss_mb(proxy.pid());
    let exit = proxy.stop();
    assert!(exit.status.success(), "{}", exit.stderr);
    let r = report(&json);
    let target = &r["targets"][0];
    let by_id = target["shapes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["shape"].as_str().unwrap_or("").contains("_id:"))
        .unwrap_or_else(|| panic!("no find by _id: {target}"));
    // Every read of the big document differs (the document's value), and is found so.
    assert!(by_id["discrepancies"].as_u64().unwrap() > 0, "{by_id}");
    assert_eq!(by_id["matched"], 0, "{by_id}");
    // The reads by g never touch it and match.
    let by_g = target["shapes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["shape"].as_str().unwrap_or("").contains("g:"))
        .unwrap_or_else(|| panic!("no find by g: {target}"));
    assert_eq!(by_g["discrepancies"], 0, "{by_g}");
    assert!(by_g["matched"].as_u64().unwrap() > 0, "{by_g}");
    // 40 replies of 15 MB went through the mirror: memory stays within a few of them.
    assert!(peak < 400, "peak RSS {peak} MB");
}
