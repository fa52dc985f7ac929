//! A/B replay (`replay --target A --target B [--target A2]`, docs/ab.md) against real secantusd-rs
//! servers set up differently: the slower setup found slower where it should be, identical servers
//! found alike, a missing document found with its example while server-generated values are
//! filtered as noise by a second baseline, and a target dying mid-run.

mod common;
use common::*;
use std::time::Duration;

/// Inserts of 20-field documents into `ab.c` (which the capture does not create or drop), then
/// finds by `_id`. Arguments: URI N.
const WIDE_INSERTS: &str = r#"
import sys
from pymongo import MongoClient
uri, n = sys.argv[1], int(sys.argv[2])
c = MongoClient(uri, serverSelectionTimeoutMS=10000).ab.c
for i in range(n):
    c.insert_one(dict({'_id': i}, **{'f%d' % k: 'v%d-%d' % (k, i * 7919 % 1000) for k in range(20)}))
for i in range(0, n, 10):
    assert c.find_one({'_id': i}) is not None
"#;

/// Creates `ab.c`, with one index per field `f0`..`f19` when `indexes` is "1". Arguments: URI INDEXES.
const SETUP: &str = r#"
import sys
from pymongo import MongoClient
db = MongoClient(sys.argv[1], serverSelectionTimeoutMS=10000).ab
db.drop_collection('c')
db.create_collection('c')
if sys.argv[2] == '1':
    for k in range(20):
        db.c.create_index('f%d' % k)
"#;

fn ratio_bounds(r: &serde_json::Value) -> (f64, f64) {
    (
        r["low"].as_f64().expect("low"),
        r["high"].as_f64().expect("high"),
    )
}

#[test]
fn the_setup_with_twenty_more_indexes_is_found_slower_on_inserts() {
    let _serial = one_at_a_time();
    let recording = Server::start_with(&["--standalone"]);
    python(SETUP, &[recording.uri().as_str(), "0"]);
    let dir = tempdir();
    let capture = dir.path().join("wide.mtape");
    record_through(&recording, &capture, |uri| {
        python(WIDE_INSERTS, &[uri, "1500"])
    });
    drop(recording);

    let a = Server::start_with(&["--standalone"]);
    let b = Server::start_with(&["--standalone"]);
    python(SETUP, &[a.uri().as_str(), "0"]);
    python(SETUP, &[b.uri().as_str(), "1"]);
    let run = ab_replay(
        &capture,
        &[a.addr(), b.addr()],
        &["--fast", "--label", "plain", "--label", "indexed"],
    );
    // Every insert pays for the indexes, so the typical request does: the median of the per-request
    // ratios, whose distribution-free interval a few requests slowed by the machine (another
    // process, a page fault) do not move. The ratio of means is higher too, but its interval
    // takes every such outlier in: on a busy machine it can reach below 1 with the effect real.
    let median = &run.report["per_command"]["insert"]["ratios"][0]["median"];
    assert!(
        ratio_bounds(median).0 > 1.0,
        "inserts into 20 more indexes not found slower per request: {median}\n{}",
        run.output.stdout
    );
    let insert = run.ratio("insert", "indexed");
    let (low, high) = ratio_bounds(insert);
    let mean = insert["ratio"].as_f64().expect("ratio");
    assert!(low <= mean && mean <= high, "{insert}");
    // On a busy machine a tail on the control can pull the mean below 1 while every typical
    // insert is slower: the two disagree, and that is no finding either way.
    if high < 1.0 {
        let why = &run.report["per_command"]["insert"]["ratios"][0]["not_a_finding"];
        assert!(
            why.as_str()
                .unwrap_or("")
                .starts_with("mean and median disagree"),
            "{why}"
        );
    }
    assert_eq!(median["pairs"], 1500, "{median}");
    let sentence = run.report["per_command"]["insert"]["ratios"][0]["sentence"]
        .as_str()
        .unwrap();
    assert!(
        sentence.starts_with("indexed is ")
            && sentence.contains("slower on insert (95% interval")
            && sentence.contains("; per request, median "),
        "{sentence}"
    );
    // A finding is a mean ratio whose interval excludes 1 with the median's agreeing (docs/ab.md,
    // "What makes a finding"); on a DISTURBED run both must clear 1 by a margin.
    let found = run.report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f == sentence);
    let judged = &run.report["per_command"]["insert"]["ratios"][0];
    assert_eq!(found, judged["finding"] == true, "{judged}");
    // A mean moved by the slowest inserts alone (the typical one about the same) is the tail's.
    let tail = judged["not_a_finding"]
        .as_str()
        .is_some_and(|w| w.starts_with("mostly tail") || w.starts_with("tail only"));
    if low > 1.0 && !found {
        let why = judged["not_a_finding"].as_str().expect("why not a finding");
        assert!(why.starts_with("DISTURBED run") || tail, "{why}");
    }
    if run.report["load"]["disturbed"] == false {
        assert_eq!(
            found,
            low > 1.0 && !tail,
            "{sentence}\n{}",
            run.output.stdout
        );
    }
    assert_eq!(
        sentence.contains(", not significant)"),
        low <= 1.0,
        "{sentence}"
    );
    // The text wraps sentences at 100 columns: read it with its breaks undone.
    let flat = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat(&run.output.stdout).contains(&flat(sentence)),
        "{}",
        run.output.stdout
    );
    // Every target's own figures, server CPU measured for each process.
    for label in ["plain", "indexed"] {
        let t = run.target(label);
        assert_eq!(
            t["replay"]["summary"]["per_command"]["insert"]["count"], 1500,
            "{label}"
        );
        assert_eq!(t["complete"], true);
        assert!(t["server_cpu_us_per_op"].as_f64().is_some(), "{label}: {t}");
    }
    // The server's own CPU, which the machine's load does not lengthen as it does latencies: the
    // indexed server spends more per operation (1.6-2x in runs on this machine).
    let cpu = |label: &str| run.target(label)["server_cpu_us_per_op"].as_f64().unwrap();
    assert!(
        cpu("indexed") > cpu("plain"),
        "server CPU per op: indexed {} against plain {}",
        cpu("indexed"),
        cpu("plain")
    );
    assert_eq!(run.report["schema_version"], 3);
    assert_eq!(run.report["kind"], "ab");
    // The machine's load: flagged in JSON, text and HTML alike.
    let disturbed = run.report["load"]["disturbed"]
        .as_bool()
        .expect("the A/B report has the machine's load");
    let said = if disturbed {
        "machine: DISTURBED"
    } else {
        "machine: quiet"
    };
    assert!(run.output.stdout.contains(said), "{}", run.output.stdout);
    assert!(run.html.contains(said), "the page says the machine's load");
    assert_eq!(run.report["pairs"]["unpaired"], 0);
    assert!(
        run.report["differences"]["real"]
            .as_array()
            .unwrap()
            .is_empty(),
        "{}",
        run.output.stdout
    );
    // The same documents went in on both sides.
    let docs = |s: &Server| dump_db(&s.uri(), "ab")["collections"]["c"]["documents"].clone();
    assert_eq!(docs(&a), docs(&b));
    assert_eq!(docs(&a).as_array().map(Vec::len), Some(1500));
    // The page: comparison, overlaid distributions.
    assert!(run.html.contains("Latency distributions") && run.html.contains("indexed"));
    let page = dir.path().join("ab.html");
    std::fs::write(&page, &run.html).unwrap();
    assert_page_ok(&run.html, &render(&page), 3);
    assert_eq!(clipped_tables_at(&page, 1280), 0, "a table cut at 1280 px");
}

#[test]
fn identical_servers_differ_in_nothing_at_a_fixed_rate() {
    let _serial = one_at_a_time();
    let recording = Server::start();
    let rec = record_inserts_finds(&recording, "same", 300, 0.0, 20);
    drop(recording);
    let a = Server::start();
    let b = Server::start();
    // A server just started still settles (its one-node replica set, the first writes): B, started
    // last, would be measured in that window. One pass into both first, then the measured one.
    // That pass on two connections: the order kept between them is the run's, counted once.
    let warm = ab_replay(
        &rec.capture,
        &[a.addr(), b.addr()],
        &["--fast", "--connections", "2"],
    );
    let order = &warm.report["run"]["ordering"];
    assert_eq!(order["connections"], 2, "{order}");
    assert!(order["followed_a_write"].as_u64() > Some(0), "{order}");
    assert!(order["mean_in_flight"].as_f64() > Some(0.0), "{order}");
    assert!(warm.report["run"]["session_order"].is_null());
    assert!(
        warm.output
            .stdout
            .contains("followed a write on another connection"),
        "{}",
        warm.output.stdout
    );
    let run = ab_replay(&rec.capture, &[a.addr(), b.addr()], &["--rate", "500"]);
    // One lane per recorded connection: the sessions' order; nothing was due after a --duration.
    let counters = &run.report["run"];
    assert_eq!(counters["after_deadline"], 0, "{counters}");
    assert!(counters["ordering"].is_null(), "{counters}");
    assert!(counters["session_order"]["waited"].is_u64(), "{counters}");
    assert!(
        run.output
            .stdout
            .contains("run (all targets): 0 request(s) due after --duration"),
        "{}",
        run.output.stdout
    );
    assert!(
        run.report["differences"]["fields"]
            .as_object()
            .unwrap()
            .is_empty(),
        "{}",
        run.output.stdout
    );
    // Identical servers. On two cores the replayer and the two servers share them, and where
    // each lands moves one server's every request for the whole run (per-request medians from
    // 0.54x to 2.05x measured, each with a tight interval: only A2 tells that from a real
    // difference). Only a median far from 1 would be wrong; a tail does not move it.
    for command in ["insert", "find"] {
        let judged = run.report["per_command"][command]["ratios"]
            .as_array()
            .and_then(|r| r.iter().find(|r| r["target"] == "B"))
            .expect("B's ratio");
        let (low, high) = ratio_bounds(&judged["median"]);
        assert!(
            low < 2.5 && high > 0.4,
            "{command}: median {low}-{high}\n{}",
            run.output.stdout
        );
    }
    assert_eq!(
        run.target("A")["replay"]["summary"]["per_command"]["insert"]["count"],
        320
    );
    assert_eq!(run.report["pairs"]["unacknowledged"], 20);
    assert!(run.report["pairs"]["paired"].as_u64().unwrap() >= 600);
}

/// Seeds `ab.d` with k = 0..9 (`_id` = k). Arguments: URI MISSING (-1 for none).
const SEED_DATA: &str = r#"
import sys
from pymongo import MongoClient
db = MongoClient(sys.argv[1], serverSelectionTimeoutMS=10000).ab
db.d.insert_many([{'_id': k, 'k': k} for k in range(10) if k != int(sys.argv[2])])
"#;

/// Reads `ab.d` whole and counts it, inserts documents without `_id` into `ab.n` (the server gives
/// them theirs) and reads them back. Arguments: URI.
const READS: &str = r#"
import sys
from pymongo import MongoClient
db = MongoClient(sys.argv[1], serverSelectionTimeoutMS=10000).ab
for round in range(5):
    db.command({'find': 'd', 'filter': {}, 'sort': {'k': 1}})
    db.command({'count': 'd'})
    db.command({'insert': 'n', 'documents': [{'round': round, 'i': i} for i in range(3)]})
    db.command({'find': 'n', 'filter': {'round': round}, 'sort': {'i': 1}})
"#;

#[test]
fn a_missing_document_is_a_real_difference_and_server_ids_are_noise() {
    let _serial = one_at_a_time();
    let recording = Server::start_with(&["--standalone"]);
    python(SEED_DATA, &[recording.uri().as_str(), "-1"]);
    let dir = tempdir();
    let capture = dir.path().join("reads.mtape");
    record_through(&recording, &capture, |uri| python(READS, &[uri]));
    let servers: Vec<Server> = (0..3)
        .map(|_| Server::start_with(&["--standalone"]))
        .collect();
    for (s, missing) in servers.iter().zip(["-1", "7", "-1"]) {
        python(SEED_DATA, &[s.uri().as_str(), missing]);
    }
    let addrs: Vec<&str> = servers.iter().map(|s| s.addr()).collect();
    // Labels as long as people give them: the tables still fit 100 columns.
    let labels = [
        "--label",
        "_id only, seeded",
        "--label",
        "one document missing",
        "--label",
        "_id only, seeded again",
    ];
    let run = ab_replay(&capture, &addrs, &[&["--fast"][..], &labels].concat());
    let mut in_table = false;
    for line in run.output.stdout.lines() {
        if line.starts_with("per command:") || line.starts_with("per namespace:") {
            in_table = true;
            continue;
        }
        if line.is_empty() || line.starts_with("per ") {
            in_table = false;
        }
        assert!(
            !in_table || line.chars().count() <= 100,
            "a table line over 100 columns:\n{line}\n{}",
            run.output.stdout
        );
    }
    let d = &run.report["differences"];
    assert_eq!(d["baseline"], true);
    let real: Vec<&str> = d["real"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|v| v.as_str())
        .collect();
    assert!(
        real.contains(&"cursor.firstBatch.length"),
        "{real:?}\n{}",
        run.output.stdout
    );
    assert!(real.contains(&"n"), "count differs: {real:?}");
    let length = &d["fields"]["cursor.firstBatch.length"];
    assert_eq!(length["unexplained"], 5, "{length}");
    let example = &length["examples"][0];
    assert_eq!(example["command"], "find");
    assert_eq!(example["namespace"], "ab.d");
    assert_eq!(
        (example["control"].as_f64(), example["candidate"].as_f64()),
        (Some(10.0), Some(9.0))
    );
    // Server-generated _ids differ between A and A2 as between A and B: noise, not real.
    let ids = &d["fields"]["cursor.firstBatch[]._id"];
    assert_eq!(ids["real"], false, "{ids}");
    assert!(
        ids["noise"].as_u64().unwrap() >= 5 && ids["noise_rate"].as_f64().unwrap() > 0.0,
        "{ids}"
    );
    assert!(!real.contains(&"cursor.firstBatch[]._id"));
    assert!(run.output.stdout.contains("REAL"), "{}", run.output.stdout);
    assert!(run.html.contains("cursor.firstBatch.length"));
    run.assert_schema();
}

#[test]
fn a_target_killed_mid_run_leaves_the_other_complete() {
    let _serial = one_at_a_time();
    let recording = Server::start();
    // About 4 s recorded: 200 inserts and 200 finds, 10 ms apart.
    let rec = record_inserts_finds(&recording, "slow", 200, 0.01, 0);
    drop(recording);
    let a = Server::start();
    let mut b = Server::start();
    let b_addr = b.addr().to_owned();
    let killer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(1500));
        assert!(b.is_running());
        drop(b); // kills the process by pid
    });
    // No idle reading before the run (a second per target): B is killed 1.5 s in.
    let run = try_ab_replay(&rec.capture, &[a.addr(), &b_addr], &["--idle-sample", "0"]);
    killer.join().unwrap();
    assert_eq!(run.output.status.code(), Some(1), "{}", run.describe());
    assert!(
        run.output.stderr.contains("B failed"),
        "{}",
        run.output.stderr
    );
    assert_eq!(run.report["complete"], false);
    let a_report = run.target("A");
    assert_eq!(a_report["complete"], true, "{a_report}");
    let per_command = &a_report["replay"]["summary"]["per_command"];
    assert_eq!(per_command["insert"]["count"], 200);
    assert_eq!(per_command["find"]["count"], 201);
    let b_report = run.target("B");
    assert_eq!(b_report["complete"], false);
    assert!(
        b_report["error"].as_str().unwrap().contains(&b_addr),
        "{b_report}"
    );
    let b_ops = b_report["replay"]["summary"]["ops"].as_u64().unwrap();
    assert!(b_ops > 0 && b_ops < 401, "B partial: {b_ops}");
    assert!(run.report["pairs"]["unpaired"].as_u64().unwrap() > 0);
    assert!(run.report["findings"][0]
        .as_str()
        .unwrap()
        .starts_with("B failed part-way"));
}
