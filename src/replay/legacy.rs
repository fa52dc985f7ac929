//! Legacy opcodes (OP_QUERY, OP_INSERT, OP_UPDATE, OP_DELETE, OP_GET_MORE, OP_KILL_CURSORS), turned
//! into the OP_MSG commands a current server takes. OP_KILL_CURSORS names no namespace, so the capture
//! reader remembers where each recorded cursor was opened ([`CursorNamespaces`]).

use super::outcome::Outcome;
use super::request::{understand, Request, Skip};
use crate::wire::compressed;
use crate::wire::header::{MsgHeader, OpCode};
use crate::wire::legacy::{OpDelete, OpGetMore, OpInsert, OpKillCursors, OpQuery, OpUpdate};
use crate::wire::WireError;
use bson::{rawdoc, RawArrayBuf, RawDocumentBuf};
use bytes::Bytes;
use std::collections::HashMap;

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

/// Recorded cursor id -> `(db, collection)` it was opened on, from the recorded replies; forgotten
/// when the recording shows the cursor exhausted or killed. Bounded: past the limit it starts over.
#[derive(Default)]
pub struct CursorNamespaces(HashMap<i64, (String, String)>);

impl CursorNamespaces {
    const LIMIT: usize = 100_000;

    pub fn learn(&mut self, req: &Request) {
        if let Some(c) = req.produces_cursor() {
            if self.0.len() >= Self::LIMIT {
                self.0.clear();
            }
            let collection = req.collection.clone().unwrap_or_default();
            self.0.insert(c, (req.db.clone(), collection));
        }
        let exhausted = req.recorded.as_ref().and_then(|o| o.cursor_id) == Some(0);
        if (&*req.command == "getMore" && exhausted) || &*req.command == "killCursors" {
            for c in &req.cursor_refs {
                self.0.remove(c);
            }
        }
    }

    pub fn get(&self, cursor: i64) -> Option<(String, String)> {
        self.0.get(&cursor).cloned()
    }
}

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

fn request_id(wire: &[u8]) -> Result<i32, Skip> {
    Ok(MsgHeader::parse_whole(wire, "legacy request header")
        .map_err(malformed)?
        .request_id)
}

fn malformed(_: WireError) -> Skip {
    Skip::Malformed
}

pub(super) fn from_op_query(wire: &[u8]) -> Result<Bytes, Skip> {
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
    Ok(op_msg(body, false, request_id(wire)?))
}

fn unacknowledged() -> RawDocumentBuf {
    rawdoc! { "w": 0 }
}

pub(super) fn from_op_insert(wire: &[u8]) -> Result<Bytes, Skip> {
    let m = OpInsert::parse(wire).map_err(malformed)?;
    let (db, coll) = split_ns(&m.full_collection_name)?;
    let ordered = !m.continue_on_error();
    let mut docs = RawArrayBuf::new();
    for d in m.documents {
        docs.push(d);
    }
    let body = rawdoc! {
        "insert": coll, "documents": docs, "ordered": ordered,
        "writeConcern": unacknowledged(), "$db": db,
    };
    Ok(op_msg(body, true, request_id(wire)?))
}

pub(super) fn from_op_update(wire: &[u8]) -> Result<Bytes, Skip> {
    let m = OpUpdate::parse(wire).map_err(malformed)?;
    let (db, coll) = split_ns(&m.full_collection_name)?;
    let mut updates = RawArrayBuf::new();
    let (upsert, multi) = (m.upsert(), m.multi_update());
    updates.push(rawdoc! { "q": m.selector, "u": m.update, "upsert": upsert, "multi": multi });
    let body =
        rawdoc! { "update": coll, "updates": updates, "writeConcern": unacknowledged(), "$db": db };
    Ok(op_msg(body, true, request_id(wire)?))
}

pub(super) fn from_op_delete(wire: &[u8]) -> Result<Bytes, Skip> {
    let m = OpDelete::parse(wire).map_err(malformed)?;
    let (db, coll) = split_ns(&m.full_collection_name)?;
    let mut deletes = RawArrayBuf::new();
    let limit = if m.single_remove() { 1 } else { 0 };
    deletes.push(rawdoc! { "q": m.selector, "limit": limit });
    let body =
        rawdoc! { "delete": coll, "deletes": deletes, "writeConcern": unacknowledged(), "$db": db };
    Ok(op_msg(body, true, request_id(wire)?))
}

pub(super) fn from_op_get_more(wire: &[u8]) -> Result<Bytes, Skip> {
    let m = OpGetMore::parse(wire).map_err(malformed)?;
    let (db, coll) = split_ns(&m.full_collection_name)?;
    let mut body = rawdoc! { "getMore": m.cursor_id, "collection": coll };
    if m.number_to_return > 0 {
        body.append(bson::cstr!("batchSize"), m.number_to_return as i64);
    }
    body.append(bson::cstr!("$db"), db);
    Ok(op_msg(body, false, request_id(wire)?))
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
