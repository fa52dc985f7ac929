//! The read-ahead budget between the capture reader and the lanes (`--read-ahead`).

use super::abort::Abort;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::Duration;

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

/// The memory a heap allocation of `n` bytes takes with glibc's malloc: an 8-byte header, rounded
/// up to 16 bytes, 32 at least (the 344-byte op: 352 bytes).
pub fn heap_block(n: usize) -> usize {
    if n == 0 {
        0
    } else {
        ((n + 8).div_ceil(16) * 16).max(32)
    }
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
