//! The recorder thread's place in the scheduler: how it sleeps and is woken when its queue is
//! empty ([`Wake`]), and its priority ([`Gear`]). Writing the capture is work beside forwarding,
//! never in its way: while the recorder keeps up, its thread runs as `SCHED_IDLE`, so a wake-up
//! of a connection task, a client or the upstream takes the CPU from it at once. As an ordinary
//! thread (at any nice value) the recorder's bursts held a CPU against those wake-ups and
//! doubled the proxy's p99 round trip on 2 cores (docs/benchmarks.md, "The recorder's
//! priority").
//!
//! When its queue backs up past [`HIGH_MARK`] (1 MiB, or a quarter of a smaller bound) a sender
//! brings it back to normal priority (`SCHED_OTHER` at the nice value the process started with),
//! until it is under an eighth of that: on a busy host the
//! capture is a little late, never lost for want of CPU, and at stop the rest is written at
//! normal priority. A recorder kept off the CPU for [`STARVED`] with records waiting (cores
//! busy for long, with less than the high mark queued) is brought back too, until its next
//! flush: what was recorded reaches the file within about a second and a half, so that a
//! killed proxy leaves it readable. Going
//! back needs the right to raise a thread's priority (root, `CAP_SYS_NICE`, or an `RLIMIT_NICE`
//! of 20), which is tried once on a thread of its own at start; without it the recorder stays
//! at normal priority all along.

use crate::capture::Record;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::Receiver;
use std::sync::OnceLock;
use std::time::{Duration, Instant};
use thread_priority::unix::{
    set_thread_priority_and_policy, thread_native_id, NormalThreadSchedulePolicy, ThreadId,
    ThreadSchedulePolicy,
};
use thread_priority::{ThreadPriority, ThreadPriorityOsValue};

/// How long the recorder sleeps when its queue is empty.
const IDLE_POLL: Duration = Duration::from_millis(2);
/// Empty polls in a row after which the recorder parks until a record wakes it (50 ms of quiet):
/// an idle proxy then wakes 10 times a second instead of 500.
const POLLS_BEFORE_PARK: u32 = 25;
/// The longest park: the writer's clock (flushes, `--duration`, rotation) still ticks.
const IDLE_PARK: Duration = Duration::from_millis(100);

/// How a sender wakes the recorder thread when it parked on an empty queue. A sender pays one
/// fence and one load per record; the system call only after the recorder went quiet.
pub(super) struct Wake {
    pub(super) parked: AtomicBool,
    pub(super) thread: std::sync::OnceLock<std::thread::Thread>,
}

impl Wake {
    /// After a record was queued.
    pub(super) fn queued(&self) {
        std::sync::atomic::fence(Ordering::SeqCst);
        if self.parked.load(Ordering::Relaxed) && self.parked.swap(false, Ordering::AcqRel) {
            if let Some(thread) = self.thread.get() {
                thread.unpark();
            }
        }
    }

    /// On the recorder thread, its queue empty `polls` times in a row: a short sleep, or a park
    /// that a sender ends (and that ends by itself after [`IDLE_PARK`]).
    pub(super) fn idle(&self, polls: u32, rx: &Receiver<Record>) -> Option<Record> {
        if polls < POLLS_BEFORE_PARK {
            std::thread::sleep(IDLE_POLL);
            return None;
        }
        self.parked.store(true, Ordering::Relaxed);
        std::sync::atomic::fence(Ordering::SeqCst);
        // A record queued before the flag was seen would otherwise wait out the park.
        if let Ok(record) = rx.try_recv() {
            self.parked.store(false, Ordering::Relaxed);
            return Some(record);
        }
        std::thread::park_timeout(IDLE_PARK);
        self.parked.store(false, Ordering::Relaxed);
        None
    }
}

/// Queued bytes past which the recorder is behind: a recorder that keeps up holds what arrives
/// between two of its polls (tens of KiB at 100,000 messages a second).
pub const HIGH_MARK: usize = 1 << 20;

/// How long the recorder may go without a pass of its loop (it makes one at least every
/// 100 ms, idle or not) before a sender brings it back from the background.
pub const STARVED: Duration = Duration::from_millis(500);

/// The recorder's scheduling, shared by the recorder thread (which goes to the background when
/// its queue is short) and the senders (which bring it back when the queue backs up: a starved
/// thread could not notice by itself).
#[derive(Debug)]
pub struct Gear {
    /// The recorder may go to the background and come back.
    enabled: bool,
    background: AtomicBool,
    /// The recorder thread, once it started.
    thread: OnceLock<RecorderThread>,
    /// Queued bytes past which it comes back to normal priority, and under which it goes back.
    high: usize,
    low: usize,
    /// Times it came back to normal priority because its queue backed up or it was starved.
    raised: AtomicU64,
    /// The recorder's last pass of its loop ([`Gear::beat`]), in ns since `origin`.
    origin: Instant,
    beat: AtomicU64,
    /// Brought back because it was starved: it stays at normal priority until it flushed.
    held: AtomicBool,
}

/// The recorder thread as the gear changes it from other threads.
#[derive(Debug, Clone, Copy)]
struct RecorderThread {
    native: ThreadId,
    tid: rustix::process::Pid,
    /// Its nice value when it started (the process's): what it comes back to.
    nice: i32,
}

impl RecorderThread {
    /// Back to `SCHED_OTHER` at the nice value it started with, from any thread.
    /// `thread_priority` sets a normal policy's nice with `setpriority(PRIO_PROCESS, 0, ..)`,
    /// which on Linux is the calling thread's: the caller's own nice is put back, and the
    /// recorder's is set by its id (a proxy started with `nice -n 10` keeps its forwarding
    /// threads at 10 and brings its recorder back to 10, not to 0).
    fn bring_back(&self) {
        let own = rustix::process::getpriority_process(None);
        set_on(self.native, NormalThreadSchedulePolicy::Other);
        if let Ok(own) = own {
            let _ = rustix::process::setpriority_process(None, own);
        }
        let _ = rustix::process::setpriority_process(Some(self.tid), self.nice);
    }
}

fn set_on(thread: ThreadId, policy: NormalThreadSchedulePolicy) -> bool {
    // Normal policies take their priority from the nice value: 0 (the default), as every
    // thread starts.
    let priority = ThreadPriority::Os(ThreadPriorityOsValue::default());
    let policy = ThreadSchedulePolicy::Normal(policy);
    set_thread_priority_and_policy(thread, priority, policy).is_ok()
}

fn set(policy: NormalThreadSchedulePolicy) -> bool {
    set_on(thread_native_id(), policy)
}

/// The calling thread to `SCHED_IDLE` for good (work that may wait for CPU nothing else wants,
/// as the shadow's mirror by default); false if the system refused.
pub fn background_for_good() -> bool {
    set(NormalThreadSchedulePolicy::Idle)
}

/// Whether a thread of this process may go to `SCHED_IDLE` and come back, tried on a thread of
/// its own (one that cannot come back is then gone).
pub fn may_come_back() -> bool {
    std::thread::Builder::new()
        .name("mongotape-gear".into())
        .spawn(|| set(NormalThreadSchedulePolicy::Idle) && set(NormalThreadSchedulePolicy::Other))
        .ok()
        .and_then(|t| t.join().ok())
        .unwrap_or(false)
}

impl Gear {
    /// For a queue bounded at `max_queued_bytes`; `enabled` from [`may_come_back`].
    pub fn new(max_queued_bytes: usize, enabled: bool) -> Gear {
        Gear {
            enabled,
            background: AtomicBool::new(false),
            thread: OnceLock::new(),
            high: (max_queued_bytes / 4).min(HIGH_MARK),
            low: (max_queued_bytes / 4).min(HIGH_MARK) / 8,
            raised: AtomicU64::new(0),
            origin: Instant::now(),
            beat: AtomicU64::new(0),
            held: AtomicBool::new(false),
        }
    }

    /// On the recorder thread, at each pass of its loop.
    #[inline]
    pub fn beat(&self) {
        let now = self.origin.elapsed().as_nanos() as u64;
        self.beat.store(now, Ordering::Relaxed);
    }

    /// The recorder has not made a pass of its loop for [`STARVED`].
    fn starved(&self) -> bool {
        let now = self.origin.elapsed().as_nanos() as u64;
        now.saturating_sub(self.beat.load(Ordering::Relaxed)) > STARVED.as_nanos() as u64
    }

    /// On the recorder thread after a flush (or a flush interval with nothing to flush): a
    /// recorder brought back for starving may go to the background again.
    pub fn flushed(&self) {
        self.held.store(false, Ordering::Relaxed);
    }

    /// On the recorder thread, first: to the background when it may come back.
    pub fn start_here(&self) {
        let _ = self.thread.set(RecorderThread {
            native: thread_native_id(),
            tid: rustix::thread::gettid(),
            nice: rustix::process::getpriority_process(None).unwrap_or(0),
        });
        self.beat();
        if self.enabled && set(NormalThreadSchedulePolicy::Idle) {
            self.background.store(true, Ordering::Release);
        }
    }

    pub fn in_background(&self) -> bool {
        self.background.load(Ordering::Acquire)
    }

    /// Queued bytes past which a sender brings the recorder back.
    pub fn high_mark(&self) -> usize {
        self.high
    }

    pub fn raised(&self) -> u64 {
        self.raised.load(Ordering::Relaxed)
    }

    /// On a sender, with the bytes queued: past the high mark, or starved for [`STARVED`], a
    /// recorder in the background comes back to normal priority (one system call, by the first
    /// sender to see it).
    #[inline]
    pub fn queued(&self, queued: usize) {
        if !self.background.load(Ordering::Relaxed) {
            return;
        }
        let behind = queued > self.high;
        if !behind && !self.starved() {
            return;
        }
        if !behind {
            self.held.store(true, Ordering::Relaxed);
        }
        if self.to_foreground() {
            self.raised.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Back to normal priority now (past the high mark, and at stop so that the last records
    /// are written at once); false if it was not in the background.
    pub fn to_foreground(&self) -> bool {
        if !self.background.swap(false, Ordering::AcqRel) {
            return false;
        }
        if let Some(thread) = self.thread.get() {
            thread.bring_back();
        }
        true
    }

    /// On the recorder thread between records, with the bytes still queued: under the low mark
    /// it goes to the background again.
    #[inline]
    pub fn written(&self, queued: usize) {
        if self.enabled
            && queued < self.low
            && !self.held.load(Ordering::Relaxed)
            && !self.background.load(Ordering::Relaxed)
            && set(NormalThreadSchedulePolicy::Idle)
        {
            self.background.store(true, Ordering::Release);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Field `n` of the calling thread's /proc stat line, counted from the state (0).
    fn stat_field<T: std::str::FromStr>(n: usize) -> T {
        let tid = rustix::thread::gettid().as_raw_nonzero().get();
        let stat = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).unwrap();
        let after = stat.rsplit_once(')').unwrap().1;
        let field = after.split_whitespace().nth(n).unwrap();
        field
            .parse()
            .unwrap_or_else(|_| panic!("stat field {n}: {field}"))
    }

    /// The policy of the calling thread (5 is SCHED_IDLE, 0 SCHED_OTHER).
    fn policy() -> u32 {
        stat_field(38)
    }

    /// The nice value of the calling thread.
    fn nice() -> i32 {
        stat_field(16)
    }

    /// A gear whose recorder may go to the background and come back, where this process has
    /// the right to raise a thread's priority (root in CI).
    fn enabled_gear() -> Option<std::sync::Arc<Gear>> {
        let gear = std::sync::Arc::new(Gear::new(1600, may_come_back()));
        gear.enabled.then_some(gear)
    }

    /// What a test's recorder thread sends, the go-aheads it waits for, and its handle.
    type Recorder<T> = (
        std::sync::mpsc::Receiver<T>,
        std::sync::mpsc::Sender<()>,
        std::thread::JoinHandle<()>,
    );

    /// Runs `body` on a recorder thread of its own with the gear, where it sends what it sees
    /// and waits for the test's go-aheads.
    fn spawn_recorder<T: Send + 'static>(
        gear: &std::sync::Arc<Gear>,
        body: impl FnOnce(&Gear, &dyn Fn(T), &dyn Fn()) + Send + 'static,
    ) -> Recorder<T> {
        let gear = gear.clone();
        let (tx, rx) = std::sync::mpsc::channel();
        let (go, wait) = std::sync::mpsc::channel::<()>();
        let recorder = std::thread::spawn(move || {
            body(&gear, &|seen| tx.send(seen).unwrap(), &|| {
                wait.recv().unwrap()
            })
        });
        (rx, go, recorder)
    }

    #[test]
    fn a_sender_bringing_the_recorder_back_keeps_its_own_nice_and_restores_the_recorder_s() {
        let Some(gear) = enabled_gear() else {
            return; // no right to raise a priority here: never in the background
        };
        let (rx, go, recorder) = spawn_recorder(&gear, |gear, send, wait| {
            // The recorder of a proxy started with `nice -n 7`.
            rustix::process::setpriority_process(None, 7).unwrap();
            gear.start_here();
            send((policy(), nice()));
            wait();
            send((policy(), nice()));
        });
        assert_eq!(rx.recv().unwrap().0, 5, "SCHED_IDLE at start");
        let sender = std::thread::spawn(move || {
            rustix::process::setpriority_process(None, 3).unwrap();
            gear.queued(401);
            (gear.raised(), nice())
        });
        assert_eq!(
            sender.join().unwrap(),
            (1, 3),
            "brought back; the sender's nice untouched"
        );
        go.send(()).unwrap();
        assert_eq!(
            rx.recv().unwrap(),
            (0, 7),
            "SCHED_OTHER at the nice it started with"
        );
        recorder.join().unwrap();
    }

    #[test]
    fn the_gear_follows_the_queue_with_hysteresis() {
        let gear = std::sync::Arc::new(Gear::new(1600, may_come_back()));
        let on_recorder = gear.clone();
        let (tx, rx) = std::sync::mpsc::channel();
        let (go, wait) = std::sync::mpsc::channel::<()>();
        let recorder = std::thread::spawn(move || {
            on_recorder.start_here();
            tx.send(policy()).unwrap();
            wait.recv().unwrap();
            tx.send(policy()).unwrap();
            on_recorder.written(50); // at the low mark, not under it
            tx.send(policy()).unwrap();
            on_recorder.written(49);
            tx.send(policy()).unwrap();
        });
        if !gear.enabled {
            // No right to raise a priority here: the recorder stays as it was.
            assert_eq!(rx.recv().unwrap(), 0);
            go.send(()).unwrap();
            recorder.join().unwrap();
            return;
        }
        assert_eq!(rx.recv().unwrap(), 5, "SCHED_IDLE while the queue is short");
        gear.queued(400); // at the high mark, not past it
        assert!(gear.in_background());
        gear.queued(401); // a sender brings the recorder back
        assert_eq!((gear.in_background(), gear.raised()), (false, 1));
        go.send(()).unwrap();
        assert_eq!(rx.recv().unwrap(), 0, "normal priority again");
        assert_eq!(rx.recv().unwrap(), 0);
        assert_eq!(
            rx.recv().unwrap(),
            5,
            "under the low mark, back to the background"
        );
        recorder.join().unwrap();
        assert!(gear.in_background());
    }

    /// A recorder kept off the CPU for [`STARVED`] is brought back by the next sender even with
    /// a short queue, and stays at normal priority until it flushed.
    #[test]
    fn a_starved_recorder_comes_back_until_it_flushed() {
        let Some(gear) = enabled_gear() else {
            return; // no right to raise a priority here: never in the background
        };
        let (rx, go, recorder) = spawn_recorder(&gear, |gear, send, wait| {
            gear.start_here();
            send(policy());
            wait();
            gear.written(0); // held: not back to the background before a flush
            send(policy());
            gear.flushed();
            gear.written(0);
            send(policy());
        });
        assert_eq!(rx.recv().unwrap(), 5, "SCHED_IDLE at start");
        gear.queued(10);
        assert!(gear.in_background(), "a recorder that keeps up stays there");
        std::thread::sleep(STARVED + Duration::from_millis(100));
        gear.queued(10);
        assert_eq!((gear.in_background(), gear.raised()), (false, 1));
        go.send(()).unwrap();
        assert_eq!(
            rx.recv().unwrap(),
            0,
            "held at normal priority until a flush"
        );
        assert_eq!(rx.recv().unwrap(), 5, "flushed: back to the background");
        recorder.join().unwrap();
    }
}
