//! Step 4 of the pipeline: one lane is one replay connection. It takes its requests in order, waits
//! for each one's time, patches live cursor ids in, sends, reads the reply, and measures
//! (`step`; how late it went out, and whose lateness that was: `lag`). A failure of the target ends
//! the whole replay.

use crate::replay::client::ConnError;
use crate::replay::route::op::Op;
use crate::replay::route::shared::{Counters, Shared};
use bson::rawdoc;
use conns::{Conns, Side};
use std::sync::Arc;
use step::{one, Step};
use tokio::sync::mpsc::{error::TryRecvError, UnboundedReceiver};

mod conns;
mod lag;
mod paired;
mod retry;
mod step;

/// How many times one request is sent again after "not primary" replies or dropped connections
/// before the replay gives up.
const NOT_PRIMARY_RETRIES: u32 = 3;

/// Runs one lane until its queue closes or the replay is aborted. Its connections are opened with
/// the first request that needs each (step markers need none), so the handshake can offer that
/// request's compressor.
pub async fn run(shared: Arc<Shared>, rx: UnboundedReceiver<Box<Op>>) {
    if shared.targets.is_empty() {
        run_one(shared, rx).await
    } else {
        paired::run(shared, rx).await
    }
}

/// One lane on one target.
async fn run_one(shared: Arc<Shared>, mut rx: UnboundedReceiver<Box<Op>>) {
    let mut abort = shared.abort.subscribe();
    let mut conns = Conns::default();
    let mut last_unacknowledged = false;
    loop {
        // The reader usually runs ahead: take the next request without registering a waiter on the
        // abort signal (shared by every connection) unless the queue is empty.
        let op = match rx.try_recv() {
            Ok(op) if !shared.abort.is_set() => *op,
            Ok(op) => {
                shared.budget.release(op.charge);
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
                match conns.idle(&shared, next).await {
                    Some(op) => *op,
                    None => break,
                }
            }
        };
        let len = op.charge;
        let result = send_following_primary(&shared, &mut conns, op, &mut abort).await;
        shared.budget.release(len);
        match result {
            Ok(Step::Sent { acknowledged, .. }) => last_unacknowledged = !acknowledged,
            // NotPrimary and Dropped are never returned by send_following_primary.
            Ok(Step::Skipped | Step::NotPrimary(_) | Step::Dropped(..)) => {}
            Ok(Step::Stop) => break,
            Err(e) => {
                shared.abort.trigger(e.to_string());
                break;
            }
        }
    }
    drain(&shared, &mut rx);
    finish(&shared, &mut conns, last_unacknowledged).await;
}

/// The lane's end: its connections' counters, and its unacknowledged writes confirmed.
async fn finish(shared: &Shared, conns: &mut Conns, last_unacknowledged: bool) {
    for conn in conns.all() {
        shared
            .counters
            .stray_replies
            .fetch_add(conn.stray_replies, std::sync::atomic::Ordering::Relaxed);
    }
    // Unacknowledged writes are only known to have arrived once a later request is answered.
    if last_unacknowledged && !shared.abort.is_set() {
        let ping = rawdoc! { "ping": 1, "$db": "admin" };
        for conn in conns.all() {
            if let Err(e) = conn
                .command(&ping, "confirming unacknowledged writes")
                .await
            {
                shared.abort.trigger(e.to_string());
            }
        }
    }
}

/// One op; after a "not primary" reply, or when the connection it was in flight on dropped and it
/// is safe to send again, finds the primary again, reconnects and sends it again (counted in the
/// report), a few times at most.
async fn send_following_primary(
    shared: &Shared,
    conns: &mut Conns,
    op: Op,
    abort: &mut tokio::sync::watch::Receiver<bool>,
) -> Result<Step, ConnError> {
    let first = one(shared, conns, op, abort).await;
    if matches!(first, Ok(Step::NotPrimary(_) | Step::Dropped(..))) {
        // Rare, and a large future: boxed, so the common path's stays small.
        return Box::pin(follow_primary(shared, conns, first, abort)).await;
    }
    first
}

/// [`send_following_primary`] once the first send answered "not primary" or was dropped.
async fn follow_primary(
    shared: &Shared,
    conns: &mut Conns,
    mut result: Result<Step, ConnError>,
    abort: &mut tokio::sync::watch::Receiver<bool>,
) -> Result<Step, ConnError> {
    let mut retries = 0;
    loop {
        let (op, counter, last_error) = match result {
            Ok(Step::NotPrimary(op)) => {
                let addr = conns
                    .primary
                    .as_ref()
                    .map(|c| c.addr().to_owned())
                    .unwrap_or_default();
                let error = ConnError::Handshake {
                    addr,
                    detail: format!(
                        "{} still answered \"not primary\" after {NOT_PRIMARY_RETRIES} rediscoveries",
                        op.command
                    ),
                };
                conns.primary = None;
                (op, &shared.servers.retried, error)
            }
            Ok(Step::Dropped(op, side, error)) => {
                match side {
                    Side::Primary => conns.primary = None,
                    Side::Secondary => conns.secondary = None,
                }
                (op, &shared.servers.retried_dropped, error)
            }
            other => return other,
        };
        if retries == NOT_PRIMARY_RETRIES {
            return Err(last_error);
        }
        retries += 1;
        shared
            .servers
            .rediscover(&shared.target, conns.generation, shared.op_timeout)
            .await?;
        Counters::bump(counter);
        result = one(shared, conns, *op, abort).await;
    }
}

/// Releases the read-ahead budget of requests that will not be sent.
fn drain(shared: &Shared, rx: &mut UnboundedReceiver<Box<Op>>) {
    rx.close();
    while let Ok(op) = rx.try_recv() {
        shared.budget.release(op.charge);
    }
}
