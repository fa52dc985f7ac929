//! A paired lane (A/B replay, `replay::ab`): one recorded connection replayed on one connection
//! per target. Each request goes to every target as a copy, on that target's own connection with
//! its own cursors and measurements ([`super::step::one`], the same path as a single target); the
//! copies are due at the same time. In closed loop (`--fast`, `--speed`) the next request goes out
//! once every target answered this one (lockstep), so no target runs ahead of the others; in open
//! loop (`--rate`) each target keeps the schedule on its own, so a slow target does not delay the
//! others. A failed target is dropped from the pair; the others go on.

use super::conns::Conns;
use super::step::Step;
use super::{drain, finish, send_following_primary};
use crate::replay::measure::observed::Observed;
use crate::replay::route::op::Op;
use crate::replay::route::order::{self, Completes};
use crate::replay::route::shared::{Counters, Shared};
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};
use tokio::sync::oneshot;

/// One request on every target: when the last copy is done (or dropped), it releases the
/// read-ahead budget, completes the write others wait for, and hands the observations over.
struct Pair {
    hub: Arc<Shared>,
    len: usize,
    command: Arc<str>,
    namespace: Arc<str>,
    /// Step markers are paired too but have nothing to compare.
    marker: bool,
    seen: Mutex<Vec<Option<Observed>>>,
    _completes: Option<Completes>,
    done: Option<oneshot::Sender<()>>,
}

impl Drop for Pair {
    fn drop(&mut self) {
        self.hub.budget.release(self.len);
        if let (Some(sink), false) = (&self.hub.pairs, self.marker) {
            let seen = std::mem::take(&mut *self.seen.lock().expect("pair lock"));
            sink.paired(&self.command, &self.namespace, &seen);
        }
        if let Some(done) = self.done.take() {
            let _ = done.send(());
        }
    }
}

type Copy = (Op, Arc<Pair>);

/// Runs the paired lane: dispatches each request to every target's connection.
pub(super) async fn run(hub: Arc<Shared>, mut rx: UnboundedReceiver<Op>) {
    let mut abort = hub.abort.subscribe();
    let (copies, tasks): (Vec<UnboundedSender<Copy>>, Vec<_>) = hub
        .targets
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let (tx, rx) = unbounded_channel();
            (tx, tokio::spawn(target_lane(t.clone(), i, rx)))
        })
        .unzip();
    let lockstep = !hub.pacing.open_loop();
    loop {
        let op = tokio::select! {
            biased;
            _ = abort.wait_for(|a| *a) => break,
            op = rx.recv() => match op { Some(op) => op, None => break },
        };
        if !order::wait_turn(&hub, op.after.as_ref(), &mut abort).await {
            hub.budget.release(op.bytes.len());
            break;
        }
        let (done_tx, done_rx) = oneshot::channel();
        let (op, completes) = take_completes(op);
        let pair = Arc::new(Pair {
            hub: hub.clone(),
            len: op.bytes.len(),
            command: op.command.clone(),
            namespace: op.namespace.clone(),
            marker: op.marker.is_some(),
            seen: Mutex::new(vec![None; copies.len()]),
            _completes: completes,
            done: lockstep.then_some(done_tx),
        });
        for (tx, target) in copies.iter().zip(&hub.targets) {
            if !target.abort.is_set() {
                let _ = tx.send((copy_of(&op), pair.clone()));
            }
        }
        // The write's completion goes with the pair: released once every target answered.
        drop(pair);
        // The run's count of requests handed out (`--progress`).
        Counters::bump(&hub.counters.sent);
        if lockstep {
            tokio::select! {
                biased;
                _ = abort.wait_for(|a| *a) => break,
                _ = done_rx => {}
            }
        }
        if hub.targets.iter().all(|t| t.abort.is_set()) {
            hub.abort.trigger(
                hub.targets
                    .iter()
                    .filter_map(|t| t.abort.reason())
                    .collect::<Vec<_>>()
                    .join("; "),
            );
            break;
        }
    }
    drain(&hub, &mut rx);
    drop(copies);
    for t in tasks {
        let _ = t.await;
    }
}

/// The op without its completion (which stays with the pair).
fn take_completes(mut op: Op) -> (Op, Option<Completes>) {
    let c = op.completes.take();
    op.after = None;
    (op, c)
}

/// One target's copy of a request (cursor patches and compression as the original).
fn copy_of(op: &Op) -> Op {
    Op {
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
    }
}

/// One target's side of a paired lane: the single-target loop over the copies it is given.
async fn target_lane(shared: Arc<Shared>, index: usize, mut rx: UnboundedReceiver<Copy>) {
    let mut abort = shared.abort.subscribe();
    let mut conns = Conns::default();
    let mut last_unacknowledged = false;
    while let Some((op, pair)) = rx.recv().await {
        if shared.abort.is_set() {
            break;
        }
        match send_following_primary(&shared, &mut conns, op, &mut abort).await {
            Ok(Step::Sent {
                acknowledged,
                observed,
            }) => {
                last_unacknowledged = !acknowledged;
                if let Some(o) = observed {
                    pair.seen.lock().expect("pair lock")[index] = Some(*o);
                }
            }
            Ok(Step::Skipped | Step::NotPrimary(_)) => {}
            Ok(Step::Stop) => break,
            Err(e) => {
                shared.abort.trigger(e.to_string());
                break;
            }
        }
    }
    rx.close();
    while rx.try_recv().is_ok() {}
    finish(&shared, &mut conns, last_unacknowledged).await;
}
