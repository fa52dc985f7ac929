//! `record --interface --metrics`: the proxy's series ([`crate::proxy::metrics`]), fed from the
//! sniffed messages, with request to reply latency from the packets' own times.

use super::output::Meter;
use crate::proxy::metrics::{self, PendingReplies, ProxyMetrics};
use crate::proxy::stats::Stats;
use prometheus_client::registry::Registry;
use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// The figures of a live recording and each open connection's requests awaiting replies.
#[derive(Debug, Default)]
pub struct LiveMeter {
    stats: Arc<Stats>,
    metrics: Arc<ProxyMetrics>,
    conns: HashMap<u64, PendingReplies>,
}

impl LiveMeter {
    /// The registry the metrics endpoint serves: the same figures, read at scrape time.
    pub fn registry(&self) -> Registry {
        metrics::registry(self.stats.clone(), self.metrics.clone(), None, None)
    }
}

impl Meter for LiveMeter {
    fn opened(&mut self, conn: u64) {
        Stats::add(&self.stats.connections_open, 1);
        Stats::add(&self.stats.connections_total, 1);
        self.conns.insert(conn, PendingReplies::default());
    }

    fn closed(&mut self, conn: u64) {
        if self.conns.remove(&conn).is_some() {
            self.stats.connections_open.fetch_sub(1, Ordering::Relaxed);
        }
    }

    fn message(&mut self, conn: u64, request: bool, frame: &[u8], ts_ns: u64) {
        Stats::add(&self.stats.messages, 1);
        Stats::add(&self.stats.wire_bytes, frame.len() as u64);
        if let Some(pending) = self.conns.get(&conn) {
            let (stats, metrics) = (&*self.stats, Some(&*self.metrics));
            if request {
                pending.request(stats, metrics, frame, ts_ns);
            } else {
                pending.reply(stats, metrics, frame, ts_ns);
            }
        }
    }

    fn recorded(&mut self, redacted: bool) {
        Stats::add(&self.stats.recorded_messages, 1);
        if redacted {
            Stats::add(&self.stats.redacted_messages, 1);
        }
    }

    fn gap(&mut self, messages: u64, bytes: u64, unredactable: bool) {
        Stats::add(&self.stats.gap_records, 1);
        if unredactable {
            Stats::add(&self.stats.unredactable_messages, messages);
        } else {
            Stats::add(&self.stats.dropped_messages, messages);
            Stats::add(&self.stats.dropped_bytes, bytes);
        }
    }

    fn written(&mut self, file_bytes: u64) {
        Stats::add(&self.stats.records_written, 1);
        self.stats.file_bytes.store(file_bytes, Ordering::Relaxed);
    }
}
