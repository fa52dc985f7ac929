//! Step 3 of the pipeline: which lane each copy of a recorded request goes to ([`Router`]), when it
//! is due (by [`crate::replay::pacing`]), in what form ([`op::Op`]), and what the lanes share
//! ([`shared`]: the [`run`]'s state, with its read-ahead [`budget`] and [`abort`] signal, and each
//! [`target`]'s, with its live [`cursors`], connection [`slots`] and own abort signal; the
//! [`counter`]s of both).
//!
//! Routing: with one lane per recorded connection it follows the recording; with `--connections N`
//! it spreads requests over N lanes per clone, keeping a cursor's getMores and a transaction's
//! statements on one lane, and a write before any later request of its namespace ([`order`]); with
//! one lane per recorded connection, a logical session's requests go one at a time
//! ([`session_order`]), as the recording driver sent them.
//!
//! Layers, bottom up: abort counter cursors slots < budget < run target < shared < order < op session_order

pub mod abort;
pub mod budget;
pub mod counter;
pub mod cursors;
pub mod op;
pub mod order;
pub mod run;
pub mod session_order;
pub mod shared;
pub mod slots;
pub mod target;

use crate::replay::request::{Request, Scope};
use op::Op;
use run::Run;
use std::collections::HashMap;
use std::sync::Arc;
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};
use tokio::task::JoinHandle;

/// Starts a lane on the receiving end of its queue. The source plugs `lane::run` in, so routing
/// does not depend on what a lane does.
///
/// A lane's queue holds boxed ops: a tokio queue allocates its slots 32 at a time, so with the op
/// inline every lane would take 32 x 392 bytes before its first request (12.5 KB per recorded
/// connection, 2.5 GB for a capture of 200,000 connections that never close). The op stays in its
/// box until it is answered: taken out, it made every level of the lane's future (the lane, the
/// send, the step) 392 bytes larger, in every lane, and was moved into each of them.
pub type SpawnLane = Box<dyn Fn(UnboundedReceiver<Box<Op>>) -> JoinHandle<()>>;

/// How replay connections are laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lanes {
    /// One replay connection per recorded connection.
    PerRecorded,
    /// N replay connections per clone, the recorded requests spread over them.
    Fixed(usize),
}

/// Lanes held before finished ones are first reaped.
const REAP_AT_LEAST: usize = 64;

pub struct Router {
    lanes_mode: Lanes,
    spawn_lane: SpawnLane,
    run: Arc<Run>,
    lanes: Vec<Option<UnboundedSender<Box<Op>>>>,
    by_conn: HashMap<(Scope, u64), usize>,
    by_cursor: HashMap<(Scope, i64), usize>,
    by_txn: HashMap<(Scope, Vec<u8>, i64), usize>,
    next: Vec<usize>,
    /// Lanes whose recorded connection ended in an earlier pass, by (clone, recorded connection):
    /// the next pass reuses them, so a replay opens one pass's connections however many passes run.
    parked: HashMap<(u32, u64), usize>,
    clones: u32,
    /// The lanes' tasks, to wait for at the end. Finished ones are reaped as lanes are spawned: a
    /// finished task's handle keeps its cell allocated, one per recorded connection otherwise.
    pub joins: Vec<JoinHandle<()>>,
    /// Reap finished lanes when `joins` reaches this many.
    reap_at: usize,
}

impl Router {
    pub fn new(lanes_mode: Lanes, clones: u32, spawn_lane: SpawnLane, run: Arc<Run>) -> Router {
        let mut r = Router {
            lanes_mode,
            spawn_lane,
            run,
            lanes: Vec::new(),
            by_conn: HashMap::new(),
            by_cursor: HashMap::new(),
            by_txn: HashMap::new(),
            next: vec![0; clones as usize],
            parked: HashMap::new(),
            clones: clones.max(1),
            joins: Vec::new(),
            reap_at: REAP_AT_LEAST,
        };
        if let Lanes::Fixed(n) = lanes_mode {
            for _ in 0..n * clones as usize {
                r.spawn();
            }
        }
        r
    }

    fn spawn(&mut self) -> usize {
        if self.joins.len() >= self.reap_at {
            self.reap();
        }
        let (tx, rx) = unbounded_channel();
        self.joins.push((self.spawn_lane)(rx));
        self.lanes.push(Some(tx));
        self.lanes.len() - 1
    }

    /// Drops the handles of lanes that finished, saying so when one failed (as the end of the
    /// replay would). Amortized: the next reap waits until twice as many lanes are held.
    fn reap(&mut self) {
        use futures_util::FutureExt;
        let mut i = 0;
        while i < self.joins.len() {
            if !self.joins[i].is_finished() {
                i += 1;
                continue;
            }
            if let Some(Err(e)) = self.joins.swap_remove(i).now_or_never() {
                self.run
                    .abort
                    .trigger(format!("internal: a replay connection failed: {e}"));
            }
        }
        self.reap_at = (2 * self.joins.len()).max(REAP_AT_LEAST);
    }

    /// The lane for one copy of `req`, and the key its sessions are mapped under.
    pub fn route(&mut self, scope: Scope, clone: u32, req: &Request) -> (usize, u32) {
        self.route_after(scope, clone, req, None)
    }

    /// Like [`Router::route`]; with `--connections N`, `follow` is the lane of an unacknowledged
    /// write the request must follow ([`order`]), taken unless a cursor or transaction names one.
    pub fn route_after(
        &mut self,
        scope: Scope,
        clone: u32,
        req: &Request,
        follow: Option<usize>,
    ) -> (usize, u32) {
        match self.lanes_mode {
            Lanes::PerRecorded => {
                let lane = match self.by_conn.get(&(scope, req.conn_id)) {
                    Some(&l) => l,
                    None => {
                        let l = match self.parked.remove(&(clone, req.conn_id)) {
                            Some(l) => l,
                            None => self.spawn(),
                        };
                        self.by_conn.insert((scope, req.conn_id), l);
                        l
                    }
                };
                (lane, 0)
            }
            Lanes::Fixed(n) => {
                let base = clone as usize * n;
                let cursor_lane = req
                    .cursor_refs
                    .iter()
                    .find_map(|c| self.by_cursor.get(&(scope, *c)).copied());
                let txn_key = match (&req.lsid, req.transaction) {
                    (Some(l), Some(t)) => Some((scope, l.clone(), t)),
                    _ => None,
                };
                let lane = if let Some(l) = cursor_lane {
                    l
                } else if let Some(l) = txn_key.as_ref().and_then(|k| self.by_txn.get(k)) {
                    *l
                } else if let Some(l) = follow {
                    if let Some(k) = txn_key.clone() {
                        self.by_txn.insert(k, l);
                    }
                    l
                } else {
                    let slot = &mut self.next[clone as usize];
                    let l = base + *slot % n;
                    *slot = slot.wrapping_add(1);
                    if let Some(k) = txn_key.clone() {
                        self.by_txn.insert(k, l);
                    }
                    l
                };
                if let Some(k) = txn_key {
                    if matches!(&*req.command, "commitTransaction" | "abortTransaction") {
                        self.by_txn.remove(&k);
                    }
                }
                if &*req.command == "killCursors" {
                    for c in &req.cursor_refs {
                        self.by_cursor.remove(&(scope, *c));
                    }
                }
                if let Some(c) = req.produces_cursor() {
                    self.by_cursor.insert((scope, c), lane);
                }
                if &*req.command == "getMore"
                    && req.recorded.as_ref().and_then(|o| o.cursor_id) == Some(0)
                {
                    for c in &req.cursor_refs {
                        self.by_cursor.remove(&(scope, *c));
                    }
                }
                (lane, lane as u32)
            }
        }
    }

    pub fn send(&mut self, lane: usize, op: Op) {
        let len = op.charge;
        let request = op.marker.is_none();
        let delivered = match self.lanes.get(lane).and_then(|l| l.as_ref()) {
            Some(tx) => tx.send(Box::new(op)).is_ok(),
            None => false,
        };
        if delivered && request {
            counter::bump(&self.run.counters.routed.0);
        }
        if !delivered {
            self.run.budget.release(len);
        }
    }

    /// A recorded connection closed: its replay connection finishes its queue and closes too.
    /// With `keep` (more passes may follow) the lane is parked for the next pass instead.
    pub fn close_conn(&mut self, scope: Scope, conn: u64, keep: bool) {
        if let Some(l) = self.by_conn.remove(&(scope, conn)) {
            if keep {
                self.parked.insert((scope % self.clones, conn), l);
            } else {
                self.lanes[l] = None;
            }
        }
    }

    /// The end of a pass: every recorded connection's lane closes, or is parked with `keep`.
    pub fn end_pass(&mut self, keep: bool) {
        let open: Vec<(Scope, u64)> = self.by_conn.keys().copied().collect();
        for (scope, conn) in open {
            self.close_conn(scope, conn, keep);
        }
    }

    pub fn close_all(&mut self) {
        self.by_conn.clear();
        self.parked.clear();
        for l in &mut self.lanes {
            *l = None;
        }
    }
}
