//! One request at a time per logical session, with one lane per recorded connection. A driver
//! checks a session out for one operation at a time, but takes any pooled connection for it: a
//! pymongo application with six threads sends one session's retryable writes (`txnNumber` 7, 8,
//! 9 ...), a transaction's statements and a cursor's getMores over several connections. The server
//! refuses a `txnNumber` lower than one it has seen on the session (TransactionTooOld), so when a
//! replay connection falls behind (its handshake, a slow reply), the write it carries must not be
//! overtaken by the session's next one on another connection. Each request with an `lsid` waits
//! until the session's previous request, sent on another lane, is answered (or dropped).
//!
//! No wait can deadlock, as in [`super::order`]: a request only waits for one emitted before it.
//! Memory: one entry per session with a request in flight; answered ones are pruned as the map
//! grows.

use super::order::{pair, After, Completes};
use std::collections::HashMap;

/// Entries kept before answered ones are first pruned.
const PRUNE_AT_LEAST: usize = 1024;

/// The last request of each live session: (lane, completion).
#[derive(Default)]
pub struct SessionOrder {
    last: HashMap<[u8; 16], (usize, After)>,
    prune_at: usize,
}

impl SessionOrder {
    /// What a request of live session `lsid` on `lane` waits for, and what it completes.
    pub fn place(
        &mut self,
        lane: usize,
        lsid: Option<[u8; 16]>,
    ) -> (Option<After>, Option<Completes>) {
        let Some(lsid) = lsid else {
            return (None, None);
        };
        let (after, completes) = pair();
        let wait = match self.last.insert(lsid, (lane, after)) {
            Some((l, previous)) if l != lane && !previous.done() => Some(previous),
            _ => None,
        };
        if self.last.len() >= self.prune_at.max(PRUNE_AT_LEAST) {
            self.last.retain(|_, (_, a)| !a.done());
            self.prune_at = 2 * self.last.len();
        }
        (wait, Some(completes))
    }

    /// The completion of the last request placed for `lsid`.
    pub fn last(&self, lsid: &[u8; 16]) -> Option<&After> {
        self.last.get(lsid).map(|(_, after)| after)
    }

    /// A new pass: nothing of the last one is waited for any more.
    pub fn clear(&mut self) {
        self.last.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: [u8; 16] = [1; 16];
    const B: [u8; 16] = [2; 16];

    #[test]
    fn a_session_s_request_waits_for_its_previous_one_on_another_lane() {
        let mut s = SessionOrder::default();
        assert!(
            s.place(0, None).1.is_none(),
            "no session, nothing to follow"
        );
        let (none, first) = s.place(0, Some(A));
        assert!(none.is_none());
        // Same lane: already in order.
        let (none, second) = s.place(0, Some(A));
        assert!(none.is_none());
        // Another session: independent.
        let (none, _other) = s.place(1, Some(B));
        assert!(none.is_none());
        // Another lane: waits for the second, not yet answered.
        let (wait, _third) = s.place(1, Some(A));
        let wait = wait.expect("waits");
        assert!(!wait.done());
        drop(first);
        assert!(!wait.done(), "waits for the latest, not the first");
        drop(second);
        assert!(wait.done());
    }

    #[test]
    fn an_answered_request_is_not_waited_for_and_is_forgotten() {
        let mut s = SessionOrder::default();
        let (_, done) = s.place(0, Some(A));
        drop(done);
        assert!(s.place(1, Some(A)).0.is_none());
        for i in 0..10_000u32 {
            let mut id = [0u8; 16];
            id[..4].copy_from_slice(&i.to_ne_bytes());
            drop(s.place(i as usize % 4, Some(id)).1);
        }
        assert!(s.last.len() <= PRUNE_AT_LEAST, "{}", s.last.len());
    }
}
