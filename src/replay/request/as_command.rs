//! Legacy opcodes (OP_QUERY, OP_INSERT, OP_UPDATE, OP_DELETE, OP_GET_MORE) turned into the OP_MSG
//! commands a current server takes. OP_KILL_CURSORS needs more (a namespace): [`super::kill_cursors`].

use super::recorded::Skip;
use crate::wire::header::MsgHeader;
use crate::wire::legacy::{OpDelete, OpGetMore, OpInsert, OpQuery, OpUpdate};
use crate::wire::WireError;
use bson::{rawdoc, RawArrayBuf, RawDocumentBuf};
use bytes::Bytes;

pub(super) fn op_msg(body: RawDocumentBuf, more_to_come: bool, request_id: i32) -> Bytes {
    use crate::wire::op_msg::{MsgFlags, OpMsg};
    let flags = if more_to_come {
        MsgFlags::MORE_TO_COME
    } else {
        MsgFlags::empty()
    };
    Bytes::from(OpMsg::with_body(body, flags).encode(request_id, 0))
}

fn split_ns(ns: &str) -> Result<(&str, &str), Skip> {
    ns.split_once('.').ok_or(Skip::Malformed)
}

fn request_id(wire: &[u8]) -> Result<i32, Skip> {
    Ok(MsgHeader::parse_whole(wire, "legacy request header")
        .map_err(malformed)?
        .request_id)
}

pub(super) fn malformed(_: WireError) -> Skip {
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
