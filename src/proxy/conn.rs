//! One proxied connection: a client socket, its own upstream socket, and a pump each way. A pump
//! forwards every byte it reads before looking at it; whole messages are then handed to the recorder.
//!
//! The one exception is a reply to `hello` / `isMaster`: while one is awaited, the upstream pump
//! forwards whole messages only, so that reply can be rewritten to name the proxy's listeners
//! (see [`crate::wire::hello`]). The capture keeps the reply as the server sent it, followed by a
//! `hello_rewrite` record.

use super::clock::Clock;
use super::hello_watch::HelloWatch;
use super::metrics::{ConnMeter, ProxyMetrics};
use super::recorder::RecorderHandle;
use super::stats::Stats;
use super::streams::{Acceptor, Connector, ReadHalf, WriteHalf};
use super::topology::{Member, Topology};
use crate::capture::record::HELLO_REWRITE;
use crate::capture::{CloseEvent, HelloRewriteEvent, OpenEvent, Record, RecordKind, Side};
use crate::wire::hello::{is_hello_request, rewrite_hello_reply};
use crate::wire::{FrameSplitter, MsgHeader};
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{watch, Notify};

pub const UPSTREAM_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// What one connection task needs; cheap to clone per connection.
#[derive(Clone)]
pub struct ConnContext {
    pub connector: Connector,
    pub topology: Arc<Topology>,
    /// Woken when a hello reply names an address the proxy does not serve yet.
    pub topology_changed: Arc<Notify>,
    pub recorder: Option<RecorderHandle>,
    pub stats: Arc<Stats>,
    /// `--metrics`: per-message figures; `None` costs nothing per message.
    pub metrics: Option<Arc<ProxyMetrics>>,
    pub clock: Clock,
    pub shutdown: watch::Receiver<bool>,
}

impl ConnContext {
    fn record(&self, record: Record) {
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
pub async fn serve(
    client: TcpStream,
    peer: SocketAddr,
    conn_id: u64,
    member: Member,
    acceptor: Acceptor,
    ctx: ConnContext,
) {
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
            return;
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
    let close = proxy_connection(client_r, client_w, &member, conn_id, &ctx).await;
    match close.side {
        Side::Client if close.reason == "closed" => {
            tracing::debug!(conn = conn_id, %peer, "client closed the connection")
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
}

async fn proxy_connection(
    client_r: ReadHalf,
    client_w: WriteHalf,
    member: &Member,
    conn_id: u64,
    ctx: &ConnContext,
) -> CloseEvent {
    let (up_r, up_w) = match ctx.connector.connect(&member.upstream).await {
        Ok(halves) => halves,
        Err(reason) => {
            return CloseEvent {
                side: Side::Upstream,
                reason,
            }
        }
    };
    let watch = HelloWatch::default();
    let meter = ConnMeter::new(&ctx.stats, ctx.metrics.as_deref());
    let mut shutdown = ctx.shutdown.clone();
    tokio::select! {
        close = pump_requests(client_r, up_w, conn_id, ctx, &watch, &meter) => close,
        close = pump_replies(up_r, client_w, conn_id, ctx, &watch, &meter) => close,
        _ = shutdown.wait_for(|stop| *stop) => CloseEvent {
            side: Side::Proxy,
            reason: "proxy shutting down".into(),
        },
    }
}

fn closed(dir: Direction, pending: usize) -> CloseEvent {
    CloseEvent {
        side: dir.reader(),
        reason: if pending == 0 {
            "closed".into()
        } else {
            format!("closed {pending} bytes into a message")
        },
    }
}

async fn read_more(
    from: &mut ReadHalf,
    splitter: &mut FrameSplitter,
    dir: Direction,
) -> Result<(), CloseEvent> {
    let pending = splitter.pending();
    match from.read_buf(splitter.read_buf()).await {
        Ok(0) => Err(closed(dir, pending)),
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

/// Client to server: forward, then record. Hello requests are noted before their last byte goes
/// out, so their reply cannot overtake the note.
async fn pump_requests(
    mut from: ReadHalf,
    mut to: WriteHalf,
    conn_id: u64,
    ctx: &ConnContext,
    watch: &HelloWatch,
    meter: &ConnMeter<'_>,
) -> CloseEvent {
    let dir = Direction::ClientToServer;
    let mut splitter = FrameSplitter::new();
    let rewrites = ctx.topology.rewrites();
    loop {
        let start = splitter.pending();
        if let Err(close) = read_more(&mut from, &mut splitter, dir).await {
            return close;
        }
        let now = ctx.clock.now_ns();
        if rewrites {
            note_hello_requests(splitter.buffered(), watch);
        }
        if let Err(close) = write(&mut to, &splitter.buffered()[start..], dir).await {
            return close;
        }
        while let Ok(Some(frame)) = splitter.next_frame() {
            Stats::add(&ctx.stats.messages, 1);
            Stats::add(&ctx.stats.wire_bytes, frame.len() as u64);
            meter.request(&frame, now);
            ctx.record(Record::new(dir.kind(), conn_id, now, frame));
        }
    }
}

/// Walks the whole messages at the front of `buffered` (in place, no allocation).
fn note_hello_requests(buffered: &[u8], watch: &HelloWatch) {
    let mut at = 0;
    while let Ok(Some(len)) = MsgHeader::peek_length(&buffered[at..]) {
        let Some(message) = buffered.get(at..at + len) else {
            break;
        };
        if is_hello_request(message) {
            if let Ok(Some(header)) = MsgHeader::parse(message) {
                watch.expect(header.request_id);
            }
        }
        at += len;
    }
}

/// Server to client: bytes go through as they come, except while a hello reply is awaited.
async fn pump_replies(
    mut from: ReadHalf,
    mut to: WriteHalf,
    conn_id: u64,
    ctx: &ConnContext,
    watch: &HelloWatch,
    meter: &ConnMeter<'_>,
) -> CloseEvent {
    let dir = Direction::ServerToClient;
    let mut splitter = FrameSplitter::new();
    // Bytes at the front of the splitter's buffer already forwarded.
    let mut sent = 0usize;
    loop {
        if let Err(close) = read_more(&mut from, &mut splitter, dir).await {
            return close;
        }
        let now = ctx.clock.now_ns();
        if !watch.is_waiting() {
            if let Err(close) = write(&mut to, &splitter.buffered()[sent..], dir).await {
                return close;
            }
            sent = splitter.pending();
        }
        while let Ok(Some(frame)) = splitter.next_frame() {
            Stats::add(&ctx.stats.messages, 1);
            Stats::add(&ctx.stats.wire_bytes, frame.len() as u64);
            meter.reply(&frame, now);
            if sent >= frame.len() {
                sent -= frame.len();
            } else {
                let already = std::mem::take(&mut sent);
                let replacement = if already == 0 {
                    hello_reply(&frame, conn_id, now, ctx, watch)
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
                // The capture keeps what the server said, then the mark of the rewrite.
                ctx.record(Record::new(dir.kind(), conn_id, now, frame));
                if let Some((_, mark)) = replacement {
                    ctx.record(mark);
                }
                continue;
            }
            ctx.record(Record::new(dir.kind(), conn_id, now, frame));
        }
    }
}

/// When `frame` answers an awaited hello and something mapped: the rewritten reply to forward
/// instead, and the capture record that marks it. Warns about addresses the proxy does not serve.
fn hello_reply(
    frame: &[u8],
    conn_id: u64,
    now: u64,
    ctx: &ConnContext,
    watch: &HelloWatch,
) -> Option<(Vec<u8>, Record)> {
    let header = MsgHeader::parse(frame).ok()??;
    if !watch.is_awaited(header.response_to) {
        return None;
    }
    watch.answered(
        header.response_to,
        header.request_id,
        crate::wire::hello::reply_more_to_come(frame),
    );
    let map = ctx.topology.map();
    let outcome = match rewrite_hello_reply(frame, &map) {
        Ok(outcome) => outcome,
        Err(e) => {
            tracing::warn!(conn = conn_id, "upstream hello reply not rewritten: {e}");
            return None;
        }
    };
    if !outcome.unserved.is_empty() {
        Stats::add(&ctx.stats.unserved_addresses, 1);
        tracing::warn!(
            conn = conn_id,
            "UNSERVED ADDRESS: the upstream's hello names {} which the proxy does not serve; \
             a client may connect there directly and bypass the recording",
            outcome.unserved.join(", ")
        );
        ctx.topology_changed.notify_one();
    }
    let message = outcome.message?;
    Stats::add(&ctx.stats.hello_rewrites, 1);
    let mark = Record::json(
        HELLO_REWRITE,
        conn_id,
        now,
        &HelloRewriteEvent {
            request_id: header.request_id,
            replaced: outcome.replaced as u64,
            unserved: outcome.unserved,
        },
    );
    Some((message, mark))
}
