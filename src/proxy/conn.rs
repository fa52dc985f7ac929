//! One proxied connection: a client socket, its own upstream socket, and a pump each way. A pump
//! forwards every byte it reads before looking at it; whole messages are then handed to the recorder.

use super::clock::Clock;
use super::recorder::RecorderHandle;
use super::stats::Stats;
use crate::capture::{CloseEvent, OpenEvent, Record, RecordKind, Side};
use crate::wire::FrameSplitter;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;
use tokio::sync::watch;

pub const UPSTREAM_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// What one connection task needs; cheap to clone per connection.
#[derive(Clone)]
pub struct ConnContext {
    pub upstream: String,
    pub recorder: Option<RecorderHandle>,
    pub stats: Arc<Stats>,
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

pub async fn serve(client: TcpStream, peer: SocketAddr, conn_id: u64, ctx: ConnContext) {
    Stats::add(&ctx.stats.connections_total, 1);
    ctx.stats.connections_open.fetch_add(1, Ordering::Relaxed);
    ctx.record(Record::json(
        RecordKind::Open,
        conn_id,
        ctx.clock.now_ns(),
        &OpenEvent {
            client: peer.to_string(),
            upstream: ctx.upstream.clone(),
            continued: false,
        },
    ));
    let close = proxy_connection(client, conn_id, &ctx).await;
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

async fn proxy_connection(client: TcpStream, conn_id: u64, ctx: &ConnContext) -> CloseEvent {
    let upstream =
        match tokio::time::timeout(UPSTREAM_CONNECT_TIMEOUT, TcpStream::connect(&ctx.upstream))
            .await
        {
            Ok(Ok(s)) => s,
            Ok(Err(e)) => {
                return CloseEvent {
                    side: Side::Upstream,
                    reason: format!("cannot connect to upstream {}: {e}", ctx.upstream),
                }
            }
            Err(_) => {
                return CloseEvent {
                    side: Side::Upstream,
                    reason: format!(
                        "connecting to upstream {} timed out after {:?}",
                        ctx.upstream, UPSTREAM_CONNECT_TIMEOUT
                    ),
                }
            }
        };
    let _ = client.set_nodelay(true);
    let _ = upstream.set_nodelay(true);
    let (client_r, client_w) = client.into_split();
    let (up_r, up_w) = upstream.into_split();
    let mut shutdown = ctx.shutdown.clone();
    tokio::select! {
        close = pump(client_r, up_w, Direction::ClientToServer, conn_id, ctx) => close,
        close = pump(up_r, client_w, Direction::ServerToClient, conn_id, ctx) => close,
        _ = shutdown.wait_for(|stop| *stop) => CloseEvent {
            side: Side::Proxy,
            reason: "proxy shutting down".into(),
        },
    }
}

async fn pump(
    mut from: OwnedReadHalf,
    mut to: OwnedWriteHalf,
    dir: Direction,
    conn_id: u64,
    ctx: &ConnContext,
) -> CloseEvent {
    let mut splitter = FrameSplitter::new();
    loop {
        let start = splitter.pending();
        match from.read_buf(splitter.read_buf()).await {
            Ok(0) => {
                return CloseEvent {
                    side: dir.reader(),
                    reason: if start == 0 {
                        "closed".into()
                    } else {
                        format!("closed {start} bytes into a message")
                    },
                }
            }
            Ok(_) => {}
            Err(e) => {
                return CloseEvent {
                    side: dir.reader(),
                    reason: format!("read failed: {e}"),
                }
            }
        }
        let now = ctx.clock.now_ns();
        // A bad length cannot be resynchronised: refuse the bytes and close.
        if let Err(e) = splitter.validate() {
            return CloseEvent {
                side: dir.reader(),
                reason: format!("sent an invalid message: {e}"),
            };
        }
        if let Err(e) = to.write_all(&splitter.buffered()[start..]).await {
            return CloseEvent {
                side: dir.writer(),
                reason: format!("write failed: {e}"),
            };
        }
        while let Ok(Some(frame)) = splitter.next_frame() {
            Stats::add(&ctx.stats.messages, 1);
            Stats::add(&ctx.stats.wire_bytes, frame.len() as u64);
            ctx.record(Record::new(dir.kind(), conn_id, now, frame));
        }
    }
}
