//! A latency histogram of atomics with fixed buckets (seconds, as Prometheus wants them): one
//! bucket, the count and the sum are bumped per observation, with no lock and no allocation.

use std::sync::atomic::{AtomicU64, Ordering};

/// Upper bounds in nanoseconds: 50 µs to 30 s, then +Inf.
pub const BOUNDS_NS: [u64; 18] = [
    50_000,
    100_000,
    250_000,
    500_000,
    1_000_000,
    2_500_000,
    5_000_000,
    10_000_000,
    25_000_000,
    50_000_000,
    100_000_000,
    250_000_000,
    500_000_000,
    1_000_000_000,
    2_500_000_000,
    5_000_000_000,
    10_000_000_000,
    30_000_000_000,
];

#[derive(Debug)]
pub struct LatencyHistogram {
    /// Per bucket (not cumulative); the last one is +Inf.
    buckets: [AtomicU64; BOUNDS_NS.len() + 1],
    count: AtomicU64,
    sum_ns: AtomicU64,
}

impl Default for LatencyHistogram {
    fn default() -> Self {
        LatencyHistogram {
            buckets: std::array::from_fn(|_| AtomicU64::new(0)),
            count: AtomicU64::new(0),
            sum_ns: AtomicU64::new(0),
        }
    }
}

/// What a scrape reads of a histogram.
#[derive(Debug, Clone, PartialEq)]
pub struct HistogramSnapshot {
    pub sum_s: f64,
    pub count: u64,
    /// `(le, count)` per bucket in seconds, not cumulative (the encoder adds them up, as
    /// `prometheus-client` wants them); the last is `+Inf`.
    pub buckets: Vec<(f64, u64)>,
}

impl LatencyHistogram {
    pub fn observe_ns(&self, ns: u64) {
        let at = BOUNDS_NS.partition_point(|&b| b < ns);
        self.buckets[at].fetch_add(1, Ordering::Relaxed);
        self.sum_ns.fetch_add(ns, Ordering::Relaxed);
        self.count.fetch_add(1, Ordering::Relaxed);
    }

    pub fn count(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }

    pub fn snapshot(&self) -> HistogramSnapshot {
        let mut total = 0;
        let mut buckets = Vec::with_capacity(BOUNDS_NS.len() + 1);
        for (i, bucket) in self.buckets.iter().enumerate() {
            let n = bucket.load(Ordering::Relaxed);
            total += n;
            let le = BOUNDS_NS
                .get(i)
                .map_or(f64::INFINITY, |&ns| ns as f64 / 1e9);
            buckets.push((le, n));
        }
        HistogramSnapshot {
            sum_s: self.sum_ns.load(Ordering::Relaxed) as f64 / 1e9,
            // The buckets are the count a scrape shows: bumped first, they never lag behind it.
            count: total,
            buckets,
        }
    }
}

impl HistogramSnapshot {
    /// An HDR histogram of nanoseconds in these buckets (each recorded value in the bucket of its
    /// range's top), the sum from its mean: for figures kept as HDR (the shadow's per shape).
    pub fn of_hdr(h: &hdrhistogram::Histogram<u64>) -> HistogramSnapshot {
        let mut counts = [0u64; BOUNDS_NS.len() + 1];
        for v in h.iter_recorded() {
            let at = BOUNDS_NS.partition_point(|&b| b < v.value_iterated_to());
            counts[at] += v.count_at_value();
        }
        let buckets = counts
            .iter()
            .enumerate()
            .map(|(i, &n)| {
                let le = BOUNDS_NS
                    .get(i)
                    .map_or(f64::INFINITY, |&ns| ns as f64 / 1e9);
                (le, n)
            })
            .collect();
        HistogramSnapshot {
            sum_s: h.mean() * h.len() as f64 / 1e9,
            count: h.len(),
            buckets,
        }
    }

    /// Adds `other`'s observations (same buckets) into this one.
    pub fn add(&mut self, other: &HistogramSnapshot) {
        self.sum_s += other.sum_s;
        self.count += other.count;
        for (b, o) in self.buckets.iter_mut().zip(&other.buckets) {
            b.1 += o.1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn observations_land_in_their_buckets() {
        let h = LatencyHistogram::default();
        h.observe_ns(40_000);
        h.observe_ns(50_000);
        h.observe_ns(3_000_000);
        h.observe_ns(u64::MAX / 4);
        let s = h.snapshot();
        assert_eq!(s.count, 4);
        assert_eq!(s.buckets[0], (0.00005, 2));
        assert_eq!(s.buckets[6], (0.005, 1));
        assert_eq!(s.buckets.last().unwrap(), &(f64::INFINITY, 1));
    }

    #[test]
    fn an_hdr_histogram_lands_in_the_same_buckets() {
        let mut h =
            hdrhistogram::Histogram::<u64>::new_with_bounds(1, 3_600_000_000_000, 2).unwrap();
        for ns in [40_000, 3_000_000, 3_000_000, 60_000_000_000] {
            h.record(ns).unwrap();
        }
        let mut s = HistogramSnapshot::of_hdr(&h);
        assert_eq!(s.count, 4);
        assert_eq!(s.buckets.len(), BOUNDS_NS.len() + 1);
        assert_eq!(s.buckets[0], (0.00005, 1));
        assert_eq!(s.buckets[6], (0.005, 2));
        assert_eq!(s.buckets.last().unwrap(), &(f64::INFINITY, 1));
        assert!((s.sum_s - 60.00604).abs() < 0.1, "{}", s.sum_s);
        s.add(&s.clone());
        assert_eq!((s.count, s.buckets[6].1), (8, 4));
    }
}
