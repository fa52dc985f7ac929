//! Deciding, once per recorded request, whether it is replayed, and what it is: command,
//! database, collection, session, transaction, the cursors it names. Legacy opcodes are first turned
//! into the command they stand for ([`super::as_command`]).

use super::as_command::{
    from_op_delete, from_op_get_more, from_op_insert, from_op_query, from_op_update,
};
use super::recorded::{Request, Skip};
use crate::replay::names::{Name, Names};
use crate::wire::bson_raw;
use crate::wire::compressed::{self, Compressor};
use crate::wire::header::{MsgHeader, OpCode};
use crate::wire::info::is_handshake_command;
use crate::wire::op_msg_view::SectionView;
use crate::wire::{depth, OpMsgView};
use bytes::Bytes;

/// Whether a document of the message nests past `wire::depth::MAX_DEPTH` levels.
fn too_deep(view: &OpMsgView<'_>) -> bool {
    view.sections().flatten().any(|s| match s {
        SectionView::Body { document, .. } => !depth::within_limit(document),
        SectionView::Sequence { documents, .. } => {
            documents.flatten().any(|d| !depth::within_limit(d))
        }
    })
}

/// Decides whether a recorded request is replayed and, if so, turns it into a plain OP_MSG.
pub fn understand(conn_id: u64, ts_ns: u64, wire: &Bytes) -> Result<Request, Skip> {
    understand_with(conn_id, ts_ns, wire, &mut Names::default())
}

/// [`understand`], the request's command, database and collection taken from `names`.
pub fn understand_with(
    conn_id: u64,
    ts_ns: u64,
    wire: &Bytes,
    names: &mut Names,
) -> Result<Request, Skip> {
    let opened = open(wire)?;
    understand_opened(conn_id, ts_ns, &opened, names).map(|(req, _)| req)
}

/// A recorded request's bytes opened: the OP_MSG it is, or stands for (decompressed, or turned
/// from a legacy opcode into the command it means).
#[derive(Debug, Clone)]
pub struct Opened {
    pub msg: Bytes,
    /// The request id of the message `msg` was read from (inside the compression, if any).
    pub request_id: i32,
    pub compressor: Option<Compressor>,
    /// `msg` was written from a legacy opcode (its shape is read from the legacy bytes).
    pub legacy: bool,
}

/// Opens a recorded request's bytes; a reply, or an opcode that is not replayed, is skipped.
pub fn open(wire: &Bytes) -> Result<Opened, Skip> {
    let header = MsgHeader::parse(wire)
        .ok()
        .flatten()
        .ok_or(Skip::Malformed)?;
    let msg: Bytes = match header.op_code {
        OpCode::Msg => wire.clone(),
        OpCode::Compressed => {
            let (compressor, inner) = compressed::decompress(wire).map_err(|_| Skip::Malformed)?;
            let mut opened = open(&Bytes::from(inner))?;
            opened.compressor = (compressor != Compressor::Noop).then_some(compressor);
            return Ok(opened);
        }
        OpCode::Query => from_op_query(wire)?,
        OpCode::Insert => from_op_insert(wire)?,
        OpCode::Update => from_op_update(wire)?,
        OpCode::Delete => from_op_delete(wire)?,
        OpCode::GetMore => from_op_get_more(wire)?,
        OpCode::Command => return Err(Skip::OpCommand),
        _ => return Err(Skip::Unsupported),
    };
    Ok(Opened {
        msg,
        request_id: header.request_id,
        compressor: None,
        legacy: header.op_code != OpCode::Msg,
    })
}

/// [`understand_with`] on bytes opened already, with the view of the OP_MSG it read, for the
/// query shape: `None` when that OP_MSG was written from a legacy opcode.
pub fn understand_opened<'a>(
    conn_id: u64,
    ts_ns: u64,
    opened: &'a Opened,
    names: &mut Names,
) -> Result<(Request, Option<OpMsgView<'a>>), Skip> {
    let view = OpMsgView::new(&opened.msg).map_err(|_| Skip::Malformed)?;
    if too_deep(&view) {
        return Err(Skip::TooDeep);
    }
    let body = view.body().map_err(|_| Skip::Malformed)?;
    let mut els = bson_raw::iter(body).map_err(|_| Skip::Malformed)?;
    let first = els
        .next()
        .ok_or(Skip::Malformed)?
        .map_err(|_| Skip::Malformed)?;
    if first.key == "ping" {
        return Err(Skip::Ping);
    }
    if is_handshake_command(first.key) {
        return Err(Skip::Handshake);
    }
    let mut req = Request {
        conn_id,
        ts_ns,
        request_id: opened.request_id,
        collection: first.as_str().map(|c| names.get(c)),
        command: names.get(first.key),
        db: Name::default(),
        expects_reply: !view.more_to_come(),
        lsid: None,
        transaction: None,
        cursor_refs: Vec::new(),
        recorded: None,
        compressor: opened.compressor,
        shape: None,
        msg: Bytes::new(),
        plain: !matches!(first.key, "getMore" | "renameCollection"),
    };
    if &*req.command == "getMore" {
        req.cursor_refs.extend(first.as_i64());
    }
    read_fields(&mut req, els, names)?;
    req.msg = opened.msg.clone();
    Ok((req, (!opened.legacy).then_some(view)))
}

/// The body's fields after the command: database, a getMore's collection, the cursors a
/// killCursors names, session and transaction.
fn read_fields(
    req: &mut Request,
    els: bson_raw::Elements<'_>,
    names: &mut Names,
) -> Result<(), Skip> {
    let mut txn_number = None;
    let mut autocommit_false = false;
    for e in els {
        let e = e.map_err(|_| Skip::Malformed)?;
        match e.key {
            "$db" => {
                req.plain &= e.as_str().is_some();
                req.db = names.get(e.as_str().unwrap_or_default())
            }
            "collection" if &*req.command == "getMore" => {
                req.collection = e.as_str().map(|c| names.get(c))
            }
            "cursors" if &*req.command == "killCursors" => {
                req.plain = false;
                if let Some(arr) = e.as_doc().and_then(|d| bson_raw::elements(d).ok()) {
                    req.cursor_refs
                        .extend(arr.iter().filter_map(|c| c.as_i64()));
                }
            }
            "lsid" => {
                req.plain = false;
                req.lsid = Some(lsid_key(e.value))
            }
            "$clusterTime" | "recoveryToken" | "readConcern" => req.plain = false,
            "txnNumber" => txn_number = e.as_i64(),
            "autocommit" => autocommit_false = e.as_bool() == Some(false),
            _ => {}
        }
    }
    if autocommit_false {
        req.transaction = txn_number;
    }
    Ok(())
}

fn lsid_key(lsid: &[u8]) -> Vec<u8> {
    bson_raw::elements(lsid)
        .ok()
        .and_then(|els| els.iter().find(|e| e.key == "id").map(|e| e.value.to_vec()))
        .unwrap_or_else(|| lsid.to_vec())
}

#[cfg(test)]
pub(in crate::replay) mod tests {
    use super::*;
    use crate::wire::legacy::{OpGetMore, OpQuery};
    use crate::wire::op_msg::{MsgFlags, OpMsg, Section};
    use bson::{rawdoc, RawDocumentBuf};

    /// An OP_MSG with `body`, and a `documents` sequence when `seq`.
    pub(in crate::replay) fn msg(flags: MsgFlags, body: RawDocumentBuf, seq: bool) -> Bytes {
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

    #[test]
    fn a_request_nested_past_the_limit_is_skipped_with_its_reason() {
        let deep = RawDocumentBuf::from_bytes(depth::nested(10_000)).unwrap();
        let body = rawdoc! {"insert": "c", "$db": "t", "documents": [deep.clone()]};
        let wire = msg(MsgFlags::empty(), body, false);
        assert_eq!(understand(1, 1, &wire).unwrap_err(), Skip::TooDeep);
        let in_sequence = Bytes::from(
            OpMsg {
                flags: MsgFlags::empty(),
                sections: vec![
                    Section::Body(rawdoc! {"insert": "c", "$db": "t"}),
                    Section::Sequence {
                        identifier: "documents".into(),
                        documents: vec![deep],
                    },
                ],
                checksum: None,
            }
            .encode(9, 0),
        );
        assert_eq!(understand(1, 1, &in_sequence).unwrap_err(), Skip::TooDeep);
        let fine = rawdoc! {"insert": "c", "$db": "t", "documents": [{"a": {"b": 1}}]};
        assert!(understand(1, 1, &msg(MsgFlags::empty(), fine, false)).is_ok());
    }

    #[test]
    fn handshake_is_skipped_and_legacy_is_converted() {
        let hello = msg(
            MsgFlags::empty(),
            rawdoc! {"hello": 1, "$db": "admin"},
            false,
        );
        assert_eq!(understand(1, 1, &hello).unwrap_err(), Skip::Handshake);
        let ping = msg(
            MsgFlags::empty(),
            rawdoc! {"ping": 1, "$db": "admin"},
            false,
        );
        assert_eq!(understand(1, 1, &ping).unwrap_err(), Skip::Ping);
        assert_eq!(Skip::Ping.name(), "ping");
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
        assert_eq!((&*req.command, &*req.db), ("count", "bench"));
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
    fn garbage_is_malformed_not_a_panic() {
        let wire = msg(MsgFlags::empty(), rawdoc! {"find": "c", "$db": "b"}, true);
        for cut in 16..wire.len() {
            let mut b = wire[..cut].to_vec();
            MsgHeader::write_message_length(&mut b, cut as i32);
            let _ = understand(1, 1, &Bytes::from(b));
        }
    }
}
