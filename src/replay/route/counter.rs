//! Counters the feed and the lanes bump without a lock, the run's and each target's alike.

use std::sync::atomic::{AtomicU64, Ordering};

pub fn get(c: &AtomicU64) -> u64 {
    c.load(Ordering::Relaxed)
}

pub fn bump(c: &AtomicU64) {
    c.fetch_add(1, Ordering::Relaxed);
}

pub fn add(c: &AtomicU64, n: u64) {
    c.fetch_add(n, Ordering::Relaxed);
}

/// A counter on a cache line of its own. The capture reader bumps `routed` for every request
/// while the lanes bump each target's `sent`: on one line, the line would move between the cores
/// twice per request.
#[derive(Default)]
#[repr(align(128))]
pub struct OwnLine(pub AtomicU64);
