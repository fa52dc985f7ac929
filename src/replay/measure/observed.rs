//! What one target answered to one request, kept for the A/B comparison (`replay::ab`) only while
//! the request is in flight on the other targets: the latency, the outcome and the reply's body.

use super::outcome::Outcome;
use crate::wire::compressed;
use crate::wire::header::{MsgHeader, OpCode};
use crate::wire::legacy::OpReplyView;
use crate::wire::OpMsgView;

/// Replies larger than this are compared by outcome only (their body is not kept).
pub const MAX_KEPT_BODY: usize = 1 << 20;

/// One target's answer to one request.
#[derive(Debug, Clone, Default)]
pub struct Observed {
    /// `None`: an unacknowledged write (no reply).
    pub latency_ns: Option<u64>,
    pub outcome: Outcome,
    /// The reply's body document (raw BSON), when it has one and it is not too large.
    pub body: Option<Vec<u8>>,
}

impl Observed {
    pub fn of_reply(frame: &[u8], outcome: Outcome, latency_ns: u64) -> Observed {
        Observed {
            latency_ns: Some(latency_ns),
            outcome,
            body: body_of(frame).filter(|b| b.len() <= MAX_KEPT_BODY),
        }
    }
}

/// Where the observations of one request on every target go, once all of them answered (or
/// failed: `None`). Implemented by the A/B collector; the lanes only know this trait.
pub trait PairSink: Send + Sync {
    fn paired(&self, command: &str, namespace: &str, seen: &[Option<Observed>]);
}

/// The body document of an OP_MSG or OP_REPLY (first document), compressed or not.
pub fn body_of(frame: &[u8]) -> Option<Vec<u8>> {
    let header = MsgHeader::parse_whole(frame, "reply header").ok()?;
    match header.op_code {
        OpCode::Compressed => {
            let (_, inner) = compressed::decompress(frame).ok()?;
            body_of(&inner)
        }
        OpCode::Msg => Some(OpMsgView::new(frame).ok()?.body().ok()?.to_vec()),
        OpCode::Reply => {
            let reply = OpReplyView::new(frame).ok()?;
            let len = crate::wire::bson_raw::doc_len(reply.documents)?;
            reply.documents.get(..len).map(<[u8]>::to_vec)
        }
        _ => None,
    }
}
