use super::*;
use crate::wire::legacy::OpQuery;
use crate::wire::op_msg::MsgFlags;
use bson::{rawdoc, RawDocumentBuf};

/// A hello reply as a primary of a three-member set (one passive, one arbiter) sends it.
fn set_hello() -> RawDocumentBuf {
    rawdoc! {
        "topologyVersion": { "processId": bson::oid::ObjectId::from_bytes([7; 12]), "counter": 6_i64 },
        "hosts": ["db0.example.net:27017", "DB1.example.net:27017"],
        "passives": ["db2.example.net:27017"],
        "arbiters": ["arb.example.net:27017"],
        "setName": "rs0",
        "setVersion": 3,
        "isWritablePrimary": true,
        "secondary": false,
        "primary": "db0.example.net:27017",
        "me": "db0.example.net:27017",
        "electionId": bson::oid::ObjectId::from_bytes([1; 12]),
        "lastWrite": { "opTime": { "ts": bson::Timestamp { time: 1, increment: 2 }, "t": 1_i64 } },
        "maxBsonObjectSize": 16_777_216,
        "maxMessageSizeBytes": 48_000_000,
        "maxWriteBatchSize": 100_000,
        "localTime": bson::DateTime::from_millis(1_700_000_000_000),
        "logicalSessionTimeoutMinutes": 30,
        "connectionId": 12,
        "minWireVersion": 0,
        "maxWireVersion": 27,
        "readOnly": false,
        "ok": 1.0,
        "$clusterTime": { "clusterTime": bson::Timestamp { time: 1, increment: 2 }, "signature": { "keyId": 0_i64 } },
        "operationTime": bson::Timestamp { time: 1, increment: 2 },
    }
}

fn full_map() -> AddressMap {
    let mut map = AddressMap::new();
    map.insert("db0.example.net:27017", "proxy:7000");
    map.insert("db1.example.net", "proxy:7001");
    map.insert("db2.example.net:27017", "proxy:7002");
    map.insert("arb.example.net:27017", "proxy:7003");
    map
}

fn op_msg(doc: RawDocumentBuf, flags: MsgFlags, request_id: i32, response_to: i32) -> Vec<u8> {
    OpMsg::with_body(doc, flags).encode(request_id, response_to)
}

fn body(message: &[u8]) -> RawDocumentBuf {
    OpMsg::parse(message).unwrap().body().clone()
}

/// Every field but the address ones is unchanged, in order; the address ones are as expected.
fn assert_rewritten(before: &RawDocumentBuf, after: &RawDocumentBuf) {
    let b: Vec<_> = before.iter().map(|e| e.unwrap()).collect();
    let a: Vec<_> = after.iter().map(|e| e.unwrap()).collect();
    assert_eq!(b.len(), a.len());
    for ((kb, vb), (ka, va)) in b.iter().zip(&a) {
        assert_eq!(kb, ka);
        if !["hosts", "passives", "arbiters", "primary", "me"].contains(&kb.as_str()) {
            assert_eq!(vb, va, "{}", kb.as_str());
        }
    }
    let strings = |k: &str| -> Vec<String> {
        after
            .get_array(k)
            .unwrap()
            .into_iter()
            .map(|v| v.unwrap().as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(strings("hosts"), ["proxy:7000", "proxy:7001"]);
    assert_eq!(strings("passives"), ["proxy:7002"]);
    assert_eq!(strings("arbiters"), ["proxy:7003"]);
    assert_eq!(after.get_str("primary").unwrap(), "proxy:7000");
    assert_eq!(after.get_str("me").unwrap(), "proxy:7000");
}

#[test]
fn op_msg_hello_of_a_three_member_set() {
    let reply = op_msg(set_hello(), MsgFlags::empty(), 55, 9);
    let out = rewrite_hello_reply(&reply, &full_map()).unwrap();
    assert_eq!(out.replaced, 6);
    assert!(out.unserved.is_empty());
    let new = out.message.unwrap();
    let header = MsgHeader::parse(&new).unwrap().unwrap();
    assert_eq!((header.request_id, header.response_to), (55, 9));
    assert_eq!(header.message_length, new.len());
    assert_rewritten(&set_hello(), &body(&new));
}

#[test]
fn op_query_is_master_answered_by_op_reply() {
    let request = OpQuery {
        flags: 0,
        full_collection_name: "admin.$cmd".into(),
        number_to_skip: 0,
        number_to_return: -1,
        query: rawdoc! { "isMaster": 1, "helloOk": true, "client": { "driver": { "name": "nodejs" } } },
        return_fields_selector: None,
    }
    .encode(3);
    assert!(is_hello_request(&request));
    let mut doc = set_hello();
    doc.append(bson::raw::cstr!("ismaster"), true);
    let reply = OpReply {
        response_flags: 8,
        cursor_id: 0,
        starting_from: 0,
        number_returned: 1,
        documents: vec![doc.clone()],
    }
    .encode(77, 3);
    let out = rewrite_hello_reply(&reply, &full_map()).unwrap();
    let new = OpReply::parse(&out.message.unwrap()).unwrap();
    assert_eq!(new.response_flags, 8);
    assert_rewritten(&doc, &new.documents[0]);
}

#[test]
fn compressed_reply_is_recompressed_with_its_compressor() {
    let reply = op_msg(set_hello(), MsgFlags::empty(), 5, 4);
    for c in [
        Compressor::Noop,
        Compressor::Snappy,
        Compressor::Zlib,
        Compressor::Zstd,
    ] {
        let packed = compressed::compress(&reply, c).unwrap();
        let out = rewrite_hello_reply(&packed, &full_map()).unwrap();
        let new = out.message.unwrap();
        assert_eq!(
            MsgHeader::parse(&new).unwrap().unwrap().op_code,
            OpCode::Compressed
        );
        let (used, inner) = compressed::decompress(&new).unwrap();
        assert_eq!(used, c);
        let header = MsgHeader::parse(&inner).unwrap().unwrap();
        assert_eq!((header.request_id, header.response_to), (5, 4));
        assert_rewritten(&set_hello(), &body(&inner));
    }
}

#[test]
fn streaming_hello_keeps_more_to_come_and_checksum() {
    let flags = MsgFlags::MORE_TO_COME | MsgFlags::CHECKSUM_PRESENT;
    let reply = op_msg(set_hello(), flags, 101, 100);
    let out = rewrite_hello_reply(&reply, &full_map()).unwrap();
    let new = OpMsg::parse(&out.message.unwrap()).unwrap();
    assert!(new.more_to_come());
    assert!(new.checksum.is_some(), "checksum recomputed and verified");
    assert_rewritten(&set_hello(), new.body());
}

#[test]
fn unserved_addresses_are_reported_and_nothing_mapped_means_unchanged() {
    let mut partial = AddressMap::new();
    partial.insert("db0.example.net:27017", "proxy:7000");
    let reply = op_msg(set_hello(), MsgFlags::empty(), 1, 1);
    let out = rewrite_hello_reply(&reply, &partial).unwrap();
    assert_eq!(out.replaced, 3);
    assert_eq!(
        out.unserved,
        [
            "DB1.example.net:27017",
            "db2.example.net:27017",
            "arb.example.net:27017"
        ]
    );
    let out = rewrite_hello_reply(&reply, &AddressMap::new()).unwrap();
    assert!(out.message.is_none());
    assert_eq!(out.unserved.len(), 4);
    // A standalone / mongos reply names no member: nothing to do.
    let standalone = op_msg(
        rawdoc! { "isWritablePrimary": true, "msg": "isdbgrid", "maxWireVersion": 27, "ok": 1.0 },
        MsgFlags::empty(),
        1,
        1,
    );
    assert_eq!(
        rewrite_hello_reply(&standalone, &full_map()).unwrap(),
        HelloRewrite::default()
    );
}

#[test]
fn every_truncation_and_flip_is_an_error_or_a_valid_rewrite_never_a_panic() {
    let reply = op_msg(set_hello(), MsgFlags::empty(), 1, 1);
    for cut in 0..reply.len() {
        assert!(rewrite_hello_reply(&reply[..cut], &full_map()).is_err());
        let _ = is_hello_request(&reply[..cut]);
    }
    for i in 0..reply.len() {
        let mut bad = reply.clone();
        bad[i] ^= 0x5a;
        let _ = rewrite_hello_reply(&bad, &full_map());
        let _ = is_hello_request(&bad);
    }
}

#[test]
fn too_many_addresses_are_refused() {
    let mut hosts = bson::raw::RawArrayBuf::new();
    for i in 0..MAX_ADDRESSES + 1 {
        hosts.push(format!("h{i}:1").as_str());
    }
    let reply = op_msg(
        rawdoc! { "hosts": hosts, "ok": 1.0 },
        MsgFlags::empty(),
        1,
        1,
    );
    assert!(rewrite_hello_reply(&reply, &full_map()).is_err());
}

#[test]
fn hello_requests_are_recognised_in_place() {
    let hello = |doc| op_msg(doc, MsgFlags::EXHAUST_ALLOWED, 1, 0);
    assert!(is_hello_request(&hello(
        rawdoc! { "hello": 1, "topologyVersion": {}, "maxAwaitTimeMS": 10000, "$db": "admin" }
    )));
    assert!(is_hello_request(&hello(
        rawdoc! { "ismaster": 1, "helloOk": true, "$db": "admin" }
    )));
    assert!(!is_hello_request(&hello(
        rawdoc! { "find": "hello", "$db": "admin" }
    )));
    assert!(!is_hello_request(&hello(rawdoc! { "helloX": 1 })));
    let wrapped = OpQuery {
        flags: 0,
        full_collection_name: "admin.$cmd".into(),
        number_to_skip: 0,
        number_to_return: -1,
        query: rawdoc! { "$query": { "ismaster": 1 }, "$readPreference": { "mode": "primary" } },
        return_fields_selector: None,
    };
    assert!(is_hello_request(&wrapped.encode(1)));
    let not_cmd = OpQuery {
        full_collection_name: "db.coll".into(),
        ..wrapped
    };
    assert!(!is_hello_request(&not_cmd.encode(1)));
    let packed = compressed::compress(
        &hello(rawdoc! { "hello": 1, "$db": "admin" }),
        Compressor::Zlib,
    )
    .unwrap();
    assert!(!is_hello_request(&packed));
}

#[test]
fn address_keys() {
    assert_eq!(address_key("DB0:1"), "db0:1");
    assert_eq!(address_key("db0"), "db0:27017");
    assert_eq!(address_key("[::1]:5"), "[::1]:5");
    assert_eq!(address_key("::1"), "[::1]:27017");
}
