//! Timestamps for records: wall-clock time at the start, advanced by a monotonic clock, so they never
//! go backwards within a capture.

use std::time::{Instant, SystemTime, UNIX_EPOCH};

#[derive(Debug, Clone, Copy)]
pub struct Clock {
    start_unix_ns: u64,
    start: Instant,
}

impl Clock {
    pub fn start() -> Clock {
        let start_unix_ns = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        Clock {
            start_unix_ns,
            start: Instant::now(),
        }
    }

    pub fn start_unix_ns(&self) -> u64 {
        self.start_unix_ns
    }

    pub fn now_ns(&self) -> u64 {
        self.start_unix_ns + self.start.elapsed().as_nanos() as u64
    }
}
