//! The knee of an open-loop run (`--rate`, above all `--rate A..B --ramp T`): the intended rate at
//! which the server stops keeping up.
//!
//! Definition, over the wall-clock second buckets of the timeline that lie wholly inside the run's
//! schedule: the baseline is the p99 latency of the buckets that start in the first 10% of the
//! schedule (at least the first whole bucket). The knee is the first later bucket where p99 exceeds
//! twice the baseline, or where the operations completed fall below 90% of those due. Its rate is
//! the intended rate at the middle of that bucket; the last rate that held is the one at the middle
//! of the bucket before.

use crate::replay::pacing::Pacing;
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

pub const DEFINITION: &str = "first whole second after the first 10% of the schedule where p99 latency exceeds 2x the p99 of the first 10% (ramps only), or where completed operations fall below 90% of those due";

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct KneeReport {
    pub definition: String,
    pub baseline_p99_us: f64,
    /// The intended rate (ops/s, all shards) where the knee is; `None`: the run held throughout.
    pub rate_ops_per_s: Option<f64>,
    /// Seconds from the start of the schedule to the knee's bucket.
    pub at_s: Option<f64>,
    /// `p99` or `throughput`.
    pub reason: Option<String>,
    pub p99_us: Option<f64>,
    pub achieved_ops_per_s: Option<f64>,
    /// The intended rate of the last bucket that held.
    pub last_held_ops_per_s: Option<f64>,
}

/// One wall-clock second of the timeline.
pub struct Bucket<'a> {
    pub unix_s: u64,
    pub ops: u64,
    pub latency: std::borrow::Cow<'a, Histogram<u64>>,
}

/// The knee of a schedule that started at `started_at_unix_s` and ran `duration_s`.
pub fn find(
    pacing: &Pacing,
    started_at_unix_s: f64,
    duration_s: f64,
    buckets: &[Bucket<'_>],
) -> Option<KneeReport> {
    pacing.rate_at(0.0)?;
    // Whole buckets inside the schedule, as (offset of their start from the schedule's start).
    let inside: Vec<(f64, &Bucket<'_>)> = buckets
        .iter()
        .map(|b| (b.unix_s as f64 - started_at_unix_s, b))
        .filter(|(t, _)| *t >= 0.0 && *t + 1.0 <= duration_s)
        .collect();
    let first = inside.first()?;
    let cut = (duration_s * 0.1).max(first.0 + 1e-9);
    let mut baseline: Option<Histogram<u64>> = None;
    for (_, b) in inside.iter().filter(|(t, _)| *t < cut) {
        match &mut baseline {
            Some(h) => {
                let _ = h.add(&*b.latency);
            }
            None => baseline = Some(b.latency.clone().into_owned()),
        }
    }
    let baseline_p99 = baseline.map_or(0, |h| h.value_at_quantile(0.99));
    let mut report = KneeReport {
        definition: DEFINITION.into(),
        baseline_p99_us: baseline_p99 as f64 / 1000.0,
        ..KneeReport::default()
    };
    let mut last_held = None;
    for (t, b) in inside.iter().filter(|(t, _)| *t >= cut) {
        let due = pacing.sent_by(t + 1.0) - pacing.sent_by(*t);
        let p99 = b.latency.value_at_quantile(0.99);
        // At a constant rate a later second's p99 is the capture's mix changing (inserts, then
        // finds), not the rate: only falling behind the schedule counts.
        let ramp = matches!(pacing, Pacing::Ramp { .. });
        let reason = if ramp && !b.latency.is_empty() && p99 > 2 * baseline_p99 {
            Some("p99")
        } else if due >= 10.0 && (b.ops as f64) < 0.9 * due {
            Some("throughput")
        } else {
            None
        };
        if let Some(reason) = reason {
            report.rate_ops_per_s = pacing.rate_at(t + 0.5);
            report.at_s = Some(*t);
            report.reason = Some(reason.into());
            report.p99_us = Some(p99 as f64 / 1000.0);
            report.achieved_ops_per_s = Some(b.ops as f64);
            break;
        }
        last_held = pacing.rate_at(t + 0.5);
    }
    report.last_held_ops_per_s = last_held;
    Some(report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::figures::summary::new_ns_histogram;

    fn hist(latency_ns: u64, n: u64) -> Histogram<u64> {
        let mut h = new_ns_histogram();
        h.record_n(latency_ns, n).unwrap();
        h
    }

    #[test]
    fn the_knee_is_where_p99_doubles() {
        let pacing = Pacing::Ramp {
            from: 100.0,
            to: 1000.0,
            over_s: 10.0,
            steps: 0,
        };
        // Every second completes what was due in it.
        let due = |i: u64| (pacing.sent_by(i as f64 + 1.0) - pacing.sent_by(i as f64)) as u64;
        let hs: Vec<Histogram<u64>> = (0..10)
            .map(|i| hist(if i < 6 { 1_000_000 } else { 5_000_000 }, due(i)))
            .collect();
        let buckets: Vec<Bucket<'_>> = hs
            .iter()
            .enumerate()
            .map(|(i, h)| Bucket {
                unix_s: 1_000 + i as u64,
                ops: h.len(),
                latency: std::borrow::Cow::Borrowed(h),
            })
            .collect();
        let k = find(&pacing, 1_000.0, 10.0, &buckets).unwrap();
        assert_eq!(k.at_s, Some(6.0));
        assert_eq!(k.reason.as_deref(), Some("p99"));
        assert!((k.rate_ops_per_s.unwrap() - 685.0).abs() < 1e-6);
        assert!((k.last_held_ops_per_s.unwrap() - 595.0).abs() < 1e-6);
    }

    #[test]
    fn a_run_that_holds_has_no_knee() {
        let pacing = Pacing::Rate { ops_per_s: 100.0 };
        let hs: Vec<Histogram<u64>> = (0..5).map(|_| hist(1_000_000, 100)).collect();
        let buckets: Vec<Bucket<'_>> = hs
            .iter()
            .enumerate()
            .map(|(i, h)| Bucket {
                unix_s: 50 + i as u64,
                ops: 100,
                latency: std::borrow::Cow::Borrowed(h),
            })
            .collect();
        let k = find(&pacing, 49.5, 6.0, &buckets).unwrap();
        assert_eq!(k.rate_ops_per_s, None);
        assert_eq!(k.last_held_ops_per_s, Some(100.0));
        assert!(find(&Pacing::Fast, 49.5, 6.0, &buckets).is_none());
    }

    /// A constant rate whose capture moves from fast inserts to slower finds: p99 goes up 5x, the
    /// rate never changed, every second completed what was due: no knee.
    #[test]
    fn a_constant_rate_has_no_knee_when_the_mix_changes() {
        let pacing = Pacing::Rate { ops_per_s: 500.0 };
        let hs: Vec<Histogram<u64>> = (0..8)
            .map(|i| hist(if i < 4 { 100_000 } else { 500_000 }, 500))
            .collect();
        let buckets: Vec<Bucket<'_>> = hs
            .iter()
            .enumerate()
            .map(|(i, h)| Bucket {
                unix_s: 10 + i as u64,
                ops: 500,
                latency: std::borrow::Cow::Borrowed(h),
            })
            .collect();
        let k = find(&pacing, 10.0, 8.0, &buckets).unwrap();
        assert_eq!(k.rate_ops_per_s, None, "{k:?}");
        // Falling behind still counts.
        let slow: Vec<Bucket<'_>> = hs
            .iter()
            .enumerate()
            .map(|(i, h)| Bucket {
                unix_s: 10 + i as u64,
                ops: if i < 5 { 500 } else { 300 },
                latency: std::borrow::Cow::Borrowed(h),
            })
            .collect();
        let k = find(&pacing, 10.0, 8.0, &slow).unwrap();
        assert_eq!(k.reason.as_deref(), Some("throughput"));
        assert_eq!(k.at_s, Some(5.0));
    }
}
