//! Pairs replies with the requests they answer, per connection, by `responseTo`; an OP_REPLY
//! whose `responseTo` is 0 (old shells' replies as some mongoreplay files hold them) answers the
//! oldest request waiting on its connection, a reply by its opcode. Memory is
//! bounded: at most [`PairLimits::per_connection`] requests wait on one connection (past it the
//! oldest is forgotten) and [`PairLimits::total`] over all (past it a new one is not kept); each
//! one not kept is counted in [`Pairer::untracked`], and a reply to it counts as unsolicited.

use crate::shape::ShapeId;
use crate::wire::{Message, OpCode, RequestInfo};
use bytes::Bytes;
use std::collections::{HashMap, VecDeque};

/// Requests kept waiting on one connection by default. A driver has one request in flight per
/// connection (a few with moreToCome writes in between); thousands is a client that never reads.
pub const DEFAULT_MAX_PENDING_PER_CONNECTION: usize = 1_000;
/// Requests kept waiting over all connections by default: ~5 MB of them (~480 bytes each).
pub const DEFAULT_MAX_PENDING: usize = 10_000;

/// How many unanswered requests a reader keeps for pairing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PairLimits {
    pub per_connection: usize,
    pub total: usize,
}

impl Default for PairLimits {
    fn default() -> Self {
        PairLimits {
            per_connection: DEFAULT_MAX_PENDING_PER_CONNECTION,
            total: DEFAULT_MAX_PENDING,
        }
    }
}

/// A request waiting for its reply.
#[derive(Debug, Clone)]
pub struct Pending {
    /// The request's `requestID` (what its reply answers).
    pub request_id: i32,
    pub info: RequestInfo,
    pub ts_ns: u64,
    pub bytes: usize,
    /// The query shape the reader charged the request to, if it keeps shapes.
    pub shape: Option<ShapeId>,
    /// The request's bytes, when the reader keeps them (`analyze`'s slowest requests): a share
    /// of the record's buffer, not a copy.
    pub payload: Option<Bytes>,
}

/// What a reply answered.
// Handed back once per reply and matched at once, never stored: boxing would cost an allocation
// per reply for nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum Answer {
    Request(Pending),
    /// A reply no request is waiting for: exhaust pushes (moreToCome replies answer the previous
    /// reply, not a request), a reply to a request recorded before a gap, or to one not kept.
    Unsolicited,
}

/// One connection's requests waiting, oldest first, and the exhaust replies the next push
/// answers. Both hold zero or one entry on nearly every connection: sized exactly.
#[derive(Debug, Default)]
struct Waiting {
    requests: VecDeque<(i32, Pending)>,
    exhaust: Vec<(i32, RequestInfo)>,
}

#[derive(Debug, Default)]
pub struct Pairer {
    conns: HashMap<u64, Waiting>,
    /// Requests waiting over all connections.
    total: usize,
    limits: PairLimits,
    /// Requests not kept (or forgotten) because a limit was reached.
    pub untracked: u64,
}

/// Pushes onto a vector that grows from one slot when empty (one allocation of one entry for
/// the common case, instead of the four a `Vec` starts with), doubling after.
fn push_exact<T>(v: &mut Vec<T>, item: T) {
    if v.capacity() == v.len() {
        v.reserve_exact(v.len().max(1));
    }
    v.push(item);
}

/// [`push_exact`] at the back of a queue.
fn push_back_exact<T>(v: &mut VecDeque<T>, item: T) {
    if v.capacity() == v.len() {
        v.reserve_exact(v.len().max(1));
    }
    v.push_back(item);
}

impl Pairer {
    pub fn new(limits: PairLimits) -> Pairer {
        Pairer {
            limits,
            ..Default::default()
        }
    }

    pub fn request(
        &mut self,
        conn: u64,
        msg: &Message,
        info: RequestInfo,
        ts_ns: u64,
        bytes: usize,
    ) {
        self.request_shaped(conn, msg, info, ts_ns, bytes, None);
    }

    /// [`Pairer::request`], remembering the query shape the request was charged to.
    pub fn request_shaped(
        &mut self,
        conn: u64,
        msg: &Message,
        info: RequestInfo,
        ts_ns: u64,
        bytes: usize,
        shape: Option<ShapeId>,
    ) {
        self.request_kept(conn, msg, info, (ts_ns, bytes), shape, None);
    }

    /// [`Pairer::request_shaped`], keeping the request's bytes with it until its reply.
    pub fn request_kept(
        &mut self,
        conn: u64,
        msg: &Message,
        mut info: RequestInfo,
        (ts_ns, bytes): (u64, usize),
        shape: Option<ShapeId>,
        payload: Option<Bytes>,
    ) {
        if !info.expects_reply {
            return;
        }
        if self.total >= self.limits.total {
            self.untracked += 1;
            return;
        }
        // What a reader needs of a waiting request is its command and namespace.
        info.lsid = None;
        let w = self.conns.entry(conn).or_default();
        if w.requests.len() >= self.limits.per_connection.max(1) {
            w.requests.pop_front();
            self.total -= 1;
            self.untracked += 1;
        }
        // Not searched for a request id used again: a reply takes the oldest one waiting, and the
        // per-connection bound forgets the others.
        let id = msg.header.request_id;
        let pending = Pending {
            request_id: id,
            info,
            ts_ns,
            bytes,
            shape,
            payload,
        };
        push_back_exact(&mut w.requests, (id, pending));
        self.total += 1;
    }

    /// Finds what `reply` answers. An exhaust reply (moreToCome) is remembered so the next push,
    /// whose responseTo is this reply's requestID, is known to belong to the same command.
    pub fn reply(&mut self, conn: u64, msg: &Message, more_to_come: bool) -> Answer {
        let Some(w) = self.conns.get_mut(&conn) else {
            return Answer::Unsolicited;
        };
        let to = msg.header.response_to;
        let by_order = to == 0 && msg.header.op_code == OpCode::Reply && !w.requests.is_empty();
        let found = w.requests.iter().position(|(r, _)| *r == to);
        let answer = match found.or(by_order.then_some(0)) {
            Some(at) => {
                self.total -= 1;
                let (_, p) = w.requests.remove(at).expect("found at that position");
                Answer::Request(p)
            }
            None => {
                if let Some(at) = w.exhaust.iter().position(|(r, _)| *r == to) {
                    let (_, info) = w.exhaust.swap_remove(at);
                    if more_to_come {
                        push_exact(&mut w.exhaust, (msg.header.request_id, info));
                    }
                }
                Answer::Unsolicited
            }
        };
        if more_to_come {
            if let Answer::Request(p) = &answer {
                push_exact(&mut w.exhaust, (msg.header.request_id, p.info.clone()));
            }
        }
        if w.requests.is_empty() && w.exhaust.is_empty() {
            self.conns.remove(&conn);
        }
        answer
    }

    /// Forgets a closed connection; returns the requests that never got a reply.
    pub fn close(&mut self, conn: u64) -> Vec<Pending> {
        let Some(w) = self.conns.remove(&conn) else {
            return Vec::new();
        };
        self.total -= w.requests.len();
        w.requests.into_iter().map(|(_, p)| p).collect()
    }

    /// Requests still waiting, across every connection.
    pub fn drain(&mut self) -> Vec<Pending> {
        self.total = 0;
        self.conns
            .drain()
            .flat_map(|(_, w)| w.requests.into_iter().map(|(_, p)| p))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{MsgFlags, OpMsg, Section};

    fn message(request_id: i32, response_to: i32) -> Message {
        let body = bson::rawdoc! { "find": "c", "$db": "t" };
        let bytes = OpMsg {
            flags: MsgFlags::empty(),
            sections: vec![Section::Body(body)],
            checksum: None,
        }
        .encode(request_id, response_to);
        Message::parse(&bytes).unwrap()
    }

    fn send(p: &mut Pairer, conn: u64, id: i32) {
        let m = message(id, 0);
        p.request(conn, &m, RequestInfo::of(&m), 0, 10);
    }

    fn answered(p: &mut Pairer, conn: u64, to: i32) -> bool {
        matches!(p.reply(conn, &message(0, to), false), Answer::Request(_))
    }

    #[test]
    fn unanswered_requests_are_bounded_per_connection_and_overall_and_counted() {
        let limits = PairLimits {
            per_connection: 3,
            total: 5,
        };
        let mut p = Pairer::new(limits);
        for id in 1..=10 {
            send(&mut p, 1, id);
        }
        // The oldest are forgotten: 7 of 10 not kept, the last 3 still answered.
        assert_eq!(p.untracked, 7);
        assert!(!answered(&mut p, 1, 1));
        assert!(answered(&mut p, 1, 8) && answered(&mut p, 1, 10));
        for conn in 2..=10 {
            send(&mut p, conn, 1);
        }
        // One waits on connection 1, 4 more fit overall: connections 6 to 10 are not kept.
        assert_eq!((p.total, p.untracked), (5, 12));
        assert!(answered(&mut p, 5, 1) && !answered(&mut p, 6, 1));
        assert_eq!(p.close(2).len(), 1);
        assert_eq!(p.drain().len(), 3, "connections 1, 3 and 4");
        assert_eq!(p.total, 0);
        assert!(p.conns.is_empty());
    }

    #[test]
    fn a_closed_or_answered_connection_leaves_nothing_behind() {
        let mut p = Pairer::default();
        for conn in 0..1_000 {
            send(&mut p, conn, 7);
            assert!(answered(&mut p, conn, 7));
        }
        send(&mut p, 5, 1);
        assert_eq!(p.close(5).len(), 1);
        assert!(p.conns.is_empty() && p.total == 0 && p.untracked == 0);
    }

    #[test]
    fn an_op_reply_answering_request_0_takes_the_oldest_request_waiting() {
        let reply = |to| {
            let bytes = crate::wire::legacy::OpReply {
                response_flags: 0,
                cursor_id: 0,
                starting_from: 0,
                number_returned: 1,
                documents: vec![bson::rawdoc! { "ok": 1 }],
            }
            .encode(90, to);
            Message::parse(&bytes).unwrap()
        };
        let mut p = Pairer::default();
        send(&mut p, 1, 4);
        send(&mut p, 1, 5);
        assert!(matches!(p.reply(1, &reply(0), false), Answer::Request(r) if r.request_id == 4));
        assert!(matches!(p.reply(1, &reply(5), false), Answer::Request(r) if r.request_id == 5));
        // Nothing waiting: unsolicited; an OP_MSG answering 0 is never taken by order.
        assert!(matches!(p.reply(1, &reply(0), false), Answer::Unsolicited));
        send(&mut p, 1, 6);
        assert!(!answered(&mut p, 1, 0));
    }
}
