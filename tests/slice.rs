//! `mongotape slice`, and `--since`/`--until`/`--app` on `cat`, `analyze` and `replay`, over a
//! workload recorded through the proxy from two pymongo applications: a cursor read on both sides
//! of a pause, a transaction with a pause inside, another application's reads. The slices must
//! be valid captures, replay into a fresh server with no orphaned getMore, and keep the
//! transaction whole or not at all.

mod common;
use common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// Prints the wall-clock times (RFC 3339, with an offset) between its phases as JSON.
const WORKLOAD: &str = r#"
import sys, time, json, datetime
from pymongo import MongoClient
def now():
    return datetime.datetime.now(datetime.timezone.utc).isoformat()
orders = MongoClient(sys.argv[1], appname="orders-app")
reports = MongoClient(sys.argv[1], appname="reports-app")
db = orders.shop
db.drop_collection("orders")
db.create_collection("orders")
db.orders.insert_many([{"_id": i, "x": "a" * 50} for i in range(40)])
cur = db.orders.find().sort("_id", 1).batch_size(5)
first = [next(cur) for _ in range(12)]
reports.stats.daily.insert_one({"day": 1})
time.sleep(0.4)
marks = {"after_first_batches": now()}
time.sleep(0.1)
rest = list(cur)
assert len(first) + len(rest) == 40
with orders.start_session() as s:
    s.start_transaction()
    db.orders.insert_one({"_id": 100}, session=s)
    time.sleep(0.4)
    marks["inside_transaction"] = now()
    time.sleep(0.1)
    db.orders.update_one({"_id": 100}, {"$set": {"paid": True}}, session=s)
    s.commit_transaction()
time.sleep(0.4)
marks["after_transaction"] = now()
time.sleep(0.1)
for _ in range(3):
    reports.stats.daily.count_documents({})
db.orders.insert_one({"_id": 200})
orders.close()
reports.close()
print(json.dumps(marks))
"#;

struct Recorded {
    _dir: tempfile::TempDir,
    dir: PathBuf,
    capture: PathBuf,
    marks: Value,
}

fn record() -> Recorded {
    let dir = tempdir();
    let server = Server::start();
    let (capture, out) = record_python(&server, dir.path(), "shop", WORKLOAD);
    let marks: Value = serde_json::from_str(out.trim()).expect("marks");
    Recorded {
        dir: dir.path().to_owned(),
        _dir: dir,
        capture,
        marks,
    }
}

impl Recorded {
    fn mark(&self, name: &str) -> String {
        self.marks[name].as_str().unwrap().to_owned()
    }

    /// `mongotape slice CAPTURE -o NAME.mtape ARGS --json`: the slice and its summary.
    fn slice(&self, name: &str, args: &[&str]) -> (PathBuf, Value) {
        let out = self.dir.join(format!("{name}.mtape"));
        let mut all = vec!["slice".as_ref(), self.capture.as_os_str(), "-o".as_ref()];
        all.push(out.as_os_str());
        all.push("--json".as_ref());
        all.extend(args.iter().map(std::ffi::OsStr::new));
        let r = mongotape(&all);
        assert!(r.success(), "slice {args:?}: {}", r.stderr);
        assert!(r.stderr.contains("mongotape: kept "), "{}", r.stderr);
        let summary: Value = serde_json::from_str(&r.stdout).expect("summary JSON");
        assert_schema("slice", &summary);
        assert_valid(&out);
        (out, summary)
    }
}

/// `inspect` and `cat` read the slice whole, with its end record.
fn assert_valid(path: &Path) {
    let i = mongotape(&["inspect".as_ref(), path.as_os_str()]);
    assert!(i.success(), "inspect {}: {}", path.display(), i.stderr);
    let c = mongotape(&["cat".as_ref(), "--events".as_ref(), path.as_os_str()]);
    assert!(c.success(), "cat {}: {}", path.display(), c.stderr);
}

/// The requests of a capture per command.
fn commands(path: &Path) -> std::collections::BTreeMap<String, u64> {
    let c = mongotape(&["cat".as_ref(), "--no-body".as_ref(), path.as_os_str()]);
    let mut out = std::collections::BTreeMap::new();
    for line in c.stdout.lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        if v["dir"] == "request" {
            *out.entry(v["command"].as_str().unwrap_or("").to_owned())
                .or_default() += 1;
        }
    }
    out
}

fn n(v: &Value) -> u64 {
    v.as_u64().unwrap_or(0)
}

#[test]
fn slices_stay_replayable_and_transactions_whole() {
    let rec = record();
    let whole = commands(&rec.capture);
    assert!(
        whole["getMore"] >= 2 && whole["commitTransaction"] == 1,
        "{whole:?}"
    );

    // From the pause on: the cursor's later getMores lose their find and are left out; the
    // connections already open are written with their handshake first.
    let since = rec.mark("after_first_batches");
    let (late, s) = rec.slice("late", &["--since", &since]);
    let kept = commands(&late);
    assert_eq!(kept.get("getMore"), None, "{kept:?}");
    assert!(
        n(&s["dropped_requests"]["cursor_opened_outside"]) >= 1,
        "{s}"
    );
    assert!(n(&s["connections_opened_before"]) >= 1, "{s}");
    assert_eq!(n(&s["transactions_kept"]), 1, "{s}");
    assert_eq!(kept["commitTransaction"], 1);
    let i = inspect_json(&late);
    assert!(
        i["connections"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| { c["driver"]["application"].is_string() }),
        "every connection keeps its handshake metadata: {i}"
    );
    // Replayed into a fresh server after the part before it (the data it reads): no getMore
    // without its cursor, replies as recorded.
    let target = Server::start();
    let (early, _) = rec.slice("early", &["--until", &since]);
    replay(&early, &target.uri(), &["--fast"]);
    let r = replay(&late, &target.uri(), &["--fast"]);
    assert_eq!(r.skipped("cursor_not_found"), 0, "{}", r.describe());
    assert_eq!(r.count("commitTransaction"), 1, "{}", r.describe());
    assert_eq!(r.divergences(), 0, "{}", r.describe());

    // A window edge inside the transaction drops all of it, from either side.
    let inside = rec.mark("inside_transaction");
    for (name, args) in [
        ("before", ["--until", &inside]),
        ("after", ["--since", &inside]),
    ] {
        let (part, s) = rec.slice(name, &args);
        let kept = commands(&part);
        assert_eq!(n(&s["transactions_dropped"]), 1, "{name}: {s}");
        assert_eq!(n(&s["transactions_kept"]), 0, "{name}: {s}");
        assert!(
            n(&s["dropped_requests"]["transaction_outside_window"]) >= 2,
            "{s}"
        );
        assert_eq!(kept.get("commitTransaction"), None, "{name}: {kept:?}");
        let target = Server::start();
        let r = replay(&part, &target.uri(), &["--fast"]);
        assert_eq!(r.skipped("cursor_not_found"), 0, "{}", r.describe());
    }
    // Before the pause: the cursor's find and first getMores, no transaction.
    let (early, s) = rec.slice("early2", &["--until", &rec.mark("after_first_batches")]);
    assert!(commands(&early).contains_key("find"));
    assert_eq!(
        n(&s["transactions_kept"]) + n(&s["transactions_dropped"]),
        0,
        "{s}"
    );
    assert_eq!(
        s["complete"], true,
        "the window ended before the capture: {s}"
    );
    // What lies after --until is counted too: every request of the capture is accounted for.
    let total: u64 = whole.values().sum();
    let dropped: u64 = s["dropped_requests"]
        .as_object()
        .unwrap()
        .values()
        .map(n)
        .sum();
    assert_eq!(n(&s["read"]["requests"]), total, "{s}");
    assert_eq!(n(&s["kept"]["requests"]) + dropped, total, "{s}");
    assert!(n(&s["dropped_requests"]["after_until"]) > 0, "{s}");

    // A slice starts with its own first record and says what it was cut from.
    let original = inspect_json(&rec.capture)["metadata"]["start_unix_ns"].clone();
    for part in [&early, &late] {
        let i = inspect_json(part);
        assert_eq!(
            i["metadata"]["start_unix_ns"], i["first_ns"],
            "{}",
            i["metadata"]
        );
        let text = mongotape(&["inspect".as_ref(), part.as_os_str()]).stdout;
        let cut = format!("slice       cut from {}: ", rec.capture.display());
        assert!(text.contains(&cut), "{text}");
        // analyze says it as well, in its first line and its JSON.
        let analyzed = mongotape(&["analyze".as_ref(), part.as_os_str()]).stdout;
        let cut = format!(", cut from {}: ", rec.capture.display());
        let head: String = analyzed.lines().take(3).collect::<Vec<_>>().join(" ");
        let head = head.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(head.contains(&cut), "{analyzed}");
        let facts = &analyze_json(part, &[])["capture"];
        assert!(
            facts["slice"]
                .as_str()
                .is_some_and(|s| s.starts_with(&format!("{}: ", rec.capture.display()))),
            "{facts}"
        );
    }
    assert!(n(&inspect_json(&late)["metadata"]["start_unix_ns"]) > n(&original));
}

#[test]
fn slices_by_application_driver_client_connection_namespace_and_command() {
    let rec = record();
    let (orders, s) = rec.slice("orders", &["--app", "orders-app"]);
    assert_eq!(n(&s["transactions_kept"]), 1, "{s}");
    assert!(
        !commands(&orders).contains_key("count") && !commands(&orders).contains_key("aggregate")
    );
    let (reports, s) = rec.slice("reports", &["--app", "reports*"]);
    assert_eq!(n(&s["transactions_kept"]), 0, "{s}");
    assert!(n(&s["dropped_requests"]["connection_filter"]) > 0);
    let i = inspect_json(&reports);
    for c in i["connections"].as_array().unwrap() {
        assert_eq!(c["driver"]["application"], "reports-app", "{c}");
    }
    let (_, s) = rec.slice("pymongo", &["--driver", "pymongo", "--client", "127.0.0.1"]);
    assert_eq!(s["kept"], s["read"], "{s}");
    // One connection, by id.
    let id = i["connections"][0]["id"].as_u64().unwrap().to_string();
    let (one, _) = rec.slice("one", &["--connection", &id]);
    let ids: Vec<Value> = inspect_json(&one)["connections"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].clone())
        .collect();
    assert_eq!(ids, vec![serde_json::json!(id.parse::<u64>().unwrap())]);
    // A namespace: the whole transaction comes with it (commit on admin included).
    let (ns, s) = rec.slice("ns", &["--namespace", "shop.orders"]);
    let kept = commands(&ns);
    assert_eq!(kept["commitTransaction"], 1, "{kept:?}");
    assert!(
        !kept.contains_key("hello") && !kept.contains_key("isMaster"),
        "{kept:?}"
    );
    assert!(n(&s["dropped_requests"]["message_filter"]) > 0);
    // Commands: finds with their getMores.
    let (finds, _) = rec.slice("finds", &["--command", "find,getMore"]);
    let kept = commands(&finds);
    assert!(kept["getMore"] >= 2 && kept.len() == 2, "{kept:?}");
    // Into a server holding the documents (the inserts' own slice replayed first).
    let target = Server::start();
    let (inserts, _) = rec.slice("inserts", &["--command", "insert"]);
    replay(&inserts, &target.uri(), &["--fast"]);
    let r = replay(&finds, &target.uri(), &["--fast"]);
    assert_eq!(r.skipped("cursor_not_found"), 0, "{}", r.describe());
}

#[test]
fn cat_analyze_and_replay_take_the_window_and_say_when_nothing_matches() {
    let rec = record();
    let path = rec.capture.as_os_str();
    // cat: filters that match nothing exit 5 and say so.
    for filter in [&["--app", "nobody"][..], &["--command", "dropDatabase"][..]] {
        let mut args = vec!["cat".as_ref(), path];
        args.extend(filter.iter().map(std::ffi::OsStr::new));
        let c = mongotape(&args);
        assert_eq!(c.status.code(), Some(5), "{filter:?}: {}", c.stderr);
        assert!(
            c.stderr.contains("nothing matched the filters"),
            "{}",
            c.stderr
        );
        assert!(c.stdout.is_empty());
    }
    // cat --since: every line after the mark.
    let since = rec.mark("after_transaction");
    let c = mongotape(&[
        "cat".as_ref(),
        path,
        "--since".as_ref(),
        since.as_ref(),
        "--no-body".as_ref(),
    ]);
    assert!(c.success(), "{}", c.stderr);
    let commands: Vec<String> = c
        .stdout
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["command"]
                .as_str()
                .unwrap_or("")
                .to_owned()
        })
        .collect();
    assert!(
        commands.iter().any(|c| c == "aggregate" || c == "count"),
        "{commands:?}"
    );
    assert!(
        !commands
            .iter()
            .any(|c| c == "commitTransaction" || c == "getMore"),
        "{commands:?}"
    );
    // analyze --app: one application's connections.
    let a = analyze_json(&rec.capture, &["--app", "reports-app"]);
    let whole = analyze_json(&rec.capture, &[]);
    assert!(
        u(&a["summary"]["ops"]) > 0 && u(&a["summary"]["ops"]) < u(&whole["summary"]["ops"]),
        "{a}"
    );
    let e = mongotape(&[
        "analyze".as_ref(),
        path,
        "--app".as_ref(),
        "nobody".as_ref(),
    ]);
    assert_eq!(e.status.code(), Some(5), "{}", e.stderr);
    // replay --app and --until: the window read through the slicer; nothing matched exits 5.
    let target = Server::start();
    let r = replay(
        &rec.capture,
        &target.uri(),
        &["--fast", "--app", "orders-app"],
    );
    assert_eq!(r.count("commitTransaction"), 1, "{}", r.describe());
    assert_eq!(r.count("aggregate"), 0, "{}", r.describe());
    // What the window and the application filter left out is said by reason, as slice says it.
    let until = rec.mark("inside_transaction");
    let args = ["--fast", "--app", "orders-app", "--until", &until];
    let r = replay(&rec.capture, &Server::start().uri(), &args);
    let by = &r.report["filtered_by"];
    assert!(
        u(&by["connection_filter"]) > 0 && u(&by["after_until"]) > 0,
        "{by}"
    );
    let sum: u64 = by.as_object().unwrap().values().map(u).sum();
    assert_eq!(sum, u(&r.report["skipped"]["filtered"]), "{}", r.report);
    let said = format!("{} after --until", u(&by["after_until"]));
    assert!(r.output.stdout.contains(&said), "{}", r.output.stdout);
    let r = try_replay(&rec.capture, &target.uri(), &["--fast", "--app", "nobody"]);
    assert_eq!(r.output.status.code(), Some(5), "{}", r.describe());
    let bad = mongotape(&[
        "cat".as_ref(),
        path,
        "--since".as_ref(),
        "yesterday".as_ref(),
    ]);
    assert_eq!(bad.status.code(), Some(2), "{}", bad.stderr);
    assert!(
        bad.stderr.contains("--since \"yesterday\""),
        "{}",
        bad.stderr
    );
}
