//! One proxied connection: a client socket, its own upstream socket, and a pump each way. A pump
//! forwards every byte it reads before looking at it; whole messages are then handed to the recorder.
//!
//! The one exception is a reply to `hello` / `isMaster`: while one is awaited, the upstream pump
//! forwards whole messages only, so that reply can be rewritten to name the proxy's listeners
//! (see [`crate::wire::hello`]). The capture keeps the reply as the server sent it, followed by a
//! `hello_rewrite` record.

use super::budget::{self, Budget, Held};
use super::clock::Clock;
use super::hello_watch::HelloWatch;
use super::limits::Limits;
use super::metrics::{ConnMeter, ProxyMetrics};
use super::recorder::RecorderHandle;
use super::stats::Stats;
use super::streams::{Acceptor, Connector, ReadHalf, WriteHalf};
use super::supervise::{self, supervise, Activity, Shutdown};
use super::tap::Tap;
use super::topology::{Member, Topology};
use crate::capture::{CloseEvent, OpenEvent, Record, RecordKind, Side};
use crate::figures::units;
use crate::wire::hello::{is_hello_request, request_expects_reply};
use crate::wire::{FrameSplitter, MsgHeader};
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::Notify;

/// `--connect-timeout` when neither it nor the connection string's connectTimeoutMS is given.
pub const UPSTREAM_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The close reason for a TLS ClientHello on a plaintext listener (it would otherwise read as
/// a 33 MB message the proxy waits for while the client waits for a ServerHello).
pub const TLS_ON_PLAINTEXT: &str =
    "a TLS client connected to a plaintext listener (start the proxy with --tls-cert/--tls-key)";

/// What one connection task needs; cheap to clone per connection.
#[derive(Clone)]
pub struct ConnContext {
    pub connector: Connector,
    pub topology: Arc<Topology>,
    /// Woken when a hello reply names an address the proxy does not serve yet.
    pub topology_changed: Arc<Notify>,
    pub recorder: Option<RecorderHandle>,
    /// `mongotape shadow`'s mirror: sees every record, must not wait.
    pub tap: Option<Arc<dyn Tap>>,
    pub stats: Arc<Stats>,
    pub clock: Clock,
    pub shutdown: Shutdown,
    /// Bytes held in unfinished messages, over every connection.
    pub budget: Arc<Budget>,
    pub limits: Limits,
    /// `--metrics`: per-message figures; `None` costs nothing per message.
    pub metrics: Option<Arc<ProxyMetrics>>,
}

impl ConnContext {
    fn record(&self, record: Record) {
        if let Some(tap) = &self.tap {
            tap.record(&record);
        }
        if let Some(rec) = &self.recorder {
            rec.submit(record);
        }
    }
}

/// Which way a pump carries bytes.
#[derive(Debug, Clone, Copy)]
enum Direction {
    ClientToServer,
    ServerToClient,
}

impl Direction {
    fn reader(self) -> Side {
        match self {
            Direction::ClientToServer => Side::Client,
            Direction::ServerToClient => Side::Upstream,
        }
    }

    fn writer(self) -> Side {
        match self {
            Direction::ClientToServer => Side::Upstream,
            Direction::ServerToClient => Side::Client,
        }
    }

    fn kind(self) -> RecordKind {
        match self {
            Direction::ClientToServer => RecordKind::Request,
            Direction::ServerToClient => RecordKind::Reply,
        }
    }
}

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
    tokio::select! {
        close = pumps.requests(client_r, up_w) => close,
        close = pumps.replies(up_r, client_w) => close,
        close = supervise(&activity, &ctx.limits, ctx.clock, ctx.shutdown.clone()) => close,
    }
}

/// What both pumps of one connection share.
struct Pumps<'a> {
    conn_id: u64,
    /// The client came through a plaintext listener (its first bytes are looked at for TLS).
    plaintext: bool,
    ctx: &'a ConnContext,
    watch: &'a HelloWatch,
    activity: &'a Activity,
    meter: &'a ConnMeter<'a>,
}

/// Resolves only when this pump must close for the budget: it holds part of a message, the
/// budget has been spent for the whole wait limit, and it holds at least its share. Raced with
/// every read, so a client that sits on a large unfinished message is found too.
async fn budget_guard(held: &Held<'_>, dir: Direction, limits: &Limits) -> CloseEvent {
    if held.get() == 0 {
        return std::future::pending().await;
    }
    let budget = held.budget();
    let mut spent_since: Option<Instant> = None;
    loop {
        tokio::time::sleep(budget::POLL).await;
        if !budget.is_spent() {
            spent_since = None;
            continue;
        }
        let since = *spent_since.get_or_insert_with(Instant::now);
        let share = budget.share();
        if since.elapsed() >= limits.buffer_wait && held.get() >= share {
            return CloseEvent {
                side: dir.reader(),
                reason: format!(
                    "held {} of an unfinished message for {:?} while the proxy's buffer budget \
                     of {} (--max-buffer-mb) was spent; its share was {}",
                    units::bytes(held.get() as u64),
                    limits.buffer_wait,
                    units::bytes(budget.limit() as u64),
                    units::bytes(share as u64),
                ),
            };
        }
    }
}

/// Before a read that would grow an unfinished message: waits while the proxy's buffer budget is
/// spent (the peer meets back-pressure), unless the guard closes this pump first.
async fn wait_for_budget(
    held: &Held<'_>,
    dir: Direction,
    limits: &Limits,
) -> Result<(), CloseEvent> {
    let budget = held.budget();
    if held.get() == 0 || !budget.is_spent() {
        return Ok(());
    }
    let freed = async {
        while budget.is_spent() {
            tokio::time::sleep(budget::POLL).await;
        }
    };
    tokio::select! {
        close = budget_guard(held, dir, limits) => Err(close),
        _ = freed => Ok(()),
    }
}

/// A read raced with the budget guard.
async fn guarded_read(
    from: &mut ReadHalf,
    splitter: &mut FrameSplitter,
    (dir, sniff_tls): (Direction, bool),
    held: &Held<'_>,
    limits: &Limits,
) -> Result<(), CloseEvent> {
    wait_for_budget(held, dir, limits).await?;
    tokio::select! {
        read = read_more(from, splitter, dir, sniff_tls) => read,
        close = budget_guard(held, dir, limits) => Err(close),
    }
}

/// A peer's close: said in words for the upstream ("closed" alone is the client's, the usual
/// end of a connection).
fn closed(dir: Direction, pending: usize) -> CloseEvent {
    let who = match dir.reader() {
        Side::Upstream => "the upstream closed the connection",
        _ => "closed",
    };
    CloseEvent {
        side: dir.reader(),
        reason: if pending == 0 {
            who.into()
        } else {
            format!("{who} {pending} bytes into a message")
        },
    }
}

/// Reads more into `splitter`. `sniff_tls`: these are a plaintext client's first bytes, and a TLS
/// handshake there closes the connection at once, saying so.
async fn read_more(
    from: &mut ReadHalf,
    splitter: &mut FrameSplitter,
    dir: Direction,
    sniff_tls: bool,
) -> Result<(), CloseEvent> {
    let pending = splitter.pending();
    match from.read_buf(splitter.read_buf()).await {
        Ok(0) => Err(closed(dir, pending)),
        Ok(_) if sniff_tls && MsgHeader::looks_like_tls(splitter.buffered()) => Err(CloseEvent {
            side: Side::Client,
            reason: TLS_ON_PLAINTEXT.into(),
        }),
        Ok(_) => {
            // A bad length cannot be resynchronised: refuse the bytes and close.
            splitter.validate().map_err(|e| CloseEvent {
                side: dir.reader(),
                reason: format!("sent an invalid message: {e}"),
            })
        }
        // A TLS peer that closes without close_notify: what a plain close is on TCP.
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Err(closed(dir, pending)),
        Err(e) => Err(CloseEvent {
            side: dir.reader(),
            reason: format!("read failed: {e}"),
        }),
    }
}

async fn write(to: &mut WriteHalf, bytes: &[u8], dir: Direction) -> Result<(), CloseEvent> {
    let result = match to.write_all(bytes).await {
        // A no-op on TCP; pushes TLS records out.
        Ok(()) => to.flush().await,
        Err(e) => Err(e),
    };
    result.map_err(|e| CloseEvent {
        side: dir.writer(),
        reason: format!("write failed: {e}"),
    })
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
    fn note_requests(&self, buffered: &[u8], rewrites: bool, now: u64) {
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
        loop {
            if let Err(close) = wait_for_budget(&held, dir, &ctx.limits).await {
                return close;
            }
            if let Err(close) = read_more(&mut from, &mut splitter, dir, false).await {
                return close;
            }
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
                    ctx.record(Record::new(dir.kind(), conn_id, now, frame));
                    if let Some((_, mark)) = replacement {
                        ctx.record(mark);
                    }
                    continue;
                }
                self.activity.reply_forwarded();
                ctx.record(Record::new(dir.kind(), conn_id, now, frame));
            }
            held.set(splitter.pending());
        }
    }
}
