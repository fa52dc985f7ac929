//! Inline pymongo: snippets run with `python3 -c`, one admin command, and a whole-database dump to
//! compare two servers.

use super::clients::CLIENT_TIMEOUT;
use super::process::{run_command, CommandOutput};
use std::ffi::OsStr;
use std::process::Command;

/// Runs `python3 -c SCRIPT ARGS...` and returns stdout; panics with stderr on failure.
pub fn python<S: AsRef<OsStr>>(script: &str, args: &[S]) -> String {
    let output = try_python(script, args);
    assert!(
        output.success(),
        "python3 failed ({}):\n{}\nscript:\n{script}",
        output.status,
        output.stderr
    );
    output.stdout
}

/// Like [`python`] without judging the outcome.
pub fn try_python<S: AsRef<OsStr>>(script: &str, args: &[S]) -> CommandOutput {
    let mut command = Command::new("python3");
    command.arg("-c").arg(script).args(args);
    run_command(command, CLIENT_TIMEOUT)
}

/// Runs a script that prints one JSON document (extended JSON is fine) and parses it.
pub fn python_json<S: AsRef<OsStr>>(script: &str, args: &[S]) -> serde_json::Value {
    let stdout = python(script, args);
    serde_json::from_str(stdout.trim())
        .unwrap_or_else(|err| panic!("python output is not JSON ({err}):\n{stdout}"))
}

/// Runs one command against the `admin` database with pymongo; the reply as relaxed extended JSON.
pub fn admin_command(uri: &str, command: &str) -> serde_json::Value {
    python_json(
        "import sys, json\n\
         from pymongo import MongoClient\n\
         from bson import json_util\n\
         client = MongoClient(sys.argv[1], serverSelectionTimeoutMS=10000)\n\
         reply = client.admin.command(json.loads(sys.argv[2]))\n\
         print(json_util.dumps(reply, json_options=json_util.RELAXED_JSON_OPTIONS))\n",
        &[uri, command],
    )
}

/// `ping` through pymongo; panics when the server does not answer `ok: 1`.
pub fn ping(uri: &str) {
    let reply = admin_command(uri, r#"{"ping": 1}"#);
    assert_eq!(reply["ok"].as_f64(), Some(1.0), "ping {uri}: {reply}");
}

const DUMP_DB: &str = r#"
import sys
from pymongo import MongoClient
from bson import json_util
from bson.son import SON

client = MongoClient(sys.argv[1], serverSelectionTimeoutMS=10000)
db = client[sys.argv[2]]
collections = SON()
for info in sorted(db.list_collections(), key=lambda info: info["name"]):
    name = info["name"]
    entry = SON([("type", info.get("type", "collection")), ("options", info.get("options", {}))])
    if entry["type"] == "collection":
        indexes = []
        for index in db[name].list_indexes():
            index = SON((k, v) for k, v in index.items() if k not in ("v", "ns"))
            indexes.append(index)
        entry["indexes"] = sorted(indexes, key=lambda index: index["name"])
    # Views have no _id order of their own; their content is compared through the collections.
    if entry["type"] != "view":
        entry["documents"] = list(db[name].find({}).sort("_id", 1))
    collections[name] = entry
print(json_util.dumps(SON([("db", sys.argv[2]), ("collections", collections)]),
                      json_options=json_util.CANONICAL_JSON_OPTIONS))
"#;

/// The whole database as canonical extended JSON text: every collection (sorted by name) with its
/// type, options, indexes (sorted by name, without `v`/`ns`) and documents sorted by `_id` (server
/// order), field order kept. Types survive (`{"$numberInt": "1"}` is not `{"$numberDouble": "1.0"}`).
pub fn dump_db_json(uri: &str, db: &str) -> String {
    python(DUMP_DB, &[uri, db])
}

/// [`dump_db_json`] parsed: `{"db": NAME, "collections": {NAME: {"type", "options", "indexes",
/// "documents"}}}`. Note that `serde_json::Value` compares objects without regard to key order; use
/// [`dump_db_json`] when field order matters.
pub fn dump_db(uri: &str, db: &str) -> serde_json::Value {
    let text = dump_db_json(uri, db);
    serde_json::from_str(text.trim())
        .unwrap_or_else(|err| panic!("dump of {db} is not JSON ({err})"))
}

/// Panics with the first difference between two dumps (collection by collection, document by
/// document), which is far easier to read than two whole dumps.
pub fn assert_same_db(left: &serde_json::Value, right: &serde_json::Value) {
    let empty = serde_json::Map::new();
    let collections = |dump: &serde_json::Value| {
        dump["collections"]
            .as_object()
            .cloned()
            .unwrap_or_else(|| empty.clone())
    };
    let (l, r) = (collections(left), collections(right));
    let lnames: Vec<_> = l.keys().collect();
    let rnames: Vec<_> = r.keys().collect();
    assert_eq!(lnames, rnames, "collections differ");
    for (name, lcoll) in &l {
        let rcoll = &r[name];
        for key in ["type", "options", "indexes"] {
            assert_eq!(lcoll[key], rcoll[key], "collection {name}: {key} differs");
        }
        let ldocs = lcoll["documents"].as_array().cloned().unwrap_or_default();
        let rdocs = rcoll["documents"].as_array().cloned().unwrap_or_default();
        for (i, (ld, rd)) in ldocs.iter().zip(&rdocs).enumerate() {
            assert_eq!(ld, rd, "collection {name}: document #{i} differs");
        }
        assert_eq!(
            ldocs.len(),
            rdocs.len(),
            "collection {name}: document counts differ"
        );
    }
}
