//! Counters shared by the connection tasks, the recorder and the status line.

use std::sync::atomic::{AtomicU64, Ordering};

#[derive(Debug, Default)]
pub struct Stats {
    pub connections_open: AtomicU64,
    pub connections_total: AtomicU64,
    pub messages: AtomicU64,
    pub wire_bytes: AtomicU64,
    pub recorded_messages: AtomicU64,
    pub dropped_messages: AtomicU64,
    pub dropped_bytes: AtomicU64,
    /// Uncompressed bytes handed to the capture writer.
    pub capture_bytes: AtomicU64,
    /// Compressed bytes written to the capture file.
    pub file_bytes: AtomicU64,
    /// Capture segments started (1 without rotation).
    pub segments: AtomicU64,
    /// Messages recorded with something redacted.
    pub redacted_messages: AtomicU64,
    /// Messages left out because they could not be decoded to redact them.
    pub unredactable_messages: AtomicU64,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Snapshot {
    pub connections_open: u64,
    pub connections_total: u64,
    pub messages: u64,
    pub wire_bytes: u64,
    pub recorded_messages: u64,
    pub dropped_messages: u64,
    pub dropped_bytes: u64,
    pub capture_bytes: u64,
    pub file_bytes: u64,
}

impl Stats {
    pub fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    pub fn snapshot(&self) -> Snapshot {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        Snapshot {
            connections_open: get(&self.connections_open),
            connections_total: get(&self.connections_total),
            messages: get(&self.messages),
            wire_bytes: get(&self.wire_bytes),
            recorded_messages: get(&self.recorded_messages),
            dropped_messages: get(&self.dropped_messages),
            dropped_bytes: get(&self.dropped_bytes),
            capture_bytes: get(&self.capture_bytes),
            file_bytes: get(&self.file_bytes),
        }
    }
}

impl Snapshot {
    /// Wire bytes per compressed byte written (0 before anything is written).
    pub fn compression_ratio(&self) -> f64 {
        if self.file_bytes == 0 {
            0.0
        } else {
            self.wire_bytes as f64 / self.file_bytes as f64
        }
    }

    pub fn status_line(&self) -> String {
        let mut line = format!(
            "conns {} open / {} total | msgs {} | wire {} | written {} ({:.1}x)",
            self.connections_open,
            self.connections_total,
            self.messages,
            human_bytes(self.wire_bytes),
            human_bytes(self.file_bytes),
            self.compression_ratio(),
        );
        if self.dropped_messages > 0 {
            line.push_str(&format!(" | DROPPED {} msgs", self.dropped_messages));
        }
        line
    }
}

pub fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit < UNITS.len() - 1 {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", UNITS[unit])
    }
}
