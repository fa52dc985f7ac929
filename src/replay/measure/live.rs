//! `replay --metrics`: the per-operation figures a scrape shows while the replay runs, beside the
//! report's own [`super::metrics::Metrics`] (which keeps everything until the end). Atomics in
//! tables allocated once, commands from a bounded list ([`crate::metrics::labels`]).

use super::sample::Sample;
use crate::metrics::expose::{self, label};
use crate::metrics::labels::{command_index, command_label, ErrorCodes, COMMAND_SLOTS};
use crate::metrics::LatencyHistogram;
use prometheus_client::encoding::DescriptorEncoder;
use std::sync::atomic::{AtomicU64, Ordering};

#[derive(Debug)]
pub struct LiveMetrics {
    ops: [AtomicU64; COMMAND_SLOTS],
    errors: [AtomicU64; COMMAND_SLOTS],
    latency: [LatencyHistogram; COMMAND_SLOTS],
    lag: LatencyHistogram,
    error_codes: ErrorCodes,
}

impl Default for LiveMetrics {
    fn default() -> Self {
        LiveMetrics {
            ops: std::array::from_fn(|_| AtomicU64::new(0)),
            errors: std::array::from_fn(|_| AtomicU64::new(0)),
            latency: std::array::from_fn(|_| LatencyHistogram::default()),
            lag: LatencyHistogram::default(),
            error_codes: ErrorCodes::default(),
        }
    }
}

impl LiveMetrics {
    /// One finished operation (the same sample the report gets).
    pub fn record(&self, s: &Sample<'_>) {
        let i = command_index(s.command.as_bytes());
        self.ops[i].fetch_add(1, Ordering::Relaxed);
        if s.error {
            self.errors[i].fetch_add(1, Ordering::Relaxed);
            self.error_codes.add(s.code);
        }
        if let Some(ns) = s.latency_ns {
            self.latency[i].observe_ns(ns);
        }
        self.lag.observe_ns(s.lag_ns);
    }

    pub fn ops(&self) -> u64 {
        self.ops.iter().map(|c| c.load(Ordering::Relaxed)).sum()
    }

    /// Writes the per-operation families (the endpoint adds the run's counters around them).
    pub fn encode(&self, e: &mut DescriptorEncoder) -> std::fmt::Result {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        expose::counters(
            e,
            "replay_ops",
            "Operations done (answered, or sent when no reply comes), by command (`other` outside a known list).",
            // A command's series appears when it is first seen, not ~60 zeros up front.
            (0..COMMAND_SLOTS)
                .filter(|&i| get(&self.ops[i]) > 0)
                .map(|i| (label("command", command_label(i)), get(&self.ops[i]))),
        )?;
        expose::counters(
            e,
            "replay_errors",
            "Operations whose reply was an error (ok: 0 or write errors), by command.",
            // Beside its ops from the first: a rate of errors reads 0, not absent.
            (0..COMMAND_SLOTS)
                .filter(|&i| get(&self.ops[i]) > 0 || get(&self.errors[i]) > 0)
                .map(|i| (label("command", command_label(i)), get(&self.errors[i]))),
        )?;
        expose::counters(
            e,
            "replay_error_replies",
            "Error replies by server error code (`none`: no code given).",
            self.error_codes
                .counts()
                .into_iter()
                .map(|(code, n)| (label("code", code), n)),
        )?;
        expose::histograms(
            e,
            "replay_request_duration_seconds",
            "Latency per command: send to reply (closed loop), or intended send time to reply (--rate).",
            (0..COMMAND_SLOTS)
                .filter(|&i| self.latency[i].count() > 0)
                .map(|i| (label("command", command_label(i)), self.latency[i].snapshot())),
        )?;
        expose::histograms(
            e,
            "replay_schedule_lag_seconds",
            "How late each operation was sent after its intended time.",
            [(label("pacing", "all"), self.lag.snapshot())],
        )
    }
}
