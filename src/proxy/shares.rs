//! Fair admission to the recorder's queue: what each connection has queued.

use std::sync::atomic::{AtomicUsize, Ordering};

/// Slots of per-connection queued bytes (a connection's is its id modulo this).
const SHARE_SLOTS: usize = 1024;

/// Message bytes queued per connection, so that one connection cannot fill the whole queue: a
/// connection that already has messages queued may hold at most `max / (others + 2)`, where
/// `others` is the number of other connections with messages queued. A flood from one connection
/// thus leaves at least a share of the queue free for every other one.
pub struct Shares {
    slots: Vec<AtomicUsize>,
    holders: AtomicUsize,
}

impl Shares {
    pub fn new() -> Shares {
        Shares {
            slots: (0..SHARE_SLOTS).map(|_| AtomicUsize::new(0)).collect(),
            holders: AtomicUsize::new(0),
        }
    }

    fn slot(&self, conn_id: u64) -> &AtomicUsize {
        &self.slots[(conn_id % SHARE_SLOTS as u64) as usize]
    }

    /// Whether `conn_id` may queue `size` more bytes of a queue of `max`.
    pub fn admits(&self, conn_id: u64, size: usize, max: usize) -> bool {
        let mine = self.slot(conn_id).load(Ordering::Relaxed);
        if mine == 0 {
            return true;
        }
        let others = self.holders.load(Ordering::Relaxed).saturating_sub(1);
        mine.saturating_add(size) <= max / (others + 2)
    }

    pub fn add(&self, conn_id: u64, size: usize) {
        if size > 0 && self.slot(conn_id).fetch_add(size, Ordering::Relaxed) == 0 {
            self.holders.fetch_add(1, Ordering::Relaxed);
        }
    }

    pub fn sub(&self, conn_id: u64, size: usize) {
        if size > 0 && self.slot(conn_id).fetch_sub(size, Ordering::Relaxed) == size {
            self.holders.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Shares;
    use std::sync::atomic::Ordering;

    #[test]
    fn a_flood_from_one_connection_leaves_room_for_another() {
        let shares = Shares::new();
        let max = 4 << 20;
        let mut flooded = 0;
        while shares.admits(1, 47_600, max) {
            shares.add(1, 47_600);
            flooded += 47_600;
        }
        assert!(flooded <= max / 2 + 47_600, "{flooded}");
        // Another connection's inserts still fit, one after another.
        for _ in 0..100 {
            assert!(shares.admits(2, 300, max));
            shares.add(2, 300);
        }
        // Now two hold: the first may not add before the recorder takes some of its bytes.
        assert!(!shares.admits(1, 47_600, max));
        shares.sub(1, flooded);
        shares.sub(2, 30_000);
        assert_eq!(shares.holders.load(Ordering::Relaxed), 0);
    }
}
