//! Targets over what mongotape writes instead of what it read: the hello topology rewrite, the
//! redactor, the replay's rewrite rules. Whatever they produce must still parse.

use super::{mode, op_msg_of, op_query_of, op_reply_of};
use bytes::Bytes;
use mongotape::redact::{Direction, Redaction, Redactor, ValueKey};
use mongotape::replay::request::db_map::CopyDb;
use mongotape::replay::request::ids::IdRemap;
use mongotape::replay::request::kill_cursors::understand_kill_cursors;
use mongotape::replay::request::rewrite::rewrite;
use mongotape::replay::request::understand;
use mongotape::wire::hello::{
    is_hello_request, reply_more_to_come, rewrite_hello_reply, AddressMap,
};
use mongotape::wire::{bson_raw, depth};
use mongotape::wire::{Body, Message, MsgFlags, OpMsgView, Section, SectionView};

/// The first byte's low bits: the rest as a whole message, or wrapped as the body of an OP_MSG, of
/// an OP_QUERY on `ns`, of an OP_REPLY.
fn message_of(m: u8, rest: &[u8], ns: &str) -> Vec<u8> {
    match m % 4 {
        0 => rest.to_vec(),
        1 => op_msg_of(u32::from(m >> 4) & 2, rest),
        2 => op_query_of(ns, rest),
        _ => op_reply_of(rest),
    }
}

fn address_map() -> AddressMap {
    let mut map = AddressMap::new();
    map.insert("localhost:27017", "127.0.0.1:40001");
    map.insert("db0.example.net:27018", "127.0.0.1:40002");
    map.insert("[::1]:27019", "127.0.0.1:40003");
    map.insert("a", "127.0.0.1:40004");
    map
}

/// A rewritten hello reply parses, keeps its ids, opcode, compressor and moreToCome bit, and has
/// nothing left to rewrite.
pub fn hello_rewrite(data: &[u8]) {
    let (m, rest) = mode(data);
    let reply = message_of(m, rest, "admin.$cmd");
    let _ = (is_hello_request(&reply), reply_more_to_come(&reply));
    let map = address_map();
    let Ok(out) = rewrite_hello_reply(&reply, &map) else {
        return;
    };
    let Some(new) = out.message else {
        assert_eq!(out.replaced, 0, "addresses replaced but no message");
        return;
    };
    assert!(out.replaced > 0);
    let before = Message::parse(&reply).expect("a rewritten reply parsed before");
    let after = Message::parse(&new).expect("a rewritten hello reply parses");
    assert_eq!(after.compressor, before.compressor);
    assert_eq!(after.op_code(), before.op_code());
    assert_eq!(
        (after.header.request_id, after.header.response_to),
        (before.header.request_id, before.header.response_to)
    );
    assert_eq!(reply_more_to_come(&new), reply_more_to_come(&reply));
    let again = rewrite_hello_reply(&new, &map).expect("a rewritten reply rewrites");
    assert_eq!(again.replaced, 0, "a member address survived the rewrite");
}

/// Both redaction modes, either direction (bit 2 of the first byte): a redacted message parses as
/// the same opcode with the same compressor, and values mode keeps an uncompressed message's
/// length when no credential was removed.
pub fn redact(data: &[u8]) {
    let (m, rest) = mode(data);
    let message = message_of(m, rest, "admin.$cmd");
    let direction = if m & 4 == 0 {
        Direction::Request
    } else {
        Direction::Reply
    };
    let credentials = Redactor::new(Redaction::Credentials).message(&message, direction);
    let values = Redactor::with_key(Redaction::Values, ValueKey::from_bytes([7; 32]))
        .message(&message, direction);
    for out in [&credentials, &values] {
        let Ok(Some(out)) = out else { continue };
        let before = Message::parse(&message).expect("a redacted message parsed before");
        let after = Message::parse(out).expect("a redacted message parses");
        assert_eq!(after.compressor, before.compressor);
        assert_eq!(after.op_code(), before.op_code());
        assert_eq!(after.header.request_id, before.header.request_id);
    }
    if let (Ok(None), Ok(Some(out))) = (&credentials, &values) {
        let before = Message::parse(&message).expect("parsed");
        if before.compressor.is_none() && documents(&before).iter().all(|d| canonical(d, 0)) {
            assert_eq!(out.len(), message.len(), "values mode changed the length");
        }
    }
}

/// The redactor on large and deeply nested input: bits 0-2 of the first byte as in [`redact`]
/// (the rest wrapped as an OP_MSG body, an OP_QUERY or an OP_REPLY, never taken as a whole
/// message), bits 3-7 put it under 0 to 31 x 256 more levels of `{a: ...}`. Besides the
/// invariants of [`redact`]: a valid document deeper than `wire::depth::MAX_DEPTH` is refused
/// by values mode, never walked (a recursive walk would overflow the stack first).
pub fn redact_deep(data: &[u8]) {
    let (m, rest) = mode(data);
    let levels = usize::from(m >> 3) * 256;
    let doc = under_levels(rest, levels);
    let wrap = 1 + (m & 3) % 3;
    let mut input = vec![(m & 4) | wrap];
    input.extend_from_slice(&doc);
    redact(&input);
    let valid = bson::RawDocument::from_bytes(&doc).is_ok_and(|d| d.iter().all(|e| e.is_ok()));
    if valid && !depth::within_limit(&doc) {
        let message = message_of(wrap, &doc, "admin.$cmd");
        let direction = if m & 4 == 0 {
            Direction::Request
        } else {
            Direction::Reply
        };
        let values = Redactor::with_key(Redaction::Values, ValueKey::from_bytes([7; 32]))
            .message(&message, direction);
        assert!(
            values.is_err(),
            "a document past the depth limit was walked"
        );
    }
}

/// `doc` as the innermost value of `levels` documents `{a: {a: ... doc}}`, built without
/// recursion (as `wire::depth::nested` builds its own).
fn under_levels(doc: &[u8], levels: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(doc.len() + levels * 8);
    for k in (1..=levels).rev() {
        let len = i32::try_from(doc.len() + 8 * k).unwrap_or(i32::MAX);
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&[3, b'a', 0]);
    }
    out.extend_from_slice(doc);
    out.resize(out.len() + levels, 0);
    out
}

/// Every document a message carries.
fn documents(message: &Message) -> Vec<&[u8]> {
    match &message.body {
        Body::Msg(m) => m
            .sections
            .iter()
            .flat_map(|s| match s {
                Section::Body(d) => vec![d.as_bytes()],
                Section::Sequence { documents, .. } => {
                    documents.iter().map(|d| d.as_bytes()).collect()
                }
            })
            .collect(),
        Body::Query(q) => std::iter::once(&q.query)
            .chain(&q.return_fields_selector)
            .map(|d| d.as_bytes())
            .collect(),
        Body::Reply(r) => r.documents.iter().map(|d| d.as_bytes()).collect(),
        Body::Insert(i) => i.documents.iter().map(|d| d.as_bytes()).collect(),
        Body::Update(u) => vec![u.selector.as_bytes(), u.update.as_bytes()],
        Body::Delete(d) => vec![d.selector.as_bytes()],
        _ => Vec::new(),
    }
}

/// Arrays keyed `0`, `1`, ... as every driver writes them. The redactor rebuilds an array it
/// rewrites with those keys, so one keyed otherwise (only hand-made bytes) changes length: a
/// finding recorded in docs/fuzzing.md, not a fault.
fn canonical(doc: &[u8], depth: usize) -> bool {
    let Ok(elements) = bson_raw::iter(doc) else {
        return true;
    };
    for e in elements.flatten() {
        if depth > 64 {
            return true;
        }
        if let Some(inner) = e.as_doc() {
            if e.kind == bson_raw::ARRAY {
                let keys = bson_raw::iter(inner).into_iter().flatten().flatten();
                if keys.enumerate().any(|(i, k)| k.key != i.to_string()) {
                    return false;
                }
            }
            if !canonical(inner, depth + 1) {
                return false;
            }
        }
    }
    true
}

/// A recorded request understood (as the capture feed does, OP_KILL_CURSORS included), then written
/// for two copies (as recorded; cloned, database mapped, new session): the copy is an OP_MSG with
/// no checksum or exhaust bit whose cursor patches point at the recorded ids, that parses whenever
/// the recorded request did, and keeps doing so when its ObjectIds are remapped for a later pass.
pub fn replay_rewrite(data: &[u8]) {
    let (m, rest) = mode(data);
    let wire = Bytes::from(message_of(m, rest, "bench.$cmd"));
    let understood = understand(1, 2, &wire).or_else(|_| {
        understand_kill_cursors(1, 2, &wire, |id| {
            (id % 2 == 0).then(|| ("bench".into(), "c".into()))
        })
    });
    let Ok(req) = understood else { return };
    let _ = (req.namespace(), req.produces_cursor());
    OpMsgView::new(&req.msg).expect("an understood request is an OP_MSG");
    let parsed = Message::parse(&req.msg).is_ok();
    let map = [("bench".to_owned(), "other".to_owned())];
    for (clone, lsid) in [(None, None), (Some(3), Some([9u8; 16]))] {
        let copy = CopyDb { map: &map, clone };
        let Ok(mut out) = rewrite(&req, &copy, lsid.as_ref()) else {
            continue;
        };
        let view = OpMsgView::new(&out.bytes).expect("a rewritten request is an OP_MSG");
        assert!(!view
            .flags()
            .intersects(MsgFlags::CHECKSUM_PRESENT | MsgFlags::EXHAUST_ALLOWED));
        for section in view.sections() {
            if let SectionView::Body { document, .. } = section.expect("rewritten section") {
                for e in bson_raw::iter(document).expect("rewritten body") {
                    e.expect("rewritten element");
                }
            }
        }
        for &(at, id) in &out.cursor_patches {
            assert_eq!(
                out.bytes[at..at + 8],
                id.to_le_bytes(),
                "cursor patch offset"
            );
        }
        if parsed {
            Message::parse(&out.bytes).expect("a rewritten request parses");
        }
        let mut ids = IdRemap::default();
        ids.learn(&out.bytes);
        ids.new_pass(false);
        let len = out.bytes.len();
        ids.apply(&mut out.bytes, &*req.command == "insert");
        assert_eq!(out.bytes.len(), len);
        if parsed {
            Message::parse(&out.bytes).expect("a request with remapped ids parses");
        }
    }
}
