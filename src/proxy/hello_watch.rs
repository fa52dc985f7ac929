//! Which hello replies a connection awaits: the request ids of its hello / isMaster requests. A
//! streaming (exhaust) hello goes on answering while its replies carry moreToCome; the next reply's
//! responseTo is the previous reply's requestId (as mongod does it) or the request's own id (as
//! secantusd-rs does it), so both are matched. Shared by the connection's two pumps; the empty case
//! is one atomic load.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

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
