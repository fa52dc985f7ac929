//! What the proxy's live metrics need of a message, read in place from a whole frame: a request's
//! opcode, command name and whether a reply will come; a reply's outcome and error code. Nothing
//! here allocates or decompresses: it runs on every forwarded message. An OP_COMPRESSED message
//! keeps its command to itself (its body is not opened).

use super::header::{MsgHeader, OpCode, HEADER_LEN};
use super::hello::{op_msg_command, op_query_command};
use super::op_msg::MsgFlags;
use super::reply;

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
        OpCode::Command => (op_command_name(message), true),
        OpCode::Reply | OpCode::CommandReply | OpCode::Unknown(_) => (None, false),
    };
    Some(RequestPeek {
        op_code: header.op_code,
        request_id: header.request_id,
        command,
        expects_reply,
    })
}

/// OP_COMMAND's command name: the cstring after the database's.
fn op_command_name(message: &[u8]) -> Option<&[u8]> {
    let body = message.get(HEADER_LEN..)?;
    let db_end = body.iter().position(|&b| b == 0)?;
    let rest = body.get(db_end + 1..)?;
    rest.get(..rest.iter().position(|&b| b == 0)?)
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
    let outcome = match reply::body_in_place(message) {
        Ok(Some(body)) => match body.fields() {
            // No `ok` at all is not counted an error: a server always sends one, a legacy
            // query's results are given one by the reader.
            Ok(f) if f.ok.is_some() && !f.is_ok() => ReplyOutcome::Error { code: f.code },
            Ok(_) => ReplyOutcome::Ok,
            Err(_) => ReplyOutcome::Unknown,
        },
        _ => ReplyOutcome::Unknown,
    };
    Some((header.response_to, outcome))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::legacy::{OpQuery, OpReply};
    use crate::wire::op_msg::OpMsg;
    use bson::rawdoc;

    fn msg(
        body: bson::RawDocumentBuf,
        flags: MsgFlags,
        request_id: i32,
        response_to: i32,
    ) -> Vec<u8> {
        OpMsg::with_body(body, flags).encode(request_id, response_to)
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
