//! Query shapes in `mongotape analyze` (docs/shapes.md), on captures of real clients recorded
//! through the proxy against secantusd-rs: pymongo's finds on two filters with different values,
//! a cursor read in batches and an update are exactly the shapes the report lists, with their
//! counts; PHP (legacy OP_QUERY handshake) gives the same shapes for the same logical find and
//! update; a capture recorded with `--redact values` has the same shapes.

mod common;

use common::*;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::process::Command;

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

/// The same logical find and update as pymongo's, by PHP's low-level driver.
const PHP: &str = r#"
$m = new MongoDB\Driver\Manager($argv[1]);
$rows = $m->executeQuery('shop.orders', new MongoDB\Driver\Query(['status' => 'Z', 'qty' => ['$gt' => 17]]))->toArray();
$bulk = new MongoDB\Driver\BulkWrite();
$bulk->update(['_id' => 9], ['$set' => ['status' => 'php']], ['multi' => false, 'upsert' => false]);
$m->executeBulkWrite('shop.orders', $bulk);
echo count($rows), "\n";
"#;

const FIND_A: &str = "find shop.orders {status: ?string, qty: {$gt: ?number}}";
const FIND_B: &str = "find shop.orders {sku: ?string}";
const FIND_ALL: &str = "find shop.orders {}";
const UPDATE: &str = "update shop.orders {_id: ?number} u {$set: {status: ?string}}";

/// The shapes of a report on `shop.orders`, by text.
fn shapes_on_orders(report: &Value) -> BTreeMap<String, Value> {
    report["shapes"]
        .as_array()
        .expect("shapes")
        .iter()
        .filter(|s| s["namespace"] == "shop.orders")
        .map(|s| (s["shape"].as_str().unwrap().to_owned(), s.clone()))
        .collect()
}

fn sha16(text: &str) -> String {
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect::<String>()[..16]
        .to_owned()
}

#[test]
fn pymongo_finds_cursors_and_updates_are_the_shapes_analyze_lists() {
    let _serial = one_at_a_time();
    let server = Server::start();
    let dir = tempdir();
    let (capture, stdout) = record_python(&server, dir.path(), "shapes", PYMONGO);
    assert_eq!(stdout.trim(), "20");
    let report = analyze_json(&capture, &[]);
    assert_schema("analyze", &report);
    let shapes = shapes_on_orders(&report);
    let texts: Vec<&str> = shapes.keys().map(String::as_str).collect();
    assert_eq!(
        texts,
        [
            "drop shop.orders",
            FIND_B,
            FIND_A,
            FIND_ALL,
            "insert shop.orders",
            UPDATE
        ],
    );
    let count = |t: &str| u(&shapes[t]["count"]);
    assert_eq!(
        [count(FIND_A), count(FIND_B), count(FIND_ALL), count(UPDATE)],
        [5, 3, 1, 4]
    );
    for (text, s) in &shapes {
        assert_eq!(s["hash"], sha16(text), "{text}");
        assert_eq!(u(&s["errors"]), 0, "{s}");
        assert!(s["p50_us"].as_f64().unwrap() > 0.0, "{s}");
        assert!(s["p99_us"].as_f64().unwrap() >= s["p50_us"].as_f64().unwrap());
        assert!(s["total_us"].as_f64().unwrap() > 0.0);
        assert!(u(&s["reply_bytes"]) > 0);
    }
    // The cursor read in batches: its getMores charged to the find that opened it, with every
    // document it returned.
    let all = &shapes[FIND_ALL];
    assert!(u(&all["getmores"]) >= 3, "{all}");
    assert_eq!(u(&all["docs_returned"]), 20, "{all}");
    // A with qty > 1: 9 documents (2, 4 ... 18); B with qty > 2: 9 (3, 5 ... 19); the others none.
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
    // Shares add up to one, with `other` empty under the cap.
    let share: f64 = report["shapes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["share"].as_f64().unwrap())
        .sum();
    assert!((share - 1.0).abs() < 1e-9, "{share}");
    assert_eq!(u(&report["shapes_cap"]), 10_000);
    assert_eq!(u(&report["shapes_other"]["count"]), 0);

    // The text report: the shapes table fits 100 columns.
    let out = mongotape(&["analyze".to_string(), capture.display().to_string()]);
    assert!(out.success(), "{}", out.stderr);
    let section: Vec<&str> = out
        .stdout
        .lines()
        .skip_while(|l| !l.starts_with("Query shapes"))
        .take_while(|l| !l.is_empty())
        .collect();
    assert!(section.len() >= 7, "{}", out.stdout);
    for line in &section {
        assert!(line.chars().count() <= 100, "too wide: {line}");
    }
    assert!(
        section.iter().any(|l| l.starts_with(FIND_ALL)),
        "{section:#?}"
    );
    // The page has every shape's whole text.
    let page = dir.path().join("shapes.html");
    let out = mongotape(&[
        "analyze".to_string(),
        capture.display().to_string(),
        "--html".into(),
        page.display().to_string(),
    ]);
    assert!(out.success(), "{}", out.stderr);
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("Query shapes"));
    for text in [FIND_A, UPDATE] {
        assert!(html.contains(text), "{text} not on the page");
    }

    // Two shapes past a cap of 2: the rest counted under `other`.
    let capped = analyze_json(&capture, &["--max-shapes", "2"]);
    assert_eq!(capped["shapes"].as_array().unwrap().len(), 2);
    assert_eq!(u(&capped["shapes_cap"]), 2);
    let kept: u64 = capped["shapes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| u(&s["count"]))
        .sum();
    let all: u64 = report["shapes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| u(&s["count"]))
        .sum();
    assert_eq!(kept + u(&capped["shapes_other"]["count"]), all);

    // Recorded again with values redacted: the same shapes.
    let redacted = dir.path().join("redacted.mtape");
    let proxy = Proxy::start_with(server.addr(), &redacted, &["--redact", "values"]);
    python(PYMONGO, &[proxy.uri()]);
    assert!(proxy.stop().status.success());
    let again = shapes_on_orders(&analyze_json(&redacted, &[]));
    assert_eq!(
        again.keys().collect::<Vec<_>>(),
        shapes.keys().collect::<Vec<_>>()
    );
}

#[test]
fn php_with_its_legacy_handshake_gives_pymongo_s_shapes() {
    Client::Php.require_installed();
    let _serial = one_at_a_time();
    let server = Server::start();
    let dir = tempdir();
    let (py, _) = record_python(&server, dir.path(), "pymongo", PYMONGO);
    let php = dir.path().join("php.mtape");
    let stdout = record_through(&server, &php, |uri| {
        let mut command = Command::new("php");
        command.arg("-r").arg(PHP).arg(uri);
        let out = run_command(command, CLIENT_TIMEOUT);
        assert!(out.success(), "php: {}", out.stderr);
        out.stdout
    });
    assert_eq!(stdout.trim(), "0", "no order has status Z");
    let py = shapes_on_orders(&analyze_json(&py, &[]));
    let php_report = analyze_json(&php, &[]);
    let php = shapes_on_orders(&php_report);
    assert_eq!(
        php.keys().map(String::as_str).collect::<Vec<_>>(),
        [FIND_A, UPDATE],
        "{:#?}",
        php_report["shapes"]
    );
    for text in [FIND_A, UPDATE] {
        assert_eq!(php[text]["hash"], py[text]["hash"], "{text}");
        assert_eq!(u(&php[text]["count"]), 1);
    }
}
