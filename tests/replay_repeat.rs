//! `--repeat 2` with the real clients: the `repeatable` workload (tools/workloads) recorded from each
//! client and replayed twice into a fresh server, its `dropDatabase` left out so the second pass adds
//! to the first. Every write must happen twice: the inserts without an explicit `_id` (the driver
//! gave them ObjectIds, which the second pass renews), acknowledged, w:0 and in bulk; the `$push`es,
//! acknowledged and w:0, into one upserted array; the `$inc`s; the update_many on what is there.

mod common;

use common::*;
use serde_json::Value;
use std::collections::HashSet;

const DB: &str = "bench";

fn documents<'a>(dump: &'a Value, collection: &str) -> Vec<&'a Value> {
    dump["collections"][collection]["documents"]
        .as_array()
        .map(|d| d.iter().collect())
        .unwrap_or_default()
}

/// A number in canonical extended JSON (`{"$numberInt": "3"}`).
fn number(v: &Value) -> i64 {
    ["$numberInt", "$numberLong", "$numberDouble"]
        .iter()
        .find_map(|k| v[k].as_str())
        .and_then(|s| s.parse::<f64>().ok())
        .unwrap_or_else(|| panic!("not a number: {v}")) as i64
}

struct Summary {
    kinds: [usize; 3],
    touched: i64,
    comments: usize,
    counter: i64,
    ids: HashSet<String>,
}

fn summarize(dump: &Value) -> Summary {
    let docs = documents(dump, "docs");
    let kind = |k: &str| docs.iter().filter(|d| d["kind"] == k).count();
    let blog = |id: &str| {
        documents(dump, "blogs")
            .into_iter()
            .find(|d| d["_id"] == id)
            .unwrap_or_else(|| panic!("no blog {id} in {dump}"))
            .clone()
    };
    Summary {
        kinds: [kind("ack"), kind("w0"), kind("many")],
        touched: docs
            .iter()
            .filter(|d| !d["touched"].is_null())
            .map(|d| number(&d["touched"]))
            .sum(),
        comments: blog("blog")["comments"].as_array().map_or(0, Vec::len),
        counter: number(&blog("counter")["n"]),
        ids: docs.iter().map(|d| d["_id"].to_string()).collect(),
    }
}

fn repeat_twice(client: Client) {
    let dir = tempdir();
    let a = Server::start();
    let (capture, run) = record_workload(&a, dir.path(), client, "repeatable", DB, 0.2);
    let once = summarize(&dump_db(&a.uri(), DB));
    drop(a);
    let [ack, w0, many] = once.kinds;
    assert!(ack > 0 && w0 > 0 && many > 0, "{:?}", run.steps);

    let b = Server::start();
    let r = replay(
        &capture,
        &b.uri(),
        &[
            "--repeat",
            "2",
            "--fast",
            "--exclude-command",
            "dropDatabase",
        ],
    );
    let who = client.name();
    assert_eq!(r.report["iterations"], 2, "{who}: {}", r.describe());
    let inserts = &r.report["summary"]["per_command"]["insert"];
    assert_eq!(
        inserts["errors"].as_u64(),
        Some(0),
        "{who}: a second pass must not hit duplicate keys: {}",
        r.describe()
    );
    assert!(
        r.report["divergences"]["insert"].is_null(),
        "{who}: every insert answered as recorded: {}",
        r.describe()
    );
    let twice = summarize(&dump_db(&b.uri(), DB));

    // The w:0 deletes take N/4 of the w:0 inserts in each pass: 2 x (N - N/4) is what one pass left, twice.
    assert_eq!(
        twice.kinds,
        [2 * ack, 2 * w0, 2 * many],
        "{who}: inserted twice"
    );
    assert_eq!(twice.comments, 2 * once.comments, "{who}: $push twice");
    assert_eq!(twice.counter, 2 * once.counter, "{who}: $inc twice");
    // update_many $inc: the first pass's documents twice, the second's once.
    assert_eq!(twice.touched, 3 * once.touched, "{who}: update_many twice");
    // The first pass keeps the recorded ids; the second's are new.
    assert!(
        once.ids.is_subset(&twice.ids),
        "{who}: the first pass sends the recorded ids"
    );
}

#[test]
fn pymongo_writes_happen_twice_with_repeat_2() {
    repeat_twice(Client::Pymongo);
}

#[test]
fn mongosh_writes_happen_twice_with_repeat_2() {
    repeat_twice(Client::Mongosh);
}

#[test]
fn php_writes_happen_twice_with_repeat_2() {
    repeat_twice(Client::Php);
}

#[test]
fn node_writes_happen_twice_with_repeat_2() {
    repeat_twice(Client::Node);
}

#[test]
fn rust_writes_happen_twice_with_repeat_2() {
    repeat_twice(Client::Rust);
}
