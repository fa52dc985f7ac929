//! Which hello replies a connection awaits: the request ids of its hello / isMaster requests. A
//! streaming (exhaust) hello goes on answering while its replies carry moreToCome; the next reply's
//! responseTo is the previous reply's requestId (as mongod does it) or the request's own id (as
//! secantusd-rs does it), so both are matched. Shared by the connection's two pumps; the empty case
//! is one atomic load. A reply to one is rewritten here ([`HelloWatch::rewrite`]) before the
//! reply pump forwards it.

use super::stats::Stats;
use super::topology::Topology;
use crate::capture::record::HELLO_REWRITE;
use crate::capture::{HelloRewriteEvent, Record};
use crate::wire::hello::rewrite_hello_reply;
use crate::wire::MsgHeader;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use tokio::sync::Notify;

/// More hellos in flight on one connection than any driver sends; older ones are forgotten.
const MAX_AWAITED: usize = 16;

#[derive(Debug, Default)]
pub struct HelloWatch {
    /// Per hello in flight: the request's id and the id of its latest streamed reply.
    awaited: Mutex<Vec<(i32, i32)>>,
    count: AtomicUsize,
}

impl HelloWatch {
    /// Whether any hello reply is awaited (the reply pump forwards whole messages only then).
    pub fn is_waiting(&self) -> bool {
        self.count.load(Ordering::Acquire) > 0
    }

    pub fn expect(&self, request_id: i32) {
        let mut awaited = self.awaited.lock().expect("hello watch lock");
        if awaited.len() >= MAX_AWAITED {
            awaited.remove(0);
        }
        awaited.push((request_id, request_id));
        self.count.store(awaited.len(), Ordering::Release);
    }

    pub fn is_awaited(&self, response_to: i32) -> bool {
        self.is_waiting()
            && self
                .awaited
                .lock()
                .expect("hello watch lock")
                .iter()
                .any(|&(request, latest)| response_to == request || response_to == latest)
    }

    /// A reply to `response_to` came; with moreToCome the next one will answer `request_id`.
    pub fn answered(&self, response_to: i32, request_id: i32, more_to_come: bool) {
        let mut awaited = self.awaited.lock().expect("hello watch lock");
        let found = awaited
            .iter()
            .position(|&(request, latest)| response_to == request || response_to == latest);
        match found {
            Some(at) if more_to_come => awaited[at].1 = request_id,
            Some(at) => {
                awaited.remove(at);
            }
            None => {}
        }
        self.count.store(awaited.len(), Ordering::Release);
    }
}

impl HelloWatch {
    /// When `frame` answers an awaited hello and something mapped: the rewritten reply to forward
    /// instead, and the capture record that marks it. Warns about addresses the proxy does not
    /// serve, and has the topology looked at again.
    pub fn rewrite(
        &self,
        frame: &[u8],
        conn_id: u64,
        now: u64,
        topology: &Topology,
        stats: &Stats,
        changed: &Notify,
    ) -> Option<(Vec<u8>, Record)> {
        let header = MsgHeader::parse(frame).ok()??;
        if !self.is_awaited(header.response_to) {
            return None;
        }
        self.answered(
            header.response_to,
            header.request_id,
            crate::wire::hello::reply_more_to_come(frame),
        );
        let map = topology.map();
        let outcome = match rewrite_hello_reply(frame, &map) {
            Ok(outcome) => outcome,
            Err(e) => {
                tracing::warn!(conn = conn_id, "upstream hello reply not rewritten: {e}");
                return None;
            }
        };
        if !outcome.unserved.is_empty() {
            Stats::add(&stats.unserved_addresses, 1);
            tracing::warn!(
                conn = conn_id,
                "UNSERVED ADDRESS: the upstream's hello names {} which the proxy does not serve; \
             a client may connect there directly and bypass the recording",
                first_few(&outcome.unserved)
            );
            changed.notify_one();
        }
        let message = outcome.message?;
        Stats::add(&stats.hello_rewrites, 1);
        let mark = Record::json(
            HELLO_REWRITE,
            conn_id,
            now,
            &HelloRewriteEvent {
                request_id: header.request_id,
                replaced: outcome.replaced as u64,
                unserved: outcome.unserved,
            },
        );
        Some((message, mark))
    }
}

/// The first addresses of a list and how many more, for a log line of bounded length.
fn first_few(addresses: &[String]) -> String {
    const SHOWN: usize = 5;
    let mut text = addresses[..addresses.len().min(SHOWN)].join(", ");
    if addresses.len() > SHOWN {
        text.push_str(&format!(" and {} more", addresses.len() - SHOWN));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streaming_replies_chain_and_the_list_is_bounded() {
        let w = HelloWatch::default();
        assert!(!w.is_waiting());
        w.expect(7);
        assert!(w.is_awaited(7) && !w.is_awaited(8));
        // mongod: each streamed reply answers the previous reply.
        w.answered(7, 100, true);
        assert!(w.is_awaited(100));
        w.answered(100, 101, true);
        assert!(w.is_awaited(101) && !w.is_awaited(100));
        // secantusd-rs: each streamed reply answers the request.
        w.answered(7, 102, true);
        assert!(w.is_awaited(7) && w.is_awaited(102));
        w.answered(102, 103, false);
        assert!(!w.is_waiting());
        for id in 0..100 {
            w.expect(id);
        }
        assert!(w.is_awaited(99) && !w.is_awaited(0));
    }
}
