//! `--metrics`: the running replay's Prometheus exposition. The per-operation figures come from
//! [`LiveMetrics`] (fed with every sample the report gets); the run's own counters (requests sent,
//! connections, skips), its progress and its clock are read from what the lanes share. A scrape
//! only reads atomics; the replay never waits for it.

use super::measure::live::LiveMetrics;
use super::route::counter;
use super::route::run::Run;
use super::route::target::TargetState;
use crate::metrics::expose::{self, label};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::DescriptorEncoder;
use prometheus_client::registry::Registry;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// How far the replay is: by capture bytes read over every pass, or by time under `--duration`
/// alone (the capture repeats until then).
#[derive(Debug, Clone, Copy)]
pub enum Progress {
    Bytes { total: u64 },
    Time { duration: Duration },
}

struct ReplayCollector {
    run: Arc<Run>,
    target: Arc<TargetState>,
    live: Arc<LiveMetrics>,
    read_bytes: Arc<AtomicU64>,
    progress: Progress,
}

impl std::fmt::Debug for ReplayCollector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReplayCollector").finish_non_exhaustive()
    }
}

/// The registry `replay --metrics` serves: prefix `mongotape_`.
pub fn registry(
    run: Arc<Run>,
    target: Arc<TargetState>,
    live: Arc<LiveMetrics>,
    read_bytes: Arc<AtomicU64>,
    progress: Progress,
) -> Registry {
    let mut registry = Registry::with_prefix("mongotape");
    registry.register_collector(Box::new(ReplayCollector {
        run,
        target,
        live,
        read_bytes,
        progress,
    }));
    registry
}

impl Collector for ReplayCollector {
    fn encode(&self, mut enc: DescriptorEncoder) -> std::fmt::Result {
        let e = &mut enc;
        let c = &self.target.counters;
        let elapsed = self.run.start.elapsed();
        let read = self.read_bytes.load(Ordering::Relaxed);
        let routed = counter::get(&self.run.counters.routed.0);
        self.live.encode(e)?;
        expose::counter(
            e,
            "replay_requests_sent",
            "Requests sent to the target.",
            counter::get(&c.sent),
        )?;
        expose::counter(
            e,
            "replay_requests_routed",
            "Requests handed to replay connections so far (all of them once the capture is read).",
            routed,
        )?;
        expose::counter(
            e,
            "replay_connections_opened",
            "Connections opened to the target.",
            counter::get(&c.connections_opened),
        )?;
        expose::counters(
            e,
            "replay_skipped",
            "Requests not sent, by reason.",
            [
                (
                    label("reason", "cursor_not_found"),
                    counter::get(&c.cursor_not_found),
                ),
                (label("reason", "after_deadline"), self.after_deadline()),
            ],
        )?;
        expose::counter(
            e,
            "replay_capture_read_bytes",
            "Capture bytes read so far (compressed, every pass).",
            read,
        )?;
        self.progress(e, read, routed, elapsed)?;
        expose::gauge(
            e,
            "replay_aborted",
            "1 once the replay has failed or been interrupted.",
            if self.run.abort.is_set() { 1.0 } else { 0.0 },
        )
    }
}

impl ReplayCollector {
    /// Requests due after `--duration`: those the feed kept back and those the lanes did.
    fn after_deadline(&self) -> u64 {
        counter::get(&self.run.counters.after_deadline)
            + counter::get(&self.target.counters.after_deadline)
    }

    /// How far the replay is: the bytes it reads in all, the fraction done, the time it has run.
    fn progress(
        &self,
        e: &mut DescriptorEncoder,
        read: u64,
        routed: u64,
        elapsed: std::time::Duration,
    ) -> std::fmt::Result {
        let c = &self.target.counters;
        let done = self.live.ops() + counter::get(&c.cursor_not_found) + self.after_deadline();
        // The reader runs ahead of the lanes: what is read counts as done once its requests are.
        let fraction = match self.progress {
            Progress::Bytes { total } if total > 0 && routed > 0 => {
                (read as f64 / total as f64).min(1.0) * (done as f64 / routed as f64).min(1.0)
            }
            Progress::Bytes { .. } => 0.0,
            Progress::Time { duration } => elapsed.as_secs_f64() / duration.as_secs_f64().max(1e-9),
        };
        if let Progress::Bytes { total } = self.progress {
            expose::gauge(
                e,
                "replay_capture_expected_bytes",
                "Capture bytes the whole replay reads (file size times passes).",
                total as f64,
            )?;
        }
        expose::gauge(
            e,
            "replay_progress_ratio",
            "Fraction of the replay done: capture bytes read times the share of read requests done, or time under --duration.",
            fraction.clamp(0.0, 1.0),
        )?;
        expose::gauge(
            e,
            "replay_elapsed_seconds",
            "Time since the replay started.",
            elapsed.as_secs_f64(),
        )?;
        Ok(())
    }
}
