//! Query shapes in `mongotape analyze` (docs/shapes.md), on captures of real clients recorded
//! through the proxy against secantusd-rs: pymongo's finds on two filters with different values,
//! a cursor read in batches and an update are exactly the shapes the report lists, with their
//! counts; PHP (legacy OP_QUERY handshake) gives the same shapes for the same logical find and
//! update; a capture recorded with `--redact values` has the same shapes; the seed workloads
//! recorded from all five clients (pymongo over zstd and plain, mongosh over zlib, PHP, Node.js,
//! Rust) have the same shapes for the same logical operations.

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

/// The seed workloads (tools/workloads/) compared across the five clients: between them finds
/// (by a field, by `_id` with findOne, a sorted cursor read in batches), updates (`$set` multi,
/// `$push`, upserts with `$inc`), deletes (one, many, all), aggregations (`$group`) and counts.
const SEED_WORKLOADS: [&str; 4] = ["basic", "lookup", "embedded", "repeatable"];

/// The database the seed workloads write (each drops it first).
const SEED_DB: &str = "shapes";

/// One recording of a seed workload: the client and what its connection string adds.
#[derive(Clone, Copy)]
struct Recording {
    label: &'static str,
    client: Client,
    uri_options: &'static str,
}

/// pymongo compressed with zstd, mongosh (OP_QUERY handshakes) with zlib, PHP (its OP_QUERY
/// handshake), Node.js and Rust plain; pymongo is the reference the others are compared with.
const RECORDINGS: [Recording; 5] = [
    Recording {
        label: "pymongo-zstd",
        client: Client::Pymongo,
        uri_options: "&compressors=zstd",
    },
    Recording {
        label: "mongosh-zlib",
        client: Client::Mongosh,
        uri_options: "&compressors=zlib",
    },
    Recording {
        label: "php",
        client: Client::Php,
        uri_options: "",
    },
    Recording {
        label: "node",
        client: Client::Node,
        uri_options: "",
    },
    Recording {
        label: "rust",
        client: Client::Rust,
        uri_options: "",
    },
];

/// What a report says of one shape that the same logical operations must reproduce.
#[derive(Clone, Debug, PartialEq, Eq)]
struct ShapeFigures {
    count: u64,
    getmores: u64,
    docs_returned: u64,
    errors: u64,
    no_reply: u64,
}

/// The shapes of `analyze --json` on the seed database (the workload's own operations: mongosh's
/// start-up commands on `admin` and the step markers are not among them), by text.
fn seed_shapes(capture: &std::path::Path) -> BTreeMap<String, ShapeFigures> {
    let report = analyze_json(capture, &[]);
    assert_schema("analyze", &report);
    let collection_prefix = format!("{SEED_DB}.");
    report["shapes"]
        .as_array()
        .expect("shapes")
        .iter()
        .filter(|s| {
            let ns = s["namespace"].as_str().unwrap();
            ns == SEED_DB || ns.starts_with(&collection_prefix)
        })
        .map(|s| {
            let figures = ShapeFigures {
                count: u(&s["count"]),
                getmores: u(&s["getmores"]),
                docs_returned: u(&s["docs_returned"]),
                errors: u(&s["errors"]),
                no_reply: u(&s["no_reply"]),
            };
            (s["shape"].as_str().unwrap().to_owned(), figures)
        })
        .collect()
}

/// The requests of a capture on the seed database as `(opcode, compressor)` pairs, from
/// `mongotape cat`.
fn seed_requests_wire(capture: &std::path::Path) -> Vec<(String, String)> {
    let out = mongotape(&[
        "cat".to_string(),
        capture.display().to_string(),
        "--no-body".into(),
    ]);
    assert!(out.success(), "cat: {}", out.stderr);
    out.stdout
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).expect("a JSON line"))
        .filter(|m| m["dir"] == "request")
        .map(|m| {
            let ns = m["ns"].as_str().unwrap_or("").to_owned();
            let wire = (
                m["op"].as_str().unwrap_or("").to_owned(),
                m["compressor"].as_str().unwrap_or("none").to_owned(),
            );
            (ns, wire)
        })
        .filter(|(ns, _)| ns.starts_with(&format!("{SEED_DB}.")) || ns == SEED_DB)
        .map(|(_, wire)| wire)
        .collect()
}

/// The same logical operations, where a client genuinely sends other commands for them (what
/// `mongotape cat` of the captures shows), brought to what pymongo sends:
///
/// - mongosh's `findOne` sends `find` with `limit: 1` and no `singleBatch`; pymongo's
///   `find_one`, PHP, Node.js (`findOne`) and Rust (`find_one`) send `limit: 1, singleBatch:
///   true`. The shape keeps `singleBatch` as MongoDB's query shape does (with a limit above the
///   first batch it decides whether a getMore can follow), so the two are two shapes; here a
///   mongosh find shape ending in `limit` is read as `limit singleBatch`.
/// - mongosh's `db.collection.drop()` first sends `listCollections {filter: {name: C}}` (to look
///   for the collection's `encryptedFields`), the other clients only `drop`: one
///   `listCollections` per `drop` is taken off mongosh's count.
/// - The Rust driver refuses w:0 in its CRUD methods: its workloads send the same `insert` and
///   `update` commands with `writeConcern: {w: 0}` through `run_command`, without `moreToCome`,
///   and read the reply (tools/workloads/README.md). The shape is the same; only `no_reply`
///   differs, so it is compared for the other clients and is 0 for Rust.
fn as_pymongo_sends(
    client: Client,
    shapes: &BTreeMap<String, ShapeFigures>,
) -> BTreeMap<String, ShapeFigures> {
    let mut logical = BTreeMap::new();
    for (text, figures) in shapes {
        let figures = figures.clone();
        if client == Client::Rust {
            assert_eq!(figures.no_reply, 0, "rust: {text}");
        }
        let text =
            if client == Client::Mongosh && text.starts_with("find ") && text.ends_with(" limit") {
                format!("{text} singleBatch")
            } else {
                text.clone()
            };
        logical.insert(text, figures);
    }
    if client == Client::Mongosh {
        let drops: u64 = shapes
            .iter()
            .filter(|(text, _)| text.starts_with("drop "))
            .map(|(_, f)| f.count)
            .sum();
        let list = format!("listCollections {SEED_DB}");
        if drops > 0 {
            let entry = logical
                .get_mut(&list)
                .unwrap_or_else(|| panic!("mongosh drops {drops} times without {list}"));
            assert!(entry.count >= drops, "{entry:?} for {drops} drops");
            entry.count -= drops;
            if entry.count == 0 {
                logical.remove(&list);
            }
        }
    }
    logical
}

/// A shape table as a client that reads a reply to every write would give it (the Rust driver's
/// w:0 writes).
fn all_answered(shapes: &BTreeMap<String, ShapeFigures>) -> BTreeMap<String, ShapeFigures> {
    shapes
        .iter()
        .map(|(text, figures)| {
            let no_reply = 0;
            (
                text.clone(),
                ShapeFigures {
                    no_reply,
                    ..figures.clone()
                },
            )
        })
        .collect()
}

/// The differences between two shape tables, one line each.
fn shape_diff(
    a: &str,
    left: &BTreeMap<String, ShapeFigures>,
    b: &str,
    right: &BTreeMap<String, ShapeFigures>,
) -> String {
    let mut lines = Vec::new();
    for text in left
        .keys()
        .chain(right.keys())
        .collect::<std::collections::BTreeSet<_>>()
    {
        let (l, r) = (left.get(text), right.get(text));
        if l != r {
            lines.push(format!("{text}\n    {a}: {l:?}\n    {b}: {r:?}"));
        }
    }
    lines.join("\n")
}

#[test]
fn seed_workloads_have_the_same_shapes_from_all_five_clients() {
    require_clients();
    let _serial = one_at_a_time();
    let server = Server::start();
    let dir = tempdir();
    let record = |recording: Recording, workload: &str| {
        let capture = dir
            .path()
            .join(format!("{}-{workload}.mtape", recording.label));
        record_through(&server, &capture, |uri| {
            let uri = format!("{uri}{}", recording.uri_options);
            run_client(recording.client, workload, &uri, SEED_DB, 0.02)
        });
        capture
    };

    // The wire the comparison covers: OP_COMPRESSED (zstd, zlib) for every request of pymongo's
    // and mongosh's workload operations, OP_QUERY handshakes from mongosh and PHP.
    let basic: Vec<_> = RECORDINGS.iter().map(|r| record(*r, "basic")).collect();
    for (recording, capture) in RECORDINGS.iter().zip(&basic) {
        let wire = seed_requests_wire(capture);
        assert!(wire.len() > 100, "{}: {wire:?}", recording.label);
        if let Some(compressor) = recording.uri_options.strip_prefix("&compressors=") {
            assert!(
                wire.iter().all(|(op, c)| op == "OP_MSG" && c == compressor),
                "{}: {wire:?}",
                recording.label
            );
        }
    }
    for client in [Client::Mongosh, Client::Php] {
        let capture = &basic[RECORDINGS.iter().position(|r| r.client == client).unwrap()];
        let out = mongotape(&[
            "cat".to_string(),
            capture.display().to_string(),
            "--no-body".into(),
        ]);
        assert!(
            out.stdout.contains(r#""op":"OP_QUERY""#),
            "{}: no legacy handshake",
            client.name()
        );
    }
    // pymongo uncompressed: exactly the shapes and figures of pymongo over zstd.
    let plain = record(
        Recording {
            label: "pymongo-plain",
            client: Client::Pymongo,
            uri_options: "",
        },
        "basic",
    );
    let wire = seed_requests_wire(&plain);
    assert!(wire.iter().all(|(_, c)| c == "none"), "{wire:?}");
    let (plain, zstd) = (seed_shapes(&plain), seed_shapes(&basic[0]));
    assert!(
        plain == zstd,
        "pymongo plain and zstd differ:\n{}",
        shape_diff("plain", &plain, "zstd", &zstd)
    );

    for workload in SEED_WORKLOADS {
        let captures: Vec<_> = if workload == "basic" {
            basic.clone()
        } else {
            RECORDINGS.iter().map(|r| record(*r, workload)).collect()
        };
        let reference = as_pymongo_sends(Client::Pymongo, &seed_shapes(&captures[0]));
        assert_seed_reference(workload, &reference);
        for (recording, capture) in RECORDINGS.iter().zip(&captures).skip(1) {
            let shapes = as_pymongo_sends(recording.client, &seed_shapes(capture));
            let expected = if recording.client == Client::Rust {
                all_answered(&reference)
            } else {
                reference.clone()
            };
            assert!(
                shapes == expected,
                "{workload}: {} and pymongo differ:\n{}",
                recording.label,
                shape_diff(recording.label, &shapes, "pymongo", &expected)
            );
        }
    }
}

/// What pymongo's capture of each seed workload must hold, so the comparison is about finds,
/// updates, deletes, aggregations and counts and not about empty tables.
fn assert_seed_reference(workload: &str, shapes: &BTreeMap<String, ShapeFigures>) {
    let expected: &[(&str, u64)] = match workload {
        "basic" => &[
            ("find shapes.items {name: ?string}", 2),
            ("find shapes.blogs {_id: ?number} limit singleBatch", 1),
            ("find shapes.items {} sort {_id: 1}", 1),
            (
                "update shapes.blogs {_id: ?number} u {$push: {comments: ?object}}",
                40,
            ),
            (
                "update shapes.items {group: ?number} u {$set: {flag: ?bool}} multi",
                1,
            ),
            ("delete shapes.items {_id: ?number} limit 1", 1),
            ("delete shapes.items {kind: ?string, group: ?number}", 1),
            ("count shapes.items {}", 1),
            ("insert shapes.items", 100),
        ],
        "lookup" => &[
            ("delete shapes.userinfo {}", 1),
            ("count shapes.userinfo {}", 3),
        ],
        "embedded" => &[
            (
                "update shapes.blog {_id: ?number} u {$push: {comments: ?object}}",
                1200,
            ),
            ("drop shapes.blog", 6),
        ],
        "repeatable" => &[
            (
                "update shapes.blogs {_id: ?string} u {$inc: {n: ?number}} upsert",
                1,
            ),
            (
                "update shapes.docs {kind: ?string} u {$inc: {touched: ?number}} multi",
                1,
            ),
            ("delete shapes.docs {kind: ?string, i: {$lt: ?number}}", 1),
        ],
        other => panic!("no expectation for {other}"),
    };
    for (text, count) in expected {
        let figures = shapes
            .get(*text)
            .unwrap_or_else(|| panic!("{workload}: no {text} in {shapes:#?}"));
        assert_eq!(figures.count, *count, "{workload}: {text}");
    }
    let commands = |prefix: &str| shapes.keys().filter(|t| t.starts_with(prefix)).count();
    match workload {
        "basic" => {
            // The cursor read in batches of 10: its getMores charged to its find.
            let batches = &shapes["find shapes.items {} sort {_id: 1}"];
            assert!(batches.getmores >= 9, "{batches:?}");
            assert_eq!(batches.docs_returned, 100);
            // The w:0 inserts and pushes expected no reply.
            assert_eq!(shapes["insert shapes.items"].no_reply, 50);
        }
        "lookup" => assert_eq!(commands("find shapes.userinfo {author: ?string}"), 1),
        "embedded" => assert_eq!(commands("aggregate "), 2, "{shapes:#?}"),
        _ => {}
    }
    assert!(shapes.values().all(|f| f.errors == 0), "{shapes:#?}");
}
