//! The rewrite rules against the real server: retryable writes and `--repeat`, transactions,
//! cursors remapped across connections and with `--connections`, killCursors.

mod common;

use common::*;

const COUNTER: &str = r#"
import sys
from pymongo import MongoClient
db = MongoClient(sys.argv[1])["rules"]
db.drop_collection("c")
db.c.insert_one({"_id": 1, "n": 0, "log": []})
for i in range(10):
    db.c.update_one({"_id": 1}, {"$inc": {"n": 1}, "$push": {"log": i}})
db.c.insert_one({"_id": 2, "n": 0})
db.c.find_one_and_update({"_id": 2}, {"$inc": {"n": 5}})
db.c.delete_one({"_id": 3})
"#;

fn doc(uri: &str, db: &str, id: i32) -> serde_json::Value {
    let dump = dump_db(uri, db);
    dump["collections"]["c"]["documents"]
        .as_array()
        .and_then(|d| {
            d.iter()
                .find(|d| d["_id"] == serde_json::json!({"$numberInt": id.to_string()}))
                .cloned()
        })
        .unwrap_or(serde_json::Value::Null)
}

/// Every acknowledged write carries lsid + txnNumber; replayed verbatim they would be retries that
/// write nothing. With fresh sessions per pass, `--repeat 2` applies each update twice.
#[test]
fn retryable_writes_apply_again_on_every_pass() {
    let dir = tempdir();
    let a = Server::start();
    let (capture, _) = record_python(&a, dir.path(), "counter", COUNTER);
    let expected = dump_db(&a.uri(), "rules");
    drop(a);

    let b = Server::start();
    let once = replay(&capture, &b.uri(), &["--fast"]);
    assert_eq!(once.divergences(), 0, "{}", once.describe());
    assert_same_db(&expected, &dump_db(&b.uri(), "rules"));

    let c = Server::start();
    let twice = replay(&capture, &c.uri(), &["--repeat", "2"]);
    assert_eq!(twice.report["iterations"], 2, "{}", twice.describe());
    let d1 = doc(&c.uri(), "rules", 1);
    // The drop starts each pass over, so the second pass leaves what one pass leaves...
    assert_eq!(d1["n"], serde_json::json!({"$numberInt": "10"}), "{d1}");
    assert_eq!(twice.count("update"), 20, "{}", twice.describe());
    assert_eq!(twice.count("findAndModify"), 2, "{}", twice.describe());
    // ...and no write was swallowed as a retry: every update modified one document.
    assert_eq!(twice.divergences(), 0, "{}", twice.describe());
}

/// Without the drop, the second pass must really write again: n goes to 20.
#[test]
fn repeat_writes_twice_without_a_reset() {
    let dir = tempdir();
    let a = Server::start();
    python(
        "import sys\nfrom pymongo import MongoClient\nMongoClient(sys.argv[1])['rules'].c.insert_one({'_id': 1, 'n': 0, 'log': []})\n",
        &[a.uri()],
    );
    let (capture, _) = record_python(
        &a,
        dir.path(),
        "incs",
        "import sys\nfrom pymongo import MongoClient\nc = MongoClient(sys.argv[1])['rules'].c\nfor i in range(10):\n    c.update_one({'_id': 1}, {'$inc': {'n': 1}, '$push': {'log': i}})\n",
    );
    drop(a);
    let b = Server::start();
    python(
        "import sys\nfrom pymongo import MongoClient\nMongoClient(sys.argv[1])['rules'].c.insert_one({'_id': 1, 'n': 0, 'log': []})\n",
        &[b.uri()],
    );
    let r = replay(&capture, &b.uri(), &["--repeat", "2", "--fast"]);
    let d = doc(&b.uri(), "rules", 1);
    assert_eq!(
        d["n"],
        serde_json::json!({"$numberInt": "20"}),
        "{d}\n{}",
        r.describe()
    );
    assert_eq!(d["log"].as_array().map(Vec::len), Some(20), "{d}");
}

const TRANSACTIONS: &str = r#"
import sys
from pymongo import MongoClient
client = MongoClient(sys.argv[1])
db = client["rules"]
db.drop_collection("c")
db.create_collection("c")
with client.start_session() as s:
    with s.start_transaction():
        db.c.insert_one({"_id": 1, "v": "committed"}, session=s)
        db.c.insert_one({"_id": 2, "v": "committed"}, session=s)
        db.c.update_one({"_id": 1}, {"$set": {"w": 1}}, session=s)
    s.start_transaction()
    db.c.insert_one({"_id": 3, "v": "aborted"}, session=s)
    s.abort_transaction()
    with s.start_transaction():
        db.c.insert_one({"_id": 4, "v": "committed"}, session=s)
print(sorted(d["_id"] for d in db.c.find()))
"#;

#[test]
fn transactions_commit_and_abort_as_recorded() {
    let dir = tempdir();
    let a = Server::start();
    let (capture, out) = record_python(&a, dir.path(), "txn", TRANSACTIONS);
    assert_eq!(out.trim(), "[1, 2, 4]");
    let expected = dump_db(&a.uri(), "rules");
    drop(a);
    for args in [&[][..], &["--connections", "3", "--fast"][..]] {
        let b = Server::start();
        let r = replay(&capture, &b.uri(), args);
        assert_eq!(r.count("commitTransaction"), 2, "{}", r.describe());
        assert_eq!(r.count("abortTransaction"), 1, "{}", r.describe());
        assert_eq!(r.divergences(), 0, "{args:?}: {}", r.describe());
        assert_same_db(&expected, &dump_db(&b.uri(), "rules"));
    }
}

const CURSORS: &str = r#"
import sys
from pymongo import MongoClient
db = MongoClient(sys.argv[1])["rules"]
db.drop_collection("c")
db.c.insert_many([{"_id": i} for i in range(30)])
seen = []
for _ in range(3):
    seen.append(len(list(db.c.find().sort("_id", 1).batch_size(4))))
cur = db.c.find().batch_size(2)
next(cur); next(cur); next(cur)
cur.close()
agg = list(db.c.aggregate([{"$match": {"_id": {"$gte": 10}}}], batchSize=5))
print(seen, len(agg))
"#;

/// getMore and killCursors get the live cursor ids, also when the requests are spread over
/// several connections (a cursor's getMores follow its find).
#[test]
fn cursors_are_remapped_and_killed() {
    let dir = tempdir();
    let a = Server::start();
    let (capture, out) = record_python(&a, dir.path(), "cursors", CURSORS);
    assert_eq!(out.trim(), "[30, 30, 30] 20");
    drop(a);
    let b = Server::start();
    // The first replay writes the data; the second spreads only the reads over 4 connections.
    let reads = [
        "--connections",
        "4",
        "--fast",
        "--command",
        "find,getMore,killCursors,aggregate",
    ];
    for args in [&[][..], &reads[..]] {
        let r = replay(&capture, &b.uri(), args);
        assert_eq!(r.skipped("cursor_not_found"), 0, "{}", r.describe());
        assert!(r.count("getMore") >= 3 * 7 + 1 + 3, "{}", r.describe());
        assert_eq!(r.count("killCursors"), 1, "{}", r.describe());
        assert_eq!(r.divergences(), 0, "{args:?}: {}", r.describe());
        let errors = r.report["summary"]["overall"]["errors"].as_u64();
        assert_eq!(errors, Some(0), "{}", r.describe());
    }
}

/// Python that speaks OP_MSG on its own sockets, as a driver does under its API: `conn()` opens a
/// connection to the URI in argv[1], `cmd(sock, doc)` sends one command and returns the reply.
const RAW_OP_MSG: &str = r#"
import sys, socket, struct, bson
from pymongo import MongoClient
from urllib.parse import urlparse
uri = sys.argv[1]
host, port = urlparse(uri).netloc.split(":")
def conn():
    return socket.create_connection((host, int(port)))
rid = [0]
def cmd(s, doc):
    rid[0] += 1
    body = b"\x00" + bson.encode(doc)
    msg = struct.pack("<iiii", 16 + 4 + len(body), rid[0], 0, 2013) + struct.pack("<I", 0) + body
    s.sendall(msg)
    head = s.recv(16, socket.MSG_WAITALL)
    n = struct.unpack("<i", head[:4])[0]
    rest = b""
    while len(rest) < n - 16:
        rest += s.recv(n - 16 - len(rest))
    return bson.decode(rest[5:])
"#;

/// One logical session over three connections, as a driver's pool hands them out: retryable
/// inserts with `txnNumber` 1..60 in turns of five per connection, then a transaction whose
/// statements and commit each take another connection.
const SESSION_ACROSS_CONNECTIONS: &str = r#"
import uuid
from bson.binary import Binary, UUID_SUBTYPE
from bson.int64 import Int64
lsid = {"id": Binary(uuid.uuid4().bytes, UUID_SUBTYPE)}
conns = [conn(), conn(), conn()]
ok = 0
for i in range(60):
    r = cmd(conns[i // 5 % 3], {"insert": "s", "documents": [{"_id": i}], "lsid": lsid,
                                "txnNumber": Int64(i + 1), "$db": "rules"})
    ok += r.get("n", 0)
t = {"lsid": lsid, "txnNumber": Int64(61), "autocommit": False, "$db": "rules"}
ok += cmd(conns[0], {"insert": "s", "documents": [{"_id": 60}], "startTransaction": True, **t})["n"]
ok += cmd(conns[1], {"update": "s", "updates": [{"q": {"_id": 0}, "u": {"$set": {"t": 1}}}], **t})["nModified"]
ok += int(cmd(conns[2], {"commitTransaction": 1, **t, "$db": "admin"})["ok"])
print(ok)
"#;

/// A session's retryable writes (`txnNumber` 1, 2, 3 ...) spread over connections must reach the
/// server in that order, or it refuses the older ones (TransactionTooOld), and a transaction's
/// statements must come in order too. Under `--fast` every connection's lane races the others:
/// each request of a session waits for the session's previous one.
#[test]
fn a_session_across_connections_keeps_its_order() {
    let script = format!("{RAW_OP_MSG}{SESSION_ACROSS_CONNECTIONS}");
    let dir = tempdir();
    let a = Server::start();
    let (capture, out) = record_python(&a, dir.path(), "session", &script);
    assert_eq!(out.trim(), "63");
    let expected = dump_db(&a.uri(), "rules");
    drop(a);
    // With one connection open at a time, too: a lane waiting for its session's previous request
    // gives its connection up to the lane that carries it.
    let capped = &["--fast", "--max-open-connections", "1"][..];
    for args in [
        &["--fast"][..],
        &["--fast", "--clones", "2"][..],
        &[][..],
        capped,
    ] {
        let b = Server::start();
        let r = replay(&capture, &b.uri(), args);
        assert_eq!(
            r.report["summary"]["overall"]["errors"],
            0,
            "{args:?}: {}",
            r.describe()
        );
        assert_eq!(r.divergences(), 0, "{args:?}: {}", r.describe());
        let clones = if args.contains(&"--clones") { 2 } else { 1 };
        assert_eq!(r.count("insert"), 61 * clones, "{}", r.describe());
        assert_eq!(r.count("commitTransaction"), clones, "{}", r.describe());
        if args == ["--fast"] {
            let followed = r.report["session_order"]["followed"].as_u64().unwrap_or(0);
            assert!(
                followed > 0,
                "the lanes raced, yet nothing followed its session: {}",
                r.describe()
            );
            assert_same_db(&expected, &dump_db(&b.uri(), "rules"));
        }
        if args == capped {
            assert_eq!(
                r.report["connection_limit"]["peak_open"],
                1,
                "{}",
                r.describe()
            );
            assert_same_db(&expected, &dump_db(&b.uri(), "rules"));
        }
        if clones == 2 {
            for db in ["rules_1", "rules_2"] {
                let copy = dump_db(&b.uri(), db);
                assert_eq!(copy["collections"], expected["collections"], "{db}");
            }
        }
    }
}

/// A find on one connection and its getMore and killCursors on another (sessionless, raw OP_MSG
/// from Python): the getMore waits for the other connection's live cursor id.
#[test]
fn a_cursor_is_continued_on_another_connection() {
    let script = format!(
        "{RAW_OP_MSG}{}",
        r#"
db = MongoClient(uri)["rules"]
db.drop_collection("c")
db.c.insert_many([{"_id": i} for i in range(10)])
a, b = conn(), conn()
r = cmd(a, {"find": "c", "batchSize": 2, "$db": "rules"})
cid = r["cursor"]["id"]
g = cmd(b, {"getMore": cid, "collection": "c", "batchSize": 3, "$db": "rules"})
k = cmd(b, {"killCursors": "c", "cursors": [cid], "$db": "rules"})
print(len(g["cursor"]["nextBatch"]), k["cursorsKilled"] == [cid])
"#
    );
    let dir = tempdir();
    let a = Server::start_with(&["--standalone"]);
    let (capture, out) = record_python(&a, dir.path(), "crossconn", &script);
    assert_eq!(out.trim(), "3 True");
    drop(a);
    let b = Server::start_with(&["--standalone"]);
    python(
        "import sys\nfrom pymongo import MongoClient\nMongoClient(sys.argv[1])['rules'].c.insert_many([{'_id': i} for i in range(10)])\n",
        &[b.uri()],
    );
    for args in [&[][..], &["--fast"][..]] {
        let r = replay(
            &capture,
            &b.uri(),
            &[&["--command", "find,getMore,killCursors"][..], args].concat(),
        );
        assert_eq!(r.count("getMore"), 1, "{}", r.describe());
        assert_eq!(r.skipped("cursor_not_found"), 0, "{}", r.describe());
        assert_eq!(r.divergences(), 0, "{}", r.describe());
        assert_eq!(r.report["connections_opened"], 2, "{}", r.describe());
    }
}

const CREATE_USER: &str = "import sys\nfrom pymongo import MongoClient\nMongoClient(sys.argv[1]).admin.command('createUser', 'bob', pwd='s3cret', roles=['root'])\n";

/// The recorded SCRAM conversation is not replayed; each replay connection authenticates with the
/// credentials in --target.
#[test]
fn scram_authentication_with_the_target_credentials() {
    let dir = tempdir();
    let a = Server::start_with(&["--standalone", "--auth"]);
    python(CREATE_USER, &[a.uri()]);
    let out = dir.path().join("auth.mtape");
    let proxy = Proxy::start(a.addr(), &out);
    let client_uri = format!(
        "mongodb://bob:s3cret@{}/?directConnection=true",
        proxy.addr()
    );
    python(COUNTER, &[client_uri]);
    proxy.stop();
    let auth_uri = |s: &Server| format!("mongodb://bob:s3cret@{}/?authSource=admin", s.addr());
    let expected = dump_db(&auth_uri(&a), "rules");
    drop(a);

    let b = Server::start_with(&["--standalone", "--auth"]);
    python(CREATE_USER, &[b.uri()]);
    let r = replay(&out, &auth_uri(&b), &[]);
    assert!(r.skipped("handshake") >= 2, "{}", r.describe());
    assert_eq!(r.divergences(), 0, "{}", r.describe());
    assert_same_db(&expected, &dump_db(&auth_uri(&b), "rules"));

    // SCRAM-SHA-1 as well, into another fresh server.
    let c = Server::start_with(&["--standalone", "--auth"]);
    python(CREATE_USER, &[c.uri()]);
    let sha1 = format!(
        "mongodb://bob:s3cret@{}/?authSource=admin&authMechanism=SCRAM-SHA-1",
        c.addr()
    );
    let r = replay(&out, &sha1, &[]);
    assert_eq!(r.divergences(), 0, "{}", r.describe());
    assert_same_db(&expected, &dump_db(&auth_uri(&c), "rules"));
    drop(c);

    let wrong = format!("mongodb://bob:nope@{}/", b.addr());
    let r = try_replay(&out, &wrong, &[]);
    assert_eq!(r.output.status.code(), Some(1), "{}", r.describe());
    assert!(
        r.output.stderr.contains("authentication as \"bob\""),
        "{}",
        r.describe()
    );
    assert!(
        !r.output.stderr.contains("nope"),
        "password leaked: {}",
        r.describe()
    );

    // No credentials at all: one clear error, not a divergence per request.
    for args in [&[][..], &["--connections", "4", "--fast"][..]] {
        let r = try_replay(&out, &b.uri(), args);
        assert_eq!(r.output.status.code(), Some(1), "{}", r.describe());
        let error = r.report["error"].as_str().unwrap_or_default();
        assert!(
            error.starts_with("unauthorized: the target") && error.contains("--target"),
            "{}",
            r.describe()
        );
        assert!(r.output.stderr.contains("unauthorized"), "{}", r.describe());
        assert_eq!(r.divergences(), 0, "{}", r.describe());
    }
}
