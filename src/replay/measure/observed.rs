//! What one target answered to one request, kept for the A/B comparison (`replay::ab`) only while
//! the request is in flight on the other targets: the latency, the outcome and the reply's body.

use super::outcome::Outcome;
use crate::shape::ShapeId;

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
    /// One request's observations on every target; `shape` is its query shape's id.
    fn paired(
        &self,
        command: &str,
        namespace: &str,
        shape: Option<ShapeId>,
        seen: &[Option<Observed>],
    );
}

/// The body document of an OP_MSG or OP_REPLY (first document), compressed or not.
pub fn body_of(frame: &[u8]) -> Option<Vec<u8>> {
    Some(crate::wire::reply::body(frame).ok()?.doc?.into_owned())
}
