//! One replay connection: takes its requests in order, waits for each one's time, patches live cursor
//! ids in, sends, reads the reply, and measures. A failure of the target ends the whole replay.

use super::conn::{Conn, ConnError, UNAUTHORIZED};
use super::metrics::Sample;
use super::outcome;
use super::schedule::{Counters, Op, Shared};
use crate::wire::bson_raw;
use crate::wire::compressed::{self, Compressor};
use bson::rawdoc;
use std::sync::Arc;
use std::time::Instant as StdInstant;
use tokio::sync::mpsc::{error::TryRecvError, UnboundedReceiver};
use tokio::time::Instant;

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

enum Step {
    Sent { acknowledged: bool },
    Skipped,
    Stop,
}

async fn one(
    shared: &Shared,
    conn: Option<&mut Conn>,
    mut op: Op,
    abort: &mut tokio::sync::watch::Receiver<bool>,
) -> Result<Step, ConnError> {
    let intended = shared.pacing.due(shared.start, &op);
    if let Some(marker) = &op.marker {
        let reached = super::phases::reach(shared, marker, intended, abort).await;
        return Ok(if reached { Step::Skipped } else { Step::Stop });
    }
    let Some(conn) = conn else {
        // Not reached: the lane connects before its first request.
        return Ok(Step::Skipped);
    };
    if let (Some(deadline), Some(due)) = (shared.deadline, intended) {
        if due >= deadline {
            Counters::bump(&shared.counters.after_deadline);
            return Ok(Step::Skipped);
        }
    }
    if let Some(due) = intended {
        if due > Instant::now() {
            tokio::select! {
                _ = tokio::time::sleep_until(due) => {}
                _ = abort.wait_for(|a| *a) => return Ok(Step::Stop),
            }
        }
    }
    if shared.deadline.is_some_and(|d| Instant::now() >= d) {
        Counters::bump(&shared.counters.after_deadline);
        return Ok(Step::Skipped);
    }
    if !op.cursor_patches.is_empty() {
        let mut found = 0;
        let mut fallback = None;
        let mut missing = Vec::new();
        for &(at, recorded) in &op.cursor_patches {
            match shared
                .cursors
                .live(op.scope, recorded, shared.cursor_wait)
                .await
            {
                Some(live) => {
                    bson_raw::write_i64_at(&mut op.bytes, at, live);
                    fallback.get_or_insert(live);
                    found += 1;
                }
                None => missing.push(at),
            }
        }
        if found == 0 {
            Counters::bump(&shared.counters.cursor_not_found);
            return Ok(Step::Skipped);
        }
        // killCursors with some cursors gone: name a known one twice rather than a stale id.
        for at in missing {
            bson_raw::write_i64_at(&mut op.bytes, at, fallback.unwrap_or_default());
        }
    }
    let sent_at = Instant::now();
    let lag_ns = intended.map_or(0, |d| {
        sent_at.saturating_duration_since(d).as_nanos() as u64
    });
    // Compressed as the recorded client did, with what the target agreed to.
    let packed = match (op.compressor, conn.compressor()) {
        (Some(_), Some(c)) => compressed::compress(&op.bytes, c).ok(),
        _ => None,
    };
    let id = match packed {
        Some(mut packed) => {
            Counters::bump(&shared.counters.compressed);
            conn.send(&mut packed).await?
        }
        None => conn.send(&mut op.bytes).await?,
    };
    Counters::bump(&shared.counters.sent);
    if !op.expects_reply {
        shared.metrics.lock().expect("metrics lock").record(Sample {
            command: &op.command,
            namespace: &op.namespace,
            latency_ns: None,
            error: false,
            lag_ns,
            done: StdInstant::now(),
        });
        return Ok(Step::Sent {
            acknowledged: false,
        });
    }
    let frame = conn.recv(id).await?;
    let done = Instant::now();
    let origin = if shared.pacing.open_loop() {
        intended.unwrap_or(sent_at)
    } else {
        sent_at
    };
    let latency_ns = done.saturating_duration_since(origin).as_nanos() as u64;
    let live = outcome::scan(&frame).map_err(|source| ConnError::Wire {
        addr: conn.addr().to_owned(),
        source,
    })?;
    // Without credentials every request would fail this way: one clear error, not a divergence each.
    if live.code == Some(UNAUTHORIZED)
        && shared.target.user.is_none()
        && op
            .recorded
            .as_ref()
            .is_none_or(|r| r.code != Some(UNAUTHORIZED))
    {
        return Err(ConnError::Unauthorized {
            addr: conn.addr().to_owned(),
            command: op.command.to_string(),
            detail: live.errmsg.clone().unwrap_or_default(),
        });
    }
    if let Some(recorded) = op.produces_cursor {
        let id = if live.ok { live.cursor_id } else { None };
        shared.cursors.resolve(op.scope, recorded, id);
    }
    match &*op.command {
        "getMore" => {
            if let Some(&(_, recorded)) = op.cursor_patches.first() {
                let recorded_done = op.recorded.as_ref().and_then(|o| o.cursor_id) == Some(0);
                if recorded_done {
                    shared.cursors.forget(op.scope, recorded);
                } else if !live.ok || live.cursor_id == Some(0) {
                    shared.cursors.resolve(op.scope, recorded, None);
                }
            }
        }
        "killCursors" => {
            for &(_, recorded) in &op.cursor_patches {
                shared.cursors.forget(op.scope, recorded);
            }
        }
        _ => {}
    }
    let error = !live.ok || live.write_errors > 0;
    let mut metrics = shared.metrics.lock().expect("metrics lock");
    if let Some(recorded) = &op.recorded {
        let fields = recorded.differences(&live);
        if !fields.is_empty() {
            metrics.diverged(&op.command, &fields, || {
                serde_json::json!({
                    "recorded_connection": op.origin_conn,
                    "recorded_request_id": op.origin_request,
                    "namespace": &*op.namespace,
                    "fields": fields,
                    "recorded": recorded,
                    "live": live,
                })
            });
        }
    }
    metrics.record(Sample {
        command: &op.command,
        namespace: &op.namespace,
        latency_ns: Some(latency_ns),
        error,
        lag_ns,
        done: StdInstant::now(),
    });
    Ok(Step::Sent { acknowledged: true })
}
