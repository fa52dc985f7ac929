//! The outcome of a reply, read in place from the frame (no document is copied), for recorded and
//! live replies alike, and the comparison of the two.

use crate::wire::{reply, WireError};
use serde::Serialize;

/// What a replayer compares between a recorded and a live reply: one request's result, made from
/// [`reply::ReplyFields`] (the one reading of a reply) and kept after the frame is gone, with `ok`
/// judged by the one rule and a recorded reply's latency. Not [`crate::wire::ReplyInfo`]: this is
/// serialized into the report's divergences and compared field by field ([`Outcome::differences`]),
/// which keeps what differs between runs (`codeName`, `moreToCome`) out.
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Outcome {
    pub ok: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub n: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub n_modified: Option<i64>,
    #[serde(skip_serializing_if = "is_zero")]
    pub upserted: usize,
    #[serde(skip_serializing_if = "is_zero")]
    pub write_errors: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cursor_id: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub batch_len: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub errmsg: Option<String>,
    /// A recorded reply's latency in the capture (request to reply); not compared.
    #[serde(skip)]
    pub latency_ns: Option<u64>,
    /// `operationTime` as `(t, i)`; not compared (the snapshot cut reads the recorded one).
    #[serde(skip)]
    pub operation_time: Option<(u32, u32)>,
}

fn is_zero(v: &usize) -> bool {
    *v == 0
}

/// Reads the outcome of a whole reply message (OP_MSG, OP_REPLY, or either inside OP_COMPRESSED).
pub fn scan(frame: &[u8]) -> Result<Outcome, WireError> {
    let body = reply::body(frame)?;
    let f = body.fields()?;
    Ok(Outcome {
        ok: f.is_ok(),
        code: f.code,
        n: f.n,
        n_modified: f.n_modified,
        upserted: f.upserted,
        write_errors: f.write_errors,
        cursor_id: f.cursor_id,
        batch_len: f.batch_len,
        errmsg: f.errmsg.map(str::to_owned),
        latency_ns: None,
        operation_time: f.operation_time,
    })
}

impl Outcome {
    /// The fields on which `live` differs from `self` (the recorded outcome). The error message and
    /// cursor ids are not compared: they differ on every run.
    pub fn differences(&self, live: &Outcome) -> Vec<&'static str> {
        let mut d = Vec::new();
        if self.ok != live.ok {
            d.push("ok");
        }
        if self.code != live.code {
            d.push("code");
        }
        if self.n != live.n {
            d.push("n");
        }
        if self.n_modified != live.n_modified {
            d.push("nModified");
        }
        if self.upserted != live.upserted {
            d.push("upserted");
        }
        if self.write_errors != live.write_errors {
            d.push("writeErrors");
        }
        if self.batch_len != live.batch_len {
            d.push("batch");
        }
        if self.cursor_id.map(|c| c == 0) != live.cursor_id.map(|c| c == 0) {
            d.push("cursor exhausted");
        }
        d
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::op_msg::{MsgFlags, OpMsg};
    use crate::wire::{MsgHeader, OpMsgView};
    use bson::rawdoc;

    fn reply(doc: bson::RawDocumentBuf, flags: MsgFlags) -> Vec<u8> {
        OpMsg::with_body(doc, flags).encode(5, 1)
    }

    #[test]
    fn reads_cursor_and_write_outcomes() {
        let f = reply(
            rawdoc! {"cursor": {"firstBatch": [{"a": 1}, {"a": 2}], "id": 77i64, "ns": "x.y"}, "ok": 1.0},
            MsgFlags::empty(),
        );
        let o = scan(&f).unwrap();
        assert!(o.ok);
        assert_eq!((o.cursor_id, o.batch_len), (Some(77), Some(2)));
        assert!(!OpMsgView::new(&f).unwrap().more_to_come());
        let f = reply(
            rawdoc! {"n": 1, "writeErrors": [{"index": 0, "code": 11000}], "ok": 1},
            MsgFlags::MORE_TO_COME,
        );
        let o = scan(&f).unwrap();
        assert_eq!((o.n, o.write_errors), (Some(1), 1));
        assert!(OpMsgView::new(&f).unwrap().more_to_come());
        let recorded = Outcome {
            ok: true,
            n: Some(1),
            ..Outcome::default()
        };
        assert_eq!(recorded.differences(&o), vec!["writeErrors"]);
    }

    #[test]
    fn truncated_replies_are_errors() {
        let f = reply(rawdoc! {"ok": 1.0, "n": 3}, MsgFlags::empty());
        for cut in 0..f.len() {
            let mut b = f[..cut].to_vec();
            MsgHeader::write_message_length(&mut b, cut as i32);
            assert!(scan(&b).is_err(), "cut {cut}");
        }
    }
}
