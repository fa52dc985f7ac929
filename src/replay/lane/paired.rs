//! A paired lane (A/B replay, `replay::ab`): one recorded connection replayed on one connection
//! per target. Each request goes to every target as a copy, on that target's own connection with
//! its own cursors and measurements ([`super::step::one`], the same path as a single target); the
//! copies are due at the same time. In closed loop (`--fast`, `--speed`) the next request goes out
//! once every target answered this one (lockstep), so no target runs ahead of the others; in open
//! loop (`--rate`) each target keeps the schedule on its own, so a slow target does not delay the
//! others. A failed target is dropped from the pair; the others go on.

use super::close::{drain, finish};
use super::conns::Conns;
use super::follow::send_following_primary;
use super::step::Step;
use crate::replay::measure::observed::{asks_order, Observed};
use crate::replay::names::Name;
use crate::replay::route::counter;
use crate::replay::route::op::Op;
use crate::replay::route::order::{self, Completes};
use crate::replay::route::run::Run;
use crate::replay::route::shared::Shared;
use crate::replay::route::target::TargetState;
use crate::shape::ShapeId;
use futures_util::future::join_all;
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};
use tokio::sync::watch;

/// One request on every target: when the last copy is done (or dropped), it releases the
/// read-ahead budget, completes the write others wait for, and hands the observations over.
struct Pair {
    run: Arc<Run>,
    len: usize,
    command: Name,
    namespace: Name,
    shape: Option<ShapeId>,
    /// Step markers are paired too but have nothing to compare.
    marker: bool,
    /// The request asks for no order: its documents may come in any.
    unsorted: bool,
    seen: Mutex<Vec<Option<Observed>>>,
    _completes: Option<Completes>,
}

impl Drop for Pair {
    fn drop(&mut self) {
        self.run.budget.release(self.len);
        if let (Some(sink), false) = (&self.run.pairs, self.marker) {
            let seen = std::mem::take(&mut *self.seen.lock().expect("pair lock"));
            if self.unsorted {
                sink.paired_unsorted(&self.command, &self.namespace, self.shape, &seen);
            } else {
                sink.paired(&self.command, &self.namespace, self.shape, &seen);
            }
        }
    }
}

type Copy = (Box<Op>, Arc<Pair>);

/// Runs the paired lane: each request to every target's connection.
pub(super) async fn run(shared: &Shared, rx: UnboundedReceiver<Box<Op>>) {
    if shared.run.pacing.open_loop() {
        open_loop(shared, rx).await
    } else {
        lockstep(shared, rx).await
    }
}

/// The next request, or `None` when the queue closed or the run was aborted.
async fn next(
    rx: &mut UnboundedReceiver<Box<Op>>,
    abort: &mut watch::Receiver<bool>,
) -> Option<Box<Op>> {
    tokio::select! {
        biased;
        _ = abort.wait_for(|a| *a) => None,
        op = rx.recv() => op,
    }
}

/// Every request to every target, in one task: the copies are sent together and the next request
/// waits for all of their replies (no task hand-off per request).
async fn lockstep(shared: &Shared, mut rx: UnboundedReceiver<Box<Op>>) {
    let run = &shared.run;
    let mut abort = run.abort.subscribe();
    let mut sides: Vec<Side> = shared
        .targets
        .iter()
        .map(|t| Side::new(t.clone()))
        .collect();
    while let Some(op) = next(&mut rx, &mut abort).await {
        if !order::wait_turn(run, op.after.as_ref(), &mut abort).await {
            run.budget.release(op.charge);
            break;
        }
        let (op, pair) = Pair::new(run, op, sides.len());
        // Sent in turn from a first target drawn per request, so none is always sent first;
        // the last target takes the op itself, the others a copy.
        let n = sides.len();
        let first = first_target(op.seq, n);
        let order: Vec<usize> = (0..n)
            .map(|j| (j + first) % n)
            .filter(|&i| sides[i].alive())
            .collect();
        let last = order.last().copied();
        let mut op = Some(op);
        let mut by_index: Vec<Option<&mut Side>> = sides.iter_mut().map(Some).collect();
        let steps = order.iter().filter_map(|&i| {
            let side = by_index[i].take()?;
            let copy = if Some(i) == last {
                op.take()?
            } else {
                copy_of(op.as_ref()?)
            };
            Some(Box::pin(async move { (i, side.step(run, copy).await) }))
        });
        let seen = tokio::select! {
            biased;
            _ = abort.wait_for(|a| *a) => break,
            seen = join_all(steps) => seen,
        };
        {
            let mut slots = pair.seen.lock().expect("pair lock");
            for (i, observed) in seen {
                slots[i] = observed;
            }
        }
        drop(pair);
        counter::bump(&run.counters.paired);
        if all_failed(shared) {
            break;
        }
    }
    drain(run, &mut rx);
    for side in &mut sides {
        finish(&side.target, &mut side.conns, side.last_unacknowledged).await;
    }
}

/// Open loop: each target's connection is a task of its own, keeping the schedule on its own.
async fn open_loop(shared: &Shared, mut rx: UnboundedReceiver<Box<Op>>) {
    let mut abort = shared.run.abort.subscribe();
    let (copies, tasks): (Vec<UnboundedSender<Copy>>, Vec<_>) = shared
        .targets
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let (tx, rx) = unbounded_channel();
            (
                tx,
                tokio::spawn(target_lane(shared.run.clone(), t.clone(), i, rx)),
            )
        })
        .unzip();
    while let Some(op) = next(&mut rx, &mut abort).await {
        if !order::wait_turn(&shared.run, op.after.as_ref(), &mut abort).await {
            shared.run.budget.release(op.charge);
            break;
        }
        let (op, pair) = Pair::new(&shared.run, op, copies.len());
        // Handed over from a first target drawn per request, as in lockstep: the first task
        // woken tends to send first, and a loaded replayer would otherwise always delay the same
        // target.
        let n = copies.len();
        let first = first_target(op.seq, n);
        for j in 0..n {
            let i = (j + first) % n;
            if !shared.targets[i].abort.is_set() {
                let _ = copies[i].send((copy_of(&op), pair.clone()));
            }
        }
        // The budget, the write's completion and the observations go when every target is done.
        drop(pair);
        counter::bump(&shared.run.counters.paired);
        if all_failed(shared) {
            break;
        }
    }
    drain(&shared.run, &mut rx);
    drop(copies);
    for t in tasks {
        let _ = t.await;
    }
}

/// The target request `seq` goes to first: drawn from a hash of `seq`, not `seq % n`, which a
/// workload that alternates (an insert, then a find, on one connection) would turn into "every
/// find to B first", a bias of one command against one target. Deterministic, so a run repeats.
fn first_target(seq: u64, n: usize) -> usize {
    // splitmix64's finalizer: every bit of `seq` moves every bit of the result.
    let mut z = seq.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    (z % n.max(1) as u64) as usize
}

/// Every target failed: the run stops, with their reasons.
fn all_failed(shared: &Shared) -> bool {
    if !shared.targets.iter().all(|t| t.abort.is_set()) {
        return false;
    }
    let reasons: Vec<String> = shared
        .targets
        .iter()
        .filter_map(|t| t.abort.reason())
        .collect();
    shared.run.abort.trigger(reasons.join("; "));
    true
}

/// One target's connection in a lockstep lane.
struct Side {
    target: Arc<TargetState>,
    conns: Conns,
    abort: watch::Receiver<bool>,
    last_unacknowledged: bool,
}

impl Side {
    fn new(target: Arc<TargetState>) -> Side {
        Side {
            abort: target.abort.subscribe(),
            target,
            conns: Conns::uncapped(),
            last_unacknowledged: false,
        }
    }

    fn alive(&self) -> bool {
        !self.target.abort.is_set()
    }

    /// Sends the copy and reads its reply; a failure ends this target (the others go on).
    async fn step(&mut self, run: &Run, op: Box<Op>) -> Option<Observed> {
        let target = &self.target;
        match send_following_primary(run, target, &mut self.conns, op, &mut self.abort).await {
            Ok(Step::Sent {
                acknowledged,
                observed,
            }) => {
                self.last_unacknowledged = !acknowledged;
                observed.map(|o| *o)
            }
            Ok(Step::Skipped | Step::NotPrimary(_) | Step::Dropped(..) | Step::Stop) => None,
            Err(e) => {
                self.target.abort.trigger(e.to_string());
                None
            }
        }
    }
}

impl Pair {
    /// The pair for `op` over `width` targets; the op comes back without its completion, which
    /// the pair keeps.
    fn new(run: &Arc<Run>, op: Box<Op>, width: usize) -> (Box<Op>, Arc<Pair>) {
        let (op, completes) = take_completes(op);
        let pair = Arc::new(Pair {
            run: run.clone(),
            len: op.charge,
            command: op.command.clone(),
            namespace: op.namespace.clone(),
            shape: op.shape,
            marker: op.marker.is_some(),
            unsorted: !asks_order(&op.command, &op.bytes),
            seen: Mutex::new(vec![None; width]),
            _completes: completes,
        });
        (op, pair)
    }
}

/// The op without its completion (which stays with the pair).
fn take_completes(mut op: Box<Op>) -> (Box<Op>, Option<Completes>) {
    let c = op.completes.take();
    op.after = None;
    (op, c)
}

/// One target's copy of a request (cursor patches and compression as the original).
fn copy_of(op: &Op) -> Box<Op> {
    Box::new(Op {
        bytes: op.bytes.clone(),
        cursor_patches: op.cursor_patches.clone(),
        expects_reply: op.expects_reply,
        command: op.command.clone(),
        namespace: op.namespace.clone(),
        offset_ns: op.offset_ns,
        seq: op.seq,
        scope: op.scope,
        produces_cursor: op.produces_cursor,
        recorded: op.recorded.clone(),
        origin_conn: op.origin_conn,
        origin_request: op.origin_request,
        marker: op.marker.clone(),
        compressor: op.compressor,
        after: None,
        completes: None,
        connect_lead_ns: op.connect_lead_ns,
        // The original's charge is released once, by its pair.
        charge: 0,
        plan_slot: op.plan_slot,
        shape: op.shape,
    })
}

/// One target's side of a paired lane: the single-target loop over the copies it is given.
async fn target_lane(
    run: Arc<Run>,
    target: Arc<TargetState>,
    index: usize,
    mut rx: UnboundedReceiver<Copy>,
) {
    let mut abort = target.abort.subscribe();
    let mut conns = Conns::uncapped();
    let mut last_unacknowledged = false;
    while let Some((op, pair)) = rx.recv().await {
        if target.abort.is_set() {
            break;
        }
        match send_following_primary(&run, &target, &mut conns, op, &mut abort).await {
            Ok(Step::Sent {
                acknowledged,
                observed,
            }) => {
                last_unacknowledged = !acknowledged;
                if let Some(o) = observed {
                    pair.seen.lock().expect("pair lock")[index] = Some(*o);
                }
            }
            Ok(Step::Skipped | Step::NotPrimary(_) | Step::Dropped(..)) => {}
            Ok(Step::Stop) => break,
            Err(e) => {
                target.abort.trigger(e.to_string());
                break;
            }
        }
    }
    rx.close();
    while rx.try_recv().is_ok() {}
    finish(&target, &mut conns, last_unacknowledged).await;
}

#[cfg(test)]
mod tests {
    use super::first_target;

    /// A workload that alternates two commands: each command goes first to each target about
    /// half the time, whatever the period (with `seq % n` every odd request went to B first).
    #[test]
    fn no_period_of_the_workload_sends_one_command_always_first_to_one_target() {
        for n in [2usize, 3] {
            for period in [2u64, 3, 4] {
                let mut first = vec![vec![0u32; n]; period as usize];
                for seq in 0..6_000u64 {
                    first[(seq % period) as usize][first_target(seq, n)] += 1;
                }
                let each = 6_000 / (period as u32 * n as u32);
                for counts in &first {
                    for &c in counts {
                        assert!(
                            c > each * 8 / 10 && c < each * 12 / 10,
                            "n {n}, period {period}: {first:?}"
                        );
                    }
                }
            }
        }
    }
}
