//! Order that holds under `--connections N`: a write, and any later request on the same namespace
//! (read or write) sent on another connection, run in their recorded order. The later request waits
//! until the write is answered; requests that depend on nothing run side by side. A transaction's
//! writes count as done when it commits or aborts (what another connection can see). An
//! unacknowledged write (moreToCome) is never seen done: what follows it goes on its connection.
//!
//! No wait can deadlock: a request only ever waits for one emitted before it, and every lane takes
//! its requests in emission order.

use super::shared::{Counters, Shared};
use crate::replay::request::{Request, Scope};
use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tokio::sync::{watch, Semaphore};

/// Commands that change documents of their namespace.
const WRITES: &[&str] = &[
    "insert",
    "update",
    "delete",
    "findAndModify",
    "findandmodify",
];

/// A write's completion, to wait for: closed once the write is answered (or dropped unsent).
#[derive(Debug, Clone)]
pub struct After(Arc<Semaphore>);

/// Held by the write itself; completes its [`After`] when dropped, whatever became of the write.
#[derive(Debug)]
pub struct Completes(Arc<Semaphore>);

impl Drop for Completes {
    fn drop(&mut self) {
        self.0.close();
    }
}

fn pair() -> (After, Completes) {
    let s = Arc::new(Semaphore::new(0));
    (After(s.clone()), Completes(s))
}

/// The last write per namespace and copy, and the namespaces each open transaction wrote.
#[derive(Default)]
pub struct Order {
    /// `--order none`: nothing waits, nothing is followed (the most concurrency, no guarantee).
    off: bool,
    /// (lane, completion, unacknowledged)
    last_write: HashMap<(Scope, Arc<str>), (usize, After, bool)>,
    txn_writes: HashMap<(Scope, Vec<u8>, i64), Vec<Arc<str>>>,
}

impl Order {
    /// `unordered`: `--order none`.
    pub fn new(unordered: bool) -> Order {
        Order {
            off: unordered,
            ..Order::default()
        }
    }

    /// The lane a request of `namespace` must go to: that of an unacknowledged write before it,
    /// whose completion no reply will tell.
    pub fn lane_of(&self, scope: Scope, namespace: &Arc<str>) -> Option<usize> {
        if self.off {
            return None;
        }
        match self.last_write.get(&(scope, namespace.clone())) {
            Some((lane, _, true)) => Some(*lane),
            _ => None,
        }
    }

    /// What the copy of `req` on `lane` must wait for, and what it completes.
    pub fn place(
        &mut self,
        scope: Scope,
        lane: usize,
        req: &Request,
        namespace: &Arc<str>,
    ) -> (Option<After>, Option<Completes>) {
        if self.off {
            return (None, None);
        }
        let after = match self.last_write.get(&(scope, namespace.clone())) {
            Some((l, after, _)) if *l != lane && !after.0.is_closed() => Some(after.clone()),
            _ => None,
        };
        let txn = match (&req.lsid, req.transaction) {
            (Some(l), Some(t)) => Some((scope, l.clone(), t)),
            _ => None,
        };
        let write = WRITES.contains(&&*req.command) && req.collection.is_some();
        let completes = match txn {
            // Inside a transaction: visible to others only at its end.
            Some(key) if write => {
                self.txn_writes
                    .entry(key)
                    .or_default()
                    .push(namespace.clone());
                None
            }
            Some(key) if matches!(&*req.command, "commitTransaction" | "abortTransaction") => {
                let written = self.txn_writes.remove(&key).unwrap_or_default();
                (!written.is_empty()).then(|| {
                    let (after, completes) = pair();
                    for ns in written {
                        self.last_write
                            .insert((scope, ns), (lane, after.clone(), false));
                    }
                    completes
                })
            }
            None if write => {
                let (after, completes) = pair();
                self.last_write.insert(
                    (scope, namespace.clone()),
                    (lane, after, !req.expects_reply),
                );
                Some(completes)
            }
            _ => None,
        };
        (after, completes)
    }

    /// A new pass: nothing of the last one is waited for any more.
    pub fn clear(&mut self) {
        self.last_write.clear();
        self.txn_writes.clear();
    }
}

/// Waits for the write `after` stands for. False when the replay was aborted meanwhile.
pub async fn wait_turn(
    shared: &Shared,
    after: Option<&After>,
    abort: &mut watch::Receiver<bool>,
) -> bool {
    let Some(after) = after else { return true };
    Counters::bump(&shared.counters.ordered);
    if after.0.is_closed() {
        return true;
    }
    let started = std::time::Instant::now();
    let done = tokio::select! {
        _ = after.0.acquire() => true,
        _ = abort.wait_for(|a| *a) => false,
    };
    Counters::bump(&shared.counters.order_waits);
    shared
        .counters
        .order_wait_ns
        .fetch_add(started.elapsed().as_nanos() as u64, Ordering::Relaxed);
    done
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::request::understand;
    use bson::rawdoc;

    fn request(doc: bson::RawDocumentBuf) -> Request {
        use crate::wire::op_msg::{MsgFlags, OpMsg, Section};
        let msg = OpMsg {
            flags: MsgFlags::empty(),
            sections: vec![Section::Body(doc)],
            checksum: None,
        };
        understand(1, 0, &bytes::Bytes::from(msg.encode(7, 0))).expect("understood")
    }

    #[test]
    fn a_read_after_a_write_on_another_lane_waits_for_it() {
        let ns: Arc<str> = Arc::from("db.c");
        let mut order = Order::default();
        let insert = request(rawdoc! { "insert": "c", "$db": "db", "documents": [{"_id": 1}] });
        assert_eq!(&*insert.command, "insert");
        let find = request(rawdoc! { "find": "c", "$db": "db" });
        let (after, completes) = order.place(0, 0, &insert, &ns);
        assert!(after.is_none() && completes.is_some());
        let (same_lane, _) = order.place(0, 0, &find, &ns);
        assert!(same_lane.is_none(), "one lane keeps its own order");
        let (other_lane, none) = order.place(0, 1, &find, &ns);
        let other_lane = other_lane.expect("waits");
        assert!(none.is_none());
        assert!(!other_lane.0.is_closed());
        drop(completes);
        assert!(other_lane.0.is_closed());
        // Another copy does not wait.
        assert!(order.place(1, 1, &find, &ns).0.is_none());
    }

    #[test]
    fn with_order_none_nothing_waits_or_follows() {
        let ns: Arc<str> = Arc::from("db.c");
        let mut order = Order::new(true);
        let insert = request(rawdoc! { "insert": "c", "$db": "db", "documents": [{"_id": 1}] });
        let find = request(rawdoc! { "find": "c", "$db": "db" });
        let (after, completes) = order.place(0, 0, &insert, &ns);
        assert!(after.is_none() && completes.is_none());
        assert!(order.place(0, 1, &find, &ns).0.is_none());
        assert_eq!(order.lane_of(0, &ns), None);
    }
}
