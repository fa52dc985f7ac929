//! Step 4 of the pipeline: one lane is one replay connection. It takes its requests in order, waits
//! for each one's time, patches live cursor ids in, sends, reads the reply, and measures
//! (`step`). A failure of the target ends the whole replay.

use crate::replay::client::{Conn, ConnError};
use crate::replay::route::op::Op;
use crate::replay::route::shared::{Counters, Shared};
use crate::wire::compressed::Compressor;
use bson::rawdoc;
use std::sync::Arc;
use step::{one, Step};
use tokio::sync::mpsc::{error::TryRecvError, UnboundedReceiver};

mod step;

/// Opens the lane's connection, offering the compressor its first request was recorded with.
async fn connect(
    shared: &Shared,
    offer: Option<Compressor>,
    abort: &mut tokio::sync::watch::Receiver<bool>,
) -> Result<Conn, ConnError> {
    let conn = tokio::select! {
        c = Conn::connect_offering(&shared.target, shared.op_timeout, offer) => c,
        _ = abort.wait_for(|a| *a) => Err(ConnError::Closed { addr: shared.target.addr.clone(), during: "aborting" }),
    }?;
    Counters::bump(&shared.counters.connections_opened);
    Ok(conn)
}

/// Runs one lane until its queue closes or the replay is aborted. The connection is opened when
/// the first request arrives (step markers need none), so its handshake can offer that request's
/// compressor.
pub async fn run(shared: Arc<Shared>, mut rx: UnboundedReceiver<Op>) {
    let mut abort = shared.abort.subscribe();
    let mut conn: Option<Conn> = None;
    let mut last_unacknowledged = false;
    loop {
        // The reader usually runs ahead: take the next request without registering a waiter on the
        // abort signal (shared by every connection) unless the queue is empty.
        let op = match rx.try_recv() {
            Ok(op) if !shared.abort.is_set() => op,
            Ok(op) => {
                shared.budget.release(op.bytes.len());
                break;
            }
            Err(TryRecvError::Disconnected) => break,
            Err(TryRecvError::Empty) => tokio::select! {
                biased;
                _ = abort.wait_for(|a| *a) => break,
                op = rx.recv() => match op { Some(op) => op, None => break },
            },
        };
        if conn.is_none() && op.marker.is_none() {
            match connect(&shared, op.compressor, &mut abort).await {
                Ok(c) => conn = Some(c),
                Err(e) => {
                    shared.budget.release(op.bytes.len());
                    shared.abort.trigger(e.to_string());
                    break;
                }
            }
        }
        let len = op.bytes.len();
        let result = one(&shared, conn.as_mut(), op, &mut abort).await;
        shared.budget.release(len);
        match result {
            Ok(Step::Sent { acknowledged }) => last_unacknowledged = !acknowledged,
            Ok(Step::Skipped) => {}
            Ok(Step::Stop) => break,
            Err(e) => {
                shared.abort.trigger(e.to_string());
                break;
            }
        }
    }
    drain(&shared, &mut rx);
    let Some(mut conn) = conn else { return };
    shared
        .counters
        .stray_replies
        .fetch_add(conn.stray_replies, std::sync::atomic::Ordering::Relaxed);
    // Unacknowledged writes are only known to have arrived once a later request is answered.
    if last_unacknowledged && !shared.abort.is_set() {
        let ping = rawdoc! { "ping": 1, "$db": "admin" };
        if let Err(e) = conn
            .command(&ping, "confirming unacknowledged writes")
            .await
        {
            shared.abort.trigger(e.to_string());
        }
    }
}

/// Releases the read-ahead budget of requests that will not be sent.
fn drain(shared: &Shared, rx: &mut UnboundedReceiver<Op>) {
    rx.close();
    while let Ok(op) = rx.try_recv() {
        shared.budget.release(op.bytes.len());
    }
}
