//! Pacing (when each request goes out), the state every replay connection shares, and the bounded
//! read-ahead between the capture reader and the connections.

use super::conn::Target;
use super::cursors::{Cursors, Scope};
use super::metrics::Metrics;
use super::outcome::Outcome;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;
use tokio::sync::watch;
use tokio::time::Instant;

/// When requests are sent.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Pacing {
    /// At their recorded times divided by `speed`, each connection waiting for its replies.
    Recorded { speed: f64 },
    /// As fast as the server answers, each connection waiting for its replies (closed loop).
    Fast,
    /// Request `i` is due at `start + i / ops_per_s`; latency counts from that intended time, so a
    /// server that falls behind shows its queueing instead of slowing the schedule down.
    Rate { ops_per_s: f64 },
}

impl Pacing {
    /// The intended send time of an op, `None` for "now".
    pub fn due(&self, start: Instant, op: &Op) -> Option<Instant> {
        match *self {
            Pacing::Recorded { speed } => {
                Some(start + Duration::from_nanos((op.offset_ns as f64 / speed) as u64))
            }
            Pacing::Fast => None,
            Pacing::Rate { ops_per_s } => {
                Some(start + Duration::from_secs_f64(op.seq as f64 / ops_per_s))
            }
        }
    }

    /// Whether latency counts from the intended send time rather than the actual one.
    pub fn open_loop(&self) -> bool {
        matches!(self, Pacing::Rate { .. })
    }

    pub fn describe(&self) -> String {
        match self {
            Pacing::Recorded { speed } => format!("recorded timing x{speed}"),
            Pacing::Fast => "fast (closed loop)".into(),
            Pacing::Rate { ops_per_s } => format!("rate {ops_per_s} ops/s (open loop)"),
        }
    }
}

/// One request ready to send on one replay connection.
#[derive(Debug)]
pub struct Op {
    pub bytes: Vec<u8>,
    /// Where the live cursor ids go (offset of an int64, recorded id).
    pub cursor_patches: Vec<(usize, i64)>,
    pub expects_reply: bool,
    pub command: Arc<str>,
    pub namespace: Arc<str>,
    /// Recorded time since the first replayed request (plus earlier repeat iterations).
    pub offset_ns: u64,
    /// Position in the whole replay, for `--rate`.
    pub seq: u64,
    pub scope: Scope,
    /// The recorded cursor this request opened, to be resolved from the live reply.
    pub produces_cursor: Option<i64>,
    pub recorded: Option<Outcome>,
    pub origin_conn: u64,
    pub origin_request: i32,
    /// A step marker: not sent, it starts a phase when the lane reaches it (`phases`).
    pub marker: Option<super::phases::Marker>,
    /// How the recorded client compressed it: sent compressed when the connection agreed on one.
    pub compressor: Option<crate::wire::compressed::Compressor>,
}

/// The first failure ends the replay: every connection and the capture reader stop.
pub struct Abort {
    tx: watch::Sender<bool>,
    /// The same as the watch's value, read without its lock on every request.
    set: AtomicBool,
    reason: Mutex<Option<String>>,
}

impl Default for Abort {
    fn default() -> Self {
        Abort {
            tx: watch::channel(false).0,
            set: AtomicBool::new(false),
            reason: Mutex::new(None),
        }
    }
}

impl Abort {
    pub fn trigger(&self, reason: String) {
        let mut r = self.reason.lock().expect("abort lock");
        if r.is_none() {
            *r = Some(reason);
        }
        self.set.store(true, Ordering::SeqCst);
        self.tx.send_replace(true);
    }

    pub fn is_set(&self) -> bool {
        self.set.load(Ordering::Relaxed)
    }

    pub fn subscribe(&self) -> watch::Receiver<bool> {
        self.tx.subscribe()
    }

    pub fn reason(&self) -> Option<String> {
        self.reason.lock().expect("abort lock").clone()
    }
}

/// Bytes of requests read ahead but not yet sent. The capture reader blocks at the limit, so memory
/// stays bounded whatever the capture's size.
///
/// Only the capture reader thread acquires and waits; the connections release after every request,
/// so releasing is an atomic subtraction. A reader that found the budget full waits until a quarter
/// of it is free again, and only the release that gets there wakes it: the reader then works in
/// batches instead of being woken, and sleeping again, for every request (a futex call and a context
/// switch per request, when the capture is larger than the read-ahead).
pub struct Budget {
    used: AtomicUsize,
    /// The level of `used` the waiting reader wants to be woken at; `usize::MAX` when none waits.
    wake_at: AtomicUsize,
    lock: Mutex<()>,
    freed: Condvar,
    limit: usize,
}

const NOBODY_WAITS: usize = usize::MAX;

impl Budget {
    pub fn new(limit: usize) -> Budget {
        Budget {
            used: AtomicUsize::new(0),
            wake_at: AtomicUsize::new(NOBODY_WAITS),
            lock: Mutex::new(()),
            freed: Condvar::new(),
            limit,
        }
    }

    /// Blocks (the reader thread) until `n` bytes fit; false when the replay was aborted meanwhile.
    pub fn acquire(&self, n: usize, abort: &Abort) -> bool {
        let used = self.used.load(Ordering::SeqCst);
        if used > 0 && used.saturating_add(n) > self.limit {
            // Resume once n fits and a quarter of the budget is free (or everything, for a request
            // larger than the budget).
            let resume = self.limit.saturating_sub(n).min(self.limit / 4 * 3);
            if !self.wait_until(abort, resume) {
                return false;
            }
        }
        // Only the reader adds, so what fitted still fits.
        self.used.fetch_add(n, Ordering::SeqCst);
        true
    }

    /// Blocks until every request handed out so far has been answered (or dropped); false when the
    /// replay was aborted meanwhile.
    pub fn wait_empty(&self, abort: &Abort) -> bool {
        self.wait_until(abort, 0)
    }

    /// Waits until `used <= level`.
    fn wait_until(&self, abort: &Abort, level: usize) -> bool {
        let mut guard = self.lock.lock().expect("budget lock");
        let result = loop {
            // Announced before looking, so a release after the look sees it and notifies.
            self.wake_at.store(level, Ordering::SeqCst);
            if self.used.load(Ordering::SeqCst) <= level {
                break true;
            }
            if abort.is_set() {
                break false;
            }
            guard = self
                .freed
                .wait_timeout(guard, Duration::from_millis(50))
                .expect("budget lock")
                .0;
        };
        self.wake_at.store(NOBODY_WAITS, Ordering::SeqCst);
        result
    }

    pub fn release(&self, n: usize) {
        let before = self
            .used
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |u| {
                Some(u.saturating_sub(n))
            })
            .unwrap_or_default();
        let wake_at = self.wake_at.load(Ordering::SeqCst);
        if wake_at != NOBODY_WAITS && before.saturating_sub(n) <= wake_at {
            let _guard = self.lock.lock().expect("budget lock");
            self.freed.notify_all();
        }
    }
}

/// Counters the connections bump without the metrics lock.
#[derive(Default)]
pub struct Counters {
    pub connections_opened: AtomicU64,
    pub cursor_not_found: AtomicU64,
    pub after_deadline: AtomicU64,
    pub stray_replies: AtomicU64,
    pub sent: AtomicU64,
    /// Requests sent compressed (OP_COMPRESSED with the compressor the target agreed to).
    pub compressed: AtomicU64,
}

impl Counters {
    pub fn get(c: &AtomicU64) -> u64 {
        c.load(Ordering::Relaxed)
    }

    pub fn bump(c: &AtomicU64) {
        c.fetch_add(1, Ordering::Relaxed);
    }
}

/// What every replay connection shares.
pub struct Shared {
    pub target: Target,
    pub pacing: Pacing,
    pub start: Instant,
    pub deadline: Option<Instant>,
    pub cursors: Cursors,
    pub metrics: Mutex<Metrics>,
    pub budget: Budget,
    pub abort: Abort,
    pub counters: Counters,
    pub op_timeout: Duration,
    /// How long a getMore waits for the live reply that opens its cursor.
    pub cursor_wait: Duration,
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn a_full_budget_resumes_the_reader_once_a_quarter_is_free() {
        let budget = Arc::new(Budget::new(100));
        let abort = Abort::default();
        for _ in 0..10 {
            assert!(budget.acquire(10, &abort));
        }
        let b = budget.clone();
        let releaser = std::thread::spawn(move || {
            for _ in 0..3 {
                std::thread::sleep(Duration::from_millis(20));
                b.release(10);
            }
        });
        let started = std::time::Instant::now();
        assert!(budget.acquire(10, &abort));
        // 100 used: one release would let 10 more fit, but the reader waits for 75 or less.
        assert!(
            started.elapsed() >= Duration::from_millis(50),
            "{:?}",
            started.elapsed()
        );
        releaser.join().unwrap();
        assert_eq!(budget.used.load(Ordering::SeqCst), 80);
        // A request larger than the whole budget waits for an empty one.
        let b = budget.clone();
        let drainer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            b.release(80);
        });
        assert!(budget.acquire(500, &abort));
        drainer.join().unwrap();
        assert_eq!(budget.used.load(Ordering::SeqCst), 500);
        abort.trigger("stop".into());
        assert!(!budget.acquire(10, &abort));
        assert!(!budget.wait_empty(&abort));
    }
}
