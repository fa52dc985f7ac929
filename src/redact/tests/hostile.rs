//! What a hostile or careless peer can send: documents nested past the depth limit, stored
//! credentials in replies, compressed messages whose declared size lies or that inflate a
//! thousandfold, and code with scope.

use super::*;
use crate::redact::budget::InflateBudget;
use crate::wire::depth::{nested, MAX_DEPTH};

/// An insert whose one document is `{d: <levels-deep document>, s: "secret-value"}`, sent as a
/// document sequence, the way drivers send inserts.
fn deep_insert(levels: usize) -> Vec<u8> {
    let inner = bson::RawDocument::from_bytes(&nested(levels))
        .unwrap()
        .to_owned();
    let mut doc = RawDocumentBuf::new();
    doc.append(bson::raw::cstr!("d"), inner);
    doc.append(bson::raw::cstr!("s"), "secret-value");
    OpMsg {
        flags: MsgFlags::empty(),
        sections: vec![
            Section::Body(rawdoc! { "insert": "deep", "$db": "test" }),
            Section::Sequence {
                identifier: "documents".into(),
                documents: vec![doc],
            },
        ],
        checksum: None,
    }
    .encode(9, 0)
}

#[test]
fn documents_past_the_depth_limit_are_refused_not_walked() {
    // The document is one level below `d`: level 1 is the inserted document itself.
    let at_limit = deep_insert(MAX_DEPTH - 1);
    let out = values()
        .message(&at_limit, Direction::Request)
        .unwrap()
        .unwrap();
    assert!(memchr::memmem::find(&out, b"secret-value").is_none());
    // 7,000 levels overflowed the recorder thread's stack: now an error, on a test thread's
    // stack of 2 MiB.
    for levels in [MAX_DEPTH, 7_000, 100_000] {
        let deep = deep_insert(levels);
        let err = values().message(&deep, Direction::Request).unwrap_err();
        assert!(matches!(err, RedactError::TooDeep(_)), "{levels}: {err}");
        assert_eq!(
            err.reason(),
            "unredactable: nested deeper than the depth limit"
        );
        // Nothing here for the credentials-only mode to remove: kept as it came.
        assert_eq!(
            credentials().message(&deep, Direction::Request).unwrap(),
            None
        );
    }
    // The same depth beside a password: it cannot be removed without walking, so it is refused.
    let deep = bson::RawDocument::from_bytes(&nested(7_000))
        .unwrap()
        .to_owned();
    let mut create = rawdoc! { "createUser": "alice", "pwd": "s3cret" };
    create.append(bson::raw::cstr!("customData"), deep);
    let err = credentials()
        .message(&msg(create), Direction::Request)
        .unwrap_err();
    assert!(matches!(err, RedactError::TooDeep(_)), "{err}");
}

#[test]
fn code_with_scope_has_its_code_hashed_and_its_scope_redacted() {
    let code = bson::Bson::JavaScriptCodeWithScope(bson::JavaScriptCodeWithScope {
        code: "function() { return this.secret_code == x; }".into(),
        scope: bson::doc! { "x": "secret-scope", "n": 7 },
    });
    let doc = RawDocumentBuf::try_from(&bson::doc! { "f": code, "k": 1 }).unwrap();
    let mut find = rawdoc! { "find": "c", "$db": "d" };
    find.append(bson::raw::cstr!("filter"), doc);
    let plain = msg(find);
    let out = values()
        .message(&plain, Direction::Request)
        .unwrap()
        .unwrap();
    assert_eq!(out.len(), plain.len(), "same length");
    assert!(memchr::memmem::find(&out, b"secret").is_none());
    let filter = body_of(&out).get_document("filter").unwrap().to_owned();
    match filter.get("f").unwrap().unwrap() {
        bson::RawBsonRef::JavaScriptCodeWithScope(c) => {
            assert_eq!(c.code.len(), 44);
            assert_eq!(c.scope.get_i32("n").unwrap(), 7);
            assert_eq!(c.scope.get_str("x").unwrap().len(), 12);
        }
        other => panic!("not code with scope: {other:?}"),
    }
}

const SALT: &str = "c2FsdHktc2FsdC0xMjM0NQ==";
const STORED: &str = "c3RvcmVkLWtleS1zZWNyZXQtYWJjZGVmZ2g=";
const SERVER: &str = "c2VydmVyLWtleS1zZWNyZXQtYWJjZGVmZ2g=";

fn user_doc() -> RawDocumentBuf {
    let scram = rawdoc! {
        "iterationCount": 15000, "salt": SALT, "storedKey": STORED, "serverKey": SERVER,
    };
    rawdoc! {
        "_id": "admin.alice", "user": "alice", "db": "admin",
        "credentials": { "SCRAM-SHA-1": scram.clone(), "SCRAM-SHA-256": scram },
        "roles": [{ "role": "root", "db": "admin" }],
        "mechanisms": ["SCRAM-SHA-1", "SCRAM-SHA-256"],
    }
}

fn assert_no_stored_credential(out: &[u8]) {
    for secret in [SALT, STORED, SERVER] {
        assert!(
            memchr::memmem::find(out, secret.as_bytes()).is_none(),
            "{secret} kept"
        );
    }
    assert!(memchr::memmem::find(out, b"iterationCount").is_none());
}

#[test]
fn stored_scram_credentials_are_removed_wherever_they_stand() {
    let users_info = msg(rawdoc! { "users": [user_doc()], "ok": 1.0 });
    let find_reply = msg(rawdoc! {
        "cursor": { "firstBatch": [user_doc()], "id": 0i64, "ns": "admin.system.users" },
        "ok": 1.0,
    });
    let legacy = OpReply {
        response_flags: 0,
        cursor_id: 0,
        starting_from: 0,
        number_returned: 1,
        documents: vec![user_doc()],
    }
    .encode(5, 4);
    let restore = msg(rawdoc! { "insert": "tempusers", "documents": [user_doc()], "$db": "admin" });
    let cases = [
        (users_info, Direction::Reply),
        (find_reply, Direction::Reply),
        (legacy, Direction::Reply),
        (restore, Direction::Request),
    ];
    for (plain, direction) in &cases {
        for bytes in [
            plain.clone(),
            compressed::compress(plain, Compressor::Zstd).unwrap(),
        ] {
            for redactor in [credentials(), values()] {
                let out = redactor.message(&bytes, *direction).unwrap().unwrap();
                let inner = match Message::parse(&out).unwrap().compressor {
                    Some(_) => compressed::decompress(&out).unwrap().1,
                    None => out.clone(),
                };
                assert_no_stored_credential(&inner);
                // The mechanisms stay named; what the user may do stays readable.
                assert!(memchr::memmem::find(&inner, b"\x03SCRAM-SHA-256\0").is_some());
            }
        }
    }
    let kept = body_of(
        &credentials()
            .message(&cases[0].0, Direction::Reply)
            .unwrap()
            .unwrap(),
    );
    let user = kept
        .get_array("users")
        .unwrap()
        .into_iter()
        .next()
        .unwrap()
        .unwrap();
    let user = user.as_document().unwrap();
    assert_eq!(user.get_str("user").unwrap(), "alice");
    let creds = user.get_document("credentials").unwrap();
    assert!(creds.get_document("SCRAM-SHA-1").unwrap().is_empty());
}

/// `createUser` compressed with each compressor, its `uncompressedSize` then changed by `delta`.
fn lying_create_user(compressor: Compressor, delta: i32) -> Vec<u8> {
    let create = msg(rawdoc! {
        "createUser": "mallory", "pwd": "lying-size-password", "roles": [], "$db": "admin",
    });
    let mut packed = compressed::compress(&create, compressor).unwrap();
    let (wrapped, _) = compressed::wrapped(&packed).unwrap();
    compressed::set_declared_size(&mut packed, wrapped.declared as i32 + delta);
    packed
}

#[test]
fn a_compressed_message_whose_size_lies_is_refused_in_both_modes() {
    for compressor in [
        Compressor::Zlib,
        Compressor::Zstd,
        Compressor::Snappy,
        Compressor::Noop,
    ] {
        for delta in [-10, -1, 1, 1000] {
            let lying = lying_create_user(compressor, delta);
            for redactor in [credentials(), values()] {
                assert!(
                    redactor.message(&lying, Direction::Request).is_err(),
                    "{} {delta:+}: {:?} kept",
                    compressor.name(),
                    redactor.mode()
                );
            }
        }
        // The same message without the lie is redacted, not refused.
        let honest = lying_create_user(compressor, 0);
        let out = credentials()
            .message(&honest, Direction::Request)
            .unwrap()
            .unwrap();
        assert!(memchr::memmem::find(&out, b"lying-size").is_none());
    }
    // A clean compressed ping whose size lies: nothing in it, but nothing vouches for it either.
    let mut ping = compressed::compress(&msg(rawdoc! { "ping": 1 }), Compressor::Zstd).unwrap();
    ping[20..24].copy_from_slice(&100i32.to_le_bytes());
    assert!(credentials().message(&ping, Direction::Request).is_err());
}

#[test]
fn a_connection_inflates_within_its_budget() {
    // A 48 MB message of one letter: a small zstd frame that really inflates to its declared size.
    let big = msg(
        rawdoc! { "insert": "c", "$db": "bomb", "documents": [{ "s": "a".repeat(47_999_900) }] },
    );
    let bomb = compressed::compress(&big, Compressor::Zstd).unwrap();
    assert!(bomb.len() < 10_000, "{} bytes", bomb.len());
    // Looked at alone it is checked (and holds nothing to remove).
    assert_eq!(
        credentials().message(&bomb, Direction::Request).unwrap(),
        None
    );
    // On a connection that sent nothing else, it is refused before anything is inflated.
    let mut budget = InflateBudget::default();
    for redactor in [credentials(), values()] {
        let err = redactor
            .message_within(&bomb, Direction::Request, &mut budget)
            .unwrap_err();
        assert!(matches!(err, RedactError::InflateBudget { .. }), "{err}");
    }
    // An ordinary compressed message on the same connection still goes through.
    let sasl = compressed::compress(
        &msg(rawdoc! { "saslContinue": 1, "conversationId": 1, "payload": bin(b"c=biws,p=x") }),
        Compressor::Zstd,
    )
    .unwrap();
    let out = credentials()
        .message_within(&sasl, Direction::Request, &mut budget)
        .unwrap();
    assert!(out.is_some());
}

/// The stricter checks refuse nothing real clients send: every message of the recorded captures
/// (pymongo, mongosh, PHP, node; plain, snappy, zlib, zstd) passes the credential scan and the
/// depth limit on one connection's budget.
#[test]
fn every_recorded_message_is_checked_not_refused() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("captures");
    let mut compressed_seen = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let mut budget = InflateBudget::default();
        let mut reader = CaptureReader::open(&path).unwrap();
        while let Some(record) = reader.next_record() {
            let record = record.unwrap();
            let direction = match record.kind {
                RecordKind::Request => Direction::Request,
                RecordKind::Reply => Direction::Reply,
                _ => continue,
            };
            if Message::parse(&record.payload).is_err() {
                continue;
            }
            if Message::parse(&record.payload)
                .unwrap()
                .compressor
                .is_some()
            {
                compressed_seen += 1;
            }
            for redactor in [credentials(), values()] {
                let out = redactor.message_within(&record.payload, direction, &mut budget);
                assert!(out.is_ok(), "{}: {:?}", path.display(), out.unwrap_err());
            }
        }
    }
    assert!(
        compressed_seen > 100,
        "{compressed_seen} compressed messages"
    );
}
