//! The pacing clock: wakes a lane at its request's intended send time to within tens of
//! microseconds, where tokio's timer wheel rounds every sleep up to the next millisecond.
//!
//! One thread for the whole replay (started on the first paced wait, never for `--fast`) keeps
//! the due times in a heap. It sleeps on a condition variable with its timer slack set to 1 µs
//! (`prctl(PR_SET_TIMERSLACK)`: the default 50 µs would be added to every wake-up) until
//! [`SPIN`] before the earliest due time, then spins the rest and wakes the lane's task through
//! a oneshot channel. Spinning is bounded: at most [`SPIN_SHARE`] of the wall time since the
//! clock started; past it the thread only sleeps (and is late by the kernel's wake-up time).
//! The replayer's CPU in the report includes the spinning.

use std::collections::BinaryHeap;
use std::num::NonZeroU64;
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

/// How long before a due time the clock stops sleeping and spins.
pub const SPIN: Duration = Duration::from_micros(80);
/// How early the clock wakes a lane: the time a woken task takes to run again (a tokio worker
/// unparked), which the lane then spends spinning itself, so that it sends on time.
pub const EARLY: Duration = Duration::from_micros(30);
/// The most of the wall time the clock may spend spinning.
pub const SPIN_SHARE: f64 = 0.05;

/// One wait: its due time and the lane to wake.
struct Due {
    at: Instant,
    seq: u64,
    wake: oneshot::Sender<()>,
}

impl PartialEq for Due {
    fn eq(&self, o: &Self) -> bool {
        (self.at, self.seq) == (o.at, o.seq)
    }
}
impl Eq for Due {}
impl PartialOrd for Due {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Due {
    /// Reversed: the heap's top is the earliest due time.
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (o.at, o.seq).cmp(&(self.at, self.seq))
    }
}

#[derive(Default)]
struct Waits {
    heap: BinaryHeap<Due>,
    seq: u64,
}

/// The process's pacing clock.
pub struct Clock {
    waits: Mutex<Waits>,
    changed: Condvar,
    /// Nanoseconds spent spinning, and when the clock started.
    spun_ns: std::sync::atomic::AtomicU64,
    started: Instant,
}

impl Clock {
    /// The clock, its thread started on first use.
    pub fn get() -> &'static Arc<Clock> {
        static CLOCK: OnceLock<Arc<Clock>> = OnceLock::new();
        CLOCK.get_or_init(|| {
            let clock = Arc::new(Clock {
                waits: Mutex::new(Waits::default()),
                changed: Condvar::new(),
                spun_ns: Default::default(),
                started: Instant::now(),
            });
            let run = Arc::clone(&clock);
            std::thread::Builder::new()
                .name("mongotape-pacing".into())
                .spawn(move || run.run())
                .expect("spawning the pacing clock's thread");
            clock
        })
    }

    /// Time spent spinning so far.
    pub fn spun(&self) -> Duration {
        Duration::from_nanos(self.spun_ns.load(std::sync::atomic::Ordering::Relaxed))
    }

    /// A receiver that completes at `at` (at once when it has passed).
    pub fn wake_at(&self, at: Instant) -> oneshot::Receiver<()> {
        let (wake, woken) = oneshot::channel();
        if at <= Instant::now() {
            let _ = wake.send(());
            return woken;
        }
        let mut w = self.waits.lock().unwrap_or_else(|p| p.into_inner());
        w.seq += 1;
        let seq = w.seq;
        let earliest = w.heap.peek().is_none_or(|d| at < d.at);
        w.heap.push(Due { at, seq, wake });
        drop(w);
        if earliest {
            self.changed.notify_one();
        }
        woken
    }

    fn run(&self) {
        // Without it every sleep ends up to 50 µs late; a failure only costs precision.
        let _ = rustix::thread::set_current_timer_slack(NonZeroU64::new(1_000));
        let mut w = self.waits.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            let now = Instant::now();
            while w.heap.peek().is_some_and(|d| d.at <= now) {
                let due = w.heap.pop().expect("peeked");
                let _ = due.wake.send(());
            }
            // A lane that gave up (the replay aborted) dropped its receiver.
            let Some(next) = w.heap.peek().map(|d| d.at) else {
                w = self.changed.wait(w).unwrap_or_else(|p| p.into_inner());
                continue;
            };
            let left = next - now;
            let spin = self.may_spin(now);
            if left > SPIN || !spin {
                let nap = if spin { left - SPIN } else { left };
                w = self
                    .changed
                    .wait_timeout(w, nap)
                    .unwrap_or_else(|p| p.into_inner())
                    .0;
                continue;
            }
            // Spin without the lock, so that lanes can add waits meanwhile.
            drop(w);
            let spin_from = Instant::now();
            while Instant::now() < next {
                std::hint::spin_loop();
            }
            let spun = spin_from.elapsed().as_nanos() as u64;
            self.spun_ns
                .fetch_add(spun, std::sync::atomic::Ordering::Relaxed);
            w = self.waits.lock().unwrap_or_else(|p| p.into_inner());
        }
    }

    /// Whether spinning stays within [`SPIN_SHARE`] of the wall time (plus one spin's worth).
    fn may_spin(&self, now: Instant) -> bool {
        let wall = now.duration_since(self.started).as_nanos() as f64;
        let spun = self.spun_ns.load(std::sync::atomic::Ordering::Relaxed) as f64;
        spun <= wall * SPIN_SHARE + SPIN.as_nanos() as f64
    }
}

/// Whether `MONGOTAPE_PACING_CLOCK=tokio` asks for tokio's millisecond timer instead: what the
/// pacing clock buys, measured side by side (`tools/bench-pacing`).
fn coarse() -> bool {
    static COARSE: OnceLock<bool> = OnceLock::new();
    *COARSE.get_or_init(|| std::env::var_os("MONGOTAPE_PACING_CLOCK").is_some_and(|v| v == "tokio"))
}

/// Sleeps until `at` on the pacing clock.
pub async fn sleep_until(at: tokio::time::Instant) {
    if coarse() {
        return tokio::time::sleep_until(at).await;
    }
    let at = at.into_std();
    if at <= Instant::now() {
        return;
    }
    // Dropped senders only happen if the clock's thread died: fall back to tokio's timer.
    if Clock::get().wake_at(at - EARLY).await.is_err() {
        tokio::time::sleep_until(at.into()).await;
    }
    while Instant::now() < at {
        std::hint::spin_loop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Waits registered out of order wake in order, none before its time, and a past one at once.
    #[test]
    fn waits_wake_in_due_order_never_early() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        rt.block_on(async {
            let start = tokio::time::Instant::now();
            let offsets_ms = [9u64, 3, 6, 1];
            let woken = Arc::new(Mutex::new(Vec::new()));
            let mut tasks = Vec::new();
            for ms in offsets_ms {
                let woken = Arc::clone(&woken);
                tasks.push(tokio::spawn(async move {
                    let at = start + Duration::from_millis(ms);
                    sleep_until(at).await;
                    assert!(tokio::time::Instant::now() >= at, "woken before {ms} ms");
                    woken.lock().unwrap().push(ms);
                }));
            }
            for t in tasks {
                t.await.unwrap();
            }
            assert_eq!(*woken.lock().unwrap(), vec![1, 3, 6, 9]);
            let past = tokio::time::Instant::now() - Duration::from_millis(5);
            sleep_until(past).await;
        });
    }

    /// The heap's order: earliest first, equal times in the order they were added.
    #[test]
    fn the_heap_top_is_the_earliest_due_time() {
        let now = Instant::now();
        let mut heap = BinaryHeap::new();
        for (seq, ms) in [(1, 5u64), (2, 1), (3, 5), (4, 3)] {
            let (wake, _) = oneshot::channel();
            heap.push(Due {
                at: now + Duration::from_millis(ms),
                seq,
                wake,
            });
        }
        let order: Vec<u64> = std::iter::from_fn(|| heap.pop().map(|d| d.seq)).collect();
        assert_eq!(order, vec![2, 4, 1, 3]);
    }
}
