//! `mongotape restore` and `replay --restore` against the real server: pymongo loads the starting
//! data directly, an application writes through `record --snapshot 'shop.*'`, and the snapshot is
//! loaded into fresh servers; pymongo compares what they hold. Bad input (a truncated `.bson`, a
//! metadata file that lies, a target that refuses writes) gives clear errors and exit statuses.

mod common;
use common::*;
use std::path::Path;

/// 10,000 orders with two indexes and a validator, 400 customers, and a capped log.
const LOAD: &str = r#"
import sys
from pymongo import MongoClient
db = MongoClient(sys.argv[1]).shop
db.create_collection('orders', validator={'$jsonSchema': {'bsonType': 'object', 'required': ['customer']}})
db.orders.insert_many([{'_id': i, 'customer': i % 400, 'status': ['new', 'paid', 'sent'][i % 3], 'ts': i, 'total': i * 1.5, 's': 'x' * 120} for i in range(10000)])
db.orders.create_index([('customer', 1)], name='customer_1')
db.orders.create_index([('status', 1), ('ts', 1)], name='status_1_ts_1')
db.customers.insert_many([{'_id': i, 'name': 'c%d' % i} for i in range(400)])
db.create_collection('log', capped=True, size=1 << 20)
db.log.insert_many([{'n': i} for i in range(100)])
"#;

/// What a server holds of `shop`: per collection its count, index names, options and a digest
/// of its documents in `_id` order.
const DESCRIBE: &str = r#"
import sys, json, hashlib
from pymongo import MongoClient
from bson import json_util, encode
db = MongoClient(sys.argv[1]).shop
out = {}
for info in db.list_collections():
    name = info['name']
    if name.startswith('system.'):
        continue
    c = db[name]
    h = hashlib.sha256()
    for d in c.find({}, sort=[('_id', 1)]) if not info['options'].get('capped') else c.find({}):
        d.pop('_id') if info['options'].get('capped') else None
        h.update(encode(d))
    out[name] = {'count': c.count_documents({}), 'indexes': sorted(i['name'] for i in c.list_indexes()),
                 'options': json.loads(json_util.dumps(info['options'])), 'digest': h.hexdigest()}
print(json.dumps(out, sort_keys=True))
"#;

/// The application: reads, updates, inserts and deletes on the starting data.
const APP: &str = r#"
import sys
from pymongo import MongoClient
db = MongoClient(sys.argv[1]).shop
for i in range(150):
    db.orders.find_one({'customer': i})
    list(db.orders.find({'status': 'paid', 'ts': {'$gt': 9000 + i}}).limit(5))
    db.orders.update_one({'_id': i}, {'$inc': {'total': 1}})
    db.orders.insert_one({'_id': 20000 + i, 'customer': i, 'status': 'new', 'ts': 20000 + i})
    db.orders.delete_one({'_id': 5000 + i})
    db.customers.find_one({'_id': i})
"#;

fn describe(server: &Server) -> serde_json::Value {
    python_json(DESCRIBE, &[server.uri()])
}

fn snapshot_of(server: &Server, dir: &Path) {
    let out = mongotape(&[
        "snapshot",
        &server.uri(),
        "--ns",
        "shop.*",
        "-o",
        &dir.display().to_string(),
    ]);
    assert!(out.success(), "snapshot: {}", out.stderr);
}

#[test]
fn restore_gives_a_fresh_server_equal_collections_indexes_and_options() {
    let source = Server::start();
    python(LOAD, &[source.uri()]);
    let tmp = tempdir();
    let dir = tmp.path().join("start.snapshot");
    snapshot_of(&source, &dir);
    let target = Server::start();
    // Something in the way: dropped first.
    python(
        "import sys\nfrom pymongo import MongoClient\nMongoClient(sys.argv[1]).shop.orders.insert_one({'_id': -1})\n",
        &[target.uri()],
    );
    let out = mongotape(&[
        "restore",
        &dir.display().to_string(),
        "-t",
        &target.uri(),
        "--json",
        "--batch-size",
        "700",
    ]);
    assert!(out.success(), "restore: {}", out.stderr);
    let report: serde_json::Value = serde_json::from_str(&out.stdout).expect("JSON");
    assert_eq!(report["kind"], "restore", "{report}");
    assert_eq!(report["documents"], 10_500, "{report}");
    assert_eq!(report["indexes"], 2, "{report}");
    assert!(report["docs_per_s"].as_f64() > Some(0.0), "{report}");
    assert_schema("restore", &report);
    let (want, got) = (describe(&source), describe(&target));
    assert_eq!(want, got, "the restored server differs");
    assert_eq!(got["orders"]["count"], 10_000);
    assert_eq!(
        got["orders"]["indexes"],
        serde_json::json!(["_id_", "customer_1", "status_1_ts_1"])
    );
    assert!(got["orders"]["options"]["validator"].is_object(), "{got}");
    assert_eq!(got["log"]["options"]["capped"], true, "{got}");
    // --db-map: into another database, the text summary on stdout.
    let out = mongotape(&[
        "restore",
        &dir.display().to_string(),
        "-t",
        &target.uri(),
        "--db-map",
        "shop:copy",
    ]);
    assert!(out.success(), "{}", out.stderr);
    assert!(
        out.stdout.contains("10500 documents") && out.stdout.contains("documents/s"),
        "{}",
        out.stdout
    );
    let n = python(
        "import sys\nfrom pymongo import MongoClient\nprint(MongoClient(sys.argv[1]).copy.orders.count_documents({}))\n",
        &[target.uri()],
    );
    assert_eq!(n.trim(), "10000");
}

/// Records the application through `record --snapshot 'shop.*'` over the loaded data.
fn recorded(tmp: &Path) -> (Server, std::path::PathBuf) {
    let source = Server::start();
    python(LOAD, &[source.uri()]);
    let capture = tmp.join("run.mtape");
    let proxy = Proxy::start_with(source.addr(), &capture, &["--snapshot", "shop.*"]);
    // The snapshot's T0 comes before the application's writes.
    std::thread::sleep(std::time::Duration::from_millis(1500));
    python(APP, &[proxy.uri()]);
    let exit = proxy.stop();
    assert!(exit.status.success(), "{}", exit.stderr);
    assert!(tmp.join("run.mtape.snapshot").is_dir());
    (source, capture)
}

#[test]
fn replay_restore_reproduces_the_replies_and_an_empty_target_does_not() {
    let tmp = tempdir();
    let (source, capture) = recorded(tmp.path());
    let fresh = Server::start();
    let restored = replay(&capture, &fresh.uri(), &["--fast", "--restore"]);
    assert_eq!(restored.divergences(), 0, "{}", restored.describe());
    let r = &restored.report["restore"];
    assert_eq!(r["loads"].as_array().map(Vec::len), Some(1), "{r}");
    assert_eq!(r["documents"], 10_500, "{r}");
    assert!(r["docs_per_s"].as_f64() > Some(0.0), "{r}");
    assert!(
        restored.output.stdout.contains("load 1: 10500 documents"),
        "{}",
        restored.output.stdout
    );
    // The end state equals the source's.
    assert_eq!(describe(&source), describe(&fresh));

    let empty = Server::start();
    let plain = replay(&capture, &empty.uri(), &["--fast"]);
    assert!(
        plain.divergences() > 100,
        "an empty target should diverge: {}",
        plain.describe()
    );
    assert!(plain.report.get("restore").is_none());

    // Two passes, each from the snapshot.
    let twice = Server::start();
    let run = replay(
        &capture,
        &twice.uri(),
        &["--fast", "--repeat", "2", "--restore"],
    );
    assert_eq!(run.report["iterations"], 2, "{}", run.describe());
    assert_eq!(run.divergences(), 0, "{}", run.describe());
    let loads = run.report["restore"]["loads"].as_array().cloned().unwrap();
    assert_eq!(loads.len(), 2, "one load per pass");
    assert!(loads.iter().all(|l| l["documents"] == 10_500));
}

#[test]
fn ab_replay_restores_every_target_and_the_setup_changes_b_s_plan() {
    let tmp = tempdir();
    let (_source, capture) = recorded(tmp.path());
    let (a, b, a2) = (Server::start(), Server::start(), Server::start());
    let setup = tmp.path().join("setup.json");
    std::fs::write(
        &setup,
        r#"[{"target": "B", "db": "shop", "command": {"dropIndexes": "orders", "index": "status_1_ts_1"}}]"#,
    )
    .unwrap();
    let setup_arg = setup.display().to_string();
    let run = ab_replay(
        &capture,
        &[&a.uri(), &b.uri(), &a2.uri()],
        &[
            "--fast",
            "--explain",
            "--restore",
            "--restore-setup",
            &setup_arg,
        ],
    );
    for label in ["A", "B", "A2"] {
        let r = &run.target(label)["replay"]["restore"];
        assert_eq!(r["documents"], 10_500, "{label}: {r}");
    }
    assert_eq!(
        run.target("B")["replay"]["restore"]["setup"][0]["command"],
        "dropIndexes"
    );
    assert_eq!(
        run.target("A")["replay"]["restore"]["setup"],
        serde_json::json!([])
    );
    let plans = run.report["plans"].as_array().cloned().unwrap_or_default();
    let on = |t: &str| {
        plans
            .iter()
            .find(|p| {
                let shape = p["shape"].as_str().unwrap_or_default();
                shape.starts_with("find shop.orders") && shape.contains("ts:") && p["target"] == t
            })
            .unwrap_or_else(|| panic!("no plan of the status/ts find on {t}: {plans:#?}"))
    };
    let (pa, pb) = (on("A"), on("B"));
    assert!(pa["plan"].as_str().unwrap().contains("IXSCAN"), "A: {pa}");
    assert!(pb["plan"].as_str().unwrap().contains("COLLSCAN"), "B: {pb}");
    assert_eq!(pb["plan_changed"], true, "{pb}");
    // A setup entry for a target the run does not have is refused before anything starts.
    std::fs::write(
        &setup,
        r#"[{"target": "C", "db": "shop", "command": {"ping": 1}}]"#,
    )
    .unwrap();
    let bad = try_replay(
        &capture,
        &a.uri(),
        &["--restore", "--restore-setup", &setup_arg],
    );
    assert_eq!(bad.output.status.code(), Some(2), "{}", bad.describe());
    assert!(
        bad.output.stderr.contains("target \"C\""),
        "{}",
        bad.output.stderr
    );
}

#[test]
fn bad_snapshots_and_refusing_targets_are_clear_errors() {
    let source = Server::start();
    python(LOAD, &[source.uri()]);
    let tmp = tempdir();
    let good = tmp.path().join("good");
    snapshot_of(&source, &good);
    let target = Server::start();
    let restore = |dir: &Path, uri: &str| {
        mongotape(&["restore", &dir.display().to_string(), "-t", uri, "-q"])
    };
    let copy = |name: &str| {
        let dir = tmp.path().join(name);
        let status = std::process::Command::new("cp")
            .args([
                "-r",
                &good.display().to_string(),
                &dir.display().to_string(),
            ])
            .status()
            .unwrap();
        assert!(status.success());
        dir
    };
    // A truncated .bson: exit 3, naming the file and the offset.
    let cut = copy("cut");
    let file = cut.join("shop/orders.bson");
    let bytes = std::fs::read(&file).unwrap();
    std::fs::write(&file, &bytes[..bytes.len() - 7]).unwrap();
    let out = restore(&cut, &target.uri());
    assert_eq!(out.status.code(), Some(3), "{}", out.stderr);
    assert!(
        out.stderr
            .contains("shop/orders.bson: corrupt at byte offset")
            && out.stderr.contains("truncated"),
        "{}",
        out.stderr
    );
    // Metadata that is not JSON: exit 1, naming the file.
    let lies = copy("lies");
    std::fs::write(lies.join("shop/orders.metadata.json"), "{\"options\": [").unwrap();
    let out = restore(&lies, &target.uri());
    assert_eq!(out.status.code(), Some(1), "{}", out.stderr);
    assert!(
        out.stderr.contains("orders.metadata.json") && out.stderr.contains("not JSON"),
        "{}",
        out.stderr
    );
    // An index specification the server refuses: exit 1, naming the collection and the file.
    let refused = copy("refused");
    let meta = refused.join("shop/customers.metadata.json");
    let text = std::fs::read_to_string(&meta).unwrap();
    let mut json: serde_json::Value = serde_json::from_str(&text).unwrap();
    json["indexes"]
        .as_array_mut()
        .unwrap()
        .push(serde_json::json!({"v": 2, "key": {"name": "sideways"}, "name": "bad"}));
    std::fs::write(&meta, json.to_string()).unwrap();
    let out = restore(&refused, &target.uri());
    assert_eq!(out.status.code(), Some(1), "{}", out.stderr);
    assert!(
        out.stderr.contains("createIndexes on shop.customers")
            && out.stderr.contains("customers.metadata.json"),
        "{}",
        out.stderr
    );
    // A target that refuses writes (authentication required, none given).
    let locked = Server::start_with(&["--auth"]);
    let out = restore(&good, &locked.uri());
    assert_eq!(out.status.code(), Some(1), "{}", out.stderr);
    assert!(
        out.stderr.contains("target server") && out.stderr.contains("the target refuses writes"),
        "{}",
        out.stderr
    );
    // Not a snapshot at all.
    let out = restore(&tmp.path().join("nothing"), &target.uri());
    assert_eq!(out.status.code(), Some(1), "{}", out.stderr);
    assert!(out.stderr.contains("not a snapshot"), "{}", out.stderr);
}
