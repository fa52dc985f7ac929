//! `mongotape snapshot` and `record --snapshot` against the real server, the folder read back by
//! an independent reader (Python's `bson` from pymongo, the metadata JSON by mongodump's keys),
//! and the reader side on damaged and mongodump-made folders.

mod common;
use common::*;
use std::path::Path;

/// Two collections (10,000 documents), an index, a validator, a view (so `system.views`
/// exists), and a collection in `admin` that no snapshot may hold.
const LOAD: &str = r#"
import sys
from pymongo import MongoClient
db = MongoClient(sys.argv[1]).shop
db.create_collection('orders', validator={'$jsonSchema': {'bsonType': 'object', 'required': ['customer']}})
db.orders.create_index([('customer', 1)], name='customer_1')
db.orders.insert_many([{'_id': i, 'customer': i % 400, 'total': i * 1.5, 's': 'x' * 40} for i in range(6000)])
db.customers.insert_many([{'_id': i, 'name': 'c%d' % i} for i in range(4000)])
db.create_collection('big_orders', viewOn='orders', pipeline=[{'$match': {'total': {'$gt': 100}}}])
MongoClient(sys.argv[1]).admin.secrets.insert_one({'pwd': 'hunter2'})
"#;

/// Reads a snapshot folder with pymongo's `bson` only: every file, every document's `_id`
/// against the server's, the metadata by its documented keys.
const READ_BACK: &str = r#"
import sys, os, gzip, json
import bson
from bson import json_util
from pymongo import MongoClient
root, uri = sys.argv[1], sys.argv[2]
server = MongoClient(uri).shop
out = {'files': sorted(os.path.join(d, f)[len(root):] for d, _, fs in os.walk(root) for f in fs), 'colls': {}}
for db in sorted(os.listdir(root)):
    if not os.path.isdir(os.path.join(root, db)):
        continue
    for name in sorted(os.listdir(os.path.join(root, db))):
        path = os.path.join(root, db, name)
        opener = gzip.open if name.endswith('.gz') else open
        base = name[:-3] if name.endswith('.gz') else name
        if base.endswith('.metadata.json'):
            meta = json_util.loads(opener(path, 'rb').read())
            c = out['colls'].setdefault(db + '.' + meta['collectionName'], {})
            c['type'] = meta['type']
            c['options'] = sorted(meta['options'].keys())
            c['indexes'] = sorted(i['name'] for i in meta['indexes'])
            c['uuid'] = len(meta['uuid'])
        elif base.endswith('.bson'):
            coll = base[:-len('.bson')]
            ids = sorted(d['_id'] for d in bson.decode_file_iter(opener(path, 'rb')))
            expected = sorted(d['_id'] for d in server[coll].find({}, {'_id': 1}))
            c = out['colls'].setdefault(db + '.' + coll, {})
            c['documents'] = len(ids)
            c['same_ids_as_server'] = ids == expected
print(json.dumps(out))
"#;

fn read_back(dir: &Path, server: &Server) -> serde_json::Value {
    python_json(READ_BACK, &[dir.display().to_string(), server.uri()])
}

fn manifest(dir: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(dir.join("mongotape-snapshot.json")).expect("manifest");
    serde_json::from_str(&text).expect("manifest JSON")
}

#[test]
fn a_snapshot_holds_every_document_index_and_option_and_pythons_bson_reads_it() {
    let server = Server::start();
    python(LOAD, &[server.uri()]);
    let tmp = tempdir();
    for gzip in [false, true] {
        let dir = tmp.path().join(if gzip { "gz" } else { "plain" });
        let mut args = vec![
            "snapshot".to_string(),
            server.uri(),
            "--ns".into(),
            "shop.*".into(),
        ];
        args.extend(["-o".into(), dir.display().to_string()]);
        if gzip {
            args.push("--gzip".into());
        }
        let out = mongotape(&args);
        assert!(out.success(), "snapshot failed: {}", out.stderr);
        let seen = read_back(&dir, &server);
        let colls = &seen["colls"];
        assert_eq!(colls["shop.orders"]["documents"], 6000, "{seen}");
        assert_eq!(colls["shop.customers"]["documents"], 4000, "{seen}");
        for c in ["shop.orders", "shop.customers"] {
            assert_eq!(colls[c]["same_ids_as_server"], true, "{c}: {seen}");
            assert_eq!(colls[c]["type"], "collection");
            assert_eq!(colls[c]["uuid"], 32, "uuid as 32 hex digits: {seen}");
        }
        assert_eq!(
            colls["shop.orders"]["indexes"],
            serde_json::json!(["_id_", "customer_1"])
        );
        assert_eq!(
            colls["shop.orders"]["options"],
            serde_json::json!(["validator"])
        );
        assert_eq!(colls["shop.big_orders"]["type"], "view", "{seen}");
        assert_eq!(
            colls["shop.big_orders"]["options"],
            serde_json::json!(["pipeline", "viewOn"])
        );
        let files = seen["files"].to_string();
        assert!(
            !files.contains("admin") && !files.contains("system."),
            "{files}"
        );
        let suffix = if gzip { ".bson.gz" } else { ".bson\"" };
        assert!(files.contains(&format!("/shop/orders{suffix}")), "{files}");
        let m = manifest(&dir);
        assert_eq!(m["point"]["kind"], "cluster_time", "{m}");
        assert!(u(&m["point"]["t"]) > 0, "{m}");
        assert_eq!(m["documents"], 10_000);
        assert_eq!(m["patterns"], serde_json::json!(["shop.*"]));
        assert!(!tmp
            .path()
            .join(format!("{}.partial", dir.display()))
            .exists());
    }
    // An existing folder is never written over.
    let again = mongotape(&[
        "snapshot",
        &server.uri(),
        "--ns",
        "shop.*",
        "-o",
        &tmp.path().join("plain").display().to_string(),
    ]);
    assert!(
        !again.success() && again.stderr.contains("exists"),
        "{}",
        again.stderr
    );
}

#[test]
fn the_servers_own_namespaces_are_a_usage_error() {
    for ns in [
        "admin.*",
        "local.oplog.rs",
        "config.*",
        "shop.system.views",
        "shop",
    ] {
        let out = mongotape(&[
            "snapshot",
            "127.0.0.1:1",
            "--ns",
            ns,
            "-o",
            "/nonexistent/x",
        ]);
        assert_eq!(out.status.code(), Some(2), "{ns}: {}", out.stderr);
        assert!(out.stderr.contains("--ns"), "{ns}: {}", out.stderr);
    }
}

#[test]
fn a_standalone_is_read_plainly_and_the_point_is_the_wall_clock() {
    let server = Server::start_with(&["--standalone"]);
    python(LOAD, &[server.uri()]);
    let tmp = tempdir();
    let dir = tmp.path().join("s");
    let out = mongotape(&[
        "snapshot",
        &server.uri(),
        "--ns",
        "shop.orders",
        "-o",
        &dir.display().to_string(),
    ]);
    assert!(out.success(), "{}", out.stderr);
    let m = manifest(&dir);
    assert_eq!(m["point"]["kind"], "wall_clock", "{m}");
    assert_eq!(m["documents"], 6000, "{m}");
    assert!(out.stderr.contains("wall clock"), "{}", out.stderr);
}

#[test]
fn record_snapshot_writes_the_snapshot_beside_the_capture_and_t0_into_it() {
    let server = Server::start();
    python(LOAD, &[server.uri()]);
    let tmp = tempdir();
    let capture = tmp.path().join("run.mtape");
    let proxy = Proxy::start_with(server.addr(), &capture, &["--snapshot", "shop.*"]);
    python(
        "import sys\nfrom pymongo import MongoClient\ndb = MongoClient(sys.argv[1]).shop\n\
         for i in range(300):\n    db.orders.insert_one({'_id': 10000 + i, 'customer': i})\n    \
         db.orders.find_one({'customer': i})\n",
        &[proxy.uri()],
    );
    let exit = proxy.stop();
    assert!(exit.status.success(), "{}", exit.stderr);
    let dir = tmp.path().join("run.mtape.snapshot");
    let m = manifest(&dir);
    let orders = u(&m["collections"][1]["documents"]);
    assert_eq!(m["collections"][1]["ns"], "shop.orders", "{m}");
    assert!((6000..=6300).contains(&orders), "{m}");
    let seen = inspect_json(&capture);
    assert_eq!(seen["snapshot"]["t"], m["point"]["t"], "{seen}");
    assert_eq!(seen["snapshot"]["i"], m["point"]["i"], "{seen}");
    assert_eq!(seen["snapshot"]["kind"], "cluster_time");
    let text = mongotape(&["inspect", &capture.display().to_string()]);
    assert!(
        text.stdout.contains("snapshot    T0 Timestamp("),
        "{}",
        text.stdout
    );
}

#[test]
fn a_truncated_bson_is_an_error_naming_the_file_and_an_oplog_gives_the_point() {
    use mongotape::state::SnapshotDir;
    let tmp = tempdir();
    let dump = tmp.path().join("dump");
    // A folder as mongodump --oplog writes it, made by pymongo's bson.
    python(
        "import sys, os, bson, json\nfrom bson import Timestamp\nroot = sys.argv[1]\n\
         os.makedirs(os.path.join(root, 'shop'))\nos.makedirs(os.path.join(root, 'admin'))\n\
         open(os.path.join(root, 'shop', 'orders.bson'), 'wb').write(b''.join(bson.encode({'_id': i, 'x': 'y' * 30}) for i in range(50)))\n\
         open(os.path.join(root, 'shop', 'orders.metadata.json'), 'w').write(json.dumps({'options': {}, 'indexes': [{'v': 2, 'key': {'_id': 1}, 'name': '_id_'}], 'uuid': '', 'collectionName': 'orders'}))\n\
         open(os.path.join(root, 'admin', 'system.version.bson'), 'wb').write(bson.encode({'_id': 'x'}))\n\
         open(os.path.join(root, 'oplog.bson'), 'wb').write(bson.encode({'ts': Timestamp(1700000000, 3)}) + bson.encode({'ts': Timestamp(1700000001, 7)}))\n",
        &[dump.display().to_string()],
    );
    let snap = SnapshotDir::open(&dump).expect("a mongodump folder opens");
    let point = snap.point.clone().expect("the oplog's point");
    assert_eq!(
        (point.kind.as_str(), point.t, point.i),
        ("oplog", 1_700_000_001, 7)
    );
    assert_eq!(snap.collections.len(), 1, "{:?}", snap.collections);
    let orders = &snap.collections[0];
    assert_eq!(orders.metadata.as_ref().unwrap().kind, "collection");
    let count = snap
        .documents(orders)
        .unwrap()
        .unwrap()
        .filter(|d| d.is_ok())
        .count();
    assert_eq!(count, 50);
    let file = dump.join("shop/orders.bson");
    let bytes = std::fs::read(&file).unwrap();
    std::fs::write(&file, &bytes[..bytes.len() - 10]).unwrap();
    let docs: Vec<_> = snap.documents(orders).unwrap().unwrap().collect();
    assert_eq!(docs.iter().filter(|d| d.is_ok()).count(), 49);
    let e = docs.last().unwrap().as_ref().unwrap_err().to_string();
    assert!(
        e.contains("shop/orders.bson: corrupt at byte offset") && e.contains("truncated"),
        "{e}"
    );
}
