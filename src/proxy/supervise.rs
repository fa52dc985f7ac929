//! What watches one connection beside its two pumps: the reply and idle timeouts, and the drain at
//! shutdown. The pumps only store a timestamp per read and count requests and replies (relaxed
//! atomics of their own connection); this task looks at them on a tick, and only when a timeout is
//! set or the proxy is draining.

use super::clock::Clock;
use super::limits::Limits;
use crate::capture::{CloseEvent, Side};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;
use tokio::sync::watch;

/// The close reason of a connection still waiting for a reply when the drain time ran out.
pub const DRAIN_TIMEOUT: &str = "drain timeout";
/// The close reason of a connection closed between two requests during the drain.
pub const DRAINED: &str = "drained: closed between requests at shutdown";
/// The close reason after a second signal.
pub const STOPPED: &str = "stopped at once by a second signal";

/// How often a draining connection looks whether its last reply went out.
const DRAIN_POLL: Duration = Duration::from_millis(10);

/// One connection's traffic, as the pumps report it.
#[derive(Debug, Default)]
pub struct Activity {
    /// Requests forwarded that await a reply.
    outstanding: AtomicU64,
    /// When `outstanding` last rose from zero (proxy clock, ns).
    waiting_since: AtomicU64,
    last_client: AtomicU64,
    last_upstream: AtomicU64,
    /// Bytes of a request the client has begun and not finished.
    request_partial: AtomicUsize,
}

impl Activity {
    pub fn new(now_ns: u64) -> Activity {
        let a = Activity::default();
        a.last_client.store(now_ns, Ordering::Relaxed);
        a.last_upstream.store(now_ns, Ordering::Relaxed);
        a
    }

    /// A request that expects a reply is about to be forwarded.
    pub fn request_sent(&self, now_ns: u64) {
        if self.outstanding.fetch_add(1, Ordering::Relaxed) == 0 {
            self.waiting_since.store(now_ns, Ordering::Relaxed);
        }
    }

    /// A whole reply went to the client. Replies that answer no new request (exhaust, moreToCome)
    /// find nothing to take away.
    pub fn reply_forwarded(&self) {
        if self.outstanding.load(Ordering::Relaxed) > 0 {
            self.outstanding.fetch_sub(1, Ordering::Relaxed);
        }
    }

    pub fn client_read(&self, now_ns: u64, partial: usize) {
        self.last_client.store(now_ns, Ordering::Relaxed);
        self.request_partial.store(partial, Ordering::Relaxed);
    }

    pub fn upstream_read(&self, now_ns: u64) {
        self.last_upstream.store(now_ns, Ordering::Relaxed);
    }

    pub fn outstanding(&self) -> u64 {
        self.outstanding.load(Ordering::Relaxed)
    }

    fn between_requests(&self) -> bool {
        self.outstanding() == 0 && self.request_partial.load(Ordering::Relaxed) == 0
    }
}

/// How a connection learns that the proxy stops: `drain` on the first signal, `now` on the second.
#[derive(Clone)]
pub struct Shutdown {
    pub drain: watch::Receiver<bool>,
    pub now: watch::Receiver<bool>,
}

async fn raised(rx: &mut watch::Receiver<bool>) {
    if rx.wait_for(|up| *up).await.is_err() {
        // The sender is gone without raising it: it never will be.
        std::future::pending::<()>().await;
    }
}

/// Returns when the connection must close, and why.
pub async fn supervise(
    activity: &Activity,
    limits: &Limits,
    clock: Clock,
    mut shutdown: Shutdown,
) -> CloseEvent {
    let tick = [limits.reply_timeout, limits.idle_timeout]
        .into_iter()
        .flatten()
        .min()
        .map(|t| (t / 10).clamp(Duration::from_millis(10), Duration::from_secs(1)));
    let mut drain_deadline: Option<u64> = None;
    loop {
        let period = if drain_deadline.is_some() {
            Some(DRAIN_POLL)
        } else {
            tick
        };
        tokio::select! {
            _ = tokio::time::sleep(period.unwrap_or(Duration::ZERO)), if period.is_some() => {}
            _ = raised(&mut shutdown.drain), if drain_deadline.is_none() => {}
            _ = raised(&mut shutdown.now) => {
                return CloseEvent { side: Side::Proxy, reason: STOPPED.into() };
            }
        }
        let now = clock.now_ns();
        if drain_deadline.is_none() && *shutdown.drain.borrow() {
            drain_deadline = Some(now.saturating_add(nanos(limits.drain_timeout)));
        }
        if let Some(deadline) = drain_deadline {
            if activity.between_requests() {
                return CloseEvent {
                    side: Side::Proxy,
                    reason: DRAINED.into(),
                };
            }
            if now >= deadline {
                return CloseEvent {
                    side: Side::Proxy,
                    reason: DRAIN_TIMEOUT.into(),
                };
            }
        }
        let outstanding = activity.outstanding();
        if let Some(timeout) = limits.reply_timeout {
            let since = activity
                .waiting_since
                .load(Ordering::Relaxed)
                .max(activity.last_upstream.load(Ordering::Relaxed));
            if outstanding > 0 && now.saturating_sub(since) >= nanos(timeout) {
                return CloseEvent {
                    side: Side::Upstream,
                    reason: format!(
                        "sent no reply within {timeout:?} (--reply-timeout); \
                         {outstanding} request(s) unanswered"
                    ),
                };
            }
        }
        if let Some(timeout) = limits.idle_timeout {
            let last = activity
                .last_client
                .load(Ordering::Relaxed)
                .max(activity.last_upstream.load(Ordering::Relaxed));
            if outstanding == 0 && now.saturating_sub(last) >= nanos(timeout) {
                return CloseEvent {
                    side: Side::Client,
                    reason: format!("idle for {timeout:?} (--idle-timeout)"),
                };
            }
        }
    }
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}
