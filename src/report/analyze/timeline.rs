//! Throughput and latency over time in buckets that coarsen as the capture grows: 100 µs buckets to
//! begin with, ten times wider whenever there would be more than [`MAX_BUCKETS`]; the points joins
//! them by the rule every timeline follows ([`crate::figures::buckets`]), so a 0.03 s capture and a
//! day-long one both draw a few dozen to a few hundred points.

use super::TimelinePoint;
use crate::figures::buckets::join_factor;

pub const MAX_BUCKETS: usize = 1000;
const FIRST_BUCKET_NS: u64 = 100_000;

#[derive(Debug, Default, Clone, Copy)]
pub struct Bucket {
    pub ops: u64,
    pub replies: u64,
    pub sum_ns: u64,
    pub max_ns: u64,
}

impl Bucket {
    fn merge(&mut self, o: &Bucket) {
        self.ops += o.ops;
        self.replies += o.replies;
        self.sum_ns = self.sum_ns.saturating_add(o.sum_ns);
        self.max_ns = self.max_ns.max(o.max_ns);
    }
}

#[derive(Debug, Clone)]
pub struct Timeline {
    bucket_ns: u64,
    buckets: Vec<Bucket>,
}

impl Default for Timeline {
    fn default() -> Self {
        Timeline {
            bucket_ns: FIRST_BUCKET_NS,
            buckets: Vec::new(),
        }
    }
}

impl Timeline {
    /// How wide the points are.
    pub fn bucket_s(&self) -> f64 {
        (self.bucket_ns * self.factor()) as f64 / 1e9
    }

    /// Buckets joined into one point.
    fn factor(&self) -> u64 {
        let ops = self.buckets.iter().map(|b| b.ops).sum();
        join_factor(self.buckets.len() as u64, ops)
    }

    /// The bucket holding `offset_ns` (from the capture's first record).
    pub fn at(&mut self, offset_ns: u64) -> &mut Bucket {
        while offset_ns / self.bucket_ns >= MAX_BUCKETS as u64 {
            self.coarsen();
        }
        let i = (offset_ns / self.bucket_ns) as usize;
        if self.buckets.len() <= i {
            self.buckets.resize(i + 1, Bucket::default());
        }
        &mut self.buckets[i]
    }

    fn coarsen(&mut self) {
        self.bucket_ns = self.bucket_ns.saturating_mul(10);
        let mut merged: Vec<Bucket> = Vec::with_capacity(self.buckets.len() / 10 + 1);
        for chunk in self.buckets.chunks(10) {
            let mut b = Bucket::default();
            for c in chunk {
                b.merge(c);
            }
            merged.push(b);
        }
        self.buckets = merged;
    }

    pub fn points(&self) -> Vec<TimelinePoint> {
        let width = self.bucket_s();
        let joined: Vec<Bucket> = self
            .buckets
            .chunks(self.factor() as usize)
            .map(|chunk| {
                let mut b = Bucket::default();
                chunk.iter().for_each(|c| b.merge(c));
                b
            })
            .collect();
        joined
            .iter()
            .enumerate()
            .map(|(i, b)| TimelinePoint {
                t_s: i as f64 * width,
                ops: b.ops,
                ops_per_s: b.ops as f64 / width,
                replies: b.replies,
                mean_us: if b.replies > 0 {
                    b.sum_ns as f64 / b.replies as f64 / 1e3
                } else {
                    0.0
                },
                max_us: b.max_ns as f64 / 1e3,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coarsens_and_keeps_every_count() {
        let mut t = Timeline::default();
        t.at(5_000_000).ops += 1;
        t.at(25_000_000).ops += 1;
        // 5 ms and 25 ms: 251 buckets of 100 µs, two operations: 26 points of 1 ms.
        assert_eq!(t.points().len(), 26);
        assert_eq!(t.bucket_s(), 0.001);
        t.at(3_600_000_000_000).ops += 1; // one hour in: 10 s buckets
        t.at(u64::MAX).ops += 1;
        assert!(t.points().len() <= MAX_BUCKETS);
        assert_eq!(t.points().iter().map(|p| p.ops).sum::<u64>(), 4);
    }
}
