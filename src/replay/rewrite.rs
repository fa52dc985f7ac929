//! Making a recorded request valid again. A request is understood once ([`understand`]: what it is,
//! whether it is replayed at all), then written out per copy ([`rewrite`]) with its session, database
//! and cursor fields replaced and cluster-bound fields removed. Elements that do not change are copied
//! as bytes; nothing is decoded and re-encoded. The rules are listed in `docs/replay.md`.

use super::outcome::Outcome;
use super::raw::{self, DocWriter, RawError, ARRAY, DOCUMENT};
use crate::wire::compressed::{self, Compressor};
use crate::wire::header::{MsgHeader, OpCode, HEADER_LEN};
use crate::wire::info::is_handshake_command;
use crate::wire::legacy::{OpDelete, OpGetMore, OpInsert, OpKillCursors, OpQuery, OpUpdate};
use crate::wire::WireError;
use bson::{rawdoc, RawArrayBuf, RawDocumentBuf};
use bytes::Bytes;
use std::sync::Arc;

const CHECKSUM_PRESENT: u32 = 1;
const MORE_TO_COME: u32 = 1 << 1;
const EXHAUST_ALLOWED: u32 = 1 << 16;

/// Why a recorded request is not replayed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Skip {
    /// Handshake, monitoring or authentication: every replay connection does its own.
    Handshake,
    /// An opcode a current server no longer takes and that has no command equivalent here.
    Unsupported,
    /// The recorded bytes do not decode.
    Malformed,
}

impl Skip {
    pub fn name(self) -> &'static str {
        match self {
            Skip::Handshake => "handshake",
            Skip::Unsupported => "unsupported_opcode",
            Skip::Malformed => "malformed",
        }
    }
}

/// A recorded request that will be replayed, as a plain (uncompressed) OP_MSG.
#[derive(Debug, Clone)]
pub struct Request {
    pub conn_id: u64,
    pub ts_ns: u64,
    pub request_id: i32,
    pub msg: Bytes,
    pub command: Arc<str>,
    pub db: String,
    pub collection: Option<String>,
    pub expects_reply: bool,
    /// The raw bytes of the recorded `lsid.id` (or of the whole lsid when it has no `id`).
    pub lsid: Option<Vec<u8>>,
    /// `txnNumber` of a multi-statement transaction statement (`autocommit: false`).
    pub transaction: Option<i64>,
    /// Cursors a getMore or killCursors refers to, as recorded.
    pub cursor_refs: Vec<i64>,
    /// The recorded reply's outcome, once the reply has been read from the capture.
    pub recorded: Option<Outcome>,
    /// The compressor of the recorded OP_COMPRESSED this request came in, if any.
    pub compressor: Option<Compressor>,
}

impl Request {
    pub fn namespace(&self) -> String {
        match &self.collection {
            Some(c) => format!("{}.{c}", self.db),
            None => self.db.clone(),
        }
    }

    /// The cursor the recorded reply handed out, if this request opened one.
    pub fn produces_cursor(&self) -> Option<i64> {
        if &*self.command == "getMore" {
            return None;
        }
        self.recorded
            .as_ref()
            .and_then(|o| o.cursor_id)
            .filter(|&c| c != 0)
    }
}

/// Decides whether a recorded request is replayed and, if so, turns it into a plain OP_MSG.
pub fn understand(conn_id: u64, ts_ns: u64, wire: &Bytes) -> Result<Request, Skip> {
    let header = MsgHeader::parse(wire)
        .ok()
        .flatten()
        .ok_or(Skip::Malformed)?;
    let msg: Bytes = match header.op_code {
        OpCode::Msg => wire.clone(),
        OpCode::Compressed => {
            let (compressor, inner) = compressed::decompress(wire).map_err(|_| Skip::Malformed)?;
            let mut req = understand(conn_id, ts_ns, &Bytes::from(inner))?;
            req.compressor = (compressor != Compressor::Noop).then_some(compressor);
            return Ok(req);
        }
        OpCode::Query => from_op_query(wire)?,
        OpCode::Insert => from_op_insert(wire)?,
        OpCode::Update => from_op_update(wire)?,
        OpCode::Delete => from_op_delete(wire)?,
        OpCode::GetMore => from_op_get_more(wire)?,
        _ => return Err(Skip::Unsupported),
    };
    let flags = u32::from_le_bytes(msg.get(16..20).ok_or(Skip::Malformed)?.try_into().unwrap());
    let body = super::outcome::op_msg_body(&msg).map_err(|_| Skip::Malformed)?;
    let mut els = raw::iter(body).map_err(|_| Skip::Malformed)?;
    let first = els
        .next()
        .ok_or(Skip::Malformed)?
        .map_err(|_| Skip::Malformed)?;
    if is_handshake_command(first.key) {
        return Err(Skip::Handshake);
    }
    let command: Arc<str> = Arc::from(first.key);
    let mut req = Request {
        conn_id,
        ts_ns,
        request_id: header.request_id,
        collection: first.as_str().map(str::to_owned),
        command,
        db: String::new(),
        expects_reply: flags & MORE_TO_COME == 0,
        lsid: None,
        transaction: None,
        cursor_refs: Vec::new(),
        recorded: None,
        compressor: None,
        msg: Bytes::new(),
    };
    let mut txn_number = None;
    let mut autocommit_false = false;
    if &*req.command == "getMore" {
        req.cursor_refs.extend(first.as_i64());
    }
    for e in els {
        let e = e.map_err(|_| Skip::Malformed)?;
        match e.key {
            "$db" => req.db = e.as_str().unwrap_or_default().to_owned(),
            "collection" if &*req.command == "getMore" => {
                req.collection = e.as_str().map(str::to_owned)
            }
            "cursors" if &*req.command == "killCursors" => {
                if let Some(arr) = e.as_doc().and_then(|d| raw::elements(d).ok()) {
                    req.cursor_refs
                        .extend(arr.iter().filter_map(|c| c.as_i64()));
                }
            }
            "lsid" => req.lsid = Some(lsid_key(e.value)),
            "txnNumber" => txn_number = e.as_i64(),
            "autocommit" => autocommit_false = e.as_bool() == Some(false),
            _ => {}
        }
    }
    if autocommit_false {
        req.transaction = txn_number;
    }
    req.msg = msg;
    Ok(req)
}

/// OP_KILL_CURSORS names no namespace, and `killCursors` needs one: `namespace_of` says where the
/// capture opened a recorded cursor (`(db, collection)`, remembered by the capture reader). The
/// cursors of the first namespace found are killed in one command; ids whose cursor the capture
/// never opened are left out, and a kill of only those is not replayed (`Skip::Unsupported`).
/// Anything but OP_KILL_CURSORS (possibly inside OP_COMPRESSED) is `Skip::Unsupported` too.
pub fn understand_kill_cursors(
    conn_id: u64,
    ts_ns: u64,
    wire: &Bytes,
    namespace_of: impl Fn(i64) -> Option<(String, String)>,
) -> Result<Request, Skip> {
    let header = MsgHeader::parse(wire)
        .ok()
        .flatten()
        .ok_or(Skip::Malformed)?;
    match header.op_code {
        OpCode::KillCursors => {}
        OpCode::Compressed => {
            let (_, inner) = compressed::decompress(wire).map_err(|_| Skip::Malformed)?;
            return understand_kill_cursors(conn_id, ts_ns, &Bytes::from(inner), namespace_of);
        }
        _ => return Err(Skip::Unsupported),
    }
    let m = OpKillCursors::parse(wire).map_err(malformed)?;
    let mut namespace = None;
    let mut ids = RawArrayBuf::new();
    for id in m.cursor_ids {
        match namespace_of(id) {
            Some(ns) if namespace.as_ref().is_none_or(|first| *first == ns) => {
                namespace = Some(ns);
                ids.push(id);
            }
            _ => {}
        }
    }
    let (db, collection) = namespace.ok_or(Skip::Unsupported)?;
    let body = rawdoc! { "killCursors": collection.as_str(), "cursors": ids, "$db": db.as_str() };
    let mut req = understand(conn_id, ts_ns, &op_msg(body, false, header.request_id))?;
    // It had no reply: nothing to wait for in the capture, nothing to compare but success.
    req.recorded = Some(Outcome {
        ok: true,
        ..Outcome::default()
    });
    Ok(req)
}

fn lsid_key(lsid: &[u8]) -> Vec<u8> {
    raw::elements(lsid)
        .ok()
        .and_then(|els| els.iter().find(|e| e.key == "id").map(|e| e.value.to_vec()))
        .unwrap_or_else(|| lsid.to_vec())
}

/// The namespace mapping a copy of the traffic applies.
pub trait DbMap {
    /// The database `db` becomes in this copy.
    fn map_db<'a>(&'a self, db: &'a str) -> std::borrow::Cow<'a, str>;

    /// `db.collection` with its database part mapped.
    fn map_ns(&self, ns: &str) -> String {
        match ns.split_once('.') {
            Some((db, rest)) => format!("{}.{rest}", self.map_db(db)),
            None => self.map_db(ns).into_owned(),
        }
    }
}

/// A request written out for one copy: the bytes to send (request id still to be set) and where
/// the live cursor ids go.
#[derive(Debug)]
pub struct Rewritten {
    pub bytes: Vec<u8>,
    /// Offsets of int64 cursor ids in `bytes`, with the recorded id each stands for.
    pub cursor_patches: Vec<(usize, i64)>,
}

/// Writes `req` for one copy: `lsid` is the live session id (16 bytes) that replaces the recorded one.
pub fn rewrite(
    req: &Request,
    map: &dyn DbMap,
    lsid: Option<&[u8; 16]>,
) -> Result<Rewritten, RawError> {
    let frame = &req.msg[..];
    let bad = |detail| RawError { offset: 0, detail };
    let flags = u32::from_le_bytes(
        frame
            .get(16..20)
            .ok_or(bad("short OP_MSG"))?
            .try_into()
            .unwrap(),
    );
    let end = if flags & CHECKSUM_PRESENT != 0 {
        frame.len().checked_sub(4).ok_or(bad("short OP_MSG"))?
    } else {
        frame.len()
    };
    let mut out = Vec::with_capacity(frame.len() + 32);
    out.extend_from_slice(&[0; 12]);
    out.extend_from_slice(&OpCode::Msg.as_i32().to_le_bytes());
    let flags = flags & !(CHECKSUM_PRESENT | EXHAUST_ALLOWED);
    out.extend_from_slice(&flags.to_le_bytes());
    let mut patches = Vec::new();
    let mut at = HEADER_LEN + 4;
    while at < end {
        let kind = frame[at];
        let len = frame
            .get(at + 1..at + 5)
            .map(|b| i32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .and_then(|l| usize::try_from(l).ok())
            .filter(|&l| l >= 5 && at + 1 + l <= end)
            .ok_or(bad("bad OP_MSG section length"))?;
        let section = &frame[at + 1..at + 1 + len];
        if kind == 0 {
            out.push(0);
            rewrite_body(req, section, map, lsid, &mut out, &mut patches)?;
        } else {
            out.extend_from_slice(&frame[at..at + 1 + len]);
        }
        at += 1 + len;
    }
    let len = out.len() as i32;
    out[..4].copy_from_slice(&len.to_le_bytes());
    Ok(Rewritten {
        bytes: out,
        cursor_patches: patches,
    })
}

fn rewrite_body(
    req: &Request,
    body: &[u8],
    map: &dyn DbMap,
    lsid: Option<&[u8; 16]>,
    out: &mut Vec<u8>,
    patches: &mut Vec<(usize, i64)>,
) -> Result<(), RawError> {
    let command = &*req.command;
    let mut w = DocWriter::new(out);
    for (i, e) in raw::iter(body)?.enumerate() {
        let e = e?;
        match e.key {
            "getMore" if i == 0 => {
                let id = e.as_i64().unwrap_or_default();
                let at = w.i64("getMore", id);
                patches.push((at, id));
            }
            "cursors" if command == "killCursors" && e.kind == ARRAY => {
                let ids: Vec<i64> = raw::elements(e.value)?
                    .iter()
                    .filter_map(|c| c.as_i64())
                    .collect();
                w.sub(ARRAY, "cursors", |a| {
                    for (k, id) in ids.iter().enumerate() {
                        let at = a.i64(&k.to_string(), *id);
                        patches.push((at, *id));
                    }
                });
            }
            "lsid" => {
                if let Some(id) = lsid {
                    w.sub(DOCUMENT, "lsid", |d| d.binary("id", 4, id));
                }
            }
            "$clusterTime" | "recoveryToken" => {}
            "$db" => w.str("$db", &map.map_db(e.as_str().unwrap_or_default())),
            "readConcern" if e.kind == DOCUMENT => {
                let inner = raw::elements(e.value)?;
                w.sub(DOCUMENT, "readConcern", |d| {
                    for f in inner
                        .iter()
                        .filter(|f| !matches!(f.key, "afterClusterTime" | "atClusterTime"))
                    {
                        d.raw(f.raw);
                    }
                });
            }
            "renameCollection" | "to" if command == "renameCollection" => {
                w.str(e.key, &map.map_ns(e.as_str().unwrap_or_default()))
            }
            _ => w.raw(e.raw),
        }
    }
    w.finish();
    Ok(())
}

// ------------------------------------------------------------------------------------------------
// Legacy opcodes, turned into the commands a current server takes.

fn op_msg(body: RawDocumentBuf, more_to_come: bool, request_id: i32) -> Bytes {
    use crate::wire::op_msg::{MsgFlags, OpMsg, Section};
    let flags = if more_to_come {
        MsgFlags::MORE_TO_COME
    } else {
        MsgFlags::empty()
    };
    Bytes::from(
        OpMsg {
            flags,
            sections: vec![Section::Body(body)],
            checksum: None,
        }
        .encode(request_id, 0),
    )
}

fn split_ns(ns: &str) -> Result<(&str, &str), Skip> {
    ns.split_once('.').ok_or(Skip::Malformed)
}

fn request_id(wire: &[u8]) -> i32 {
    i32::from_le_bytes([wire[4], wire[5], wire[6], wire[7]])
}

fn malformed(_: WireError) -> Skip {
    Skip::Malformed
}

fn from_op_query(wire: &[u8]) -> Result<Bytes, Skip> {
    let q = OpQuery::parse(wire).map_err(malformed)?;
    let (db, coll) = split_ns(&q.full_collection_name)?;
    let (inner, wrapped) = match q.query.get_document("$query") {
        Ok(inner) => (inner.to_owned(), true),
        Err(_) => (q.query.clone(), false),
    };
    let mut body = RawDocumentBuf::new();
    if coll == "$cmd" {
        for (k, v) in inner.iter().flatten() {
            if k.as_str() != "$db" {
                body.append(k, v);
            }
        }
    } else {
        // A legacy find.
        body.append(bson::cstr!("find"), coll);
        body.append(bson::cstr!("filter"), inner);
        if wrapped {
            if let Ok(sort) = q.query.get_document("$orderby") {
                body.append(bson::cstr!("sort"), sort.to_owned());
            }
        }
        if let Some(p) = &q.return_fields_selector {
            body.append(bson::cstr!("projection"), p.clone());
        }
        if q.number_to_skip > 0 {
            body.append(bson::cstr!("skip"), q.number_to_skip as i64);
        }
        match q.number_to_return {
            n if n < 0 => {
                body.append(bson::cstr!("limit"), -(n as i64));
                body.append(bson::cstr!("singleBatch"), true);
            }
            n if n > 0 => body.append(bson::cstr!("batchSize"), n as i64),
            _ => {}
        }
    }
    body.append(bson::cstr!("$db"), db);
    Ok(op_msg(body, false, request_id(wire)))
}

fn unacknowledged() -> RawDocumentBuf {
    rawdoc! { "w": 0 }
}

fn from_op_insert(wire: &[u8]) -> Result<Bytes, Skip> {
    let m = OpInsert::parse(wire).map_err(malformed)?;
    let (db, coll) = split_ns(&m.full_collection_name)?;
    let mut docs = RawArrayBuf::new();
    for d in m.documents {
        docs.push(d);
    }
    let body = rawdoc! {
        "insert": coll, "documents": docs, "ordered": m.flags & 1 == 0,
        "writeConcern": unacknowledged(), "$db": db,
    };
    Ok(op_msg(body, true, request_id(wire)))
}

fn from_op_update(wire: &[u8]) -> Result<Bytes, Skip> {
    let m = OpUpdate::parse(wire).map_err(malformed)?;
    let (db, coll) = split_ns(&m.full_collection_name)?;
    let mut updates = RawArrayBuf::new();
    updates.push(rawdoc! { "q": m.selector, "u": m.update, "upsert": m.flags & 1 != 0, "multi": m.flags & 2 != 0 });
    let body =
        rawdoc! { "update": coll, "updates": updates, "writeConcern": unacknowledged(), "$db": db };
    Ok(op_msg(body, true, request_id(wire)))
}

fn from_op_delete(wire: &[u8]) -> Result<Bytes, Skip> {
    let m = OpDelete::parse(wire).map_err(malformed)?;
    let (db, coll) = split_ns(&m.full_collection_name)?;
    let mut deletes = RawArrayBuf::new();
    deletes.push(rawdoc! { "q": m.selector, "limit": if m.flags & 1 != 0 { 1 } else { 0 } });
    let body =
        rawdoc! { "delete": coll, "deletes": deletes, "writeConcern": unacknowledged(), "$db": db };
    Ok(op_msg(body, true, request_id(wire)))
}

fn from_op_get_more(wire: &[u8]) -> Result<Bytes, Skip> {
    let m = OpGetMore::parse(wire).map_err(malformed)?;
    let (db, coll) = split_ns(&m.full_collection_name)?;
    let mut body = rawdoc! { "getMore": m.cursor_id, "collection": coll };
    if m.number_to_return > 0 {
        body.append(bson::cstr!("batchSize"), m.number_to_return as i64);
    }
    body.append(bson::cstr!("$db"), db);
    Ok(op_msg(body, false, request_id(wire)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::op_msg::{MsgFlags, OpMsg, Section};
    use crate::wire::Message;
    use std::borrow::Cow;

    struct Suffix(&'static str);
    impl DbMap for Suffix {
        fn map_db<'a>(&'a self, db: &'a str) -> Cow<'a, str> {
            if db == "admin" {
                Cow::Borrowed(db)
            } else {
                Cow::Owned(format!("{db}{}", self.0))
            }
        }
    }

    fn msg(flags: MsgFlags, body: RawDocumentBuf, seq: bool) -> Bytes {
        let mut sections = vec![Section::Body(body)];
        if seq {
            sections.push(Section::Sequence {
                identifier: "documents".into(),
                documents: vec![rawdoc! {"_id": 1}],
            });
        }
        Bytes::from(
            OpMsg {
                flags,
                sections,
                checksum: None,
            }
            .encode(9, 0),
        )
    }

    fn body_of(bytes: &[u8]) -> RawDocumentBuf {
        match Message::parse(bytes).unwrap().body {
            crate::wire::Body::Msg(m) => m.body().clone(),
            _ => panic!("not OP_MSG"),
        }
    }

    #[test]
    fn insert_gets_new_session_db_and_loses_cluster_time() {
        let lsid = bson::Binary {
            subtype: bson::spec::BinarySubtype::Uuid,
            bytes: vec![7; 16],
        };
        let wire = msg(
            MsgFlags::CHECKSUM_PRESENT,
            rawdoc! {
                "insert": "c", "ordered": true, "lsid": {"id": lsid}, "txnNumber": 3i64,
                "$clusterTime": {"clusterTime": bson::Timestamp{time: 1, increment: 1}},
                "readConcern": {"level": "majority", "afterClusterTime": bson::Timestamp{time: 1, increment: 1}},
                "$db": "bench",
            },
            true,
        );
        let req = understand(1, 10, &wire).unwrap();
        assert_eq!(
            (&*req.command, req.db.as_str(), req.expects_reply),
            ("insert", "bench", true)
        );
        assert!(req.lsid.is_some());
        let out = rewrite(&req, &Suffix("_2"), Some(&[1; 16])).unwrap();
        let parsed = Message::parse(&out.bytes).unwrap();
        let body = body_of(&out.bytes);
        assert_eq!(body.get_str("$db").unwrap(), "bench_2");
        assert_eq!(body.get_i64("txnNumber").unwrap(), 3);
        assert!(body.get("$clusterTime").unwrap().is_none());
        let rc = body.get_document("readConcern").unwrap();
        assert_eq!(rc.get_str("level").unwrap(), "majority");
        assert!(rc.get("afterClusterTime").unwrap().is_none());
        let id = body.get_document("lsid").unwrap().get_binary("id").unwrap();
        assert_eq!(id.bytes, &[1; 16]);
        match parsed.body {
            crate::wire::Body::Msg(m) => {
                assert_eq!(m.sections.len(), 2);
                assert!(m.checksum.is_none());
            }
            _ => unreachable!(),
        }
    }

    #[test]
    fn get_more_and_kill_cursors_carry_patch_offsets() {
        let wire = msg(
            MsgFlags::empty(),
            rawdoc! {"getMore": 55i64, "collection": "c", "$db": "bench"},
            false,
        );
        let req = understand(1, 1, &wire).unwrap();
        assert_eq!(req.cursor_refs, vec![55]);
        let mut out = rewrite(&req, &Suffix(""), None).unwrap();
        let (at, rec) = out.cursor_patches[0];
        assert_eq!(rec, 55);
        out.bytes[at..at + 8].copy_from_slice(&99i64.to_le_bytes());
        assert_eq!(body_of(&out.bytes).get_i64("getMore").unwrap(), 99);

        let wire = msg(
            MsgFlags::empty(),
            rawdoc! {"killCursors": "c", "cursors": [1i64, 2i64], "$db": "bench"},
            false,
        );
        let req = understand(1, 1, &wire).unwrap();
        assert_eq!(req.cursor_refs, vec![1, 2]);
        let out = rewrite(&req, &Suffix(""), None).unwrap();
        assert_eq!(out.cursor_patches.len(), 2);
    }

    #[test]
    fn handshake_is_skipped_and_legacy_is_converted() {
        let hello = msg(
            MsgFlags::empty(),
            rawdoc! {"hello": 1, "$db": "admin"},
            false,
        );
        assert_eq!(understand(1, 1, &hello).unwrap_err(), Skip::Handshake);
        let q = OpQuery {
            flags: 0,
            full_collection_name: "admin.$cmd".into(),
            number_to_skip: 0,
            number_to_return: -1,
            query: rawdoc! {"isMaster": 1},
            return_fields_selector: None,
        };
        assert_eq!(
            understand(1, 1, &Bytes::from(q.encode(3))).unwrap_err(),
            Skip::Handshake
        );
        let q = OpQuery {
            full_collection_name: "bench.$cmd".into(),
            query: rawdoc! {"$query": {"count": "c"}, "$readPreference": {"mode": "primary"}},
            ..q
        };
        let req = understand(1, 1, &Bytes::from(q.encode(3))).unwrap();
        assert_eq!((&*req.command, req.db.as_str()), ("count", "bench"));
        let g = OpGetMore {
            full_collection_name: "bench.c".into(),
            number_to_return: 5,
            cursor_id: 42,
        };
        let req = understand(1, 1, &Bytes::from(g.encode(4))).unwrap();
        assert_eq!(
            (&*req.command, req.cursor_refs.clone()),
            ("getMore", vec![42])
        );
        assert_eq!(req.collection.as_deref(), Some("c"));
    }

    #[test]
    fn op_kill_cursors_takes_the_namespace_its_cursors_were_opened_in() {
        let wire = Bytes::from(
            crate::wire::legacy::OpKillCursors {
                cursor_ids: vec![5, 6, 7],
            }
            .encode(8),
        );
        let ns = |c: i64| match c {
            5 | 7 => Some(("bench".to_string(), "c".to_string())),
            6 => Some(("bench".to_string(), "other".to_string())),
            _ => None,
        };
        assert_eq!(understand(1, 1, &wire).unwrap_err(), Skip::Unsupported);
        let req = understand_kill_cursors(1, 1, &wire, ns).unwrap();
        assert_eq!(
            (&*req.command, req.db.as_str(), req.collection.as_deref()),
            ("killCursors", "bench", Some("c"))
        );
        assert_eq!(req.cursor_refs, vec![5, 7]);
        assert!(req.expects_reply && req.recorded.as_ref().is_some_and(|o| o.ok));
        assert_eq!(req.request_id, 8);
        let none = understand_kill_cursors(1, 1, &wire, |_| None).unwrap_err();
        assert_eq!(none, Skip::Unsupported);
    }

    #[test]
    fn garbage_is_malformed_not_a_panic() {
        let wire = msg(MsgFlags::empty(), rawdoc! {"find": "c", "$db": "b"}, true);
        for cut in 16..wire.len() {
            let mut b = wire[..cut].to_vec();
            b[..4].copy_from_slice(&(cut as i32).to_le_bytes());
            let _ = understand(1, 1, &Bytes::from(b));
        }
    }
}
