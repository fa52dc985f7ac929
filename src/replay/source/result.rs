//! What the feed saw, handed to the report once the capture is read.

use crate::shape::{ShapeStats, ShapeTable};
use hdrhistogram::Histogram;
use std::collections::{BTreeMap, HashMap};
use tokio::task::JoinHandle;

/// What the reader saw, for the report.
#[derive(Debug, Default)]
pub struct SourceResult {
    /// Where and why reading stopped early (truncated or corrupt capture).
    pub capture_error: Option<String>,
    pub requests_read: u64,
    pub skipped: BTreeMap<&'static str, u64>,
    pub filtered: u64,
    /// `filtered` by the filter that left each out (`ReplayReport::filtered_by`).
    pub filtered_by: BTreeMap<&'static str, u64>,
    pub iterations: u64,
    /// Recorded time from the first to the last replayed request of one pass.
    pub recorded_span_ns: u64,
    /// Recorded latency (request to reply in the capture) per command, of the first pass: what
    /// `analyze` measures, for the requests this replay replays.
    pub recorded_latency: BTreeMap<String, Histogram<u64>>,
    /// The query shapes of the requests replayed (each lane's figures point into it by id), with
    /// their recorded figures.
    pub shapes: ShapeTable<ShapeStats>,
    /// Each recorded connection's application name, from its handshake.
    pub applications: HashMap<u64, String>,
    pub lanes: Vec<JoinHandle<()>>,
    /// CPU time of the reader's thread, over all passes.
    pub reader_cpu_s: Option<f64>,
    /// `--skip-snapshotted`: the writes the snapshot held, and how they were told (first pass).
    pub snapshot_cut: Option<crate::replay::report::SnapshotCutReport>,
}

impl SourceResult {
    /// A feed that could not start, and why.
    pub(super) fn failed(why: String) -> SourceResult {
        SourceResult {
            capture_error: Some(why),
            ..SourceResult::default()
        }
    }

    /// Keeps every reading error of the capture, in order, the first one first.
    pub(super) fn capture_damage(&mut self, what: String) {
        match &mut self.capture_error {
            Some(e) if e.len() < 4096 => {
                e.push_str("; ");
                e.push_str(&what);
            }
            Some(_) => {}
            None => self.capture_error = Some(what),
        }
    }
}

/// CPU time of the calling thread, in seconds.
pub(super) fn thread_cpu_s() -> f64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    t.tv_sec as f64 + t.tv_nsec as f64 * 1e-9
}
