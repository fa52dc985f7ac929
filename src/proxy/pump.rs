//! What both kinds of pumps share (the forwarding ones of [`super::conn`] and the faulted ones of
//! [`super::faulted`]): the connection's context, directions, reads raced with the buffer budget,
//! writes, and the words for a close.

use super::budget::{self, Budget, Held};
use super::clock::Clock;
use super::hello_watch::HelloWatch;
use super::limits::Limits;
use super::metrics::{ConnMeter, ProxyMetrics};
use super::recorder::RecorderHandle;
use super::stats::Stats;
use super::streams::{Connector, ReadHalf, WriteHalf};
use super::supervise::{Activity, Shutdown};
use super::tap::Tap;
use super::topology::Topology;
use crate::capture::{CloseEvent, Record, RecordKind, Side};
use crate::fault::FaultControl;
use crate::figures::units;
use crate::net::stamped::Stamper;
use crate::wire::{FrameSplitter, MsgHeader};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::Notify;

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
    /// `--fault`: the rules; `None` (no rule given) keeps the forwarding path untouched.
    pub faults: Option<Arc<FaultControl>>,
}

impl ConnContext {
    pub(super) fn record(&self, record: Record) {
        if let Some(tap) = &self.tap {
            tap.record(&record);
        }
        if let Some(rec) = &self.recorder {
            rec.submit(record);
        }
    }

    /// A reply whose last bytes arrived `late_ns` before the proxy read them (the kernel's
    /// stamp): the tap sees it at its arrival, the capture at its read (a capture's times
    /// never go backwards, and other connections' records were written in between).
    pub(super) fn record_reply(&self, record: Record, late_ns: u64) {
        if late_ns == 0 {
            return self.record(record);
        }
        if let Some(tap) = &self.tap {
            tap.record(&Record {
                ts_ns: record.ts_ns.saturating_sub(late_ns),
                ..record.clone()
            });
        }
        if let Some(rec) = &self.recorder {
            rec.submit(record);
        }
    }
}

/// Which way a pump carries bytes.
#[derive(Debug, Clone, Copy)]
pub(super) enum Direction {
    ClientToServer,
    ServerToClient,
}

impl Direction {
    pub(super) fn reader(self) -> Side {
        match self {
            Direction::ClientToServer => Side::Client,
            Direction::ServerToClient => Side::Upstream,
        }
    }

    pub(super) fn writer(self) -> Side {
        match self {
            Direction::ClientToServer => Side::Upstream,
            Direction::ServerToClient => Side::Client,
        }
    }

    pub(super) fn kind(self) -> RecordKind {
        match self {
            Direction::ClientToServer => RecordKind::Request,
            Direction::ServerToClient => RecordKind::Reply,
        }
    }
}

/// What both pumps of one connection share.
pub(super) struct Pumps<'a> {
    pub(super) conn_id: u64,
    /// The client came through a plaintext listener (its first bytes are looked at for TLS).
    pub(super) plaintext: bool,
    pub(super) ctx: &'a ConnContext,
    pub(super) watch: &'a HelloWatch,
    pub(super) activity: &'a Activity,
    pub(super) meter: &'a ConnMeter<'a>,
}

/// Resolves only when this pump must close for the budget: it holds part of a message, the
/// budget has been spent for the whole wait limit, and it holds at least its share. Raced with
/// every read, so a client that sits on a large unfinished message is found too.
pub(super) async fn budget_guard(held: &Held<'_>, dir: Direction, limits: &Limits) -> CloseEvent {
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
pub(super) async fn wait_for_budget(
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
pub(super) async fn guarded_read(
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
pub(super) fn closed(dir: Direction, pending: usize) -> CloseEvent {
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
pub(super) async fn read_more(
    from: &mut ReadHalf,
    splitter: &mut FrameSplitter,
    dir: Direction,
    sniff_tls: bool,
) -> Result<(), CloseEvent> {
    let pending = splitter.pending();
    let read = from.read_buf(splitter.read_buf()).await;
    judge_read(read, splitter, dir, sniff_tls, pending)
}

/// The most a reply's arrival is taken to precede its read: beyond it, the wall clock (the
/// kernel's stamps) has more likely stepped than the proxy slept.
const MAX_LATE: Duration = Duration::from_secs(10);

/// [`read_more`] on a leg whose arrivals the kernel stamps ([`crate::net::stamped::enable`]):
/// also says how long before the read its last bytes arrived (0 when unknown, as over TLS).
pub(super) async fn read_stamped(
    from: &mut ReadHalf,
    splitter: &mut FrameSplitter,
    dir: Direction,
    stamper: &mut Stamper,
) -> Result<u64, CloseEvent> {
    let Some(tcp) = from.tcp() else {
        return read_more(from, splitter, dir, false).await.map(|()| 0);
    };
    let pending = splitter.pending();
    let mut late = Duration::ZERO;
    let read = stamper
        .read(tcp, splitter.read_buf())
        .await
        .map(|(n, stamp)| {
            late = stamp.late.unwrap_or_default().min(MAX_LATE);
            n
        });
    judge_read(read, splitter, dir, false, pending)?;
    Ok(late.as_nanos() as u64)
}

/// What a read of `dir`'s peer means: more bytes of valid frames, or why the pump closes.
fn judge_read(
    read: std::io::Result<usize>,
    splitter: &FrameSplitter,
    dir: Direction,
    sniff_tls: bool,
    pending: usize,
) -> Result<(), CloseEvent> {
    match read {
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

pub(super) async fn write(
    to: &mut WriteHalf,
    bytes: &[u8],
    dir: Direction,
) -> Result<(), CloseEvent> {
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
