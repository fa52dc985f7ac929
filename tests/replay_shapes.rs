//! Query shapes in the replay-side reports (docs/shapes.md), against real secantusd-rs servers
//! and captures of real pymongo: a replay reports each shape's replayed count with the recorded
//! figures beside it, getMores charged to the find that opened their cursor; an A/B replay into a
//! server with one more index finds the indexed find shape faster and says it per shape; compare
//! lines the shapes of two reports up by hash. (Shard reports merged per shape:
//! tests/replay_shards.rs.)

mod common;

use common::*;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// Five finds on `{status, qty: {$gt}}` and three on `{sku}`, each with other values; one find
/// read in batches of 5 over 20 documents (getMores); four updates by `_id`.
const PYMONGO: &str = r#"
import sys
from pymongo import MongoClient
client = MongoClient(sys.argv[1], serverSelectionTimeoutMS=10000)
c = client.shop.orders
c.drop()
c.insert_many([{'_id': i, 'status': 'AB'[i % 2], 'qty': i, 'sku': 's%d' % i} for i in range(20)])
for status, qty in [('A', 1), ('B', 2), ('A', 30), ('C', 4), ('long status', 5.5)]:
    list(c.find({'status': status, 'qty': {'$gt': qty}}))
for sku in ['s1', 's2', 'nothing']:
    list(c.find({'sku': sku}))
print(len(list(c.find({}).batch_size(5))))
for i in range(4):
    c.update_one({'_id': i}, {'$set': {'status': 'X%d' % i}})
client.close()
"#;

const FIND_A: &str = "find shop.orders {status: ?string, qty: {$gt: ?number}}";
const FIND_B: &str = "find shop.orders {sku: ?string}";
const FIND_ALL: &str = "find shop.orders {}";
const UPDATE: &str = "update shop.orders {_id: ?number} u {$set: {status: ?string}}";

fn sha16(text: &str) -> String {
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect::<String>()[..16]
        .to_owned()
}

/// The shapes of a report on `namespace`, by text.
fn shapes_on(report: &Value, namespace: &str) -> BTreeMap<String, Value> {
    report["shapes"]
        .as_array()
        .expect("shapes")
        .iter()
        .filter(|s| s["namespace"] == namespace)
        .map(|s| (s["shape"].as_str().unwrap().to_owned(), s.clone()))
        .collect()
}

#[test]
fn a_replay_lists_each_shape_with_its_recorded_figures_and_getmores_on_their_find() {
    let _serial = one_at_a_time();
    let recording = Server::start();
    let dir = tempdir();
    let (capture, stdout) = record_python(&recording, dir.path(), "shapes", PYMONGO);
    assert_eq!(stdout.trim(), "20");
    drop(recording);

    let target = Server::start();
    let run = replay(&capture, &target.uri(), &["--fast"]);
    let report = &run.report;
    assert_schema("replay", report);
    let shapes = shapes_on(report, "shop.orders");
    let count = |t: &str| u(&shapes[t]["count"]);
    assert_eq!(
        [count(FIND_A), count(FIND_B), count(FIND_ALL), count(UPDATE)],
        [5, 3, 1, 4],
        "{:#?}",
        report["shapes"]
    );
    for text in [FIND_A, FIND_B, FIND_ALL, UPDATE] {
        let s = &shapes[text];
        assert_eq!(s["hash"], sha16(text), "{text}");
        assert_eq!(u(&s["errors"]), 0, "{s}");
        assert!(s["p50_us"].as_f64().unwrap() > 0.0, "{s}");
        assert!(s["total_us"].as_f64().unwrap() > 0.0, "{s}");
        assert!(u(&s["reply_bytes"]) > 0, "{s}");
        // The capture's figures of the same requests beside the replayed ones.
        let rec = &s["recorded"];
        assert_eq!(rec["count"], s["count"], "{text}: {s}");
        assert_eq!(rec["getmores"], s["getmores"], "{text}: {s}");
        assert_eq!(rec["docs_returned"], s["docs_returned"], "{text}: {s}");
        assert!(rec["p50_us"].as_f64().unwrap() > 0.0, "{s}");
        // The histograms behind both, for merge.
        let hash = s["hash"].as_str().unwrap();
        assert!(
            report["histograms"]["per_shape"][hash].is_string(),
            "{hash}"
        );
        assert!(report["recorded"]["per_shape"][hash].is_string(), "{hash}");
    }
    // The cursor read in batches: its getMores charged to the find that opened it, with every
    // document it returned, on the replay as in the capture.
    let all = &shapes[FIND_ALL];
    assert!(u(&all["getmores"]) >= 3, "{all}");
    assert_eq!(u(&all["docs_returned"]), 20, "{all}");
    // A with qty > 1: 9 documents (3, 5 ... 19); B with qty > 2: 9 (2, 4 ... 18); the others none.
    assert_eq!(u(&shapes[FIND_A]["docs_returned"]), 18);
    assert!(
        !report["shapes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["command"] == "getMore"),
        "no getMore shape of its own: {:#?}",
        report["shapes"]
    );
    // Every request replayed is charged to one shape: the counts add up to the operations.
    let charged: u64 = report["shapes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| u(&s["count"]) + u(&s["getmores"]))
        .sum();
    assert_eq!(charged, run.ops(), "{}", run.describe());
    assert_eq!(u(&report["shapes_cap"]), 10_000);
    assert_eq!(u(&report["shapes_other"]["count"]), 0);

    // The text: the shapes table, within 100 columns.
    let section: Vec<&str> = run
        .output
        .stdout
        .lines()
        .skip_while(|l| !l.starts_with("Query shapes"))
        .take_while(|l| !l.is_empty())
        .collect();
    assert!(section.len() >= 6, "{}", run.output.stdout);
    assert!(
        section.iter().all(|l| l.chars().count() <= 100),
        "{section:#?}"
    );
    assert!(
        section
            .iter()
            .any(|l| l.starts_with("find shop.orders {status: ")),
        "{section:#?}"
    );

    // A cap of 2: two shapes kept, the requests of the others under `other`, on both sides.
    let again = Server::start();
    let capped = replay(&capture, &again.uri(), &["--fast", "--max-shapes", "2"]);
    let c = &capped.report;
    assert_eq!(c["shapes"].as_array().unwrap().len(), 2);
    assert_eq!(u(&c["shapes_cap"]), 2);
    let kept: u64 = c["shapes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| u(&s["count"]))
        .sum();
    assert_eq!(kept + u(&c["shapes_other"]["count"]), {
        let all: u64 = report["shapes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| u(&s["count"]))
            .sum();
        all
    });
    assert_eq!(
        c["shapes_other"]["count"],
        c["shapes_other"]["recorded"]["count"]
    );
    assert!(c["histograms"]["per_shape"]["other"].is_string());

    // Two passes: each shape replayed twice, its recorded figures those of the capture (once);
    // the second pass reuses the first's shapes, getMores still on their find.
    let twice = Server::start();
    let two = replay(&capture, &twice.uri(), &["--fast", "--repeat", "2"]);
    let shapes2 = shapes_on(&two.report, "shop.orders");
    for text in [FIND_A, FIND_B, FIND_ALL, UPDATE] {
        let s = &shapes2[text];
        assert_eq!(u(&s["count"]), 2 * count(text), "{text}: {s}");
        assert_eq!(u(&s["recorded"]["count"]), count(text), "{text}: {s}");
    }
    assert_eq!(
        u(&shapes2[FIND_ALL]["getmores"]),
        2 * u(&shapes[FIND_ALL]["getmores"])
    );
    assert_eq!(u(&shapes2[FIND_ALL]["docs_returned"]), 40);

    // compare: the replay's shapes against analyze's, by hash.
    let analyzed = dir.path().join("analyze.json");
    std::fs::write(&analyzed, analyze_json(&capture, &[]).to_string()).unwrap();
    let replayed = dir.path().join("replay.json");
    std::fs::write(&replayed, report.to_string()).unwrap();
    let out = mongotape(&[
        "compare".to_string(),
        analyzed.display().to_string(),
        replayed.display().to_string(),
        "--json".into(),
    ]);
    assert!(out.success(), "{}", out.stderr);
    let compared: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_schema("compare", &compared);
    let row = compared["shapes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["hash"] == sha16(FIND_A))
        .expect("find A compared");
    let counts = &row["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["metric"] == "count")
        .unwrap()["values"];
    assert_eq!(counts, &serde_json::json!([5.0, 5.0]));
}

/// 10,000 items, then 60 finds on `{sku}` (one index on B) and 60 on `{qty: {$lt}}` (no index
/// anywhere), interleaved. The capture creates nothing: the targets are set up before.
const ITEMS: &str = r#"
import sys
from pymongo import MongoClient
c = MongoClient(sys.argv[1], serverSelectionTimeoutMS=10000).shop.items
c.insert_many([{'_id': i, 'sku': 'k%d' % i, 'qty': i % 100, 'pad': 'x' * 40} for i in range(10000)])
for i in range(60):
    assert len(list(c.find({'sku': 'k%d' % (i * 61)}))) == 1
    list(c.find({'qty': {'$lt': i % 3}}).limit(5))
"#;

/// Creates `shop.items`, with an index on `sku` when the second argument is "1".
const ITEMS_SETUP: &str = r#"
import sys
from pymongo import MongoClient
db = MongoClient(sys.argv[1], serverSelectionTimeoutMS=10000).shop
db.drop_collection('items')
db.create_collection('items')
if sys.argv[2] == '1':
    db.items.create_index('sku')
"#;

const FIND_SKU: &str = "find shop.items {sku: ?string}";

#[test]
fn an_ab_replay_finds_the_indexed_find_shape_faster_and_says_so_per_shape() {
    let _serial = one_at_a_time();
    let recording = Server::start_with(&["--standalone"]);
    python(ITEMS_SETUP, &[recording.uri().as_str(), "0"]);
    let dir = tempdir();
    let capture = dir.path().join("items.mtape");
    record_through(&recording, &capture, |uri| python(ITEMS, &[uri]));
    drop(recording);

    let a = Server::start_with(&["--standalone"]);
    let b = Server::start_with(&["--standalone"]);
    python(ITEMS_SETUP, &[a.uri().as_str(), "0"]);
    python(ITEMS_SETUP, &[b.uri().as_str(), "1"]);
    let run = ab_replay(
        &capture,
        &[a.addr(), b.addr()],
        &["--fast", "--label", "plain", "--label", "indexed"],
    );
    run.assert_schema();
    let shapes = run.report["shapes"].as_array().expect("shapes");
    let row = shapes
        .iter()
        .find(|s| s["shape"] == FIND_SKU)
        .unwrap_or_else(|| panic!("no {FIND_SKU}: {shapes:#?}"));
    assert_eq!(row["hash"], sha16(FIND_SKU));
    for t in row["targets"].as_array().unwrap() {
        assert_eq!(u(&t["count"]), 60, "{row}");
    }
    let mean = &row["ratios"][0]["mean"];
    assert_eq!(row["ratios"][0]["target"], "indexed");
    assert_eq!(u(&mean["pairs"]), 60, "{row}");
    // Every indexed find is faster: the typical request, and the mean.
    let median = &row["ratios"][0]["median"];
    assert!(
        median["high"].as_f64().unwrap() < 1.0 && mean["high"].as_f64().unwrap() < 1.0,
        "the indexed find not found faster: {row}\n{}",
        run.output.stdout
    );
    let sentence = row["ratios"][0]["sentence"].as_str().unwrap();
    assert!(
        sentence.starts_with("indexed is ")
            && sentence.contains(&format!("faster on `{FIND_SKU}` (95% interval")),
        "{sentence}"
    );
    assert!(
        run.report["findings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f == sentence),
        "{:#?}\n{row:#}",
        run.report["findings"]
    );
    // Its total time moved the most of the finds: it ranks above the unindexed one.
    let at = |head: &str| {
        shapes
            .iter()
            .position(|s| s["shape"].as_str().unwrap().starts_with(head))
    };
    let unindexed = at("find shop.items {qty: {$lt: ?number}}").expect("the other find");
    assert!(at(FIND_SKU).unwrap() < unindexed, "{shapes:#?}");
    // The text lists the shapes side by side, within 100 columns.
    let section: Vec<&str> = run
        .output
        .stdout
        .lines()
        .skip_while(|l| !l.starts_with("per query shape"))
        .take_while(|l| !l.is_empty())
        .collect();
    assert!(
        section.iter().any(|l| l.starts_with(FIND_SKU)),
        "{}",
        run.output.stdout
    );
    assert!(
        section.iter().all(|l| l.chars().count() <= 100),
        "{section:#?}"
    );
}
