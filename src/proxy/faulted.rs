//! The pumps of a connection when fault rules are set (`record --fault`, docs/faults.md). Kept
//! apart from [`super::conn`]'s: a proxy without rules never comes here and pays nothing.
//!
//! Requests go upstream whole (a rule needs the whole message to decide), each asked of the rules
//! first; a rule acts before forwarding (error, close_before, stall, delay_request) or leaves a
//! note for the reply pump (reply_error, write_concern_error, close_after, delay_reply). Replies
//! the proxy makes up are built by [`crate::wire::made_up`]. The capture keeps every request and
//! every reply as the server sent it, and a `fault` record (kind 11) per fault.

use super::pump::{guarded_read, read_more, wait_for_budget, write, ConnContext, Direction, Pumps};
use super::stats::Stats;
use super::streams::{ReadHalf, WriteHalf};
use super::supervise::supervise;
use crate::capture::{CloseEvent, FaultEvent, Record, Side, FAULT};
use crate::fault::{Action, ClientFacts, Decision, ErrorSpec, FaultControl, RequestFacts};
use crate::wire::made_up::{self, ErrorReply};
use crate::wire::{FrameSplitter, MsgHeader, OpCode};
use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Reply-side faults waiting for their reply, at most this many per connection.
const MAX_PENDING: usize = 4096;

/// What the two pumps of a faulted connection share.
struct Shared {
    client_w: tokio::sync::Mutex<WriteHalf>,
    /// Request id -> the decision to apply to its reply.
    pending: Mutex<HashMap<i32, Decision>>,
    /// Ids of the replies the proxy makes up.
    next_id: AtomicI32,
}

impl Shared {
    async fn to_client(&self, bytes: &[u8]) -> Result<(), CloseEvent> {
        let mut w = self.client_w.lock().await;
        write(&mut w, bytes, Direction::ServerToClient).await
    }

    fn expect(&self, request_id: i32, d: Decision) {
        let mut pending = self.pending.lock().expect("fault pending lock");
        if pending.len() >= MAX_PENDING {
            pending.clear();
        }
        pending.insert(request_id, d);
    }

    fn take(&self, response_to: i32) -> Option<Decision> {
        let mut pending = self.pending.lock().expect("fault pending lock");
        if pending.is_empty() {
            return None;
        }
        pending.remove(&response_to)
    }
}

/// Proxies one connection under `faults` until either side closes or a rule closes it.
pub(super) async fn run(
    pumps: &Pumps<'_>,
    faults: &Arc<FaultControl>,
    (client_r, client_w): (ReadHalf, WriteHalf),
    (up_r, up_w): (ReadHalf, WriteHalf),
    ctx: &ConnContext,
) -> CloseEvent {
    let shared = Shared {
        client_w: tokio::sync::Mutex::new(client_w),
        pending: Mutex::new(HashMap::new()),
        next_id: AtomicI32::new(1 << 30),
    };
    tokio::select! {
        close = requests(pumps, faults, &shared, client_r, up_w) => close,
        close = replies(pumps, &shared, up_r) => close,
        close = supervise(pumps.activity, &ctx.limits, ctx.clock, ctx.shutdown.clone()) => close,
    }
}

fn closed_by(d: &Decision) -> CloseEvent {
    CloseEvent {
        side: Side::Proxy,
        reason: format!("fault rule {}: {}", d.name, d.action.name()),
    }
}

fn error_reply<'a>(spec: &'a ErrorSpec, errmsg: &'a str) -> ErrorReply<'a> {
    ErrorReply {
        code: spec.code,
        code_name: spec.code_name.as_deref(),
        errmsg,
        labels: &spec.labels,
    }
}

async fn sleep_ms(ms: u64) {
    tokio::time::sleep(Duration::from_millis(ms)).await
}

/// Client to server: every whole request asked of the rules, then forwarded or not.
async fn requests(
    p: &Pumps<'_>,
    faults: &FaultControl,
    shared: &Shared,
    mut from: ReadHalf,
    mut to: WriteHalf,
) -> CloseEvent {
    let ctx = p.ctx;
    let dir = Direction::ClientToServer;
    let mut splitter = FrameSplitter::new();
    let mut held = ctx.budget.account();
    let rewrites = ctx.topology.rewrites();
    let mut first = p.plaintext;
    let mut client = ClientFacts::default();
    loop {
        let sniff_tls = std::mem::take(&mut first);
        let read = guarded_read(
            &mut from,
            &mut splitter,
            (dir, sniff_tls),
            &held,
            &ctx.limits,
        );
        if let Err(close) = read.await {
            return close;
        }
        let now = ctx.clock.now_ns();
        p.activity.client_read(now, splitter.pending());
        while let Ok(Some(frame)) = splitter.next_frame() {
            Stats::add(&ctx.stats.messages, 1);
            Stats::add(&ctx.stats.wire_bytes, frame.len() as u64);
            p.meter.request(&frame, now);
            ctx.record(Record::new(dir.kind(), p.conn_id, now, frame.clone()));
            let facts = RequestFacts::of(&frame, faults.wants_shape(), &mut client);
            let decision = facts
                .as_ref()
                .and_then(|f| faults.decide(f, &client, p.conn_id));
            let (Some(d), Some(facts)) = (decision, facts) else {
                p.note_requests(&frame, rewrites, now);
                if let Err(close) = write(&mut to, &frame, dir).await {
                    return close;
                }
                continue;
            };
            record_fault(p, &d, &facts, now);
            match apply(d, &facts, shared).await {
                Err(close) => return close,
                Ok(false) => {}
                Ok(true) => {
                    p.note_requests(&frame, rewrites, now);
                    if let Err(close) = write(&mut to, &frame, dir).await {
                        return close;
                    }
                }
            }
        }
        held.set(splitter.pending());
    }
}

/// Acts on a request a rule fired on: `Ok(true)` when it goes on upstream.
async fn apply(d: Decision, facts: &RequestFacts, shared: &Shared) -> Result<bool, CloseEvent> {
    if let Some(ms) = d.block_ms {
        sleep_ms(ms).await;
    }
    match &d.action {
        Action::Error(spec) => {
            if facts.expects_reply {
                let errmsg = spec.errmsg();
                let op = facts.op_code.unwrap_or(OpCode::Msg);
                let id = shared.next_id.fetch_add(1, Ordering::Relaxed);
                let reply =
                    made_up::error_reply(&error_reply(spec, &errmsg), op, facts.request_id, id);
                shared.to_client(&reply).await?;
            }
            Ok(false)
        }
        Action::CloseBefore => Err(closed_by(&d)),
        Action::Stall => Ok(false),
        Action::DelayRequest(ms) => {
            sleep_ms(*ms).await;
            Ok(true)
        }
        Action::ReplyError(_)
        | Action::WriteConcernError(_)
        | Action::CloseAfter
        | Action::DelayReply(_) => {
            if facts.expects_reply {
                shared.expect(facts.request_id, d);
            }
            Ok(true)
        }
    }
}

/// Server to client, whole messages: a reply a rule waits for is replaced, delayed or never
/// delivered; hello replies are rewritten as on the forwarding path.
async fn replies(p: &Pumps<'_>, shared: &Shared, mut from: ReadHalf) -> CloseEvent {
    let ctx = p.ctx;
    let dir = Direction::ServerToClient;
    let mut splitter = FrameSplitter::new();
    let mut held = ctx.budget.account();
    loop {
        if let Err(close) = wait_for_budget(&held, dir, &ctx.limits).await {
            return close;
        }
        if let Err(close) = read_more(&mut from, &mut splitter, dir, false).await {
            return close;
        }
        let now = ctx.clock.now_ns();
        p.activity.upstream_read(now);
        while let Ok(Some(frame)) = splitter.next_frame() {
            Stats::add(&ctx.stats.messages, 1);
            Stats::add(&ctx.stats.wire_bytes, frame.len() as u64);
            p.meter.reply(&frame, now);
            ctx.record(Record::new(dir.kind(), p.conn_id, now, frame.clone()));
            let (out, mark) = match faulted_reply(p, shared, &frame, now).await {
                Ok(out) => out,
                Err(close) => return close,
            };
            if let Err(close) = shared.to_client(&out).await {
                return close;
            }
            p.activity.reply_forwarded();
            if let Some(mark) = mark {
                ctx.record(mark);
            }
        }
        held.set(splitter.pending());
    }
}

/// What reaches the client for the server's reply `frame`, and a hello rewrite's mark.
async fn faulted_reply<'f>(
    p: &Pumps<'_>,
    shared: &Shared,
    frame: &'f [u8],
    now: u64,
) -> Result<(Cow<'f, [u8]>, Option<Record>), CloseEvent> {
    let ctx = p.ctx;
    if p.watch.is_waiting() {
        let rewrite = p.watch.rewrite(
            frame,
            p.conn_id,
            now,
            &ctx.topology,
            &ctx.stats,
            &ctx.topology_changed,
        );
        if let Some((message, mark)) = rewrite {
            return Ok((Cow::Owned(message), Some(mark)));
        }
    }
    let header = MsgHeader::parse(frame).ok().flatten();
    let Some(d) = header.and_then(|h| shared.take(h.response_to)) else {
        return Ok((Cow::Borrowed(frame), None));
    };
    let out = match &d.action {
        Action::ReplyError(spec) => {
            let errmsg = spec.errmsg();
            made_up::replace_with_error(frame, &error_reply(spec, &errmsg))
        }
        Action::WriteConcernError(spec) => {
            let errmsg = spec.errmsg();
            made_up::with_write_concern_error(frame, &error_reply(spec, &errmsg))
        }
        Action::CloseAfter => return Err(closed_by(&d)),
        Action::DelayReply(ms) => {
            sleep_ms(*ms).await;
            None
        }
        _ => None,
    };
    Ok((out.map_or(Cow::Borrowed(frame), Cow::Owned), None))
}

fn record_fault(p: &Pumps<'_>, d: &Decision, facts: &RequestFacts, now: u64) {
    tracing::info!(
        conn = p.conn_id,
        "fault rule {}: {} on {} {} (request {})",
        d.name,
        d.action.name(),
        facts.command,
        facts.namespace,
        facts.request_id
    );
    let event = FaultEvent {
        rule: d.rule,
        name: d.name.clone(),
        action: d.action.name().into(),
        conn_id: p.conn_id,
        request_id: facts.request_id,
        command: facts.command.clone(),
        ns: facts.namespace.clone(),
        forwarded: d.action.forwards(),
        lsid: facts.session.as_ref().map(|(lsid, _)| lsid.clone()),
        txn_number: facts.session.as_ref().map(|(_, txn)| *txn),
    };
    p.ctx.record(Record::json(FAULT, p.conn_id, now, &event));
}
