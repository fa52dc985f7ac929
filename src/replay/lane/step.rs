//! One op on a lane: a step marker reached, or a request waited for, patched, sent, answered,
//! checked against its recorded reply and measured.

use super::conns::{Conns, Side};
use super::lag::Lag;
use crate::replay::client::{is_not_primary, Conn, ConnError};
use crate::replay::measure::observed::Observed;
use crate::replay::measure::outcome::{self, Outcome};
use crate::replay::measure::sample::{Sample, ShapeSample};
use crate::replay::measure::step_phases::Marker;
use crate::replay::measure::why::Answered;
use crate::replay::pacing::timer;
use crate::replay::route::counter;
use crate::replay::route::op::Op;
use crate::replay::route::run::Run;
use crate::replay::route::target::TargetState;
use crate::wire::bson_raw;
use crate::wire::codes::UNAUTHORIZED;
use crate::wire::compressed;
use std::time::Instant as StdInstant;
use tokio::sync::watch;
use tokio::time::Instant;

pub(super) enum Step {
    Sent {
        acknowledged: bool,
        /// A/B replay only (`TargetState::observe`): what this target answered.
        observed: Option<Box<Observed>>,
    },
    Skipped,
    Stop,
    /// The primary answered "not primary": the op, to send again once the new primary is found.
    NotPrimary(Box<Op>),
    /// The target dropped the connection the op was in flight on, and the op is safe to send
    /// again ([`super::retry`]): the op, the side it went on, and the error.
    Dropped(Box<Op>, Side, ConnError),
}

pub(super) async fn one(
    run: &Run,
    target: &TargetState,
    conns: &mut Conns,
    mut op: Box<Op>,
    abort: &mut watch::Receiver<bool>,
) -> Result<Step, ConnError> {
    let intended = run.pacing.due_at(run.start, op.offset_ns, op.seq);
    // Reached after its time: whatever lag it has is not the clock's.
    let held = intended.is_some_and(|d| Instant::now() > d);
    let live_cursors = match before_send(run, target, conns, &mut op, intended, abort).await? {
        Ok(live_cursors) => live_cursors,
        Err(step) => return Ok(step),
    };
    let Some((conn, side)) = conns.pick(run, target, &op, &live_cursors, abort).await? else {
        counter::bump(&target.counters.after_deadline);
        return Ok(Step::Skipped);
    };
    let _schema = crate::replay::explain::schema_change(target.plans.as_deref(), &op.command).await;
    let sent_at = Instant::now();
    let mut lag = Lag {
        ns: intended.map_or(0, |d| {
            sent_at.saturating_duration_since(d).as_nanos() as u64
        }),
        held,
        from_send: None,
    };
    let id = match send(target, conn, &mut op).await {
        Ok(id) => id,
        Err(e) => return dropped(target, op, side, e),
    };
    if !op.expects_reply {
        if side == Side::Primary {
            conns.unconfirmed = true;
        }
        return Ok(unacknowledged(target, &op, lag));
    }
    let frame = match conn.recv(id).await {
        Ok(frame) => frame,
        Err(e) => return dropped(target, op, side, e),
    };
    let done = Instant::now();
    let latency_ns = lag.latency(run, intended, sent_at, done);
    let live = outcome::scan(&frame).map_err(|source| ConnError::Wire {
        addr: conn.addr().to_owned(),
        source,
    })?;
    if side == Side::Primary
        && is_not_primary(live.code)
        && target.servers.follows_primary()
        && op.recorded.as_ref().is_none_or(|r| !is_not_primary(r.code))
    {
        return Ok(Step::NotPrimary(op));
    }
    check_authorized(target, conn, &op, &live)?;
    if side == Side::Secondary {
        if let Some(id) = live.cursor_id.filter(|&id| id != 0) {
            target.servers.opened_on_secondary(id);
        }
    }
    follow_cursors(target, &op, &live);
    if let (Some(slot), Some(plans)) = (op.plan_slot, &target.plans) {
        if live.ok && live.write_errors == 0 {
            plans.answered(slot, &op.bytes);
        }
    }
    measure(target, &op, (&live, &frame, done), latency_ns, lag);
    let observed = target
        .observe
        .then(|| Box::new(Observed::of_reply(&frame, live, latency_ns)));
    if side == Side::Primary {
        conns.unconfirmed = false;
    }
    Ok(Step::Sent {
        acknowledged: true,
        observed,
    })
}

/// [`ready`], when it has anything to do: boxed, since its waits make a large future, which the
/// lane would otherwise move for every request, even those with nothing to wait for (`--fast`).
async fn before_send(
    run: &Run,
    target: &TargetState,
    conns: &mut Conns,
    op: &mut Op,
    intended: Option<Instant>,
    abort: &mut watch::Receiver<bool>,
) -> Result<Result<Vec<i64>, Step>, ConnError> {
    if at_once(conns, op, intended) {
        return Ok(if past_deadline(run, target) {
            Err(Step::Skipped)
        } else {
            Ok(Vec::new())
        });
    }
    Box::pin(ready(run, target, conns, op, intended, abort)).await
}

/// Whether [`ready`] has nothing to do for the op: not a step marker, no connection to open ahead
/// of it, no due time, no write to follow, no cursor id to patch.
fn at_once(conns: &Conns, op: &Op, intended: Option<Instant>) -> bool {
    op.marker.is_none()
        && !(conns.primary.is_none() && op.connect_lead_ns > 0)
        && intended.is_none()
        && op.after.is_none()
        && op.cursor_patches.is_empty()
}

/// Past the `--duration` deadline: the request is not sent (counted).
fn past_deadline(run: &Run, target: &TargetState) -> bool {
    let past = run.deadline.is_some_and(|d| Instant::now() >= d);
    if past {
        counter::bump(&target.counters.after_deadline);
    }
    past
}

/// Everything before the op is sent: a step marker reached, the connection opened ahead of time,
/// the due time, the order's turn, the cursor ids patched. The live cursor ids, or the step the op
/// ends with.
async fn ready(
    run: &Run,
    target: &TargetState,
    conns: &mut Conns,
    op: &mut Op,
    intended: Option<Instant>,
    abort: &mut watch::Receiver<bool>,
) -> Result<Result<Vec<i64>, Step>, ConnError> {
    if let Some(marker) = &op.marker {
        let reached = conns
            .idle(target, reach_marker(run, target, marker, intended, abort))
            .await;
        return Ok(Err(if reached { Step::Skipped } else { Step::Stop }));
    }
    if conns.primary.is_none() && op.connect_lead_ns > 0 {
        if let Some(stop) = connect_ahead(run, target, conns, op, intended, abort).await? {
            return Ok(Err(stop));
        }
    }
    // Waiting, the lane has nothing to send: its connection slot goes to another lane that asks.
    if let Some(step) = conns
        .idle(target, wait_until_due(run, target, intended, abort))
        .await
    {
        return Ok(Err(step));
    }
    let turn = crate::replay::route::order::wait_turn(run, op.after.as_ref(), abort);
    if !conns.idle(target, turn).await {
        return Ok(Err(Step::Stop));
    }
    let Some(live_cursors) = conns.idle(target, patch_cursors(run, target, op)).await else {
        counter::bump(&target.counters.cursor_not_found);
        return Ok(Err(Step::Skipped));
    };
    Ok(Ok(live_cursors))
}

/// A request sent that expects no reply (moreToCome): counted, with no latency.
fn unacknowledged(target: &TargetState, op: &Op, lag: Lag) -> Step {
    target.metrics.lock().expect("metrics lock").record(Sample {
        command: &op.command,
        namespace: &op.namespace,
        latency_ns: None,
        error: false,
        code: None,
        lag_ns: lag.ns,
        held: lag.held,
        from_send_ns: None,
        done: StdInstant::now(),
        shape: op.shape.map(|id| ShapeSample {
            id,
            continues: continues(op),
            docs: 0,
            bytes: 0,
        }),
    });
    Step::Sent {
        acknowledged: false,
        observed: target.observe.then(Box::default),
    }
}

/// A connection error on `op`: [`Step::Dropped`] when a replica set's member dropped the
/// connection and the op is safe to send again, else the error (which ends the replay).
fn dropped(target: &TargetState, op: Box<Op>, side: Side, e: ConnError) -> Result<Step, ConnError> {
    if target.servers.follows_primary()
        && super::retry::is_dropped(&e)
        && super::retry::safe_to_resend(&op)
    {
        Ok(Step::Dropped(op, side, e))
    } else {
        Err(e)
    }
}

/// A recorded connection's first request: the lane connects `connect_lead_ns` (at the replay's
/// pace) before the request is due, when the recorded client opened it, so the handshake (and the
/// authentication) is not charged to the request's lag and latency. A request that will not be sent
/// (due after `--duration`) opens nothing.
async fn connect_ahead(
    run: &Run,
    target: &TargetState,
    conns: &mut Conns,
    op: &Op,
    intended: Option<Instant>,
    abort: &mut watch::Receiver<bool>,
) -> Result<Option<Step>, ConnError> {
    let Some(due) = intended else {
        return Ok(None);
    };
    if run.deadline.is_some_and(|d| due >= d) {
        return Ok(None);
    }
    let lead = run.pacing.connect_lead(op.connect_lead_ns);
    if let Some(at) = due.checked_sub(lead) {
        if !conns.idle(target, sleep_until(at, abort)).await {
            return Ok(Some(Step::Stop));
        }
    }
    conns.pick(run, target, op, &[], abort).await?;
    Ok(None)
}

/// Sleeps until the op's intended time. `Some(step)` when it is not to be sent: past the
/// `--duration` deadline, or the replay was aborted meanwhile.
async fn wait_until_due(
    run: &Run,
    target: &TargetState,
    intended: Option<Instant>,
    abort: &mut watch::Receiver<bool>,
) -> Option<Step> {
    if let (Some(deadline), Some(due)) = (run.deadline, intended) {
        if due >= deadline {
            counter::bump(&target.counters.after_deadline);
            return Some(Step::Skipped);
        }
    }
    if let Some(due) = intended {
        if !sleep_until(due, abort).await {
            return Some(Step::Stop);
        }
    }
    past_deadline(run, target).then_some(Step::Skipped)
}

/// Sleeps until `at` (not at all when it has passed). False when the replay was aborted meanwhile.
async fn sleep_until(at: Instant, abort: &mut watch::Receiver<bool>) -> bool {
    if at <= Instant::now() {
        return true;
    }
    tokio::select! {
        _ = timer::sleep_until(at) => true,
        _ = abort.wait_for(|a| *a) => false,
    }
}

/// Writes the live ids of the recorded cursors the op names into its bytes (waiting for cursors
/// opened on other lanes), and returns them. `None` when none of them is live: the op is not sent.
async fn patch_cursors(run: &Run, target: &TargetState, op: &mut Op) -> Option<Vec<i64>> {
    if op.cursor_patches.is_empty() {
        return Some(Vec::new());
    }
    let mut lives = Vec::new();
    let mut found = 0;
    let mut fallback = None;
    let mut missing = Vec::new();
    for &(at, recorded) in &op.cursor_patches {
        match target
            .cursors
            .live(op.scope, recorded, run.cursor_wait)
            .await
        {
            Some(live) => {
                bson_raw::write_i64_at(&mut op.bytes, at, live);
                lives.push(live);
                fallback.get_or_insert(live);
                found += 1;
            }
            None => missing.push(at),
        }
    }
    if found == 0 {
        return None;
    }
    // killCursors with some cursors gone: name a known one twice rather than a stale id.
    for at in missing {
        bson_raw::write_i64_at(&mut op.bytes, at, fallback.unwrap_or_default());
    }
    Some(lives)
}

/// Sends the op, compressed as the recorded client did with what the target agreed to; returns
/// the request id it went out with.
async fn send(target: &TargetState, conn: &mut Conn, op: &mut Op) -> Result<i32, ConnError> {
    let packed = match (op.compressor, conn.compressor()) {
        (Some(_), Some(c)) => compressed::compress(&op.bytes, c).ok(),
        _ => None,
    };
    let id = match packed {
        Some(mut packed) => {
            counter::bump(&target.counters.compressed);
            conn.send(&mut packed).await?
        }
        None => conn.send(&mut op.bytes).await?,
    };
    counter::bump(&target.counters.sent);
    Ok(id)
}

/// Without credentials every request would fail this way: one clear error, not a divergence each.
fn check_authorized(
    target: &TargetState,
    conn: &Conn,
    op: &Op,
    live: &Outcome,
) -> Result<(), ConnError> {
    if live.code == Some(UNAUTHORIZED)
        && target.target.auth.is_none()
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
    Ok(())
}

/// Tells the shared cursor map what the live reply did to the op's cursors.
fn follow_cursors(target: &TargetState, op: &Op, live: &Outcome) {
    if let Some(recorded) = op.produces_cursor {
        let id = if live.ok { live.cursor_id } else { None };
        target.cursors.resolve(op.scope, recorded, id);
    }
    match &*op.command {
        "getMore" => {
            if let Some(&(_, recorded)) = op.cursor_patches.first() {
                let recorded_done = op.recorded.as_ref().and_then(|o| o.cursor_id) == Some(0);
                if recorded_done {
                    target.cursors.forget(op.scope, recorded);
                } else if !live.ok || live.cursor_id == Some(0) {
                    target.cursors.resolve(op.scope, recorded, None);
                }
            }
        }
        "killCursors" => {
            for &(_, recorded) in &op.cursor_patches {
                target.cursors.forget(op.scope, recorded);
            }
        }
        _ => {}
    }
}

/// Records the answered op, and how its reply differs from the recorded one.
/// `reply`: the live outcome, the reply's bytes and when it was read.
fn measure(
    target: &TargetState,
    op: &Op,
    reply: (&Outcome, &[u8], Instant),
    latency_ns: u64,
    lag: Lag,
) {
    let (live, frame, done) = reply;
    let reply_bytes = frame.len();
    let error = !live.ok || live.write_errors > 0;
    let mut metrics = target.metrics.lock().expect("metrics lock");
    metrics.why.answered(&Answered {
        command: &op.command,
        namespace: &op.namespace,
        request: &op.bytes,
        reply: frame,
        origin_conn: op.origin_conn,
        origin_request: op.origin_request,
        offset_ns: op.offset_ns,
        recorded_ns: op.recorded.as_ref().and_then(|r| r.latency_ns),
        latency_ns,
        error,
        shape: op.shape,
    });
    if let Some(recorded) = &op.recorded {
        let fields = recorded.differences(live);
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
        code: live.code,
        lag_ns: lag.ns,
        held: lag.held,
        from_send_ns: lag.from_send,
        done: done.into_std(),
        shape: op.shape.map(|id| ShapeSample {
            id,
            continues: continues(op),
            docs: live.batch_len.unwrap_or(0) as u64,
            bytes: reply_bytes as u64,
        }),
    });
}

/// A getMore or killCursors: charged to the shape of the cursor it continues.
fn continues(op: &Op) -> bool {
    matches!(&*op.command, "getMore" | "killCursors")
}

/// Waits for the marker's due time (as a request would be), then marks the phase. False when the
/// replay was aborted meanwhile.
async fn reach_marker(
    run: &Run,
    target: &TargetState,
    marker: &Marker,
    due: Option<Instant>,
    abort: &mut watch::Receiver<bool>,
) -> bool {
    if let Some(due) = due {
        if run.deadline.is_some_and(|d| due >= d) {
            return true;
        }
        if due > Instant::now() {
            tokio::select! {
                _ = timer::sleep_until(due) => {}
                _ = abort.wait_for(|a| *a) => return false,
            }
        }
    }
    target
        .metrics
        .lock()
        .expect("metrics lock")
        .phases
        .reach(marker);
    true
}
