//! Counters shared by the connection tasks, the recorder and the status line.

use crate::figures::units;
use std::sync::atomic::{AtomicU64, Ordering};

#[derive(Debug, Default)]
pub struct Stats {
    pub connections_open: AtomicU64,
    pub connections_total: AtomicU64,
    pub messages: AtomicU64,
    pub wire_bytes: AtomicU64,
    /// Requests (client to server) and their bytes; replies are the rest of `messages`.
    pub requests: AtomicU64,
    pub request_bytes: AtomicU64,
    pub replies: AtomicU64,
    pub reply_bytes: AtomicU64,
    pub recorded_messages: AtomicU64,
    /// Records of any kind written to the capture.
    pub records_written: AtomicU64,
    /// Gap records written (each marks messages lost to a full queue).
    pub gap_records: AtomicU64,
    pub dropped_messages: AtomicU64,
    pub dropped_bytes: AtomicU64,
    /// Uncompressed bytes handed to the capture writer.
    pub capture_bytes: AtomicU64,
    /// Compressed bytes written to the capture file.
    pub file_bytes: AtomicU64,
    /// Hello replies whose member addresses were rewritten to the proxy's listeners.
    pub hello_rewrites: AtomicU64,
    /// Hello replies naming an address the proxy does not serve (a client could bypass it).
    pub unserved_addresses: AtomicU64,
    /// Client connections refused during TLS (a plain client, a bad certificate).
    pub client_tls_failures: AtomicU64,
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
    pub requests: u64,
    pub recorded_messages: u64,
    pub dropped_messages: u64,
    pub dropped_bytes: u64,
    pub capture_bytes: u64,
    pub file_bytes: u64,
    pub hello_rewrites: u64,
    pub unserved_addresses: u64,
    pub client_tls_failures: u64,
    pub unredactable_messages: u64,
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
            requests: get(&self.requests),
            recorded_messages: get(&self.recorded_messages),
            dropped_messages: get(&self.dropped_messages),
            dropped_bytes: get(&self.dropped_bytes),
            capture_bytes: get(&self.capture_bytes),
            file_bytes: get(&self.file_bytes),
            hello_rewrites: get(&self.hello_rewrites),
            unserved_addresses: get(&self.unserved_addresses),
            client_tls_failures: get(&self.client_tls_failures),
            unredactable_messages: get(&self.unredactable_messages),
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

    /// Totals only (the last line, when the proxy stops).
    pub fn status_line(&self) -> String {
        self.line(None)
    }

    /// Totals, with the rates since `prev` taken `secs` earlier: requests per second and wire
    /// bytes per second.
    pub fn status_line_since(&self, prev: &Snapshot, secs: f64) -> String {
        let secs = secs.max(1e-3);
        let ops = self.requests.saturating_sub(prev.requests) as f64 / secs;
        let bytes = self.wire_bytes.saturating_sub(prev.wire_bytes) as f64 / secs;
        self.line(Some((ops, bytes)))
    }

    fn line(&self, rates: Option<(f64, f64)>) -> String {
        let rates = rates.map_or(String::new(), |(ops, bytes)| {
            format!(
                " | {} | {}/s",
                units::value(ops, "ops/s"),
                units::bytes(bytes as u64)
            )
        });
        let mut line = format!(
            "conns {} open / {} total | msgs {}{rates} | wire {} | written {} ({})",
            self.connections_open,
            self.connections_total,
            self.messages,
            units::bytes(self.wire_bytes),
            units::bytes(self.file_bytes),
            units::ratio(self.compression_ratio()),
        );
        if self.dropped_messages > 0 {
            line.push_str(&format!(" | DROPPED {} msgs", self.dropped_messages));
        }
        if self.unredactable_messages > 0 {
            line.push_str(&format!(
                " | {} unredactable msgs not recorded",
                self.unredactable_messages
            ));
        }
        if self.unserved_addresses > 0 {
            line.push_str(&format!(
                " | UNSERVED ADDRESSES in {} hello replies",
                self.unserved_addresses
            ));
        }
        if self.client_tls_failures > 0 {
            line.push_str(&format!(
                " | {} client TLS failures",
                self.client_tls_failures
            ));
        }
        line
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_status_line_shows_rates_over_the_interval() {
        let prev = Snapshot {
            requests: 1_000,
            wire_bytes: 1 << 20,
            messages: 2_000,
            ..Snapshot::default()
        };
        let now = Snapshot {
            requests: 6_000,
            wire_bytes: 11 << 20,
            messages: 12_000,
            ..prev
        };
        let line = now.status_line_since(&prev, 2.0);
        assert!(
            line.contains("msgs 12000 | 2500 ops/s | 5.0 MiB/s | wire 11.0 MiB"),
            "{line}"
        );
        assert!(!now.status_line().contains("ops/s"));
    }
}
