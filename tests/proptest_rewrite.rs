//! Property tests of what mongotape writes in place of what it read: a hello reply with its member
//! addresses rewritten, and a redacted message, both still parse as the same kind of message, in
//! every wrapping (OP_MSG with or without checksum and moreToCome, OP_REPLY, OP_QUERY, compressed).

mod props;

use bson::{doc, Binary, Bson, Document};
use mongotape::redact::{Direction, Redaction, Redactor, ValueKey};
use mongotape::wire::compressed::{self, Compressor};
use mongotape::wire::hello::{reply_more_to_come, rewrite_hello_reply, AddressMap};
use mongotape::wire::legacy::{OpQuery, OpReply};
use mongotape::wire::{Body, Message, MsgFlags, OpMsg, Section};
use props::{document, raw};
use proptest::collection::vec;
use proptest::prelude::*;

const MAPPED: [&str; 3] = ["localhost:27017", "db0.example.net:27018", "[::1]:27019"];
const UNMAPPED: [&str; 2] = ["db9.example.net:27017", "other:1"];

fn address_map() -> AddressMap {
    let mut map = AddressMap::new();
    for (i, member) in MAPPED.iter().enumerate() {
        map.insert(member, &format!("127.0.0.1:{}", 40001 + i));
    }
    map
}

fn address() -> impl Strategy<Value = &'static str> {
    prop::sample::select(MAPPED.iter().chain(&UNMAPPED).copied().collect::<Vec<_>>())
}

/// A hello reply: the topology fields, then whatever else a server adds.
fn hello_reply() -> impl Strategy<Value = Document> {
    (
        vec(address(), 0..5),
        vec(address(), 0..2),
        prop::option::of(address()),
        prop::option::of(address()),
        document(),
    )
        .prop_map(|(hosts, passives, primary, me, extra)| {
            let mut d = doc! { "isWritablePrimary": true, "setName": "rs", "hosts": hosts };
            if !passives.is_empty() {
                d.insert("passives", passives);
            }
            if let Some(p) = primary {
                d.insert("primary", p);
            }
            if let Some(m) = me {
                d.insert("me", m);
            }
            for (k, v) in extra {
                d.entry(k).or_insert(v);
            }
            d.insert("ok", 1.0);
            d
        })
}

/// `doc` as a whole message: OP_MSG (flags picked by `bits`) or OP_REPLY, compressed or not.
fn wrap_reply(doc: &Document, bits: u8, compressor: Option<Compressor>) -> Vec<u8> {
    let plain = if bits & 1 == 0 {
        let mut flags = MsgFlags::empty();
        if bits & 2 != 0 {
            flags |= MsgFlags::CHECKSUM_PRESENT;
        }
        if bits & 4 != 0 {
            flags |= MsgFlags::MORE_TO_COME;
        }
        OpMsg {
            flags,
            sections: vec![Section::Body(raw(doc))],
            checksum: None,
        }
        .encode(11, 12)
    } else {
        OpReply {
            response_flags: 8,
            cursor_id: 0,
            starting_from: 0,
            number_returned: 1,
            documents: vec![raw(doc)],
        }
        .encode(11, 12)
    };
    match compressor {
        Some(c) => compressed::compress(&plain, c).expect("compress"),
        None => plain,
    }
}

fn compressor() -> impl Strategy<Value = Option<Compressor>> {
    prop::option::of(prop::sample::select(vec![
        Compressor::Noop,
        Compressor::Snappy,
        Compressor::Zlib,
        Compressor::Zstd,
    ]))
}

fn body_doc(message: &Message) -> Document {
    let raw = match &message.body {
        Body::Msg(m) => m.body().clone(),
        Body::Reply(r) => r.documents[0].clone(),
        Body::Query(q) => q.query.clone(),
        other => panic!("unexpected {other:?}"),
    };
    Document::try_from(raw.as_ref()).expect("a document")
}

/// Every address field of a hello reply document, in order.
fn addresses(d: &Document) -> Vec<String> {
    let mut out = Vec::new();
    for field in ["hosts", "passives", "arbiters"] {
        if let Ok(list) = d.get_array(field) {
            out.extend(list.iter().filter_map(|v| v.as_str().map(str::to_owned)));
        }
    }
    for field in ["primary", "me"] {
        if let Ok(a) = d.get_str(field) {
            out.push(a.to_owned());
        }
    }
    out
}

/// A command document, with a credential or not, as a client sends it.
fn command() -> impl Strategy<Value = (Document, bool)> {
    (document(), 0u8..4, ".{0,12}").prop_map(|(extra, which, secret)| {
        let mut d = match which {
            0 => doc! { "insert": "c", "documents": [extra.clone()] },
            1 => doc! { "find": "c", "filter": extra.clone() },
            2 => doc! { "saslStart": 1, "mechanism": "SCRAM-SHA-256",
            "payload": Binary { subtype: bson::spec::BinarySubtype::Generic,
                                bytes: secret.clone().into_bytes() } },
            _ => doc! { "createUser": "alice", "pwd": secret.clone(), "roles": [] },
        };
        for (k, v) in extra {
            if !matches!(
                k.as_str(),
                "payload" | "pwd" | "key" | "speculativeAuthenticate"
            ) {
                d.entry(k).or_insert(v);
            }
        }
        d.insert("$db", Bson::String("bench".into()));
        (d, which >= 2)
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn a_rewritten_hello_reply_parses_and_names_only_the_proxy(
        reply in hello_reply(), bits in 0u8..8, c in compressor(),
    ) {
        let bytes = wrap_reply(&reply, bits, c);
        let map = address_map();
        let out = rewrite_hello_reply(&bytes, &map).expect("rewrite");
        let mapped = addresses(&reply).iter().filter(|a| map.get(a).is_some()).count();
        prop_assert_eq!(out.replaced, mapped);
        let Some(new) = out.message else {
            prop_assert_eq!(mapped, 0);
            return Ok(());
        };
        let before = Message::parse(&bytes).expect("parse");
        let after = Message::parse(&new).expect("a rewritten reply parses");
        prop_assert_eq!(after.compressor, before.compressor);
        prop_assert_eq!(after.op_code(), before.op_code());
        prop_assert_eq!(after.header.request_id, 11);
        prop_assert_eq!(after.header.response_to, 12);
        prop_assert_eq!(reply_more_to_come(&new), reply_more_to_come(&bytes));
        let got = body_doc(&after);
        let want: Vec<String> = addresses(&reply)
            .iter()
            .map(|a| map.get(a).map_or(a.clone(), str::to_owned))
            .collect();
        prop_assert_eq!(addresses(&got), want);
        // Nothing but the addresses changed.
        for (k, v) in &reply {
            if !matches!(k.as_str(), "hosts" | "passives" | "arbiters" | "primary" | "me") {
                prop_assert_eq!(got.get(k), Some(v));
            }
        }
    }

    #[test]
    fn a_redacted_message_parses_and_keeps_its_length_in_values_mode(
        (cmd, has_credential) in command(), legacy in any::<bool>(), c in compressor(),
    ) {
        let plain = if legacy {
            OpQuery {
                flags: 0,
                full_collection_name: "bench.$cmd".into(),
                number_to_skip: 0,
                number_to_return: -1,
                query: raw(&cmd),
                return_fields_selector: None,
            }
            .encode(21)
        } else {
            OpMsg {
                flags: MsgFlags::empty(),
                sections: vec![Section::Body(raw(&cmd))],
                checksum: None,
            }
            .encode(21, 0)
        };
        let bytes = match c {
            Some(c) => compressed::compress(&plain, c).expect("compress"),
            None => plain.clone(),
        };
        let credentials = Redactor::new(Redaction::Credentials)
            .message(&bytes, Direction::Request)
            .expect("redact");
        let values = Redactor::with_key(Redaction::Values, ValueKey::from_bytes([3; 32]))
            .message(&bytes, Direction::Request)
            .expect("redact");
        if has_credential {
            prop_assert!(credentials.is_some(), "a credential was kept");
        }
        for out in [&credentials, &values].into_iter().flatten() {
            let after = Message::parse(out).expect("a redacted message parses");
            prop_assert_eq!(after.compressor, c);
            prop_assert_eq!(after.header.request_id, 21);
            let before = body_doc(&Message::parse(&bytes).unwrap());
            let got = body_doc(&after);
            let keys = |d: &Document| d.keys().cloned().collect::<Vec<_>>();
            prop_assert_eq!(keys(&got), keys(&before));
        }
        if credentials.is_none() {
            if let (Some(out), None) = (&values, c) {
                prop_assert_eq!(out.len(), bytes.len(), "values mode changed the length");
            }
        }
    }
}
