//! Mirrored writes (`--mirror all`): per target, one queue of the writes production
//! acknowledged, in the order it acknowledged them (so each client connection's order too), and
//! one task that applies them on a connection of its own, rewritten as the replayer rewrites
//! (live session ids standing for the client's, their `txnNumber`s kept). While production's
//! snapshot is taken and restored into the target (`--snapshot`) the writes wait; those
//! acknowledged before T0 are in the snapshot and are not applied again. Past the queue's bound,
//! or when a write may have been lost on the way, the target goes on with reads only: its state
//! is no longer production's, and the log, the metrics and the report say so. The statements of a
//! multi-statement transaction are held until its commit, then applied as one transaction on the
//! target at the commit's place in production's order ([`super::txn`]).

use super::config::{MAX_BACKOFF, MIN_BACKOFF};
use super::recheck::{SameDb, Side};
use super::shared::{Pair, Shared, StartPoint};
use super::stats::WriteState;
use super::txn::OpenTransactions;
use crate::replay::client::Conn;
use crate::replay::measure::outcome;
use crate::replay::request::rewrite::rewrite;
use crate::replay::request::sessions::Sessions;
use std::collections::VecDeque;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex};
use std::time::Instant;
use tokio::sync::Notify;

/// One acknowledged write: the request, production's reply and when it was acknowledged.
pub struct WriteItem {
    pub pair: Arc<Pair>,
    /// The reply's `operationTime` (none for a write sent with w:0).
    pub op_time: Option<(u32, u32)>,
    pub seen: Instant,
    /// For a `commitTransaction`: its transaction's statements, applied before it.
    pub txn: Vec<Arc<Pair>>,
    /// Its place among the writes offered to the target (from 1; set by [`Writes::offer`]).
    pub seq: u64,
}

impl WriteItem {
    fn size(&self) -> usize {
        self.pair.size() + self.txn.iter().map(|p| p.size()).sum::<usize>()
    }

    /// The statements it applies: 1, or a transaction's and its commit.
    fn statements(&self) -> u64 {
        1 + self.txn.len() as u64
    }
}

#[derive(Default)]
struct Queue {
    items: VecDeque<WriteItem>,
    /// Bytes of `items` (the transactions' held statements are in `open.bytes`).
    bytes: usize,
    open: OpenTransactions,
    /// A write taken from the queue is being applied.
    busy: bool,
    /// The place ([`WriteItem::seq`]) of the write being applied.
    busy_seq: u64,
}

/// One target's writes.
pub struct Writes {
    side: Arc<Side>,
    shared: Arc<Shared>,
    bound: usize,
    queue: Mutex<Queue>,
    wake: Notify,
    /// Writes offered so far (each [`Writes::offer`], kept or not).
    offers: std::sync::atomic::AtomicU64,
    /// Told whenever a write was applied (or the queue emptied): reads waiting for it go on.
    applied: Notify,
    /// Reads on the lanes, by the writes offered before each ([`ReadTicket`]); a write waits
    /// for those offered before it.
    reads: Arc<Reads>,
    sessions: Sessions,
    /// When the restore into the target was done (ns since the Unix epoch; 0 before).
    ready_ns: std::sync::atomic::AtomicU64,
}

/// The reads waiting on or sent by a target's lanes, counted by the writes offered before each.
#[derive(Default)]
pub struct Reads {
    waiting: Mutex<std::collections::BTreeMap<u64, usize>>,
    done: Notify,
}

impl Reads {
    /// Whether no read offered before the `n`-th write is still on a lane.
    fn clear_before(&self, n: u64) -> bool {
        let waiting = self.waiting.lock().unwrap_or_else(|e| e.into_inner());
        waiting.keys().next().is_none_or(|&first| first >= n)
    }
}

/// A read on a lane (`--mirror all`): until it is dropped (the read answered, shed or failed),
/// the writes production acknowledged after answering it wait.
pub struct ReadTicket {
    reads: Arc<Reads>,
    after: u64,
}

impl Drop for ReadTicket {
    fn drop(&mut self) {
        let mut waiting = self.reads.waiting.lock().unwrap_or_else(|e| e.into_inner());
        if let std::collections::btree_map::Entry::Occupied(mut e) = waiting.entry(self.after) {
            *e.get_mut() -= 1;
            if *e.get() == 0 {
                e.remove();
            }
        }
        drop(waiting);
        self.reads.done.notify_waiters();
    }
}

/// Why a write was not applied.
enum Failed {
    /// Not sent: the target could not be reached (tried again after the backoff).
    NotSent(String),
    /// Sent or maybe sent, and no answer: the target's state is unknown from now.
    Lost(String),
}

impl Writes {
    /// `restoring`: the target waits for production's snapshot before its first write.
    pub fn new(side: Arc<Side>, shared: Arc<Shared>, bound: usize, restoring: bool) -> Writes {
        let counters = &side.stats.writes;
        counters.enabled.store(true, Relaxed);
        let state = if restoring {
            WriteState::Restoring
        } else {
            WriteState::Mirroring
        };
        counters.set_state(state);
        Writes {
            side,
            shared,
            bound: bound.max(1),
            queue: Mutex::default(),
            wake: Notify::new(),
            offers: Default::default(),
            applied: Notify::new(),
            reads: Arc::default(),
            sessions: Sessions::default(),
            ready_ns: Default::default(),
        }
    }

    fn queue(&self) -> std::sync::MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The target's connection string, password masked.
    pub fn label(&self) -> &str {
        &self.side.label
    }

    pub fn state(&self) -> WriteState {
        self.side.stats.writes.state()
    }

    /// Whether a read may be compared: not one of a namespace the snapshot holds that
    /// production answered before the restore into the target was done (or that never ended).
    pub fn ready_for(&self, pair: &Pair) -> bool {
        let Some(plan) = self
            .shared
            .config
            .writes
            .as_ref()
            .and_then(|w| w.snapshot.as_ref())
        else {
            return true;
        };
        let (db, coll) = (&*pair.req.db, pair.req.collection.as_deref().unwrap_or(""));
        let restored = plan
            .patterns
            .iter()
            .any(|p| p.db == db && (coll.is_empty() || p.matches(db, coll)));
        let ready = self.ready_ns.load(Relaxed);
        !restored || (ready != 0 && pair.answered_ns >= ready)
    }

    /// Whether `item` was acknowledged before T0, so is in the snapshot restored.
    fn in_snapshot(&self, item: &WriteItem) -> bool {
        self.shared
            .t0
            .get()
            .is_some_and(|t0| before_t0(item.op_time, item.seen, t0))
    }

    /// Queues a write production acknowledged; never waits. Past the bound the target goes on
    /// with reads only.
    pub fn offer(&self, mut item: WriteItem) {
        item.seq = self.offers.fetch_add(1, Relaxed) + 1;
        let counters = &self.side.stats.writes;
        if self.state() == WriteState::ReadsOnly {
            counters.dropped.fetch_add(1, Relaxed);
            return;
        }
        let mut queue = self.queue();
        if item.pair.req.transaction.is_some() {
            let room = self.bound.saturating_sub(queue.bytes + queue.open.bytes);
            match queue.open.hold(&item.pair, room) {
                Ok(None) => return,
                Ok(Some(statements)) => item.txn = statements,
                Err(why) => {
                    drop(queue);
                    counters.dropped.fetch_add(1, Relaxed);
                    return self.give_up(&why);
                }
            }
        }
        if self.in_snapshot(&item) {
            counters.in_snapshot.fetch_add(item.statements(), Relaxed);
            return;
        }
        let size = item.size();
        if queue.bytes + queue.open.bytes + size > self.bound {
            drop(queue);
            counters.dropped.fetch_add(1, Relaxed);
            return self.give_up("the write queue is full (--write-queue-mb)");
        }
        queue.bytes += size;
        queue.items.push_back(item);
        let n = queue.items.len() as u64;
        drop(queue);
        counters.queued.store(n, Relaxed);
        counters.queued_peak.fetch_max(n, Relaxed);
        self.wake.notify_one();
    }

    /// The target's state is no longer production's: what waits is dropped, reads only from now.
    pub fn give_up(&self, why: &str) {
        let counters = &self.side.stats.writes;
        if counters.set_state(WriteState::ReadsOnly) {
            tracing::warn!(target_server = %self.side.label, "writes dropped: reads only from now ({why})");
        }
        let mut queue = self.queue();
        let n = queue.items.iter().map(WriteItem::statements).sum::<u64>();
        queue.items.clear();
        queue.bytes = 0;
        queue.open = OpenTransactions::default();
        drop(queue);
        counters.dropped.fetch_add(n, Relaxed);
        counters.queued.store(0, Relaxed);
        self.wake.notify_one();
        self.applied.notify_waiters();
    }

    /// The restore into the target ended: its writes are applied from now, or it goes on with
    /// reads only.
    pub fn restored(&self, result: Result<(), String>) {
        match result {
            Ok(()) => {
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(1, |d| d.as_nanos() as u64);
                self.ready_ns.store(now, Relaxed);
                self.side.stats.writes.set_state(WriteState::Mirroring);
                self.wake.notify_one();
            }
            Err(e) => self.give_up(&format!("the restore failed: {e}")),
        }
    }

    /// A read answered by production after the first `after` writes offered: the writes after
    /// it wait until the ticket is dropped.
    pub fn read_ticket(&self, after: u64) -> ReadTicket {
        let mut waiting = self.reads.waiting.lock().unwrap_or_else(|e| e.into_inner());
        *waiting.entry(after).or_default() += 1;
        ReadTicket {
            reads: self.reads.clone(),
            after,
        }
    }

    /// Waits, at most `limit`, until no read production answered before the `seq`-th write is
    /// still on a lane (so that a write never changes what an earlier read compares).
    async fn wait_reads_before(&self, seq: u64, limit: std::time::Duration) -> bool {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let notified = self.reads.done.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.reads.clear_before(seq) {
                return true;
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return self.reads.clear_before(seq);
            }
        }
    }

    /// Whether the first `n` writes offered are behind the target (applied, or not to be: held
    /// in an open transaction, in the snapshot, dropped), or it is not mirroring writes at all.
    fn caught_up(&self, n: u64) -> bool {
        let queue = self.queue();
        let behind =
            (!queue.busy || queue.busy_seq > n) && queue.items.front().is_none_or(|i| i.seq > n);
        behind || self.state() != WriteState::Mirroring
    }

    /// Waits, at most `limit`, until the target applied the first `n` writes offered (so that a
    /// read answered after them finds them, as production's did); false when it did not.
    pub async fn wait_applied(&self, n: u64, limit: std::time::Duration) -> bool {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let notified = self.applied.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.caught_up(n) {
                return true;
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return self.caught_up(n);
            }
        }
    }

    /// Whether writes wait to be applied (or one is being applied) while mirroring.
    pub fn pending(&self) -> bool {
        let queue = self.queue();
        self.state() == WriteState::Mirroring && (queue.busy || !queue.items.is_empty())
    }

    /// The next write to apply, once the target is mirroring.
    async fn next(&self) -> WriteItem {
        loop {
            if self.state() == WriteState::Mirroring {
                let mut queue = self.queue();
                if let Some(item) = queue.items.pop_front() {
                    queue.bytes -= item.size();
                    queue.busy = true;
                    queue.busy_seq = item.seq;
                    let n = queue.items.len() as u64;
                    drop(queue);
                    self.side.stats.writes.queued.store(n, Relaxed);
                    return item;
                }
            }
            self.wake.notified().await;
        }
    }

    /// Applies the writes, in order, until the mirror stops.
    pub async fn run(self: Arc<Self>) {
        let mut conn = None;
        let mut backoff = MIN_BACKOFF;
        loop {
            let item = self.next().await;
            let limit = self.shared.config.reply_timeout;
            if !self.wait_reads_before(item.seq, limit).await {
                tracing::debug!(target_server = %self.side.label, "a write went before reads it follows");
            }
            if self.in_snapshot(&item) {
                let n = item.statements();
                self.side.stats.writes.in_snapshot.fetch_add(n, Relaxed);
            } else {
                loop {
                    match self.apply_item(&mut conn, &item).await {
                        Ok(()) => backoff = MIN_BACKOFF,
                        Err(Failed::NotSent(why)) if self.state() == WriteState::Mirroring => {
                            tracing::debug!(target_server = %self.side.label, "{why}");
                            self.side.stats.connection_failed();
                            tokio::time::sleep(backoff).await;
                            backoff = (backoff * 2).min(MAX_BACKOFF);
                            continue;
                        }
                        Err(Failed::NotSent(_)) => {}
                        Err(Failed::Lost(why)) => {
                            conn = None;
                            self.side.stats.connection_failed();
                            self.give_up(&format!("a write may be lost: {why}"));
                        }
                    }
                    break;
                }
            }
            self.queue().busy = false;
            self.applied.notify_waiters();
        }
    }

    /// Applies one item: a write, or a transaction's statements and its commit. A transaction
    /// not sent at all may be tried again; one broken off midway is lost (the target aborts it
    /// when the connection goes).
    async fn apply_item(&self, conn: &mut Option<Conn>, item: &WriteItem) -> Result<(), Failed> {
        for (i, pair) in item.txn.iter().chain([&item.pair]).enumerate() {
            match self.apply(conn, pair).await {
                Err(Failed::NotSent(why)) if i > 0 => return Err(Failed::Lost(why)),
                r => r?,
            }
        }
        Ok(())
    }

    /// Sends one write and reads the target's answer (none for a write sent with w:0).
    async fn apply(&self, conn: &mut Option<Conn>, pair: &Pair) -> Result<(), Failed> {
        let req = &pair.req;
        let lsid = req.lsid.as_ref().map(|l| self.sessions.live(0, 0, l));
        let mut request = rewrite(req, &SameDb, lsid.as_ref())
            .map_err(|e| Failed::Lost(format!("a write that cannot be rewritten: {e}")))?;
        if conn.is_none() {
            let target = &self.side.target;
            let host = target
                .seeds
                .first()
                .ok_or(Failed::NotSent("no host".into()))?;
            let timeout = self.shared.config.reply_timeout;
            let opened = tokio::time::timeout(timeout, Conn::connect(target, host, timeout)).await;
            *conn = Some(match opened {
                Ok(Ok(c)) => c,
                Ok(Err(e)) => return Err(Failed::NotSent(format!("connecting: {e}"))),
                Err(_) => return Err(Failed::NotSent("connecting: timed out".into())),
            });
            self.side.stats.connections.fetch_add(1, Relaxed);
        }
        let c = conn
            .as_mut()
            .ok_or(Failed::NotSent("no connection".into()))?;
        let lost = |e: crate::replay::client::ConnError| Failed::Lost(e.to_string());
        let id = c.send(&mut request.bytes).await.map_err(lost)?;
        let counters = &self.side.stats.writes;
        if req.expects_reply {
            let reply = c.recv(id).await.map_err(lost)?;
            let live = outcome::scan(&reply)
                .map_err(|e| Failed::Lost(format!("an unreadable reply: {e}")))?;
            let production = outcome::scan(&pair.production).unwrap_or_default();
            if (production.ok && !live.ok) || live.write_errors > production.write_errors {
                counters.failed.fetch_add(1, Relaxed);
                tracing::debug!(target_server = %self.side.label, command = %req.command,
                    "a mirrored write failed: {}", live.errmsg.unwrap_or_default());
            }
        }
        counters.mirrored.fetch_add(1, Relaxed);
        Ok(())
    }
}

/// Whether a write acknowledged at `op_time` (its reply's `operationTime`), seen by the shadow at
/// `seen`, is in the snapshot taken at `t0`: by the cluster times when both are known, else by
/// when the shadow saw it (a w:0 write, a snapshot read without a cluster time).
pub fn before_t0(op_time: Option<(u32, u32)>, seen: Instant, t0: &StartPoint) -> bool {
    match (op_time, t0.cluster_time) {
        (Some(op), Some(t0)) => op <= t0,
        _ => seen <= t0.fixed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_write_is_in_the_snapshot_when_acknowledged_at_or_before_t0() {
        let start = Instant::now();
        let t0 = StartPoint {
            cluster_time: Some((100, 5)),
            fixed: start,
        };
        let later = start + Duration::from_secs(1);
        assert!(before_t0(Some((100, 5)), later, &t0));
        assert!(before_t0(Some((99, 9)), later, &t0));
        assert!(!before_t0(Some((100, 6)), start, &t0));
        assert!(!before_t0(Some((101, 0)), start, &t0));
        // Without an operationTime (w:0): by when the shadow saw it.
        assert!(before_t0(None, start, &t0));
        assert!(!before_t0(None, later, &t0));
        let wall = StartPoint {
            cluster_time: None,
            fixed: start,
        };
        assert!(!before_t0(Some((1, 1)), later, &wall));
    }
}
