//! What the redactor must survive and must never let through, against the real server and
//! pymongo: an insert nesting 7,000 levels under `--redact values` (it overflowed the recorder
//! thread's stack and aborted the proxy), and SCRAM stored credentials in `usersInfo` replies and
//! reads of `admin.system.users` in the default mode.

mod common;

use bson::RawDocumentBuf;
use common::*;
use mongotape::capture::{GapEvent, Record, RecordKind};
use mongotape::wire::depth::nested;
use mongotape::wire::{FrameSplitter, Message, MsgFlags, OpMsg, ReplyInfo, Section};
use std::io::Write;
use std::net::TcpStream;
use std::time::Duration;

/// An insert of one document `{d: <levels deep>}` on `hostile.deep`, as a document sequence.
fn nested_insert(levels: usize) -> Vec<u8> {
    let mut doc = RawDocumentBuf::new();
    let inner = RawDocumentBuf::from_bytes(nested(levels)).unwrap();
    doc.append(bson::raw::cstr!("d"), inner);
    OpMsg {
        flags: MsgFlags::empty(),
        sections: vec![
            Section::Body(bson::rawdoc! { "insert": "deep", "$db": "hostile" }),
            Section::Sequence {
                identifier: "documents".into(),
                documents: vec![doc],
            },
        ],
        checksum: None,
    }
    .encode(77, 0)
}

/// The gap records whose reason is `reason`.
fn gaps(records: &[Record], reason: &str) -> Vec<GapEvent> {
    records
        .iter()
        .filter(|r| r.kind == RecordKind::Gap)
        .map(|r| r.event::<GapEvent>().unwrap())
        .filter(|g| g.reason == reason)
        .collect()
}

#[test]
fn a_nested_insert_is_left_out_and_the_proxy_goes_on_recording_the_others() {
    // The real server refuses it ("exceeds 180 levels of nesting") and lives on.
    let server = Server::start_with(&["--standalone"]);
    let dir = tempdir();
    let out = dir.path().join("nested.mtape");
    let proxy = Proxy::start_with(server.addr(), &out, &["--redact", "values"]);
    let inserter = Load::start(
        proxy.uri(),
        LoadSpec {
            db: "hostile",
            threads: 1,
            inserts: Some(1500),
            flowing_after: 100,
            pad: 12,
        },
    );
    inserter.wait_flowing();
    let deep = nested_insert(7_000);
    assert!(deep.len() > 56_000, "{} bytes", deep.len());
    for _ in 0..3 {
        let mut s = TcpStream::connect(proxy.addr()).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        s.write_all(&deep).unwrap();
        let reply = read_frame(&mut s, &mut FrameSplitter::new()).expect("the server answers");
        let info = ReplyInfo::of(&Message::parse(&reply).unwrap());
        assert_eq!(info.ok, Some(1.0), "the server answers with a write error");
        assert_eq!(info.write_errors, 1);
    }
    let acked = inserter.finish().acked;
    assert_eq!(acked.len(), 1500);
    raw_ping(proxy.addr());
    let exit = proxy.stop();
    assert!(exit.status.success(), "{}", exit.stderr);
    assert!(
        exit.stderr.contains("3 unredactable msgs not recorded"),
        "{}",
        exit.stderr
    );
    // Logged once per connection, each naming the limit.
    let logged = exit
        .stderr
        .lines()
        .filter(|l| l.contains("was left out of the capture") && l.contains("200 levels"))
        .count();
    assert_eq!(logged, 3, "{}", exit.stderr);

    let records = capture_records(&out);
    assert_eq!(records.last().unwrap().kind, RecordKind::End);
    assert_eq!(
        inserted_ids(&records),
        acked.into_iter().collect(),
        "every acknowledged insert recorded"
    );
    let left_out = gaps(&records, "unredactable: nested deeper than the depth limit");
    assert_eq!(left_out.len(), 3);
    assert!(left_out.iter().all(|g| g.dropped_messages == 1));
    assert!(left_out
        .iter()
        .all(|g| g.dropped_bytes == deep.len() as u64));
    let inspect = inspect_json(&out);
    assert_eq!(inspect["dropped_messages"], 3, "{inspect}");
}

/// Creates a user (localhost exception), then as that user reads its stored credentials with
/// `usersInfo` and from `admin.system.users`; prints every salt and key it saw.
const STORED_CREDENTIALS: &str = r#"
import sys, json
from pymongo import MongoClient
addr = sys.argv[1]
MongoClient(f"mongodb://{addr}/?directConnection=true").admin.command(
    "createUser", "carol", pwd="Correct-Horse-9", roles=["root"])
c = MongoClient(f"mongodb://{addr}/?directConnection=true", username="carol",
                password="Correct-Horse-9", authSource="admin")
seen = []
def collect(creds):
    for mech, v in creds.items():
        seen.extend([v["salt"], v["storedKey"], v["serverKey"]])
users = c.admin.command("usersInfo", "carol", showCredentials=True)["users"]
collect(users[0]["credentials"])
try:
    docs = list(c.admin["system.users"].find({"user": "carol"}))
    for d in docs:
        collect(d["credentials"])
    found = len(docs)
except Exception as e:
    found = "refused: %s" % e
print(json.dumps({"secrets": seen, "system_users": found}))
"#;

#[test]
fn stored_scram_credentials_never_reach_the_capture() {
    let server = Server::start_with(&["--auth"]);
    let dir = tempdir();
    let out = dir.path().join("stored.mtape");
    let proxy = Proxy::start(server.addr(), &out);
    let seen = python_json(STORED_CREDENTIALS, &[proxy.addr()]);
    let exit = proxy.stop();
    assert!(exit.status.success(), "{}", exit.stderr);
    let secrets: Vec<String> = seen["secrets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_string())
        .collect();
    // SCRAM-SHA-1 and SCRAM-SHA-256, from usersInfo (and again from system.users, if served).
    assert!(secrets.len() >= 6, "{seen}");
    eprintln!("admin.system.users find: {}", seen["system_users"]);

    let records = capture_records(&out);
    let mut users_info_replies = 0;
    for r in &records {
        for secret in &secrets {
            assert!(
                memchr::memmem::find(&r.payload, secret.as_bytes()).is_none(),
                "a stored credential ({secret}) in a {:?} record",
                r.kind
            );
        }
        if r.kind == RecordKind::Reply
            && memchr::memmem::find(&r.payload, b"\x03SCRAM-SHA-256\0").is_some()
        {
            users_info_replies += 1;
        }
    }
    assert!(
        users_info_replies >= 1,
        "the replies are recorded, their credentials emptied"
    );
}
