//! Replies the proxy makes up (`record --fault`): a command error in the client's own opcode
//! (OP_MSG, or OP_REPLY for OP_QUERY), and a server's reply with a `writeConcernError` added.
//! Each is a valid message that [`super::reply`], the reader the fuzzers exercise, reads back.

use super::header::{MsgHeader, OpCode};
use super::legacy::OpReply;
use super::op_msg::{MsgFlags, OpMsg};
use super::reply;
use bson::raw::cstr;
use bson::{RawArrayBuf, RawDocumentBuf};

/// A MongoDB error as a reply says it.
#[derive(Debug, Clone, Copy)]
pub struct ErrorReply<'a> {
    pub code: i32,
    pub code_name: Option<&'a str>,
    pub errmsg: &'a str,
    pub labels: &'a [String],
}

fn labels(list: &[String]) -> RawArrayBuf {
    let mut array = RawArrayBuf::new();
    for l in list {
        array.push(l.as_str());
    }
    array
}

/// `{ok: 0, errmsg, code, codeName, errorLabels}`.
pub fn error_document(e: &ErrorReply<'_>) -> RawDocumentBuf {
    let mut doc = RawDocumentBuf::new();
    doc.append(cstr!("ok"), 0.0);
    doc.append(cstr!("errmsg"), e.errmsg);
    doc.append(cstr!("code"), e.code);
    if let Some(name) = e.code_name {
        doc.append(cstr!("codeName"), name);
    }
    if !e.labels.is_empty() {
        doc.append(cstr!("errorLabels"), labels(e.labels));
    }
    doc
}

/// A reply carrying `doc` in `op_code`'s reply opcode: OP_REPLY for OP_QUERY (and OP_REPLY),
/// OP_MSG for everything else.
pub fn reply_with(
    doc: RawDocumentBuf,
    op_code: OpCode,
    request_id: i32,
    response_to: i32,
) -> Vec<u8> {
    match op_code {
        OpCode::Query | OpCode::Reply => OpReply {
            response_flags: 0,
            cursor_id: 0,
            starting_from: 0,
            number_returned: 1,
            documents: vec![doc],
        }
        .encode(request_id, response_to),
        _ => OpMsg::with_body(doc, MsgFlags::empty()).encode(request_id, response_to),
    }
}

/// The error reply to a request sent in `request_op` with id `request_id`.
pub fn error_reply(
    e: &ErrorReply<'_>,
    request_op: OpCode,
    request_id: i32,
    reply_id: i32,
) -> Vec<u8> {
    reply_with(error_document(e), request_op, reply_id, request_id)
}

/// The server's reply `frame` with its body replaced by an error, ids and opcode kept; `None`
/// when the frame is no reply mongotape can read.
pub fn replace_with_error(frame: &[u8], e: &ErrorReply<'_>) -> Option<Vec<u8>> {
    let header = MsgHeader::parse(frame).ok()??;
    let body = reply::body(frame).ok()?;
    Some(reply_with(
        error_document(e),
        body.op_code,
        header.request_id,
        header.response_to,
    ))
}

/// The server's reply `frame` with `writeConcernError: {code, codeName, errmsg}` added to its body
/// (and `errorLabels` when given), everything else kept; `None` when it cannot be read.
pub fn with_write_concern_error(frame: &[u8], e: &ErrorReply<'_>) -> Option<Vec<u8>> {
    let header = MsgHeader::parse(frame).ok()??;
    let body = reply::body(frame).ok()?;
    let server = bson::RawDocument::from_bytes(body.doc.as_deref()?).ok()?;
    let mut doc = RawDocumentBuf::new();
    for element in server.iter() {
        let (key, value) = element.ok()?;
        if key.as_str() != "writeConcernError" && key.as_str() != "errorLabels" {
            doc.append(key, value);
        }
    }
    let mut wce = RawDocumentBuf::new();
    wce.append(cstr!("code"), e.code);
    if let Some(name) = e.code_name {
        wce.append(cstr!("codeName"), name);
    }
    wce.append(cstr!("errmsg"), e.errmsg);
    doc.append(cstr!("writeConcernError"), wce);
    if !e.labels.is_empty() {
        doc.append(cstr!("errorLabels"), labels(e.labels));
    }
    Some(reply_with(
        doc,
        body.op_code,
        header.request_id,
        header.response_to,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::reply::body;
    use bson::rawdoc;

    const LABELS: &[&str] = &["RetryableWriteError"];

    fn spec(labels: &[String]) -> ErrorReply<'_> {
        ErrorReply {
            code: 10107,
            code_name: Some("NotWritablePrimary"),
            errmsg: "not primary",
            labels,
        }
    }

    #[test]
    fn every_made_up_reply_reads_back() {
        let labels: Vec<String> = LABELS.iter().map(|s| s.to_string()).collect();
        for op in [OpCode::Msg, OpCode::Query, OpCode::Compressed] {
            let frame = error_reply(&spec(&labels), op, 41, 900);
            let header = MsgHeader::parse(&frame).unwrap().unwrap();
            assert_eq!((header.request_id, header.response_to), (900, 41));
            let want = if op == OpCode::Query {
                OpCode::Reply
            } else {
                OpCode::Msg
            };
            assert_eq!(header.op_code, want);
            let b = body(&frame).unwrap();
            let f = b.fields().unwrap();
            assert!(!f.is_ok());
            assert_eq!(
                (f.code, f.code_name),
                (Some(10107), Some("NotWritablePrimary"))
            );
            let doc = bson::RawDocument::from_bytes(b.doc.as_deref().unwrap()).unwrap();
            let got = doc.get_array("errorLabels").unwrap();
            assert_eq!(got.get_str(0).unwrap(), "RetryableWriteError");
            let replaced = replace_with_error(&frame, &spec(&[])).unwrap();
            assert_eq!(body(&replaced).unwrap().fields().unwrap().code, Some(10107));
        }
    }

    #[test]
    fn a_write_concern_error_keeps_the_servers_fields() {
        let server =
            OpMsg::with_body(rawdoc! { "n": 1, "ok": 1.0 }, MsgFlags::empty()).encode(7, 3);
        let e = ErrorReply {
            code: 64,
            code_name: Some("WriteConcernFailed"),
            errmsg: "waiting for replication timed out",
            labels: &[],
        };
        let frame = with_write_concern_error(&server, &e).unwrap();
        let b = body(&frame).unwrap();
        let f = b.fields().unwrap();
        assert!(f.is_ok());
        assert_eq!(f.n, Some(1));
        assert_eq!(f.error_code(), Some(64));
        let header = MsgHeader::parse(&frame).unwrap().unwrap();
        assert_eq!((header.request_id, header.response_to), (7, 3));
    }
}
