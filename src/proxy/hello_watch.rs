//! Which hello replies a connection awaits: the request ids of its hello / isMaster requests, and
//! for a streaming (exhaust) hello the request id of the last reply with moreToCome, which the next
//! reply answers. Shared by the connection's two pumps; the empty case is one atomic load.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// More hellos in flight on one connection than any driver sends; older ones are forgotten.
const MAX_AWAITED: usize = 16;

#[derive(Debug, Default)]
pub struct HelloWatch {
    awaited: Mutex<Vec<i32>>,
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
        awaited.push(request_id);
        self.count.store(awaited.len(), Ordering::Release);
    }

    pub fn is_awaited(&self, response_to: i32) -> bool {
        self.is_waiting()
            && self
                .awaited
                .lock()
                .expect("hello watch lock")
                .contains(&response_to)
    }

    /// A reply to `response_to` came; with moreToCome the next one will answer `request_id`.
    pub fn answered(&self, response_to: i32, request_id: i32, more_to_come: bool) {
        let mut awaited = self.awaited.lock().expect("hello watch lock");
        awaited.retain(|id| *id != response_to);
        if more_to_come {
            awaited.push(request_id);
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
        w.answered(7, 100, true);
        assert!(w.is_awaited(100) && !w.is_awaited(7));
        w.answered(100, 101, false);
        assert!(!w.is_waiting());
        for id in 0..100 {
            w.expect(id);
        }
        assert!(w.is_awaited(99) && !w.is_awaited(0));
    }
}
