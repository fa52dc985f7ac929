//! Step 4 of the pipeline: one lane is one replay connection. It takes its requests in order, waits
//! for each one's time, patches live cursor ids in, sends, reads the reply, and measures
//! (`step`; how late it went out, and whose lateness that was: `lag`; after "not primary", sent
//! again to the primary found again: `follow`). A failure of the target ends the whole replay.
//!
//! Layers, bottom up: conns lag < close retry < step < follow < paired

use crate::replay::route::op::Op;
use crate::replay::route::run::Run;
use crate::replay::route::shared::Shared;
use crate::replay::route::target::TargetState;
use close::{drain, finish};
use conns::Conns;
use follow::send_following_primary;
use std::sync::Arc;
use step::Step;
use tokio::sync::mpsc::{error::TryRecvError, UnboundedReceiver};

mod close;
mod conns;
mod follow;
mod lag;
mod paired;
mod retry;
mod step;

/// Runs one lane until its queue closes or the replay is aborted. Its connections are opened with
/// the first request that needs each (step markers need none), so the handshake can offer that
/// request's compressor. With one target the lane is that target's connection; with several, a
/// paired lane ([`paired`]).
pub async fn run(shared: Arc<Shared>, rx: UnboundedReceiver<Box<Op>>) {
    match &shared.targets[..] {
        [one] => run_one(&shared.run, one, rx).await,
        _ => paired::run(&shared, rx).await,
    }
}

/// One lane on one target (whose abort signal is the run's).
async fn run_one(run: &Run, target: &TargetState, mut rx: UnboundedReceiver<Box<Op>>) {
    let mut abort = target.abort.subscribe();
    let mut conns = Conns::default();
    let mut last_unacknowledged = false;
    loop {
        // The reader usually runs ahead: take the next request without registering a waiter on the
        // abort signal (shared by every connection) unless the queue is empty.
        let op = match rx.try_recv() {
            Ok(op) if !target.abort.is_set() => op,
            Ok(op) => {
                run.budget.release(op.charge);
                break;
            }
            Err(TryRecvError::Disconnected) => break,
            Err(TryRecvError::Empty) => {
                // Nothing to send: the connection slot goes to another lane that asks for one.
                let next = async {
                    tokio::select! {
                        biased;
                        _ = abort.wait_for(|a| *a) => None,
                        op = rx.recv() => op,
                    }
                };
                match conns.idle(target, next).await {
                    Some(op) => op,
                    None => break,
                }
            }
        };
        let len = op.charge;
        let result = send_following_primary(run, target, &mut conns, op, &mut abort).await;
        run.budget.release(len);
        match result {
            Ok(Step::Sent { acknowledged, .. }) => last_unacknowledged = !acknowledged,
            // NotPrimary and Dropped are never returned by send_following_primary.
            Ok(Step::Skipped | Step::NotPrimary(_) | Step::Dropped(..)) => {}
            Ok(Step::Stop) => break,
            Err(e) => {
                target.abort.trigger(e.to_string());
                break;
            }
        }
    }
    drain(run, &mut rx);
    finish(target, &mut conns, last_unacknowledged).await;
}
