//! The abort signal: the first failure ends the replay, and every lane and the capture feed stop.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use tokio::sync::watch;

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
