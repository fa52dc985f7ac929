//! Order that holds under `--connections N`: requests on the same namespace sent on different
//! connections keep their recorded order wherever one of them is a write. A request after a write
//! (read or write) waits until the write is answered; a write after reads waits until every read
//! recorded before it is answered too, so a `delete` never empties a collection under the finds
//! that came first. Reads between two writes run side by side, as do requests that depend on
//! nothing. A transaction's writes count as done when it commits or aborts (what another connection
//! can see), and its commit waits for the reads before it. An unacknowledged write (moreToCome) is
//! never seen done: what follows it goes on its connection.
//!
//! No wait can deadlock: a request only ever waits for ones emitted before it, and every lane takes
//! its requests in emission order.

use super::counter;
use super::run::Run;
use crate::replay::names::Name;
use crate::replay::request::{Request, Scope};
use std::collections::HashMap;
use std::sync::Arc;
use tokio::sync::{watch, Semaphore};

/// Commands that change documents of their namespace.
pub(crate) const WRITES: &[&str] = &[
    "insert",
    "update",
    "delete",
    "findAndModify",
    "findandmodify",
];

/// Completions to wait for: each closed once its request is answered (or dropped unsent).
#[derive(Debug, Clone, Default)]
pub struct After(Vec<Arc<Semaphore>>);

impl After {
    pub fn done(&self) -> bool {
        self.0.iter().all(|s| s.is_closed())
    }

    /// Waits (on a thread that is no runtime's: the capture reader) until done or `abort`.
    pub fn wait_blocking(&self, abort: &super::abort::Abort) -> bool {
        let mut pause = std::time::Duration::from_micros(50);
        while !self.done() {
            if abort.is_set() {
                return false;
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(std::time::Duration::from_millis(5));
        }
        true
    }

    /// Adds what `other` waits for.
    pub fn join(&mut self, other: &After) {
        self.0.extend(other.0.iter().cloned());
    }

    /// Its own heap block (the completions it points to are counted with their requests).
    pub fn heap_bytes(&self) -> usize {
        super::budget::heap_block(self.0.capacity() * std::mem::size_of::<Arc<Semaphore>>())
    }
}

/// Held by the request itself; completes its [`After`] when dropped, whatever became of it.
#[derive(Debug)]
pub struct Completes(Arc<Semaphore>);

impl Completes {
    /// The completion's heap block: the semaphore and the `Arc`'s two counts.
    pub const HEAP_BYTES: usize = 16 * (std::mem::size_of::<Semaphore>() + 16 + 8).div_ceil(16);
}

impl Drop for Completes {
    fn drop(&mut self) {
        self.0.close();
    }
}

pub fn pair() -> (After, Completes) {
    let s = Arc::new(Semaphore::new(0));
    (After(vec![s.clone()]), Completes(s))
}

/// What a namespace's later requests must follow, per copy.
#[derive(Default)]
struct Namespace {
    /// The last write: (lane, completion, unacknowledged).
    write: Option<(usize, After, bool)>,
    /// The reads since that write that are not answered yet: (lane, completion).
    reads: Vec<(usize, After)>,
}

impl Namespace {
    /// Adds to `waits` what a request on `lane` must follow: the last write, and for a write also
    /// the reads since it (requests on its own lane are in order already).
    fn follow(&self, lane: usize, write: bool, waits: &mut After) {
        if let Some((l, after, _)) = &self.write {
            if *l != lane && !after.done() {
                waits.0.extend(after.0.iter().cloned());
            }
        }
        if write {
            for (l, after) in &self.reads {
                if *l != lane && !after.done() {
                    waits.0.extend(after.0.iter().cloned());
                }
            }
        }
    }
}

/// Per namespace and copy, what later requests follow; and the namespaces each open transaction
/// wrote.
#[derive(Default)]
pub struct Order {
    /// `--order none`: nothing waits, nothing is followed (the most concurrency, no guarantee).
    off: bool,
    namespaces: HashMap<(Scope, Name), Namespace>,
    txn_writes: HashMap<(Scope, Vec<u8>, i64), Vec<Name>>,
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
    pub fn lane_of(&self, scope: Scope, namespace: &Name) -> Option<usize> {
        if self.off {
            return None;
        }
        match self.namespaces.get(&(scope, namespace.clone()))?.write {
            Some((lane, _, true)) => Some(lane),
            _ => None,
        }
    }

    /// What the copy of `req` on `lane` must wait for, and what it completes.
    pub fn place(
        &mut self,
        scope: Scope,
        lane: usize,
        req: &Request,
        namespace: &Name,
    ) -> (Option<After>, Option<Completes>) {
        if self.off {
            return (None, None);
        }
        let txn = match (&req.lsid, req.transaction) {
            (Some(l), Some(t)) => Some((scope, l.clone(), t)),
            _ => None,
        };
        let write = WRITES.contains(&&*req.command) && req.collection.is_some();
        let mut waits = After::default();
        self.namespaces
            .entry((scope, namespace.clone()))
            .or_default()
            .follow(lane, write, &mut waits);
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
                        let state = self.namespaces.entry((scope, ns)).or_default();
                        state.follow(lane, true, &mut waits);
                        state.write = Some((lane, after.clone(), false));
                        state.reads.clear();
                    }
                    completes
                })
            }
            None if write => {
                let (after, completes) = pair();
                let state = self
                    .namespaces
                    .entry((scope, namespace.clone()))
                    .or_default();
                state.write = Some((lane, after, !req.expects_reply));
                // They are followed through this write, which follows them.
                state.reads.clear();
                Some(completes)
            }
            _ => {
                // A read (or any other request on the namespace): a later write follows it.
                let (after, completes) = pair();
                let state = self
                    .namespaces
                    .entry((scope, namespace.clone()))
                    .or_default();
                state.reads.retain(|(_, a)| !a.done());
                state.reads.push((lane, after));
                Some(completes)
            }
        };
        let after = (!waits.0.is_empty()).then_some(waits);
        (after, completes)
    }

    /// A new pass: nothing of the last one is waited for any more.
    pub fn clear(&mut self) {
        self.namespaces.clear();
        self.txn_writes.clear();
    }
}

/// Waits for what `after` stands for. False when the replay was aborted meanwhile.
pub async fn wait_turn(
    run: &Run,
    after: Option<&After>,
    abort: &mut watch::Receiver<bool>,
) -> bool {
    let Some(after) = after else { return true };
    counter::bump(&run.counters.ordered);
    if after.done() {
        return true;
    }
    let started = std::time::Instant::now();
    for s in &after.0 {
        let done = tokio::select! {
            _ = s.acquire() => true,
            _ = abort.wait_for(|a| *a) => false,
        };
        if !done {
            return false;
        }
    }
    counter::bump(&run.counters.order_waits);
    counter::add(
        &run.counters.order_wait_ns,
        started.elapsed().as_nanos() as u64,
    );
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::request::understand;
    use bson::rawdoc;

    fn request(doc: bson::RawDocumentBuf) -> Request {
        use crate::wire::op_msg::{MsgFlags, OpMsg};
        let msg = OpMsg::with_body(doc, MsgFlags::empty());
        understand(1, 0, &bytes::Bytes::from(msg.encode(7, 0))).expect("understood")
    }

    #[test]
    fn the_reader_waits_for_every_copy_of_a_change_or_the_abort() {
        use super::super::abort::Abort;
        let (first, first_done) = pair();
        let (second, second_done) = pair();
        let mut change = After::default();
        change.join(&first);
        change.join(&second);
        let abort = Abort::default();
        let waiter = {
            let (change, abort) = (change.clone(), Abort::default());
            std::thread::spawn(move || change.wait_blocking(&abort))
        };
        drop(first_done);
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert!(
            !waiter.is_finished() && !change.done(),
            "one copy still out"
        );
        drop(second_done);
        assert!(waiter.join().unwrap(), "both answered");
        let (pending, _kept) = pair();
        abort.trigger("stop".into());
        assert!(!pending.wait_blocking(&abort), "an abort ends the wait");
    }

    #[test]
    fn a_read_after_a_write_on_another_lane_waits_for_it() {
        let ns = Name::from("db.c");
        let mut order = Order::default();
        let insert = request(rawdoc! { "insert": "c", "$db": "db", "documents": [{"_id": 1}] });
        assert_eq!(&*insert.command, "insert");
        let find = request(rawdoc! { "find": "c", "$db": "db" });
        let (after, completes) = order.place(0, 0, &insert, &ns);
        assert!(after.is_none() && completes.is_some());
        let (same_lane, _) = order.place(0, 0, &find, &ns);
        assert!(same_lane.is_none(), "one lane keeps its own order");
        let (other_lane, read) = order.place(0, 1, &find, &ns);
        let other_lane = other_lane.expect("waits");
        assert!(read.is_some(), "a read completes for the writes after it");
        assert!(!other_lane.done());
        drop(completes);
        assert!(other_lane.done());
        // Another copy does not wait.
        assert!(order.place(1, 1, &find, &ns).0.is_none());
    }

    #[test]
    fn a_write_after_reads_on_other_lanes_waits_for_all_of_them() {
        let ns = Name::from("db.c");
        let mut order = Order::default();
        let insert = request(rawdoc! { "insert": "c", "$db": "db", "documents": [{"_id": 1}] });
        let find = request(rawdoc! { "find": "c", "$db": "db" });
        let delete =
            request(rawdoc! { "delete": "c", "$db": "db", "deletes": [{"q": {}, "limit": 0}] });
        let (_, inserted) = order.place(0, 0, &insert, &ns);
        drop(inserted);
        // Two finds on lanes 1 and 2, after the insert was answered: they wait for nothing.
        let (w1, find1) = order.place(0, 1, &find, &ns);
        let (w2, find2) = order.place(0, 2, &find, &ns);
        assert!(w1.is_none() && w2.is_none());
        // The delete recorded after them, on lane 3, waits for both finds.
        let (waits, deleted) = order.place(0, 3, &delete, &ns);
        let waits = waits.expect("the delete follows the finds");
        assert!(!waits.done());
        drop(find1);
        assert!(!waits.done(), "one find is still running");
        drop(find2);
        assert!(waits.done());
        // A find after the delete waits for the delete only.
        let (after_delete, _) = order.place(0, 1, &find, &ns);
        let after_delete = after_delete.expect("follows the delete");
        assert_eq!(after_delete.0.len(), 1);
        drop(deleted);
        assert!(after_delete.done());
        // Reads on the write's own lane are in order already.
        let (_, same_lane_find) = order.place(0, 3, &find, &ns);
        assert!(order.place(0, 3, &delete, &ns).0.is_none());
        drop(same_lane_find);
    }

    #[test]
    fn answered_reads_are_forgotten() {
        let ns = Name::from("db.c");
        let mut order = Order::default();
        let find = request(rawdoc! { "find": "c", "$db": "db" });
        for i in 0..10_000 {
            let (_, done) = order.place(0, i % 8, &find, &ns);
            drop(done);
        }
        let state = &order.namespaces[&(0, ns.clone())];
        assert!(state.reads.len() <= 1, "{} reads kept", state.reads.len());
    }

    #[test]
    fn with_order_none_nothing_waits_or_follows() {
        let ns = Name::from("db.c");
        let mut order = Order::new(true);
        let insert = request(rawdoc! { "insert": "c", "$db": "db", "documents": [{"_id": 1}] });
        let find = request(rawdoc! { "find": "c", "$db": "db" });
        let (after, completes) = order.place(0, 0, &insert, &ns);
        assert!(after.is_none() && completes.is_none());
        assert!(order.place(0, 1, &find, &ns).0.is_none());
        assert_eq!(order.lane_of(0, &ns), None);
    }
}
