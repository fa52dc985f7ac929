//! What the proxy's live metrics need of a message, read in place from a whole frame: a request's
//! opcode, command name and whether a reply will come; a reply's outcome and error code. Nothing
//! here allocates or decompresses: it runs on every forwarded message. An OP_COMPRESSED message
//! keeps its command to itself (its body is not opened).

use super::bson_raw;
use super::header::{MsgHeader, OpCode, HEADER_LEN};
use super::hello::{op_msg_command, op_query_command};
use super::op_msg::MsgFlags;

/// A request as far as the metrics see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestPeek<'a> {
    pub op_code: OpCode,
    pub request_id: i32,
    /// The command name; legacy writes are named after their command equivalent. `None` for
    /// OP_COMPRESSED and for what could not be read.
    pub command: Option<&'a [u8]>,
    /// False for OP_MSG with moreToCome and the legacy fire-and-forget opcodes.
    pub expects_reply: bool,
}

/// A whole request (`None` when its header is not even there).
pub fn request(message: &[u8]) -> Option<RequestPeek<'_>> {
    let header = MsgHeader::parse(message).ok()??;
    let (command, expects_reply): (Option<&[u8]>, bool) = match header.op_code {
        OpCode::Msg => (op_msg_command(message), !more_to_come(message)),
        OpCode::Query => (Some(op_query_command(message).unwrap_or(b"find")), true),
        OpCode::GetMore => (Some(b"getMore"), true),
        OpCode::Insert => (Some(b"insert"), false),
        OpCode::Update => (Some(b"update"), false),
        OpCode::Delete => (Some(b"delete"), false),
        OpCode::KillCursors => (Some(b"killCursors"), false),
        // Whether a compressed OP_MSG has moreToCome is inside its compressed body.
        OpCode::Compressed => (None, true),
        OpCode::Reply | OpCode::Unknown(_) => (None, false),
    };
    Some(RequestPeek {
        op_code: header.op_code,
        request_id: header.request_id,
        command,
        expects_reply,
    })
}

fn more_to_come(message: &[u8]) -> bool {
    message
        .get(HEADER_LEN..HEADER_LEN + 4)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .is_some_and(|flags| MsgFlags::from_bits_retain(flags).contains(MsgFlags::MORE_TO_COME))
}

/// How a reply ended, as far as its first document says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplyOutcome {
    Ok,
    /// `ok: 0` (or an OP_REPLY with QueryFailure), with the server's `code` when it gave one.
    Error {
        code: Option<i32>,
    },
    /// Compressed, or not readable in place.
    Unknown,
}

/// A whole reply's response_to and outcome (`None` when its header is not even there).
pub fn reply(message: &[u8]) -> Option<(i32, ReplyOutcome)> {
    let header = MsgHeader::parse(message).ok()??;
    let outcome = match header.op_code {
        OpCode::Msg => msg_body(message).map_or(ReplyOutcome::Unknown, |doc| outcome(doc, false)),
        OpCode::Reply => op_reply_outcome(message),
        _ => ReplyOutcome::Unknown,
    };
    Some((header.response_to, outcome))
}

/// The body (kind 0) section's document, when it comes first as every server sends it.
fn msg_body(message: &[u8]) -> Option<&[u8]> {
    let at = HEADER_LEN + 4;
    if *message.get(at)? != 0 {
        return None;
    }
    document_at(message, at + 1)
}

fn document_at(message: &[u8], at: usize) -> Option<&[u8]> {
    let len = message.get(at..at.checked_add(4)?)?;
    let len = usize::try_from(i32::from_le_bytes([len[0], len[1], len[2], len[3]])).ok()?;
    message.get(at..at.checked_add(len)?)
}

/// OP_REPLY: flags, cursorID, startingFrom, numberReturned, then the documents.
fn op_reply_outcome(message: &[u8]) -> ReplyOutcome {
    const QUERY_FAILURE: u32 = 1 << 1;
    let Some(flags) = message.get(HEADER_LEN..HEADER_LEN + 4) else {
        return ReplyOutcome::Unknown;
    };
    let failed = u32::from_le_bytes([flags[0], flags[1], flags[2], flags[3]]) & QUERY_FAILURE != 0;
    match document_at(message, HEADER_LEN + 20) {
        Some(doc) => outcome(doc, failed),
        None if failed => ReplyOutcome::Error { code: None },
        None => ReplyOutcome::Ok,
    }
}

/// Top-level `ok` and `code` of a reply document; no `ok` at all (a legacy query's documents)
/// is success unless `failed`.
fn outcome(doc: &[u8], failed: bool) -> ReplyOutcome {
    let Ok(elements) = bson_raw::iter(doc) else {
        return ReplyOutcome::Unknown;
    };
    let mut ok = None;
    let mut code = None;
    for element in elements {
        let Ok(element) = element else {
            return ReplyOutcome::Unknown;
        };
        match element.key {
            "ok" => {
                ok = match element.kind {
                    bson_raw::BOOLEAN => element.as_bool(),
                    bson_raw::DOUBLE => element
                        .value
                        .try_into()
                        .ok()
                        .map(|b| f64::from_le_bytes(b) != 0.0),
                    _ => element.as_i64().map(|v| v != 0),
                }
            }
            "code" => code = element.as_i64().and_then(|c| i32::try_from(c).ok()),
            _ => {}
        }
    }
    if failed || ok == Some(false) {
        ReplyOutcome::Error { code }
    } else {
        ReplyOutcome::Ok
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::legacy::{OpQuery, OpReply};
    use crate::wire::op_msg::{OpMsg, Section};
    use bson::rawdoc;

    fn msg(
        body: bson::RawDocumentBuf,
        flags: MsgFlags,
        request_id: i32,
        response_to: i32,
    ) -> Vec<u8> {
        OpMsg {
            flags,
            sections: vec![Section::Body(body)],
            checksum: None,
        }
        .encode(request_id, response_to)
    }

    #[test]
    fn requests_name_their_command_and_say_whether_a_reply_comes() {
        let m = msg(rawdoc! {"insert": "c", "$db": "d"}, MsgFlags::empty(), 7, 0);
        let p = request(&m).unwrap();
        assert_eq!(
            (p.command, p.expects_reply, p.request_id),
            (Some(&b"insert"[..]), true, 7)
        );
        let m = msg(rawdoc! {"insert": "c"}, MsgFlags::MORE_TO_COME, 8, 0);
        assert!(!request(&m).unwrap().expects_reply);
        let q = OpQuery {
            flags: 0,
            full_collection_name: "admin.$cmd".into(),
            number_to_skip: 0,
            number_to_return: -1,
            query: rawdoc! {"$query": {"isMaster": 1}},
            return_fields_selector: None,
        }
        .encode(9);
        assert_eq!(request(&q).unwrap().command, Some(&b"isMaster"[..]));
        // Every prefix of a message is refused or read without panicking.
        for n in 0..m.len() {
            let _ = request(&m[..n]);
            let _ = reply(&m[..n]);
        }
    }

    #[test]
    fn replies_give_their_outcome_and_code() {
        let ok = msg(rawdoc! {"n": 1, "ok": 1.0}, MsgFlags::empty(), 1, 7);
        assert_eq!(reply(&ok), Some((7, ReplyOutcome::Ok)));
        let err = msg(
            rawdoc! {"ok": 0.0, "errmsg": "x", "code": 11000, "codeName": "DuplicateKey"},
            MsgFlags::empty(),
            2,
            8,
        );
        assert_eq!(
            reply(&err),
            Some((8, ReplyOutcome::Error { code: Some(11000) }))
        );
        let legacy = OpReply {
            response_flags: 0,
            cursor_id: 0,
            starting_from: 0,
            number_returned: 1,
            documents: vec![rawdoc! {"ok": 0, "code": 13}],
        }
        .encode(3, 9);
        assert_eq!(
            reply(&legacy),
            Some((9, ReplyOutcome::Error { code: Some(13) }))
        );
    }
}
