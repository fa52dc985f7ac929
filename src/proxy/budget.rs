//! The proxy-wide budget for bytes held in unfinished messages (`--max-buffer-mb`). Each pump
//! keeps the bytes of a message that has begun but not ended, to hand it to the recorder whole;
//! the budget bounds their sum over every connection, whatever the clients send.
//!
//! Accounting is one atomic add or subtract per socket read. A pump that holds part of a message
//! while the budget is spent stops reading (its peer meets TCP back-pressure); a pump that holds
//! more than its share for longer than the wait limit is closed, so one client cannot starve the
//! others. Pumps at a message boundary always read: a small request costs nothing to hold.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// The default `--max-buffer-mb`.
pub const DEFAULT_MAX_BUFFER: usize = 256 * 1024 * 1024;
/// The default time a pump over its share may wait for the budget before it is closed.
pub const DEFAULT_BUFFER_WAIT: Duration = Duration::from_secs(10);
/// How often a waiting pump looks at the budget again (waiting happens only under pressure, so a
/// poll keeps the hot path free of wake-ups).
pub const POLL: Duration = Duration::from_millis(20);

#[derive(Debug)]
pub struct Budget {
    limit: usize,
    used: AtomicUsize,
    /// Pumps holding part of a message.
    holders: AtomicUsize,
}

impl Budget {
    pub fn new(limit: usize) -> Budget {
        Budget {
            limit: limit.max(1),
            used: AtomicUsize::new(0),
            holders: AtomicUsize::new(0),
        }
    }

    pub fn limit(&self) -> usize {
        self.limit
    }

    pub fn used(&self) -> usize {
        self.used.load(Ordering::Relaxed)
    }

    pub fn is_spent(&self) -> bool {
        self.used() >= self.limit
    }

    /// What one holder may keep when the budget is shared evenly among the current holders.
    pub fn share(&self) -> usize {
        self.limit / self.holders.load(Ordering::Relaxed).max(1)
    }

    /// A pump's account, starting empty.
    pub fn account(&self) -> Held<'_> {
        Held {
            budget: self,
            held: 0,
        }
    }
}

/// The bytes one pump holds; given back when it is dropped.
#[derive(Debug)]
pub struct Held<'a> {
    budget: &'a Budget,
    held: usize,
}

impl Held<'_> {
    pub fn get(&self) -> usize {
        self.held
    }

    pub fn budget(&self) -> &Budget {
        self.budget
    }

    /// The pump now holds `now` bytes.
    pub fn set(&mut self, now: usize) {
        let before = self.held;
        if now > before {
            self.budget.used.fetch_add(now - before, Ordering::Relaxed);
        } else if now < before {
            self.budget.used.fetch_sub(before - now, Ordering::Relaxed);
        }
        if before == 0 && now > 0 {
            self.budget.holders.fetch_add(1, Ordering::Relaxed);
        } else if before > 0 && now == 0 {
            self.budget.holders.fetch_sub(1, Ordering::Relaxed);
        }
        self.held = now;
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.set(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accounts_add_up_and_give_back_on_drop() {
        let budget = Budget::new(100);
        let mut a = budget.account();
        let mut b = budget.account();
        a.set(60);
        b.set(30);
        assert_eq!(budget.used(), 90);
        assert!(!budget.is_spent());
        assert_eq!(budget.share(), 50);
        b.set(45);
        assert!(budget.is_spent());
        a.set(0);
        assert_eq!(budget.used(), 45);
        assert_eq!(budget.share(), 100);
        drop(b);
        assert_eq!(budget.used(), 0);
        drop(a);
        assert_eq!(budget.used(), 0);
    }
}
