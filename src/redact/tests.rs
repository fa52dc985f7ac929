use super::*;
use crate::capture::{CaptureReader, RecordKind};
use crate::wire::legacy::{OpQuery, OpReply};
use crate::wire::{Compressor, MsgFlags, OpMsg, Section};
use bson::{rawdoc, Binary, RawDocumentBuf};

fn msg(body: RawDocumentBuf) -> Vec<u8> {
    OpMsg::with_body(body, MsgFlags::empty()).encode(7, 0)
}

fn body_of(bytes: &[u8]) -> RawDocumentBuf {
    match Message::parse(bytes).unwrap().body {
        Body::Msg(m) => m.body().clone(),
        other => panic!("not OP_MSG: {other:?}"),
    }
}

fn bin(bytes: &[u8]) -> Binary {
    Binary {
        subtype: bson::spec::BinarySubtype::Generic,
        bytes: bytes.to_vec(),
    }
}

fn credentials() -> Redactor {
    Redactor::new(Redaction::Credentials)
}

fn values() -> Redactor {
    Redactor::with_key(Redaction::Values, ValueKey::from_bytes([9; 32]))
}

const SCRAM_FIRST: &[u8] = b"n,,n=alice,r=fyko+d2lbbFgONRv9qkxdawL";

#[test]
fn sasl_payloads_are_removed_both_ways() {
    let start = msg(rawdoc! {
        "saslStart": 1, "mechanism": "SCRAM-SHA-256", "payload": bin(SCRAM_FIRST),
        "autoAuthorize": 1, "$db": "admin",
    });
    let out = credentials()
        .message(&start, Direction::Request)
        .unwrap()
        .unwrap();
    let body = body_of(&out);
    assert_eq!(body.get_binary("payload").unwrap().bytes, b"");
    assert_eq!(body.get_str("mechanism").unwrap(), "SCRAM-SHA-256");
    assert_eq!(body.get_str("$db").unwrap(), "admin");
    assert!(memchr::memmem::find(&out, b"alice").is_none());

    let reply = msg(rawdoc! {
        "conversationId": 1, "done": false,
        "payload": bin(b"r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,s=QSXCR+Q6sek8bf92,i=4096"),
        "ok": 1.0,
    });
    let out = credentials()
        .message(&reply, Direction::Reply)
        .unwrap()
        .unwrap();
    assert_eq!(body_of(&out).get_binary("payload").unwrap().bytes, b"");
    assert_eq!(body_of(&out).get_i32("conversationId").unwrap(), 1);
}

#[test]
fn passwords_and_speculative_authentication_are_removed() {
    let create = msg(rawdoc! {
        "createUser": "alice", "pwd": "s3cret-pässword", "roles": ["root"], "$db": "admin",
    });
    let out = credentials()
        .message(&create, Direction::Request)
        .unwrap()
        .unwrap();
    assert_eq!(body_of(&out).get_str("pwd").unwrap(), "");
    assert_eq!(body_of(&out).get_str("createUser").unwrap(), "alice");

    let hello = msg(rawdoc! {
        "hello": 1, "client": { "driver": { "name": "PyMongo", "version": "4.20" } },
        "speculativeAuthenticate": {
            "saslStart": 1, "mechanism": "SCRAM-SHA-256", "payload": bin(SCRAM_FIRST), "db": "admin",
        },
        "$db": "admin",
    });
    let out = credentials()
        .message(&hello, Direction::Request)
        .unwrap()
        .unwrap();
    let body = body_of(&out);
    let spec = body.get_document("speculativeAuthenticate").unwrap();
    assert_eq!(spec.get_binary("payload").unwrap().bytes, b"");
    assert_eq!(spec.get_str("mechanism").unwrap(), "SCRAM-SHA-256");
    assert_eq!(
        body.get_document("client").unwrap(),
        body_of(&hello).get_document("client").unwrap()
    );
}

#[test]
fn other_messages_keep_their_exact_bytes() {
    let insert = msg(rawdoc! { "insert": "c", "documents": [{ "key": "payload" }], "$db": "d" });
    assert_eq!(
        credentials().message(&insert, Direction::Request).unwrap(),
        None
    );
    let ping = msg(rawdoc! { "ping": 1, "$db": "admin" });
    assert_eq!(
        credentials().message(&ping, Direction::Request).unwrap(),
        None
    );
}

#[test]
fn compressed_and_legacy_handshakes_are_redacted() {
    let plain =
        msg(rawdoc! { "saslContinue": 1, "conversationId": 1, "payload": bin(b"c=biws,p=proof") });
    for compressor in [Compressor::Zlib, Compressor::Zstd, Compressor::Snappy] {
        let packed = compressed::compress(&plain, compressor).unwrap();
        let out = credentials()
            .message(&packed, Direction::Request)
            .unwrap()
            .unwrap();
        let message = Message::parse(&out).unwrap();
        assert_eq!(message.compressor, Some(compressor));
        assert_eq!(body_of(&out).get_binary("payload").unwrap().bytes, b"");
    }

    let is_master = OpQuery {
        flags: 0,
        full_collection_name: "admin.$cmd".into(),
        number_to_skip: 0,
        number_to_return: -1,
        query: rawdoc! {
            "$query": { "isMaster": 1, "speculativeAuthenticate": { "payload": bin(SCRAM_FIRST) } },
            "$readPreference": { "mode": "primaryPreferred" },
        },
        return_fields_selector: None,
    }
    .encode(3);
    let out = credentials()
        .message(&is_master, Direction::Request)
        .unwrap()
        .unwrap();
    let Body::Query(q) = Message::parse(&out).unwrap().body else {
        panic!("not OP_QUERY")
    };
    let inner = q.query.get_document("$query").unwrap();
    let spec = inner.get_document("speculativeAuthenticate").unwrap();
    assert_eq!(spec.get_binary("payload").unwrap().bytes, b"");
    assert!(q.query.get_document("$readPreference").is_ok());

    let reply = OpReply {
        response_flags: 8,
        cursor_id: 0,
        starting_from: 0,
        number_returned: 1,
        documents: vec![rawdoc! {
            "ismaster": true, "speculativeAuthenticate": { "conversationId": 1, "payload": bin(b"r=x,s=salt,i=4096") },
            "ok": 1.0,
        }],
    }
    .encode(4, 3);
    let out = credentials()
        .message(&reply, Direction::Reply)
        .unwrap()
        .unwrap();
    assert!(memchr::memmem::find(&out, b"salt").is_none());
}

#[test]
fn values_keep_length_type_equality_and_structure() {
    let insert = OpMsg {
        flags: MsgFlags::empty(),
        sections: vec![
            Section::Body(rawdoc! {
                "insert": "people", "ordered": true, "$db": "crm",
                "lsid": { "id": Binary { subtype: bson::spec::BinarySubtype::Uuid, bytes: vec![5; 16] } },
                "txnNumber": 3i64,
            }),
            Section::Sequence {
                identifier: "documents".into(),
                documents: vec![
                    rawdoc! { "_id": bson::oid::ObjectId::from_bytes([1; 12]), "name": "alice smith", "age": 41, "tag": "$vip" },
                    rawdoc! { "_id": 2, "name": "alice smith", "blob": bin(b"\x00\x01secret") },
                ],
            },
        ],
        checksum: None,
    }
    .encode(9, 0);
    let out = values()
        .message(&insert, Direction::Request)
        .unwrap()
        .unwrap();
    assert_eq!(out.len(), insert.len(), "sizes survive");
    let Body::Msg(m) = Message::parse(&out).unwrap().body else {
        panic!()
    };
    let body = m.body();
    assert_eq!(body.get_str("insert").unwrap(), "people");
    assert_eq!(body.get_str("$db").unwrap(), "crm");
    assert_eq!(
        body.get_document("lsid")
            .unwrap()
            .get_binary("id")
            .unwrap()
            .bytes,
        &[5; 16]
    );
    let Section::Sequence { documents, .. } = &m.sections[1] else {
        panic!()
    };
    let (a, b) = (&documents[0], &documents[1]);
    assert_eq!(
        a.get_object_id("_id").unwrap(),
        bson::oid::ObjectId::from_bytes([1; 12])
    );
    assert_eq!(a.get_i32("age").unwrap(), 41);
    let name = a.get_str("name").unwrap();
    assert_ne!(name, "alice smith");
    assert_eq!(name.len(), "alice smith".len());
    assert_eq!(name, b.get_str("name").unwrap(), "equal values stay equal");
    assert_ne!(
        a.get_str("tag").unwrap(),
        "$vip",
        "inserted data is not an expression"
    );
    assert_eq!(b.get_binary("blob").unwrap().bytes.len(), 8);
    assert!(memchr::memmem::find(&out, b"alice").is_none());
    assert!(memchr::memmem::find(&out, b"secret").is_none());

    // The same value in a query hashes alike, so the query still finds the document.
    let find = msg(rawdoc! {
        "find": "people", "filter": { "name": "alice smith", "age": { "$gt": 3 }, "x": "$y" },
        "sort": { "age": 1 }, "hint": "name_1", "$db": "crm",
    });
    let out = values()
        .message(&find, Direction::Request)
        .unwrap()
        .unwrap();
    let filter = body_of(&out).get_document("filter").unwrap().to_owned();
    assert_eq!(filter.get_str("name").unwrap(), name);
    assert_eq!(
        filter.get_document("age").unwrap().get_i32("$gt").unwrap(),
        3
    );
    assert_eq!(
        filter.get_str("x").unwrap(),
        "$y",
        "a field path in a query stays"
    );
    assert_eq!(body_of(&out).get_str("hint").unwrap(), "name_1");
}

#[test]
fn values_keep_what_a_pipeline_and_a_cursor_need() {
    let aggregate = msg(rawdoc! {
        "aggregate": "blog", "$db": "d", "cursor": {},
        "pipeline": [
            { "$match": { "author": "Alex" } },
            { "$lookup": { "from": "comment", "localField": "_id", "foreignField": "blog", "as": "comments" } },
            { "$unwind": "$comments" },
            { "$group": { "_id": "$author", "n": { "$sum": 1 } } },
            { "$out": "summary" },
        ],
    });
    let out = values()
        .message(&aggregate, Direction::Request)
        .unwrap()
        .unwrap();
    let body = body_of(&out);
    let stages: Vec<_> = body
        .get_array("pipeline")
        .unwrap()
        .into_iter()
        .map(|s| s.unwrap().as_document().unwrap().to_owned())
        .collect();
    assert_ne!(
        stages[0]
            .get_document("$match")
            .unwrap()
            .get_str("author")
            .unwrap(),
        "Alex"
    );
    let lookup = stages[1].get_document("$lookup").unwrap();
    assert_eq!(lookup.get_str("from").unwrap(), "comment");
    assert_eq!(lookup.get_str("as").unwrap(), "comments");
    assert_eq!(stages[2].get_str("$unwind").unwrap(), "$comments");
    assert_eq!(
        stages[3]
            .get_document("$group")
            .unwrap()
            .get_str("_id")
            .unwrap(),
        "$author"
    );
    assert_eq!(stages[4].get_str("$out").unwrap(), "summary");

    let reply = msg(rawdoc! {
        "cursor": { "firstBatch": [{ "_id": 1, "author": "Alex", "p": "$5" }], "id": 77i64, "ns": "d.blog" },
        "ok": 1.0,
    });
    let out = values().message(&reply, Direction::Reply).unwrap().unwrap();
    let cursor = body_of(&out).get_document("cursor").unwrap().to_owned();
    assert_eq!(cursor.get_str("ns").unwrap(), "d.blog");
    assert_eq!(cursor.get_i64("id").unwrap(), 77);
    let doc = cursor
        .get_array("firstBatch")
        .unwrap()
        .get(0)
        .unwrap()
        .unwrap();
    let doc = doc.as_document().unwrap();
    assert_ne!(doc.get_str("author").unwrap(), "Alex");
    assert_ne!(
        doc.get_str("p").unwrap(),
        "$5",
        "returned data is not an expression"
    );
}

/// Every message the three real clients sent and received redacts, re-parses, keeps its size
/// when it was not compressed, and hashes equal strings alike across the capture.
#[test]
fn every_recorded_message_redacts() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("captures");
    let redactor = values();
    let mut redacted = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let mut reader = CaptureReader::open(&path).unwrap();
        while let Some(record) = reader.next_record() {
            let record = record.unwrap();
            let direction = match record.kind {
                RecordKind::Request => Direction::Request,
                RecordKind::Reply => Direction::Reply,
                _ => continue,
            };
            let Ok(original) = Message::parse(&record.payload) else {
                continue;
            };
            let Some(out) = redactor.message(&record.payload, direction).unwrap() else {
                continue;
            };
            redacted += 1;
            let again = Message::parse(&out).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            assert_eq!(again.op_code(), original.op_code());
            assert_eq!(again.compressor, original.compressor);
            if original.compressor.is_none() {
                assert_eq!(out.len(), record.payload.len(), "{}", path.display());
            }
        }
    }
    assert!(redacted > 1000, "only {redacted} messages redacted");
}

#[test]
fn damaged_input_is_an_error_never_a_panic() {
    let insert = msg(rawdoc! { "insert": "c", "documents": [{ "s": "payload" }], "$db": "d" });
    for cut in 0..insert.len() {
        let _ = values().message(&insert[..cut], Direction::Request);
        let _ = credentials().message(&insert[..cut], Direction::Request);
    }
    for i in 16..insert.len() {
        let mut bad = insert.clone();
        bad[i] ^= 0xff;
        let _ = values().message(&bad, Direction::Request);
        let _ = credentials().message(&bad, Direction::Request);
    }
}

#[test]
fn undecodable_compression_is_left_out_in_both_modes() {
    let ping = msg(rawdoc! { "ping": 1, "$db": "admin" });
    let mut corrupt = compressed::compress(&ping, Compressor::Zstd).unwrap();
    let end = corrupt.len() - 6;
    for b in &mut corrupt[25..end] {
        *b ^= 0x5a;
    }
    // What does not inflate cannot be checked for a credential: the recorder leaves it out.
    assert!(credentials().message(&corrupt, Direction::Request).is_err());
    assert!(values().message(&corrupt, Direction::Request).is_err());
}

mod hostile;
