//! A pymongo load in the background and the wait for it to flow: the fault tests start it through
//! the proxy, wait until it has written enough, then do what they test (a signal, a hostile
//! frame) under load, however slowly Python starts on a busy machine.

use super::pymongo::{python, python_json};
use super::tempdir;
use bson::RawBsonRef;
use mongotape::capture::{Record, RecordKind};
use mongotape::wire::{Body, Message, Section};
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// `THREADS` threads insert `{_id: I * THREADS + T, s: "x" * PAD}` into `DB.k` (thread T's I-th
/// insert; an integer, which `--redact values` keeps) one at a time, acknowledged,
/// each until it has done `N` (0: without end), meets its first error or finds the file `STOP`;
/// `FLAG` is created once `AFTER` inserts are acknowledged. Prints
/// `{"acked": [...], "errors": [...]}`. Arguments: URI DB THREADS N AFTER PAD FLAG STOP.
const LOAD: &str = r#"
import os, sys, json, threading
from pymongo import MongoClient
uri, db, threads, n, after, pad, flag, stop = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:7]), *sys.argv[7:9]
# A timeout the URI sets wins (a load that should fail fast once the proxy is gone).
c = MongoClient(uri, **({} if 'serverSelectionTimeoutMS' in uri else {'serverSelectionTimeoutMS': 10000}))
k = c[db].k
acked, errors, lock = [], [], threading.Lock()
def work(t):
    i = 0
    while (n == 0 or i < n) and not os.path.exists(stop):
        try:
            k.insert_one({'_id': i * threads + t, 's': 'x' * pad})
        except Exception as e:
            errors.append(type(e).__name__)
            return
        with lock:
            acked.append(i * threads + t)
            if len(acked) == after:
                open(flag, 'w').close()
        i += 1
ts = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
[t.start() for t in ts]; [t.join() for t in ts]
print(json.dumps({'acked': acked, 'errors': errors}))
"#;

/// What a [`Load`] does.
#[derive(Debug, Clone, Copy)]
pub struct LoadSpec {
    /// The database written (collection `k`).
    pub db: &'static str,
    pub threads: usize,
    /// Inserts per thread; `None`: until the first error (the proxy going away) or
    /// [`Load::stop`].
    pub inserts: Option<usize>,
    /// Acknowledged inserts after which the load is flowing ([`Load::wait_flowing`]).
    pub flowing_after: usize,
    /// Bytes of the `s` string of each document.
    pub pad: usize,
}

/// What the load got acknowledged, and the errors that ended its threads.
#[derive(Debug)]
pub struct LoadResult {
    /// `_id`s of the inserts acknowledged.
    pub acked: Vec<i64>,
    pub errors: Vec<String>,
}

/// A [`LoadSpec`] running against `uri` on a thread of its own.
pub struct Load {
    flag: PathBuf,
    stop: PathBuf,
    thread: JoinHandle<serde_json::Value>,
    _dir: tempfile::TempDir,
}

impl Load {
    pub fn start(uri: String, spec: LoadSpec) -> Load {
        let dir = tempdir();
        let flag = dir.path().join("flowing");
        let stop = dir.path().join("stop");
        let args = [
            uri,
            spec.db.to_string(),
            spec.threads.to_string(),
            spec.inserts.unwrap_or(0).to_string(),
            spec.flowing_after.to_string(),
            spec.pad.to_string(),
            flag.display().to_string(),
            stop.display().to_string(),
        ];
        let thread = std::thread::spawn(move || python_json(LOAD, &args));
        Load {
            flag,
            stop,
            thread,
            _dir: dir,
        }
    }

    /// Returns once the load has had its first `flowing_after` inserts acknowledged; panics after
    /// 60 s.
    pub fn wait_flowing(&self) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while !self.flag.exists() {
            assert!(
                !self.thread.is_finished() || self.flag.exists(),
                "the load ended before it was flowing"
            );
            assert!(
                Instant::now() < deadline,
                "the load was not flowing within 60 s"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Has the load stop after the inserts it has in flight, and waits for it to end.
    pub fn stop(self) -> LoadResult {
        std::fs::write(&self.stop, b"").expect("the load's stop file");
        self.finish()
    }

    /// Waits for the load to end.
    pub fn finish(self) -> LoadResult {
        let out = self.thread.join().expect("the load's thread");
        fn field<T: serde::de::DeserializeOwned>(out: &serde_json::Value, key: &str) -> T {
            serde_json::from_value(out[key].clone()).unwrap_or_else(|e| panic!("{key}: {e}: {out}"))
        }
        LoadResult {
            acked: field(&out, "acked"),
            errors: field(&out, "errors"),
        }
    }
}

/// How many documents `db.collection` holds, through pymongo.
pub fn count_documents(uri: &str, db: &str, collection: &str) -> usize {
    let out = python(
        "import sys\nfrom pymongo import MongoClient\n\
         c = MongoClient(sys.argv[1], serverSelectionTimeoutMS=10000)\n\
         print(c[sys.argv[2]][sys.argv[3]].count_documents({}))\n",
        &[uri, db, collection],
    );
    out.trim()
        .parse()
        .unwrap_or_else(|e| panic!("count of {db}.{collection}: {e}: {out}"))
}

/// The integer `_id`s of every document an `insert` request recorded in `records` carries as its
/// document sequence: what the capture holds of a [`Load`].
pub fn inserted_ids(records: &[Record]) -> BTreeSet<i64> {
    let mut ids = BTreeSet::new();
    for r in records.iter().filter(|r| r.kind == RecordKind::Request) {
        let Ok(Message {
            body: Body::Msg(msg),
            ..
        }) = Message::parse(&r.payload)
        else {
            continue;
        };
        for section in &msg.sections {
            if let Section::Sequence {
                identifier,
                documents,
            } = section
            {
                if identifier == "documents" {
                    ids.extend(documents.iter().filter_map(|d| match d.get("_id") {
                        Ok(Some(RawBsonRef::Int32(id))) => Some(i64::from(id)),
                        Ok(Some(RawBsonRef::Int64(id))) => Some(id),
                        _ => None,
                    }));
                }
            }
        }
    }
    ids
}
