//! The end state (`docs/state.md`, "The end state") against the real server: pymongo loads the
//! orders directly, an application writes through `record --snapshot 'shop.*'` (only once the
//! snapshot is whole, so every recorded write comes after T0), the snapshot is loaded into fresh
//! servers by Python's `bson` and pymongo, and `replay --check-state` compares each target's end
//! with the recorded one.

mod common;
use common::*;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const LOAD: &str = r#"
import sys
from pymongo import MongoClient
db = MongoClient(sys.argv[1]).shop
db.orders.insert_many([{'_id': i, 'customer': i % 40, 'status': 'new', 'total': i * 1.5} for i in range(2000)])
db.customers.insert_many([{'_id': i, 'name': 'c%d' % i} for i in range(200)])
"#;

/// Inserts 50, updates 30, deletes 20 orders, every `_id` named by the client.
const APP: &str = r#"
import sys
from pymongo import MongoClient
db = MongoClient(sys.argv[1]).shop
for i in range(50):
    db.orders.insert_one({'_id': 100000 + i, 'customer': i, 'status': 'new', 'total': 1.0})
for i in range(30):
    db.orders.update_one({'_id': i}, {'$set': {'status': 'paid'}})
    db.orders.find_one({'customer': i % 40})
db.orders.delete_many({'_id': {'$gte': 30, '$lt': 50}})
db.customers.update_one({'_id': 3}, {'$set': {'name': 'renamed'}})
"#;

/// Every `DB/COLL.bson` of a snapshot folder inserted into a server, read with Python's `bson`;
/// into `DB_SUFFIX` for each suffix given after the server (`_1`, `_2`: the databases of clones).
const LOAD_SNAPSHOT: &str = r#"
import sys, os, bson
from pymongo import MongoClient
root, client, suffixes = sys.argv[1], MongoClient(sys.argv[2]), sys.argv[3:] or ['']
for db in sorted(os.listdir(root)):
    if not os.path.isdir(os.path.join(root, db)):
        continue
    for name in sorted(os.listdir(os.path.join(root, db))):
        if name.endswith('.bson'):
            docs = list(bson.decode_file_iter(open(os.path.join(root, db, name), 'rb')))
            for suffix in suffixes:
                if docs:
                    client[db + suffix][name[:-len('.bson')]].insert_many(docs)
"#;

/// Records `app` through the proxy with `--snapshot 'shop.*'`, starting it once the snapshot is
/// whole. Returns the capture and its snapshot folder.
fn record_app(server: &Server, dir: &Path, app: &str) -> (PathBuf, PathBuf) {
    let capture = dir.join("run.mtape");
    let snapshot = dir.join("run.mtape.snapshot");
    let proxy = Proxy::start_with(server.addr(), &capture, &["--snapshot", "shop.*"]);
    let deadline = Instant::now() + Duration::from_secs(60);
    while !snapshot.join("mongotape-snapshot.json").exists() {
        assert!(Instant::now() < deadline, "no snapshot: {}", proxy.stderr());
        std::thread::sleep(Duration::from_millis(50));
    }
    python(app, &[proxy.uri()]);
    let exit = proxy.stop();
    assert!(exit.status.success(), "{}", exit.stderr);
    (capture, snapshot)
}

/// A fresh server holding the snapshot.
fn loaded(snapshot: &Path) -> Server {
    let server = Server::start();
    python(
        LOAD_SNAPSHOT,
        &[snapshot.display().to_string(), server.uri()],
    );
    server
}

fn state(replay: &Replay) -> &serde_json::Value {
    &replay.report["state"]
}

#[test]
fn a_replay_into_the_snapshot_ends_as_recorded_and_a_changed_target_is_named() {
    let source = Server::start();
    python(LOAD, &[source.uri()]);
    let tmp = tempdir();
    let (capture, snapshot) = record_app(&source, tmp.path(), APP);

    // The recorded end: the capture's state_end record and the files beside the snapshot.
    let seen = inspect_json(&capture);
    let end = &seen["state_end"];
    assert_eq!(end["kind"], "cluster_time", "{seen}");
    assert!(u(&end["t"]) > 0, "{end}");
    let colls = end["collections"].as_array().expect("collections");
    let ns: Vec<&str> = colls.iter().map(|c| c["ns"].as_str().unwrap()).collect();
    assert_eq!(ns, ["shop.customers", "shop.orders"], "{end}");
    assert_eq!(colls[0]["documents"], 200);
    assert_eq!(colls[1]["documents"], 2000 + 50 - 20, "{end}");
    assert_eq!(colls[1]["hash"].as_str().unwrap().len(), 32);
    assert!(
        colls[1]["db_hash"].is_string(),
        "the server answers dbHash: {end}"
    );
    let file: serde_json::Value =
        serde_json::from_slice(&std::fs::read(snapshot.join("mongotape-end.json")).unwrap())
            .unwrap();
    assert_eq!(file["collections"], end["collections"]);
    let digests = python(
        "import sys, bson\nprint(sum(1 for d in bson.decode_file_iter(open(sys.argv[1], 'rb')) \
         if len(d['d']) == 16))",
        &[snapshot.join("mongotape-end.digests").display().to_string()],
    );
    assert_eq!(digests.trim(), "2230", "one digest per document at the end");
    let text = mongotape(&["inspect", &capture.display().to_string()]);
    assert!(
        text.stdout.contains("end state   T1 Timestamp("),
        "{}",
        text.stdout
    );

    // The same writes on the snapshot reproduce the end (the capture's own snapshot folder).
    let equal = loaded(&snapshot);
    let r = try_replay(
        &capture,
        &equal.uri(),
        &[
            "--fast",
            "--idle-sample",
            "0",
            "--check-state",
            "--fail-on-state-divergence",
        ],
    );
    assert_eq!(r.output.status.code(), Some(0), "{}", r.describe());
    assert_eq!(state(&r)["verdict"], "equal", "{}", r.describe());
    assert_eq!(state(&r)["collections"], 2);
    assert!(
        state(&r).get("non_reproducible").is_none(),
        "{}",
        r.describe()
    );
    assert!(
        r.output.stdout.contains("state: equal (2 collections"),
        "{}",
        r.output.stdout
    );

    // A target changed before the replay: one order altered, one added.
    let changed = loaded(&snapshot);
    python(
        "import sys\nfrom pymongo import MongoClient\ndb = MongoClient(sys.argv[1]).shop\n\
         db.orders.update_one({'_id': 500}, {'$set': {'total': -1}})\n\
         db.orders.insert_one({'_id': 'extra'})\n",
        &[changed.uri()],
    );
    let dir = snapshot.display().to_string();
    let r = try_replay(
        &capture,
        &changed.uri(),
        &[
            "--fast",
            "--idle-sample",
            "0",
            "--check-state",
            &dir,
            "--fail-on-state-divergence",
        ],
    );
    assert_eq!(r.output.status.code(), Some(4), "{}", r.describe());
    let s = state(&r);
    assert_eq!(s["verdict"], "differs", "{}", r.describe());
    let differing = s["differing"].as_array().unwrap();
    assert_eq!(differing.len(), 1, "customers ended as recorded: {s}");
    assert_eq!(differing[0]["ns"], "shop.orders");
    assert_eq!(differing[0]["documents"], 2030);
    assert_eq!(differing[0]["other_documents"], 2031);
    let mut ids: Vec<String> = serde_json::from_value(differing[0]["ids"].clone()).unwrap();
    ids.sort();
    assert_eq!(ids, ["\"extra\"", "500"], "{s}");
    assert!(
        r.output
            .stderr
            .contains("FAILED: --fail-on-state-divergence"),
        "{}",
        r.output.stderr
    );
}

#[test]
fn server_generated_values_are_counted_and_their_documents_named() {
    let source = Server::start();
    python(LOAD, &[source.uri()]);
    let tmp = tempdir();
    let app = "import sys, time\nfrom pymongo import MongoClient\n\
               db = MongoClient(sys.argv[1]).shop\n\
               db.orders.update_one({'_id': 7}, {'$currentDate': {'seen': {'$type': 'date'}}})\n\
               db.orders.update_one({'_id': 8}, {'$set': {'status': 'sent'}})\n\
               time.sleep(0.1)\n";
    let (capture, snapshot) = record_app(&source, tmp.path(), app);
    let target = loaded(&snapshot);
    let r = try_replay(
        &capture,
        &target.uri(),
        &["--fast", "--idle-sample", "0", "--check-state"],
    );
    assert_eq!(
        r.output.status.code(),
        Some(0),
        "no gate asked: {}",
        r.describe()
    );
    let s = state(&r);
    assert_eq!(s["non_reproducible"]["$currentDate"], 1, "{s}");
    assert_eq!(s["non_reproducible"].as_object().unwrap().len(), 1, "{s}");
    assert_eq!(s["verdict"], "differs", "the date is the replay's: {s}");
    assert_eq!(s["differing"][0]["ids"], serde_json::json!(["7"]), "{s}");
    assert!(
        r.output
            .stdout
            .contains("non-reproducible writes recorded (server-generated values): 1 $currentDate"),
        "{}",
        r.output.stdout
    );
}

#[test]
fn an_ab_replay_compares_the_targets_ends_with_each_other() {
    let source = Server::start();
    python(LOAD, &[source.uri()]);
    let tmp = tempdir();
    let (capture, snapshot) = record_app(&source, tmp.path(), APP);
    let (a, b, a2) = (loaded(&snapshot), loaded(&snapshot), loaded(&snapshot));
    python(
        "import sys\nfrom pymongo import MongoClient\n\
         MongoClient(sys.argv[1]).shop.customers.delete_one({'_id': 150})\n",
        &[b.uri()],
    );
    let (b_uri, a2_uri) = (b.uri(), a2.uri());
    let r = try_replay(
        &capture,
        &a.uri(),
        &[
            "--target",
            &b_uri,
            "--target",
            &a2_uri,
            "--fast",
            "--idle-sample",
            "0",
            "--check-state",
            "--fail-on-state-divergence",
        ],
    );
    assert_eq!(r.output.status.code(), Some(4), "{}", r.describe());
    let targets = r.report["targets"].as_array().unwrap();
    let verdicts: Vec<&str> = (targets.iter())
        .map(|t| t["replay"]["state"]["verdict"].as_str().unwrap())
        .collect();
    assert_eq!(verdicts, ["equal", "differs", "equal"], "{}", r.describe());
    let pairs = r.report["state_between"]["pairs"].as_array().unwrap();
    assert_eq!(pairs.len(), 2);
    assert_eq!(
        (&pairs[0]["b"], &pairs[0]["verdict"]),
        (&"B".into(), &"differs".into())
    );
    let diff = &pairs[0]["differing"][0];
    assert_eq!(diff["ns"], "shop.customers", "{}", r.describe());
    assert_eq!(
        (u(&diff["documents"]), u(&diff["other_documents"])),
        (200, 199)
    );
    assert_eq!(diff["ids"], serde_json::json!(["150"]));
    assert_eq!(
        (&pairs[1]["b"], &pairs[1]["verdict"]),
        (&"A2".into(), &"equal".into())
    );
    assert!(
        r.output
            .stdout
            .contains("state: A2 ended with the same data as A"),
        "{}",
        r.output.stdout
    );
    assert!(r
        .output
        .stdout
        .contains("state: B ended with other data than A"));
}

#[test]
fn every_database_a_clone_wrote_is_checked() {
    let source = Server::start();
    python(LOAD, &[source.uri()]);
    let tmp = tempdir();
    let (capture, snapshot) = record_app(&source, tmp.path(), APP);
    let target = Server::start();
    python(
        LOAD_SNAPSHOT,
        &[
            snapshot.display().to_string(),
            target.uri(),
            "_1".into(),
            "_2".into(),
        ],
    );
    python(
        "import sys\nfrom pymongo import MongoClient\n\
         MongoClient(sys.argv[1]).shop_2.orders.delete_one({'_id': 1999})\n",
        &[target.uri()],
    );
    let r = try_replay(
        &capture,
        &target.uri(),
        &[
            "--fast",
            "--idle-sample",
            "0",
            "--clones",
            "2",
            "--check-state",
        ],
    );
    assert_eq!(r.output.status.code(), Some(0), "{}", r.describe());
    let s = state(&r);
    assert_eq!(
        s["collections"], 4,
        "two collections in each clone's database: {s}"
    );
    let differing = s["differing"].as_array().unwrap();
    assert_eq!(differing.len(), 1, "{s}");
    assert_eq!(differing[0]["ns"], "shop.orders");
    assert_eq!(differing[0]["other_ns"], "shop_2.orders");
    assert_eq!(differing[0]["other_documents"], 2029);
    assert_eq!(differing[0]["ids"], serde_json::json!(["1999"]));
}
