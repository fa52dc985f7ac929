//! How many replay connections are open at once (`--max-open-connections`). A capture may hold far
//! more open connections than a process can have descriptors: a proxy killed in front of
//! connection-per-request clients leaves every connection open to the end. Each replay connection
//! holds a slot; a lane that needs one while none is free waits for it, and a lane that holds one
//! while it has nothing to send (its queue is empty, or it waits for its time, a write, a cursor)
//! gives it up, closing its connection, once another lane waits. It reopens when it sends again.
//!
//! No wait can deadlock: a lane waits for a slot only while it holds none (a lane that needs a
//! second connection closes its first one when no slot is free), and a lane holding one is either
//! in the middle of a request (bounded by `--op-timeout`) or waiting, and then it gives its slot to
//! whoever asks. So the request every other one waits for (the earliest one not answered, by
//! [`super::order`] and [`super::session_order`]) always gets a slot; the semaphore is fair, so no
//! lane waits forever behind later ones.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};

/// Descriptors kept for everything else: the capture's files, the probe's connection, the
/// metrics endpoint, the runtime's own (epoll, eventfd), stdio.
pub const RESERVED_FDS: u64 = 64;

/// At most this many by default, whatever the file limit: one machine can open about 28,000
/// connections to one target port (Linux's ephemeral ports, 32768-60999).
pub const DEFAULT_CEILING: usize = 20_000;

/// The default: the process's soft `RLIMIT_NOFILE` less [`RESERVED_FDS`], at most
/// [`DEFAULT_CEILING`], at least 1. Also returns the soft limit read (None when unlimited).
pub fn default_limit() -> (usize, Option<u64>) {
    let soft = rustix::process::getrlimit(rustix::process::Resource::Nofile).current;
    (limit_for(soft), soft)
}

fn limit_for(soft: Option<u64>) -> usize {
    match soft {
        Some(n) => (n.saturating_sub(RESERVED_FDS).max(1) as usize).min(DEFAULT_CEILING),
        None => DEFAULT_CEILING,
    }
}

/// The slots, shared by every lane of one target.
pub struct ConnSlots {
    permits: Arc<Semaphore>,
    limit: usize,
    /// Lanes waiting for a slot that no waiting holder has yet promised to give up.
    unclaimed: AtomicUsize,
    wanted: Notify,
    open: AtomicUsize,
    /// The most connections open at once.
    pub peak: AtomicUsize,
    /// Times a lane had to wait for a slot.
    pub waited: AtomicU64,
    /// Times a lane with nothing to send closed its connection for a waiting one.
    pub given_up: AtomicU64,
}

/// One open connection's slot; freed when dropped.
pub struct Slot {
    _permit: OwnedSemaphorePermit,
    slots: Arc<ConnSlots>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.slots.open.fetch_sub(1, Ordering::Relaxed);
    }
}

impl ConnSlots {
    pub fn new(limit: usize) -> Arc<ConnSlots> {
        let limit = limit.clamp(1, Semaphore::MAX_PERMITS);
        Arc::new(ConnSlots {
            permits: Arc::new(Semaphore::new(limit)),
            limit,
            unclaimed: AtomicUsize::new(0),
            wanted: Notify::new(),
            open: AtomicUsize::new(0),
            peak: AtomicUsize::new(0),
            waited: AtomicU64::new(0),
            given_up: AtomicU64::new(0),
        })
    }

    pub fn limit(&self) -> usize {
        self.limit
    }

    /// A slot if one is free now.
    pub fn try_take(self: &Arc<Self>) -> Option<Slot> {
        let permit = self.permits.clone().try_acquire_owned().ok()?;
        Some(self.slot(permit))
    }

    /// Waits for a slot, asking a holder with nothing to send to give one up.
    pub async fn take(self: &Arc<Self>) -> Slot {
        if let Some(slot) = self.try_take() {
            return slot;
        }
        self.waited.fetch_add(1, Ordering::Relaxed);
        self.unclaimed.fetch_add(1, Ordering::SeqCst);
        self.wanted.notify_one();
        let permit = self
            .permits
            .clone()
            .acquire_owned()
            .await
            .expect("the slots' semaphore is never closed");
        // Freed by a lane that ended rather than one that gave up: nobody need give one up now.
        let _ = self
            .unclaimed
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1));
        self.slot(permit)
    }

    fn slot(self: &Arc<Self>, permit: OwnedSemaphorePermit) -> Slot {
        let open = self.open.fetch_add(1, Ordering::Relaxed) + 1;
        self.peak.fetch_max(open, Ordering::Relaxed);
        Slot {
            _permit: permit,
            slots: self.clone(),
        }
    }

    /// Resolves once a lane waits for a slot that this caller is to give up (each waiting lane is
    /// claimed by one holder). Cancel-safe: a claim is only taken when this resolves.
    pub async fn claim(&self) {
        loop {
            let notified = self.wanted.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let claimed = self
                .unclaimed
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                .is_ok();
            if claimed {
                self.given_up.fetch_add(1, Ordering::Relaxed);
                return;
            }
            notified.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn the_default_leaves_descriptors_for_the_rest() {
        assert_eq!(limit_for(Some(1024)), 960);
        assert_eq!(limit_for(Some(10)), 1);
        assert_eq!(limit_for(Some(1 << 20)), DEFAULT_CEILING);
        assert_eq!(limit_for(None), DEFAULT_CEILING);
        assert!(default_limit().0 >= 1);
    }

    #[tokio::test]
    async fn a_waiting_lane_gets_the_slot_an_idle_holder_gives_up() {
        let slots = ConnSlots::new(1);
        let held = slots.try_take().expect("one is free");
        assert!(slots.try_take().is_none());
        let s = slots.clone();
        let waiter = tokio::spawn(async move { s.take().await });
        // The holder, waiting with nothing to send, is asked for its slot and gives it up.
        tokio::time::timeout(Duration::from_secs(10), slots.claim())
            .await
            .expect("claimed");
        drop(held);
        let got = tokio::time::timeout(Duration::from_secs(10), waiter)
            .await
            .expect("the waiter got the slot")
            .unwrap();
        assert_eq!(slots.waited.load(Ordering::Relaxed), 1);
        assert_eq!(slots.given_up.load(Ordering::Relaxed), 1);
        assert_eq!(slots.peak.load(Ordering::Relaxed), 1);
        // One waiter is claimed once: a second holder is not asked.
        let second = tokio::time::timeout(Duration::from_millis(50), slots.claim()).await;
        assert!(second.is_err(), "nobody waits any more");
        drop(got);
        assert_eq!(slots.open.load(Ordering::Relaxed), 0);
    }

    #[tokio::test]
    async fn a_slot_freed_by_a_lane_that_ended_cancels_the_claim() {
        let slots = ConnSlots::new(1);
        let held = slots.try_take().unwrap();
        let s = slots.clone();
        let waiter = tokio::spawn(async move { s.take().await });
        while slots.waited.load(Ordering::Relaxed) == 0 {
            tokio::task::yield_now().await;
        }
        drop(held);
        let _got = waiter.await.unwrap();
        assert_eq!(slots.unclaimed.load(Ordering::SeqCst), 0);
    }
}
