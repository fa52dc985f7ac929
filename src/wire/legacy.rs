//! The legacy opcodes: OP_QUERY and OP_REPLY (still used for the first handshake by some drivers) and
//! OP_INSERT, OP_UPDATE, OP_DELETE, OP_GET_MORE, OP_KILL_CURSORS (removed from servers in 6.0, kept
//! here so old captures decode).

use super::error::WireError;
use super::header::{MsgHeader, OpCode, HEADER_LEN};
use super::read::ByteCursor;
use bson::RawDocumentBuf;

bitflags::bitflags! {
    /// OP_REPLY's `responseFlags`.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct ReplyFlags: u32 {
        const CURSOR_NOT_FOUND = 1;
        const QUERY_FAILURE = 1 << 1;
        const SHARD_CONFIG_STALE = 1 << 2;
        const AWAIT_CAPABLE = 1 << 3;
    }
}

impl ReplyFlags {
    /// The flags of an `OP_REPLY` as its `response_flags` field holds them.
    pub fn of(response_flags: i32) -> ReplyFlags {
        ReplyFlags::from_bits_retain(response_flags as u32)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct OpQuery {
    pub flags: i32,
    pub full_collection_name: String,
    pub number_to_skip: i32,
    pub number_to_return: i32,
    pub query: RawDocumentBuf,
    pub return_fields_selector: Option<RawDocumentBuf>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct OpReply {
    pub response_flags: i32,
    pub cursor_id: i64,
    pub starting_from: i32,
    pub number_returned: i32,
    pub documents: Vec<RawDocumentBuf>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct OpInsert {
    pub flags: i32,
    pub full_collection_name: String,
    pub documents: Vec<RawDocumentBuf>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct OpUpdate {
    pub full_collection_name: String,
    pub flags: i32,
    pub selector: RawDocumentBuf,
    pub update: RawDocumentBuf,
}

#[derive(Debug, Clone, PartialEq)]
pub struct OpDelete {
    pub full_collection_name: String,
    pub flags: i32,
    pub selector: RawDocumentBuf,
}

impl OpInsert {
    /// Flag bit 0: keep inserting after a failed document (the command's `ordered: false`).
    pub fn continue_on_error(&self) -> bool {
        self.flags & 1 != 0
    }
}

impl OpUpdate {
    /// Flag bit 0: insert when nothing matches.
    pub fn upsert(&self) -> bool {
        self.flags & 1 != 0
    }

    /// Flag bit 1: update every match, not only the first.
    pub fn multi_update(&self) -> bool {
        self.flags & (1 << 1) != 0
    }
}

impl OpDelete {
    /// Flag bit 0: delete the first match only (the command's `limit: 1`).
    pub fn single_remove(&self) -> bool {
        self.flags & 1 != 0
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct OpGetMore {
    pub full_collection_name: String,
    pub number_to_return: i32,
    pub cursor_id: i64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct OpKillCursors {
    pub cursor_ids: Vec<i64>,
}

fn body(message: &[u8]) -> ByteCursor<'_> {
    ByteCursor::new(message.get(HEADER_LEN..).unwrap_or_default(), HEADER_LEN)
}

fn docs_until_end(
    r: &mut ByteCursor<'_>,
    what: &'static str,
) -> Result<Vec<RawDocumentBuf>, WireError> {
    let mut docs = Vec::new();
    while !r.is_empty() {
        docs.push(r.document(what)?);
    }
    Ok(docs)
}

fn expect_end(r: &ByteCursor<'_>, what: &'static str) -> Result<(), WireError> {
    if r.is_empty() {
        Ok(())
    } else {
        Err(WireError::Invalid {
            what,
            offset: r.offset(),
            detail: format!("{} unexpected trailing bytes", r.remaining()),
        })
    }
}

impl OpQuery {
    pub fn parse(message: &[u8]) -> Result<OpQuery, WireError> {
        let mut r = body(message);
        let flags = r.i32("OP_QUERY flags")?;
        let full_collection_name = r.cstring("OP_QUERY fullCollectionName")?.to_owned();
        let number_to_skip = r.i32("OP_QUERY numberToSkip")?;
        let number_to_return = r.i32("OP_QUERY numberToReturn")?;
        let query = r.document("OP_QUERY query")?;
        let return_fields_selector = if r.is_empty() {
            None
        } else {
            Some(r.document("OP_QUERY returnFieldsSelector")?)
        };
        expect_end(&r, "OP_QUERY")?;
        Ok(OpQuery {
            flags,
            full_collection_name,
            number_to_skip,
            number_to_return,
            query,
            return_fields_selector,
        })
    }

    pub fn encode(&self, request_id: i32) -> Vec<u8> {
        let mut out = MsgHeader::start(request_id, 0, OpCode::Query);
        out.extend_from_slice(&self.flags.to_le_bytes());
        push_cstring(&mut out, &self.full_collection_name);
        out.extend_from_slice(&self.number_to_skip.to_le_bytes());
        out.extend_from_slice(&self.number_to_return.to_le_bytes());
        out.extend_from_slice(self.query.as_bytes());
        if let Some(sel) = &self.return_fields_selector {
            out.extend_from_slice(sel.as_bytes());
        }
        MsgHeader::finish(out)
    }
}

impl OpReply {
    pub fn flags(&self) -> ReplyFlags {
        ReplyFlags::of(self.response_flags)
    }

    pub fn parse(message: &[u8]) -> Result<OpReply, WireError> {
        let mut r = body(message);
        let response_flags = r.i32("OP_REPLY responseFlags")?;
        let cursor_id = r.i64("OP_REPLY cursorID")?;
        let starting_from = r.i32("OP_REPLY startingFrom")?;
        let number_returned = r.i32("OP_REPLY numberReturned")?;
        let documents = docs_until_end(&mut r, "OP_REPLY document")?;
        if documents.len() as i64 != number_returned as i64 {
            return Err(WireError::Invalid {
                what: "OP_REPLY numberReturned",
                offset: HEADER_LEN + 16,
                detail: format!("says {number_returned}, message holds {}", documents.len()),
            });
        }
        Ok(OpReply {
            response_flags,
            cursor_id,
            starting_from,
            number_returned,
            documents,
        })
    }

    pub fn encode(&self, request_id: i32, response_to: i32) -> Vec<u8> {
        let mut out = MsgHeader::start(request_id, response_to, OpCode::Reply);
        out.extend_from_slice(&self.response_flags.to_le_bytes());
        out.extend_from_slice(&self.cursor_id.to_le_bytes());
        out.extend_from_slice(&self.starting_from.to_le_bytes());
        out.extend_from_slice(&(self.documents.len() as i32).to_le_bytes());
        for d in &self.documents {
            out.extend_from_slice(d.as_bytes());
        }
        MsgHeader::finish(out)
    }
}

/// The head of an OP_REPLY read in place, its documents left as bytes: what a replayer needs of a
/// recorded reply without copying it.
#[derive(Debug, Clone, Copy)]
pub struct OpReplyView<'a> {
    pub flags: ReplyFlags,
    pub cursor_id: i64,
    pub number_returned: i32,
    /// The returned documents, one after the other, not checked.
    pub documents: &'a [u8],
}

impl<'a> OpReplyView<'a> {
    /// Reads the fixed fields of a whole OP_REPLY, header included.
    pub fn new(message: &'a [u8]) -> Result<OpReplyView<'a>, WireError> {
        MsgHeader::parse_whole(message, "OP_REPLY header")?;
        let mut r = body(message);
        let flags = ReplyFlags::of(r.i32("OP_REPLY responseFlags")?);
        let cursor_id = r.i64("OP_REPLY cursorID")?;
        r.i32("OP_REPLY startingFrom")?;
        let number_returned = r.i32("OP_REPLY numberReturned")?;
        Ok(OpReplyView {
            flags,
            cursor_id,
            number_returned,
            documents: r.rest(),
        })
    }
}

impl OpInsert {
    pub fn parse(message: &[u8]) -> Result<OpInsert, WireError> {
        let mut r = body(message);
        let flags = r.i32("OP_INSERT flags")?;
        let full_collection_name = r.cstring("OP_INSERT fullCollectionName")?.to_owned();
        let documents = docs_until_end(&mut r, "OP_INSERT document")?;
        Ok(OpInsert {
            flags,
            full_collection_name,
            documents,
        })
    }
}

impl OpUpdate {
    pub fn parse(message: &[u8]) -> Result<OpUpdate, WireError> {
        let mut r = body(message);
        r.i32("OP_UPDATE ZERO")?;
        let full_collection_name = r.cstring("OP_UPDATE fullCollectionName")?.to_owned();
        let flags = r.i32("OP_UPDATE flags")?;
        let selector = r.document("OP_UPDATE selector")?;
        let update = r.document("OP_UPDATE update")?;
        expect_end(&r, "OP_UPDATE")?;
        Ok(OpUpdate {
            full_collection_name,
            flags,
            selector,
            update,
        })
    }
}

impl OpDelete {
    pub fn parse(message: &[u8]) -> Result<OpDelete, WireError> {
        let mut r = body(message);
        r.i32("OP_DELETE ZERO")?;
        let full_collection_name = r.cstring("OP_DELETE fullCollectionName")?.to_owned();
        let flags = r.i32("OP_DELETE flags")?;
        let selector = r.document("OP_DELETE selector")?;
        expect_end(&r, "OP_DELETE")?;
        Ok(OpDelete {
            full_collection_name,
            flags,
            selector,
        })
    }
}

impl OpGetMore {
    pub fn parse(message: &[u8]) -> Result<OpGetMore, WireError> {
        let mut r = body(message);
        r.i32("OP_GET_MORE ZERO")?;
        let full_collection_name = r.cstring("OP_GET_MORE fullCollectionName")?.to_owned();
        let number_to_return = r.i32("OP_GET_MORE numberToReturn")?;
        let cursor_id = r.i64("OP_GET_MORE cursorID")?;
        expect_end(&r, "OP_GET_MORE")?;
        Ok(OpGetMore {
            full_collection_name,
            number_to_return,
            cursor_id,
        })
    }

    pub fn encode(&self, request_id: i32) -> Vec<u8> {
        let mut out = MsgHeader::start(request_id, 0, OpCode::GetMore);
        out.extend_from_slice(&0i32.to_le_bytes());
        push_cstring(&mut out, &self.full_collection_name);
        out.extend_from_slice(&self.number_to_return.to_le_bytes());
        out.extend_from_slice(&self.cursor_id.to_le_bytes());
        MsgHeader::finish(out)
    }
}

impl OpKillCursors {
    pub fn parse(message: &[u8]) -> Result<OpKillCursors, WireError> {
        let mut r = body(message);
        r.i32("OP_KILL_CURSORS ZERO")?;
        let count_at = r.offset();
        let count = r.i32("OP_KILL_CURSORS numberOfCursorIDs")?;
        if count < 0 || count as usize > r.remaining() / 8 {
            return Err(WireError::Invalid {
                what: "OP_KILL_CURSORS numberOfCursorIDs",
                offset: count_at,
                detail: format!("{count} ids do not fit in {} bytes", r.remaining()),
            });
        }
        let mut cursor_ids = Vec::with_capacity(count as usize);
        for _ in 0..count {
            cursor_ids.push(r.i64("OP_KILL_CURSORS cursorID")?);
        }
        expect_end(&r, "OP_KILL_CURSORS")?;
        Ok(OpKillCursors { cursor_ids })
    }

    pub fn encode(&self, request_id: i32) -> Vec<u8> {
        let mut out = MsgHeader::start(request_id, 0, OpCode::KillCursors);
        out.extend_from_slice(&0i32.to_le_bytes());
        out.extend_from_slice(&(self.cursor_ids.len() as i32).to_le_bytes());
        for id in &self.cursor_ids {
            out.extend_from_slice(&id.to_le_bytes());
        }
        MsgHeader::finish(out)
    }
}

// Encoders for the legacy writes: only redaction re-encodes them (a replay turns them into commands).
impl OpInsert {
    pub fn encode(&self, request_id: i32) -> Vec<u8> {
        let mut out = MsgHeader::start(request_id, 0, OpCode::Insert);
        out.extend_from_slice(&self.flags.to_le_bytes());
        push_cstring(&mut out, &self.full_collection_name);
        for d in &self.documents {
            out.extend_from_slice(d.as_bytes());
        }
        MsgHeader::finish(out)
    }
}

impl OpUpdate {
    pub fn encode(&self, request_id: i32) -> Vec<u8> {
        let mut out = MsgHeader::start(request_id, 0, OpCode::Update);
        out.extend_from_slice(&0i32.to_le_bytes());
        push_cstring(&mut out, &self.full_collection_name);
        out.extend_from_slice(&self.flags.to_le_bytes());
        out.extend_from_slice(self.selector.as_bytes());
        out.extend_from_slice(self.update.as_bytes());
        MsgHeader::finish(out)
    }
}

impl OpDelete {
    pub fn encode(&self, request_id: i32) -> Vec<u8> {
        let mut out = MsgHeader::start(request_id, 0, OpCode::Delete);
        out.extend_from_slice(&0i32.to_le_bytes());
        push_cstring(&mut out, &self.full_collection_name);
        out.extend_from_slice(&self.flags.to_le_bytes());
        out.extend_from_slice(self.selector.as_bytes());
        MsgHeader::finish(out)
    }
}

fn push_cstring(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(s.as_bytes());
    out.push(0);
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::rawdoc;

    #[test]
    fn query_and_reply_round_trip() {
        let q = OpQuery {
            flags: 4,
            full_collection_name: "admin.$cmd".into(),
            number_to_skip: 0,
            number_to_return: -1,
            query: rawdoc! { "isMaster": 1 },
            return_fields_selector: None,
        };
        assert_eq!(OpQuery::parse(&q.encode(3)).unwrap(), q);
        let reply = OpReply {
            response_flags: 8,
            cursor_id: 0,
            starting_from: 0,
            number_returned: 1,
            documents: vec![rawdoc! { "ok": 1.0 }],
        };
        assert_eq!(OpReply::parse(&reply.encode(4, 3)).unwrap(), reply);
    }

    #[test]
    fn reply_view_reads_the_head_in_place_and_truncations_are_errors() {
        let reply = OpReply {
            response_flags: 0,
            cursor_id: 42,
            starting_from: 0,
            number_returned: 2,
            documents: vec![rawdoc! { "a": 1 }, rawdoc! { "b": 2 }],
        };
        let bytes = reply.encode(4, 3);
        let view = OpReplyView::new(&bytes).unwrap();
        assert_eq!((view.cursor_id, view.number_returned), (42, 2));
        assert_eq!(view.documents.len(), bytes.len() - HEADER_LEN - 20);
        for cut in 0..HEADER_LEN + 20 {
            assert!(OpReplyView::new(&bytes[..cut]).is_err(), "cut at {cut}");
        }
    }

    #[test]
    fn legacy_writes_round_trip() {
        let i = OpInsert {
            flags: 1,
            full_collection_name: "bench.c".into(),
            documents: vec![rawdoc! { "_id": 1 }, rawdoc! { "_id": 2, "s": "x" }],
        };
        assert_eq!(OpInsert::parse(&i.encode(1)).unwrap(), i);
        let u = OpUpdate {
            full_collection_name: "bench.c".into(),
            flags: 2,
            selector: rawdoc! { "_id": 1 },
            update: rawdoc! { "$set": { "s": "y" } },
        };
        assert_eq!(OpUpdate::parse(&u.encode(2)).unwrap(), u);
        let d = OpDelete {
            full_collection_name: "bench.c".into(),
            flags: 1,
            selector: rawdoc! { "_id": 1 },
        };
        assert_eq!(OpDelete::parse(&d.encode(3)).unwrap(), d);
    }

    #[test]
    fn kill_cursors_count_is_bounded() {
        let k = OpKillCursors {
            cursor_ids: vec![11, 12],
        };
        let mut bytes = k.encode(1);
        assert_eq!(OpKillCursors::parse(&bytes).unwrap(), k);
        bytes[20..24].copy_from_slice(&i32::MAX.to_le_bytes());
        assert!(OpKillCursors::parse(&bytes).is_err());
    }

    #[test]
    fn get_more_truncations_are_errors() {
        let g = OpGetMore {
            full_collection_name: "bench.c".into(),
            number_to_return: 10,
            cursor_id: 77,
        };
        let bytes = g.encode(1);
        assert_eq!(OpGetMore::parse(&bytes).unwrap(), g);
        for cut in 0..bytes.len() {
            assert!(OpGetMore::parse(&bytes[..cut]).is_err());
        }
    }
}
