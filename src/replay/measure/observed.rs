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

    /// [`PairSink::paired`] for a request that asks for no order ([`asks_order`]): its replies'
    /// documents in another order are the same answer.
    fn paired_unsorted(
        &self,
        command: &str,
        namespace: &str,
        shape: Option<ShapeId>,
        seen: &[Option<Observed>],
    ) {
        self.paired(command, namespace, shape, seen)
    }
}

/// Whether a request asks for its documents in an order: a `find` with a non-empty `sort`, an
/// `aggregate` with a `$sort` stage, and every other command (compared strictly). A `find`
/// without a sort and an `aggregate` without `$sort` may return their documents in any order.
pub fn asks_order(command: &str, request: &[u8]) -> bool {
    if command != "find" && command != "aggregate" {
        return true;
    }
    let Ok(msg) = crate::wire::Message::parse(request) else {
        return true;
    };
    let crate::wire::Body::Msg(m) = &msg.body else {
        return true;
    };
    let body = m.body();
    if command == "find" {
        return body.get_document("sort").is_ok_and(|s| !s.is_empty());
    }
    let Ok(pipeline) = body.get_array("pipeline") else {
        return true;
    };
    pipeline
        .into_iter()
        .flatten()
        .filter_map(|stage| stage.as_document())
        .any(|stage| stage.get("$sort").ok().flatten().is_some())
}

/// The body document of an OP_MSG or OP_REPLY (first document), compressed or not.
pub fn body_of(frame: &[u8]) -> Option<Vec<u8>> {
    Some(crate::wire::reply::body(frame).ok()?.doc?.into_owned())
}
