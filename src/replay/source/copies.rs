//! Writing one recorded request out for every clone: each copy gets its lane, its live session, its
//! database and its `_id`s, and is queued within the read-ahead budget. Step markers are copied the
//! same way but take no part in pacing.

use super::markers;
use super::Feed;
use crate::replay::measure::step_phases::Marker;
use crate::replay::names::Name;
use crate::replay::request::db_map::{CopyDb, DbMap};
use crate::replay::request::rewrite;
use crate::replay::request::{Request, Scope, Skip};
use crate::replay::route::counter;
use crate::replay::route::op::Op;
use crate::replay::route::order::{self, After};
use crate::replay::route::Lanes;

/// Commands that change what later requests see (collections, indexes). With `--connections N` the
/// requests before one finish before it is sent, and it finishes before anything after it is sent.
/// With a lane per recorded connection, what a client sent after its recorded reply (on any
/// connection) waits until it is answered: a `dropDatabase` slower than recorded never drops the
/// inserts that followed it on another connection.
const BARRIERS: &[&str] = &[
    "create",
    "drop",
    "dropDatabase",
    "createIndexes",
    "dropIndexes",
    "renameCollection",
    "collMod",
    "convertToCapped",
    "cloneCollectionAsCapped",
];

impl Feed<'_> {
    /// Writes `req` out for every clone and queues it on its lanes. False when the replay stopped.
    pub(super) fn emit(&mut self, mut req: Request) -> bool {
        if self.shared.run.abort.is_set() {
            return false;
        }
        let clones = self.cfg.clones.max(1);
        if req.msg.is_empty() {
            if let Some(marker) = self.held_markers.remove(&(req.conn_id, req.request_id)) {
                return self.emit_marker(req, marker);
            }
        }
        if !self.after_snapshot(&req) {
            return true;
        }
        if self.iteration == 0 {
            self.last_ts = self.last_ts.max(req.ts_ns);
        }
        let first = *self.first_ts.get_or_insert(req.ts_ns);
        if self.due_after_deadline(req.ts_ns.saturating_sub(first)) {
            if self.shared.run.pacing.open_loop() {
                // `--rate` order: every later request is due later still.
                self.past_deadline = true;
                return false;
            }
            counter::add(&self.shared.run.counters.after_deadline, clones as u64);
            return true;
        }
        if !self.after_change(&req) {
            return false;
        }
        let offset_ns = req.ts_ns.saturating_sub(first) + self.pass_base_ns;
        let command = req.command.clone();
        let changes = BARRIERS.contains(&&*command);
        let barrier = matches!(self.cfg.lanes, Lanes::Fixed(_)) && changes;
        let per_recorded = matches!(self.cfg.lanes, Lanes::PerRecorded);
        let changed_at = req.recorded.as_ref().and_then(|r| r.latency_ns);
        if let Some(latency) = changed_at.filter(|_| changes && per_recorded) {
            // One still pending (sent before this one's reply) is waited for as well, from the
            // earlier of the two replies.
            let (mut after, mut replied) = (After::default(), req.ts_ns + latency);
            if let Some((pending, at)) = self.changed.take() {
                after.join(&pending);
                replied = replied.min(at);
            }
            self.changed = Some((after, replied));
        }
        let insert = &*command == "insert";
        if let Some(ids) = self.ids.as_mut().filter(|_| insert && self.iteration == 0) {
            ids.learn(&req.msg);
        }
        if barrier && !self.shared.run.budget.wait_empty(&self.shared.run.abort) {
            return false;
        }
        // A recorded connection's first request: its lane connects when the client did.
        let connect_lead_ns = match self.cfg.lanes {
            Lanes::PerRecorded => self
                .opened
                .get_mut(&req.conn_id)
                .and_then(Option::take)
                .map_or(0, |opened| req.ts_ns.saturating_sub(opened)),
            Lanes::Fixed(_) => 0,
        };
        let plan_slot = self
            .shared
            .run
            .plan_shapes
            .as_ref()
            .and_then(|p| p.slot(&req.command, &req.msg));
        for clone in 0..clones {
            if !self.emit_copy(
                &mut req,
                clone,
                offset_ns,
                insert,
                (connect_lead_ns, plan_slot),
            ) {
                return false;
            }
        }
        !barrier || self.shared.run.budget.wait_empty(&self.shared.run.abort)
    }

    /// With a lane per recorded connection, waits until the last collection or index change
    /// is answered when `req` was sent after its recorded reply. False when the replay stopped.
    fn after_change(&mut self, req: &Request) -> bool {
        match &self.changed {
            Some((after, replied)) if req.ts_ns >= *replied => {
                let waited = after.wait_blocking(&self.shared.run.abort);
                self.changed = None;
                waited
            }
            _ => true,
        }
    }

    /// Whether `req` is replayed under `--skip-snapshotted` ([`super::cut`]); a write the
    /// snapshot holds is counted (first pass) and left out.
    fn after_snapshot(&mut self, req: &Request) -> bool {
        let Some(cut) = &self.cfg.snapshot_cut else {
            return true;
        };
        let first = self.iteration == 0;
        let keep = cut.keep(req, self.result.snapshot_cut.as_mut().filter(|_| first));
        if !keep && first {
            *self.result.skipped.entry("before_snapshot").or_default() += 1;
        }
        keep
    }

    /// Whether the next request, `offset_in_pass` after this pass's first, is due at or after the
    /// `--duration` deadline (then it is not queued, and opens no connection).
    pub(super) fn due_after_deadline(&self, offset_in_pass: u64) -> bool {
        let due = self.shared.run.pacing.due_at(
            self.shared.run.start,
            offset_in_pass + self.pass_base_ns,
            self.seq,
        );
        matches!((self.shared.run.deadline, due), (Some(d), Some(due)) if due >= d)
    }

    /// Writes the copy of `req` for `clone` and queues it on its lane. False when the replay stopped.
    /// The last clone's copy may take the request's bytes ([`rewrite::rewrite_last`]).
    fn emit_copy(
        &mut self,
        req: &mut Request,
        clone: u32,
        offset_ns: u64,
        insert: bool,
        (connect_lead_ns, plan_slot): (u64, Option<u32>),
    ) -> bool {
        if let Some(plan) = &mut self.shard {
            if !plan.owns(req.conn_id, clone) {
                return true;
            }
        }
        let clones = self.cfg.clones.max(1);
        let scope = self.scope_of(clone);
        let map = CopyDb {
            map: &self.cfg.db_map,
            clone: (clones > 1).then_some(clone + 1),
        };
        let namespace = self.namespace(&map, req);
        let follow = self.order.lane_of(scope, &namespace);
        let (lane, session_key) = self.router.route_after(scope, clone, req, follow);
        let lsid = req
            .lsid
            .as_ref()
            .map(|l| self.sessions.live(scope, session_key, l));
        let last = clone + 1 == clones;
        let Some(out) = self.write_copy(req, &map, lsid.as_ref(), last, insert) else {
            return self.skip_malformed();
        };
        let req = &*req;
        let (after, completes) = match self.cfg.lanes {
            Lanes::Fixed(_) => self.order.place(scope, lane, req, &namespace),
            Lanes::PerRecorded => self.place_per_recorded(req, lane, lsid),
        };
        let produces_cursor = req.produces_cursor();
        if let Some(c) = produces_cursor {
            self.shared.expect_cursor(scope, c);
        }
        let mut op = Op {
            cursor_patches: out.cursor_patches,
            expects_reply: req.expects_reply,
            command: req.command.clone(),
            namespace,
            offset_ns,
            seq: self.seq,
            scope,
            produces_cursor,
            recorded: req.recorded.clone(),
            origin_conn: req.conn_id,
            origin_request: req.request_id,
            bytes: out.bytes,
            marker: None,
            compressor: req.compressor,
            after,
            completes,
            connect_lead_ns,
            charge: 0,
            plan_slot,
            shape: req.shape,
        };
        op.charge = op.cost();
        self.seq += 1;
        if !self
            .shared
            .run
            .budget
            .acquire(op.charge, &self.shared.run.abort)
        {
            return false;
        }
        self.router.send(lane, op);
        true
    }

    /// The copy's bytes ([`rewrite`]: the last clone's may take the request's own), with new
    /// `_id`s in the passes after the first; `None` when the request cannot be rewritten.
    fn write_copy(
        &self,
        req: &mut Request,
        map: &CopyDb<'_>,
        lsid: Option<&[u8; 16]>,
        last: bool,
        insert: bool,
    ) -> Option<rewrite::Rewritten> {
        let mut out = if last {
            rewrite::rewrite_last(req, map, lsid)
        } else {
            rewrite::rewrite(req, map, lsid)
        }
        .ok()?;
        if let Some(ids) = &self.ids {
            ids.apply(&mut out.bytes, insert);
        }
        Some(out)
    }

    /// With a lane per recorded connection: what the copy on `lane` waits for (its session's
    /// previous request) and completes; a collection or index change's copy joins [`Self::changed`].
    fn place_per_recorded(
        &mut self,
        req: &Request,
        lane: usize,
        lsid: Option<[u8; 16]>,
    ) -> (Option<After>, Option<order::Completes>) {
        let (after, mut completes) = self.session_order.place(lane, lsid);
        let change = BARRIERS.contains(&&*req.command) && req.recorded.is_some();
        if let Some((changed, _)) = self.changed.as_mut().filter(|_| change) {
            match lsid.and_then(|l| self.session_order.last(&l)) {
                Some(session) => changed.join(session),
                None => {
                    let (done, c) = order::pair();
                    changed.join(&done);
                    completes = Some(c);
                }
            }
        }
        (after, completes)
    }

    /// Counts a request that could not be rewritten (not replayed); the feed goes on.
    fn skip_malformed(&mut self) -> bool {
        *self
            .result
            .skipped
            .entry(Skip::Malformed.name())
            .or_default() += 1;
        true
    }

    /// The copy of the traffic `clone` of this pass is.
    fn scope_of(&self, clone: u32) -> Scope {
        (self.iteration as u32)
            .wrapping_mul(self.cfg.clones.max(1))
            .wrapping_add(clone)
    }

    /// The copy's namespace, kept once ([`crate::replay::names`]): built in a reused buffer, so
    /// finding it allocates nothing.
    fn namespace(&mut self, map: &CopyDb<'_>, req: &Request) -> Name {
        let mut ns = std::mem::take(&mut self.ns_buf);
        ns.clear();
        ns.push_str(&map.map_db(&req.db));
        if let Some(c) = &req.collection {
            ns.push('.');
            ns.push_str(c);
        }
        let interned = self.names.get(&ns);
        self.ns_buf = ns;
        interned
    }

    /// Queues a step marker on its connection's lane in every clone. It takes no part in the
    /// replay's span or `--rate` sequence.
    fn emit_marker(&mut self, req: Request, marker: Marker) -> bool {
        let clones = self.cfg.clones.max(1);
        let first = self.first_ts.unwrap_or(req.ts_ns);
        let offset_ns = req.ts_ns.saturating_sub(first) + self.pass_base_ns;
        for clone in 0..clones {
            let scope = (self.iteration as u32)
                .wrapping_mul(clones)
                .wrapping_add(clone);
            let (lane, _) = self.router.route(scope, clone, &req);
            let op = markers::marker_op(marker.clone(), &req, offset_ns, self.seq, scope);
            self.router.send(lane, op);
        }
        true
    }
}
