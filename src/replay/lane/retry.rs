//! Which requests may be sent again after the target dropped the connection they were in flight
//! on (a primary stepping down closes its connections): the server may or may not have run them.
//! Reads are safe. Writes are safe when they are retryable writes: the replayer gave each one a
//! fresh `lsid` and its own `txnNumber`, so a server that already ran it answers the retry from
//! its record of that transaction number and does not write again. Anything else (a write without
//! a transaction number, a multi-statement transaction, a getMore whose cursor lived on the lost
//! connection's server) is not sent again: the replay ends with the connection error, as before.

use super::conns::is_read;
use crate::replay::client::ConnError;
use crate::replay::route::op::Op;
use crate::wire::bson_raw;
use crate::wire::OpMsgView;

/// The commands that are retryable writes when they carry a `txnNumber` outside a transaction.
const RETRYABLE_WRITES: &[&str] = &["insert", "update", "delete", "findAndModify"];

/// Whether the error means the connection is gone (not a malformed reply or a timeout, where the
/// server may still be running the request on a connection that is still open).
pub(super) fn is_dropped(e: &ConnError) -> bool {
    matches!(e, ConnError::Closed { .. } | ConnError::Io { .. })
}

/// Whether `op`, in flight when its connection dropped, may be sent again on a new one.
pub(super) fn safe_to_resend(op: &Op) -> bool {
    if !op.expects_reply || !op.cursor_patches.is_empty() {
        return false;
    }
    if is_read(&op.command, &op.bytes) {
        return true;
    }
    RETRYABLE_WRITES.contains(&&*op.command) && is_retryable_write(&op.bytes)
}

/// An OP_MSG whose body has `lsid` and `txnNumber` and no `autocommit` (which would make it a
/// statement of a multi-statement transaction).
fn is_retryable_write(bytes: &[u8]) -> bool {
    let Ok(view) = OpMsgView::new(bytes) else {
        return false;
    };
    let Ok(body) = view.body() else {
        return false;
    };
    let Ok(elements) = bson_raw::iter(body) else {
        return false;
    };
    let (mut lsid, mut txn_number) = (false, false);
    for element in elements {
        let Ok(element) = element else {
            return false;
        };
        match element.key {
            "lsid" => lsid = true,
            "txnNumber" => txn_number = true,
            "autocommit" => return false,
            _ => {}
        }
    }
    lsid && txn_number
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::request::Scope;
    use crate::wire::op_msg::{MsgFlags, OpMsg};
    use bson::{rawdoc, RawDocumentBuf};

    fn op(command: &'static str, body: RawDocumentBuf) -> Op {
        let bytes = OpMsg::with_body(body, MsgFlags::empty()).encode(1, 0);
        Op {
            bytes,
            cursor_patches: Vec::new(),
            expects_reply: true,
            command: command.into(),
            namespace: "d.c".into(),
            offset_ns: 0,
            seq: 0,
            scope: Scope::default(),
            produces_cursor: None,
            recorded: None,
            origin_conn: 1,
            origin_request: 1,
            marker: None,
            compressor: None,
            after: None,
            completes: None,
            connect_lead_ns: 0,
            charge: 0,
            plan_slot: None,
            shape: None,
        }
    }

    #[test]
    fn reads_and_retryable_writes_are_sent_again() {
        let lsid = rawdoc! { "id": 1 };
        assert!(safe_to_resend(&op(
            "find",
            rawdoc! { "find": "c", "$db": "d" }
        )));
        assert!(safe_to_resend(&op(
            "insert",
            rawdoc! { "insert": "c", "lsid": lsid.clone(), "txnNumber": 4_i64, "$db": "d" }
        )));
        // Not retryable: no transaction number, inside a transaction, a cursor on the lost server,
        // no reply to wait for, a write-through aggregate.
        assert!(!safe_to_resend(&op(
            "insert",
            rawdoc! { "insert": "c", "lsid": lsid.clone(), "$db": "d" }
        )));
        assert!(!safe_to_resend(&op(
            "update",
            rawdoc! { "update": "c", "lsid": lsid.clone(), "txnNumber": 4_i64, "autocommit": false, "$db": "d" }
        )));
        let mut get_more = op("getMore", rawdoc! { "getMore": 5_i64, "collection": "c" });
        get_more.cursor_patches.push((30, 5));
        assert!(!safe_to_resend(&get_more));
        let mut unacknowledged = op("find", rawdoc! { "find": "c" });
        unacknowledged.expects_reply = false;
        assert!(!safe_to_resend(&unacknowledged));
        assert!(!safe_to_resend(&op(
            "aggregate",
            rawdoc! { "aggregate": "c", "pipeline": [{ "$out": "x" }] }
        )));
        assert!(!safe_to_resend(&op("drop", rawdoc! { "drop": "c" })));
    }
}
