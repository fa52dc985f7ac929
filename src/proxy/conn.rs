//! One proxied connection: a client socket, its own upstream socket, and a pump each way. A pump
//! forwards every byte it reads before looking at it; whole messages are then handed to the recorder.
//!
//! The one exception is a reply to `hello` / `isMaster`: while one is awaited, the upstream pump
//! forwards whole messages only, so that reply can be rewritten to name the proxy's listeners
//! (see [`crate::wire::hello`]). The capture keeps the reply as the server sent it, followed by a
//! `hello_rewrite` record.

use super::faulted;
use super::hello_watch::HelloWatch;
use super::metrics::ConnMeter;
use super::pump::{
    guarded_read, read_more, read_stamped, wait_for_budget, write, Direction, Pumps,
};
pub use super::pump::{ConnContext, TLS_ON_PLAINTEXT};
use super::stats::Stats;
use super::streams::{Acceptor, ReadHalf, WriteHalf};
use super::supervise::{self, supervise, Activity};
use super::topology::Member;
use crate::capture::{CloseEvent, OpenEvent, Record, RecordKind, Side};
use crate::net::stamped;
use crate::wire::hello::{is_hello_request, request_expects_reply};
use crate::wire::{FrameSplitter, MsgHeader};
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::time::Duration;
use tokio::net::TcpStream;

/// `--connect-timeout` when neither it nor the connection string's connectTimeoutMS is given.
pub const UPSTREAM_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Takes an accepted client (through TLS when the listener has it) and proxies it to `member`.
/// Returns true when the proxy cut it at shutdown (drain timeout or second signal).
pub async fn serve(
    client: TcpStream,
    peer: SocketAddr,
    conn_id: u64,
    member: Member,
    acceptor: Acceptor,
    ctx: ConnContext,
) -> bool {
    let (client_r, client_w) = match acceptor.accept(client).await {
        Ok(halves) => halves,
        Err(reason) => {
            Stats::add(&ctx.stats.client_tls_failures, 1);
            tracing::warn!(
                conn = conn_id,
                %peer,
                "client side: {reason} (listener for {})",
                member.upstream
            );
            return false;
        }
    };
    Stats::add(&ctx.stats.connections_total, 1);
    ctx.stats.connections_open.fetch_add(1, Ordering::Relaxed);
    ctx.record(Record::json(
        RecordKind::Open,
        conn_id,
        ctx.clock.now_ns(),
        &OpenEvent {
            client: peer.to_string(),
            upstream: member.upstream.to_string(),
            continued: false,
        },
    ));
    let plaintext = !acceptor.is_tls();
    let close = proxy_connection(client_r, client_w, &member, conn_id, plaintext, &ctx).await;
    match close.side {
        Side::Client if close.reason == "closed" => {
            tracing::debug!(conn = conn_id, %peer, "client closed the connection")
        }
        Side::Proxy if close.reason == supervise::DRAINED => {
            tracing::debug!(conn = conn_id, %peer, "{}", close.reason)
        }
        side => tracing::warn!(conn = conn_id, %peer, ?side, "connection closed: {}", close.reason),
    }
    ctx.record(Record::json(
        RecordKind::Close,
        conn_id,
        ctx.clock.now_ns(),
        &close,
    ));
    ctx.stats.connections_open.fetch_sub(1, Ordering::Relaxed);
    close.side == Side::Proxy
        && (close.reason == supervise::DRAIN_TIMEOUT || close.reason == supervise::STOPPED)
}

async fn proxy_connection(
    client_r: ReadHalf,
    client_w: WriteHalf,
    member: &Member,
    conn_id: u64,
    plaintext: bool,
    ctx: &ConnContext,
) -> CloseEvent {
    let (up_r, up_w) = match ctx.connector.connect(&member.upstream).await {
        Ok(halves) => halves,
        Err(e) => {
            return CloseEvent {
                side: e.side,
                reason: e.reason,
            }
        }
    };
    if ctx.tap.is_some() {
        // The tap (the shadow) times production's replies from their arrival, as it times the
        // candidates'.
        if let Some(tcp) = up_r.tcp() {
            let _ = stamped::enable(tcp);
        }
    }
    let watch = HelloWatch::default();
    let activity = Activity::new(ctx.clock.now_ns());
    let meter = ConnMeter::new(&ctx.stats, ctx.metrics.as_deref());
    let pumps = Pumps {
        conn_id,
        plaintext,
        ctx,
        watch: &watch,
        activity: &activity,
        meter: &meter,
    };
    if let Some(faults) = &ctx.faults {
        return faulted::run(&pumps, faults, (client_r, client_w), (up_r, up_w), ctx).await;
    }
    tokio::select! {
        close = pumps.requests(client_r, up_w) => close,
        close = pumps.replies(up_r, client_w) => close,
        close = supervise(&activity, &ctx.limits, ctx.clock, ctx.shutdown.clone()) => close,
    }
}

impl Pumps<'_> {
    /// Client to server: forward, then record. Requests (hello ones above all) are noted before
    /// their last byte goes out, so their reply cannot overtake the note.
    async fn requests(&self, mut from: ReadHalf, mut to: WriteHalf) -> CloseEvent {
        let (ctx, conn_id) = (self.ctx, self.conn_id);
        let dir = Direction::ClientToServer;
        let mut splitter = FrameSplitter::new();
        let mut held = ctx.budget.account();
        let rewrites = ctx.topology.rewrites();
        let mut first = self.plaintext;
        loop {
            let start = splitter.pending();
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
            self.note_requests(splitter.buffered(), rewrites, now);
            if let Err(close) = write(&mut to, &splitter.buffered()[start..], dir).await {
                return close;
            }
            while let Ok(Some(frame)) = splitter.next_frame() {
                Stats::add(&ctx.stats.messages, 1);
                Stats::add(&ctx.stats.wire_bytes, frame.len() as u64);
                self.meter.request(&frame, now);
                ctx.record(Record::new(dir.kind(), conn_id, now, frame));
            }
            held.set(splitter.pending());
            self.activity.client_read(now, splitter.pending());
        }
    }

    /// Walks the whole messages at the front of `buffered` (in place, no allocation).
    pub(super) fn note_requests(&self, buffered: &[u8], rewrites: bool, now: u64) {
        let mut at = 0;
        while let Ok(Some(len)) = MsgHeader::peek_length(&buffered[at..]) {
            let Some(message) = buffered.get(at..at + len) else {
                break;
            };
            if request_expects_reply(message) {
                // A hello may be a monitor's long poll (maxAwaitTimeMS): not work to wait for
                // at shutdown, nor a reply to time out.
                let hello = is_hello_request(message);
                if !hello {
                    self.activity.request_sent(now);
                } else if rewrites {
                    if let Ok(Some(header)) = MsgHeader::parse(message) {
                        self.watch.expect(header.request_id);
                    }
                }
            }
            at += len;
        }
    }

    /// Server to client: bytes go through as they come, except while a hello reply is awaited.
    async fn replies(&self, mut from: ReadHalf, mut to: WriteHalf) -> CloseEvent {
        let (ctx, conn_id, watch) = (self.ctx, self.conn_id, self.watch);
        let dir = Direction::ServerToClient;
        let mut splitter = FrameSplitter::new();
        let mut held = ctx.budget.account();
        // Bytes at the front of the splitter's buffer already forwarded.
        let mut sent = 0usize;
        let mut stamper = ctx.tap.as_ref().map(|_| stamped::Stamper::default());
        loop {
            if let Err(close) = wait_for_budget(&held, dir, &ctx.limits).await {
                return close;
            }
            let read = match stamper.as_mut() {
                Some(s) => read_stamped(&mut from, &mut splitter, dir, s).await,
                None => read_more(&mut from, &mut splitter, dir, false)
                    .await
                    .map(|()| 0),
            };
            let late = match read {
                Ok(late) => late,
                Err(close) => return close,
            };
            let now = ctx.clock.now_ns();
            self.activity.upstream_read(now);
            if !watch.is_waiting() {
                if let Err(close) = write(&mut to, &splitter.buffered()[sent..], dir).await {
                    return close;
                }
                sent = splitter.pending();
            }
            while let Ok(Some(frame)) = splitter.next_frame() {
                Stats::add(&ctx.stats.messages, 1);
                Stats::add(&ctx.stats.wire_bytes, frame.len() as u64);
                self.meter.reply(&frame, now);
                if sent >= frame.len() {
                    sent -= frame.len();
                } else {
                    let already = std::mem::take(&mut sent);
                    let replacement = if already == 0 {
                        watch.rewrite(
                            &frame,
                            conn_id,
                            now,
                            &ctx.topology,
                            &ctx.stats,
                            &ctx.topology_changed,
                        )
                    } else {
                        None
                    };
                    let out = match &replacement {
                        Some((message, _)) => &message[..],
                        None => &frame[already..],
                    };
                    if let Err(close) = write(&mut to, out, dir).await {
                        return close;
                    }
                    self.activity.reply_forwarded();
                    // The capture keeps what the server said, then the mark of the rewrite.
                    ctx.record_reply(Record::new(dir.kind(), conn_id, now, frame), late);
                    if let Some((_, mark)) = replacement {
                        ctx.record(mark);
                    }
                    continue;
                }
                self.activity.reply_forwarded();
                ctx.record_reply(Record::new(dir.kind(), conn_id, now, frame), late);
            }
            held.set(splitter.pending());
        }
    }
}
