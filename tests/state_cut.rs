//! `replay --skip-snapshotted`: a capture replayed into a server restored from its snapshot
//! reproduces the upstream's end state, each recorded write applied exactly once: the writes the
//! snapshot already holds are left out (by `operationTime`, or by the wall clock on a standalone),
//! every later one is replayed. Against the real server, pymongo as the application, the
//! snapshot loaded by an independent pymongo loader (Python's `bson` over `DB/COLL.bson`).

mod common;
use common::*;
use std::path::Path;

/// 10,000 orders and 3,000 customers (or `argv[2]`), written directly (not through the proxy).
const LOAD: &str = r#"
import sys
from pymongo import MongoClient
db = MongoClient(sys.argv[1]).shop
db.orders.create_index([('customer', 1)], name='customer_1')
db.orders.insert_many([{'_id': i, 'customer': i % 400, 'status': 'open', 'qty': 0, 's': 'x' * 40} for i in range(10000)])
db.customers.insert_many([{'_id': i, 'name': 'c%d' % i, 'city': 'city%d' % (i % 30)} for i in range(int(sys.argv[2]) if len(sys.argv) > 2 else 3000)])
"#;

/// Loads a snapshot folder into a server with pymongo alone: each `DB/COLL.metadata.json`'s
/// options and indexes, each `DB/COLL.bson`'s documents (Python's `bson`).
const RESTORE: &str = r#"
import sys, os, json
import bson
from bson import json_util
from pymongo import MongoClient
root, client = sys.argv[1], MongoClient(sys.argv[2])
for dbname in sorted(os.listdir(root)):
    if not os.path.isdir(os.path.join(root, dbname)):
        continue
    db = client[dbname]
    for name in sorted(os.listdir(os.path.join(root, dbname))):
        if not name.endswith('.metadata.json'):
            continue
        meta = json_util.loads(open(os.path.join(root, dbname, name)).read())
        coll = meta['collectionName']
        db.command(dict({'create': coll}, **meta['options']))
        batch = []
        for doc in bson.decode_file_iter(open(os.path.join(root, dbname, coll + '.bson'), 'rb')):
            batch.append(doc)
            if len(batch) == 1000:
                db[coll].insert_many(batch); batch = []
        if batch:
            db[coll].insert_many(batch)
        indexes = [{k: v for k, v in i.items() if k not in ('v', 'ns')} for i in meta['indexes'] if i['name'] != '_id_']
        if indexes:
            db.command({'createIndexes': coll, 'indexes': indexes})
"#;

/// The application: reads customers 0-49 (which no write changes the count of), updates,
/// inserts (customers from 3000) and deletes (customers 200-349), through the proxy. Its writes
/// are idempotent but for their replies, so that one acknowledged while the snapshot read its
/// collection (uncertain, replayed) leaves the end state as it was.
const APP: &str = r#"
import sys
from pymongo import MongoClient
db = MongoClient(sys.argv[1]).shop
for c in range(150):
    assert len(list(db.orders.find({'customer': c % 50}))) > 0
    assert db.customers.find_one({'name': 'c%d' % c}) is not None
    db.orders.update_one({'_id': 2000 + c}, {'$set': {'status': 'done', 'qty': c}})
    db.orders.insert_one({'_id': 50000 + c, 'customer': 3000 + c, 'status': 'new', 'qty': 1})
    db.orders.delete_one({'_id': 9000 + c})
"#;

/// Polls the proxy's port (`argv[2]`) until it listens: the client's first request follows
/// within milliseconds (a driver's own retry waits half a second).
const WAIT_FOR_PORT: &str = r#"
import socket, sys, time
import pymongo
while True:
    try:
        socket.create_connection(('127.0.0.1', int(sys.argv[2])), timeout=1).close()
        break
    except OSError:
        time.sleep(0.002)
"#;

/// Another client inserting meanwhile (customers from 1000, which the application never reads).
const INSERTER: &str = r#"
import sys
from pymongo import MongoClient
db = MongoClient(sys.argv[1]).shop
for i in range(1500):
    db.orders.insert_one({'_id': 100000 + i, 'customer': 1000 + i, 'status': 'new', 'qty': 0})
"#;

fn restore(dir: &Path, server: &Server) {
    python(RESTORE, &[dir.display().to_string(), server.uri()]);
}

fn manifest(dir: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(dir.join("mongotape-snapshot.json")).expect("manifest");
    serde_json::from_str(&text).expect("manifest JSON")
}

/// One document's field, read with pymongo (`null` when there is no such document).
fn field(server: &Server, id: &str, name: &str) -> serde_json::Value {
    python_json(
        "import sys, json\nfrom pymongo import MongoClient\n\
         d = MongoClient(sys.argv[1]).shop.orders.find_one({'_id': json.loads(sys.argv[2])})\n\
         print(json.dumps(d and d.get(sys.argv[3])))\n",
        &[server.uri(), id.to_owned(), name.to_owned()],
    )
}

#[test]
fn a_capture_replayed_into_its_restored_snapshot_ends_as_the_upstream_did() {
    let upstream = Server::start();
    // Customers first and large: the snapshot reads them while the clients write to orders.
    python(LOAD, &[upstream.uri(), "40000".into()]);
    let tmp = tempdir();
    let capture = tmp.path().join("shop.mtape");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    // The clients start first and wait for the proxy: they write as the snapshot starts.
    let uri =
        format!("mongodb://127.0.0.1:{port}/?directConnection=true&serverSelectionTimeoutMS=60000");
    let clients = [APP, INSERTER].map(|script| {
        let (uri, script) = (uri.clone(), format!("{WAIT_FOR_PORT}{script}"));
        std::thread::spawn(move || python(&script, &[uri, port.to_string()]))
    });
    let mut record = std::process::Command::new(mongotape_bin());
    record
        .args(["record", "--listen", &format!("127.0.0.1:{port}")])
        .args([
            "--upstream",
            upstream.addr(),
            "--snapshot",
            "shop.*",
            "--out",
        ])
        .arg(&capture);
    let proxy = Proxy::spawn(record, &capture);
    for client in clients {
        client.join().expect("a client");
    }
    let exit = proxy.stop();
    assert!(exit.status.success(), "{}", exit.stderr);
    let snapshot = tmp.path().join("shop.mtape.snapshot");
    let m = manifest(&snapshot);
    for c in m["collections"].as_array().expect("collections") {
        assert!(c["read_at"]["t"].as_u64().is_some(), "each read point: {m}");
    }
    let target = Server::start();
    restore(&snapshot, &target);
    let run = replay(
        &capture,
        &target.uri(),
        &["--fast", "--skip-snapshotted", "--idle-sample", "0"],
    );
    let cut = &run.report["snapshot_cut"];
    // None but an uncertain write replayed though it was in the snapshot diverges (none at all
    // when the clients wrote only after the snapshot's reads, as they mostly do).
    assert!(
        run.divergences() <= u(&cut["uncertain"]),
        "{}",
        run.describe()
    );
    assert_eq!(cut["method"], "operation_time", "{cut}");
    assert_eq!(
        (cut["t0"]["t"].clone(), cut["t0"]["i"].clone()),
        (m["point"]["t"].clone(), m["point"]["i"].clone())
    );
    let held: u64 = cut["skipped"].as_object().unwrap().values().map(u).sum();
    assert_eq!(run.skipped("before_snapshot"), held, "{cut}");
    // 1,500 + 150 inserts, 150 updates, 150 deletes: each held, replayed or uncertain.
    let placed = held + u(&cut["replayed"]) + u(&cut["uncertain"]);
    assert_eq!(placed, 1950, "{cut}");
    // The collections read later than T0 (a server that does not keep atClusterTime) are named.
    for c in m["collections"].as_array().unwrap() {
        let later = c["read_at"] != serde_json::json!({"t": m["point"]["t"], "i": m["point"]["i"]});
        let ns = c["ns"].as_str().unwrap();
        assert_eq!(
            cut["read_points"].get(ns).is_some(),
            later,
            "{ns}: {cut} {m}"
        );
    }
    assert_same_db(
        &dump_db(&upstream.uri(), "shop"),
        &dump_db(&target.uri(), "shop"),
    );
    assert!(
        run.output.stdout.contains("snapshot cut at Timestamp("),
        "{}",
        run.output.stdout
    );
}

/// Records writes before and after a `mongotape snapshot` taken mid-recording; returns the
/// upstream, the capture and the snapshot (in `tmp`).
fn record_around_a_snapshot(
    server_args: &[&str],
    tmp: &Path,
) -> (Server, std::path::PathBuf, std::path::PathBuf) {
    let upstream = Server::start_with(server_args);
    python(LOAD, &[upstream.uri()]);
    let capture = tmp.join("around.mtape");
    let snapshot = tmp.join("mid.snapshot");
    let proxy = Proxy::start(upstream.addr(), &capture);
    let writes =
        "import sys\nfrom pymongo import MongoClient\ndb = MongoClient(sys.argv[1]).shop\n\
                  db.orders.insert_one({'_id': sys.argv[2], 'customer': 5000})\n\
                  db.orders.update_one({'_id': 1}, {'$inc': {'qty': 1}})\n\
                  db.orders.delete_one({'_id': int(sys.argv[3])})\n";
    python(writes, &[proxy.uri(), "before".into(), "2".into()]);
    let out = mongotape(&[
        "snapshot",
        &upstream.uri(),
        "--ns",
        "shop.*",
        "-o",
        &snapshot.display().to_string(),
    ]);
    assert!(out.success(), "{}", out.stderr);
    python(writes, &[proxy.uri(), "after".into(), "3".into()]);
    let exit = proxy.stop();
    assert!(exit.status.success(), "{}", exit.stderr);
    (upstream, capture, snapshot)
}

/// A write acknowledged just before the snapshot and one just after are each applied exactly
/// once with `--skip-snapshotted`; without it the one before is applied twice.
fn each_write_once(server_args: &[&str], method: &str) {
    let tmp = tempdir();
    let (upstream, capture, snapshot) = record_around_a_snapshot(server_args, tmp.path());
    let kind = if method == "wall_clock" {
        "wall_clock"
    } else {
        "cluster_time"
    };
    assert_eq!(manifest(&snapshot)["point"]["kind"], kind);
    let cut_target = Server::start_with(server_args);
    restore(&snapshot, &cut_target);
    let dir = snapshot.display().to_string();
    let args = [
        "--fast",
        "--idle-sample",
        "0",
        "--skip-snapshotted",
        dir.as_str(),
    ];
    let run = replay(&capture, &cut_target.uri(), &args);
    let cut = &run.report["snapshot_cut"];
    assert_eq!(run.divergences(), 0, "{}", run.describe());
    assert_eq!(cut["method"], method, "{cut}");
    assert_eq!(
        cut["skipped"],
        serde_json::json!({"delete": 1, "insert": 1, "update": 1}),
        "{cut}"
    );
    assert_eq!((u(&cut["replayed"]), u(&cut["uncertain"])), (3, 0), "{cut}");
    assert_eq!(run.skipped("before_snapshot"), 3, "{}", run.describe());
    let by_wall_clock = if method == "wall_clock" { 6 } else { 0 };
    assert_eq!(u(&cut["by_wall_clock"]), by_wall_clock, "{cut}");
    assert_eq!(field(&cut_target, "1", "qty"), 2, "two $inc, each once");
    assert_eq!(field(&cut_target, "\"before\"", "customer"), 5000);
    assert_eq!(field(&cut_target, "\"after\"", "customer"), 5000);
    assert_same_db(
        &dump_db(&upstream.uri(), "shop"),
        &dump_db(&cut_target.uri(), "shop"),
    );
    // The contrast: the same capture into the same restored state, nothing left out.
    let twice = Server::start_with(server_args);
    restore(&snapshot, &twice);
    let all = replay(&capture, &twice.uri(), &["--fast", "--idle-sample", "0"]);
    assert!(
        all.report.get("snapshot_cut").is_none(),
        "{}",
        all.describe()
    );
    assert_eq!(
        field(&twice, "1", "qty"),
        3,
        "the $inc before the snapshot applied twice"
    );
    // The insert before the snapshot is a duplicate, the delete before it deletes nothing.
    for command in ["insert", "delete"] {
        let diverged = &all.report["divergences"][command]["count"];
        assert_eq!(diverged, 1, "{command}: {}", all.describe());
    }
}

#[test]
fn a_write_just_before_and_just_after_t0_is_each_applied_once() {
    each_write_once(&[], "operation_time");
}

/// Each shard decides the cut over the whole capture: the merged report counts it once.
#[test]
fn sharded_replays_cut_once_and_merge_the_count() {
    let tmp = tempdir();
    let (upstream, capture, snapshot) = record_around_a_snapshot(&[], tmp.path());
    let target = Server::start();
    restore(&snapshot, &target);
    let dir = snapshot.display().to_string();
    let mut reports = Vec::new();
    for shard in ["0/2", "1/2"] {
        let report = tmp.path().join(format!("shard-{}.json", &shard[..1]));
        let path = report.display().to_string();
        let args = [
            "--fast",
            "--idle-sample",
            "0",
            "--shard",
            shard,
            "-o",
            &path,
        ];
        let out = mongotape(
            &[
                &[
                    "replay",
                    &capture.display().to_string(),
                    "-t",
                    &target.uri(),
                    "--skip-snapshotted",
                    &dir,
                ][..],
                &args[..],
            ]
            .concat(),
        );
        assert!(out.success(), "{}", out.stderr);
        reports.push(path);
    }
    let merged = tmp.path().join("merged.json");
    let merged_path = merged.display().to_string();
    let out = mongotape(
        &[
            &["merge"][..],
            &[&reports[0][..], &reports[1][..]],
            &["--quiet", "--report", &merged_path],
        ]
        .concat(),
    );
    assert!(out.success(), "{}", out.stderr);
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&merged).unwrap()).unwrap();
    assert_eq!(report["skipped"]["before_snapshot"], 3, "{report}");
    assert_eq!(report["snapshot_cut"]["replayed"], 3, "{report}");
    assert_same_db(
        &dump_db(&upstream.uri(), "shop"),
        &dump_db(&target.uri(), "shop"),
    );
}

#[test]
fn without_operation_times_the_wall_clock_places_the_writes() {
    each_write_once(&["--standalone"], "wall_clock");
}

#[test]
fn a_redacted_capture_replays_into_its_redacted_snapshot_without_divergence() {
    let upstream = Server::start();
    python(LOAD, &[upstream.uri()]);
    let tmp = tempdir();
    let capture = tmp.path().join("red.mtape");
    let extra = ["--redact", "values", "--snapshot", "shop.*"];
    let proxy = Proxy::start_with(upstream.addr(), &capture, &extra);
    python(
        "import sys\nfrom pymongo import MongoClient\ndb = MongoClient(sys.argv[1]).shop\n\
         for c in range(100):\n\
         \x20   assert db.customers.find_one({'name': 'c%d' % c}) is not None\n\
         \x20   assert len(list(db.customers.find({'city': 'city%d' % (c % 30)}))) > 0\n\
         \x20   assert len(list(db.orders.find({'status': 'open', 'customer': c}))) == 25\n\
         \x20   db.customers.update_one({'name': 'c%d' % c}, {'$set': {'city': 'moved'}})\n",
        &[proxy.uri()],
    );
    let exit = proxy.stop();
    assert!(exit.status.success(), "{}", exit.stderr);
    let snapshot = tmp.path().join("red.mtape.snapshot");
    assert_eq!(manifest(&snapshot)["redaction"], "values");
    // No plain value is left in the snapshot's documents; their lengths are kept.
    let seen = python_json(
        "import sys, json, bson\n\
         docs = list(bson.decode_file_iter(open(sys.argv[1] + '/shop/customers.bson', 'rb')))\n\
         print(json.dumps({'n': len(docs), 'plain': sum(d['name'].startswith('c') and d['name'][1:].isdigit() for d in docs),\n\
         \x20   'same_length': all(len(d['name']) == len('c%d' % d['_id']) for d in docs)}))\n",
        &[snapshot.display().to_string()],
    );
    assert_eq!(seen["n"], 3000, "{seen}");
    assert!(u(&seen["plain"]) < 10, "hashed names: {seen}");
    assert_eq!(seen["same_length"], true, "{seen}");
    let target = Server::start();
    restore(&snapshot, &target);
    let run = replay(
        &capture,
        &target.uri(),
        &["--fast", "--idle-sample", "0", "--skip-snapshotted"],
    );
    assert_eq!(run.divergences(), 0, "{}", run.describe());
    assert_eq!(run.count("find"), 300, "{}", run.describe());
    let cut = &run.report["snapshot_cut"];
    assert_eq!(
        u(&cut["replayed"]) + run.skipped("before_snapshot"),
        100,
        "{cut}"
    );
}

/// Inserts through the proxy (`argv[1]`) until the file `argv[2]` exists, then 20 more.
const WRITER: &str = r#"
import os, sys
from pymongo import MongoClient
db = MongoClient(sys.argv[1]).shop
i, after = 0, 0
while after < 20 and i < 200000:
    db.orders.insert_one({'_id': 200000 + i, 'customer': 7000, 'status': 'new', 'qty': 0})
    i += 1
    if os.path.exists(sys.argv[2]):
        after += 1
"#;

/// The test server does not keep `atClusterTime` for the later reads of a snapshot session: it
/// reads each collection at the time of its first `find`. The manifest says so per collection,
/// and the cut places each collection's writes against its own point.
#[test]
fn a_collection_read_after_t0_is_cut_at_its_own_point() {
    let upstream = Server::start();
    python(LOAD, &[upstream.uri(), "40000".into()]);
    let tmp = tempdir();
    let capture = tmp.path().join("busy.mtape");
    let stop = tmp.path().join("stop");
    let proxy = Proxy::start(upstream.addr(), &capture);
    let writer = {
        let args = [proxy.uri(), stop.display().to_string()];
        std::thread::spawn(move || python(WRITER, &args))
    };
    // The writer is writing before the snapshot starts, and until after it ends.
    python(
        "import sys, time\nfrom pymongo import MongoClient\nc = MongoClient(sys.argv[1]).shop.orders\n\
         while c.count_documents({'customer': 7000}) < 50:\n    time.sleep(0.01)\n",
        &[upstream.uri()],
    );
    let snapshot = tmp.path().join("busy.snapshot");
    let dir = snapshot.display().to_string();
    let out = mongotape(&["snapshot", &upstream.uri(), "--ns", "shop.*", "-o", &dir]);
    assert!(out.success(), "{}", out.stderr);
    std::fs::write(&stop, b"").unwrap();
    writer.join().expect("the writer");
    assert!(proxy.stop().status.success());
    let m = manifest(&snapshot);
    let point = (u(&m["point"]["t"]), u(&m["point"]["i"]));
    let orders = &m["collections"][1];
    assert_eq!(orders["ns"], "shop.orders", "{m}");
    let read_at = (u(&orders["read_at"]["t"]), u(&orders["read_at"]["i"]));
    assert!(read_at > point, "orders read after T0: {m}");
    assert!(out.stderr.contains("not at T0"), "{}", out.stderr);
    let target = Server::start();
    restore(&snapshot, &target);
    let args = [
        "--fast",
        "--idle-sample",
        "0",
        "--skip-snapshotted",
        dir.as_str(),
    ];
    let run = replay(&capture, &target.uri(), &args);
    let cut = &run.report["snapshot_cut"];
    assert!(cut["read_points"]["shop.orders"].is_string(), "{cut}");
    assert!(
        u(&cut["skipped"]["insert"]) >= 50 && u(&cut["replayed"]) >= 20,
        "{cut}"
    );
    // The server reads somewhere between sending the read and its answer: an insert acknowledged
    // meanwhile is uncertain and replayed, a DuplicateKey when it was in the snapshot after all.
    // Nothing else diverges.
    let diverged = &run.report["divergences"];
    assert!(
        run.divergences() <= u(&cut["uncertain"]),
        "{}",
        run.describe()
    );
    assert_eq!(
        run.divergences(),
        diverged["insert"]["count"].as_u64().unwrap_or(0),
        "{diverged}"
    );
    assert_same_db(
        &dump_db(&upstream.uri(), "shop"),
        &dump_db(&target.uri(), "shop"),
    );
}
