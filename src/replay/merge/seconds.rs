//! The shards' timelines added up by wall-clock second, as the merged report lists them and the
//! knee reads them.

use crate::replay::measure::hdr;
use crate::replay::measure::knee::{Bucket, CommandBucket};
use crate::replay::measure::metrics::{coarse_histogram, SecondReport};
use crate::replay::measure::timeline::CommandSecondReport;
use hdrhistogram::Histogram;
use std::borrow::Cow;
use std::collections::BTreeMap;

/// One Unix second of every shard.
pub(crate) struct Second {
    pub ops: u64,
    pub errors: u64,
    pub max_lag_us: f64,
    pub latency: Histogram<u64>,
    pub replies: u64,
    pub busy_us: f64,
    /// Per command: replies, busy µs, latency.
    pub per_command: BTreeMap<String, (u64, f64, Histogram<u64>)>,
}

impl Second {
    pub fn new() -> Second {
        Second {
            ops: 0,
            errors: 0,
            max_lag_us: 0.0,
            latency: coarse_histogram(),
            replies: 0,
            busy_us: 0.0,
            per_command: BTreeMap::new(),
        }
    }

    /// The second (Unix second `unix_s`) as the knee reads it.
    pub fn bucket(&self, unix_s: u64) -> Bucket<'_> {
        Bucket {
            unix_s,
            ops: self.ops,
            latency: Cow::Borrowed(&self.latency),
            busy_ns: (self.busy_us * 1e3) as u64,
            max_lag_ns: (self.max_lag_us * 1e3) as u64,
            commands: self
                .per_command
                .iter()
                .map(|(cmd, (replies, busy_us, h))| CommandBucket {
                    command: Cow::Borrowed(cmd),
                    replies: *replies,
                    busy_ns: (busy_us * 1e3) as u64,
                    latency: Cow::Borrowed(h),
                })
                .collect(),
        }
    }
}

/// The seconds added up, as the merged report's `timeline` lists them: numbered from the first.
pub(crate) fn timeline(seconds: &BTreeMap<u64, Second>) -> Vec<SecondReport> {
    let first = seconds.keys().next().copied().unwrap_or_default();
    let us = |ns: u64| ns as f64 / 1000.0;
    seconds
        .iter()
        .map(|(&unix_s, s)| SecondReport {
            second: (unix_s - first) as usize,
            unix_s,
            ops: s.ops,
            errors: s.errors,
            p50_us: us(s.latency.value_at_quantile(0.5)),
            p99_us: us(s.latency.value_at_quantile(0.99)),
            max_us: us(s.latency.max()),
            max_lag_us: s.max_lag_us,
            hdr: hdr::encode(&s.latency),
            replies: s.replies,
            busy_us: s.busy_us,
            per_command: s
                .per_command
                .iter()
                .map(|(cmd, (replies, busy_us, h))| {
                    let c = CommandSecondReport {
                        replies: *replies,
                        busy_us: *busy_us,
                        p99_us: us(h.value_at_quantile(0.99)),
                        hdr: hdr::encode(h),
                    };
                    (cmd.clone(), c)
                })
                .collect(),
        })
        .collect()
}
