//! The timeline in buckets sized for the run's length: 100 µs wide at first, ten times wider each
//! time the run outgrows [`MAX_BUCKETS`], so a 0.03 s replay and a day-long one both give a few
//! hundred points. Buckets sit on multiples of their width on the wall clock (like the per-second
//! timeline), so the timelines of shards that ran together add up exactly (`merge`).

use super::hdr;
use crate::figures::buckets::join_factor;
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Buckets kept while recording; ten times fewer after each widening.
pub const MAX_BUCKETS: u64 = 1000;
const FIRST_WIDTH_NS: u64 = 100_000;

/// One significant digit (steps of ~6%) costs ~4 KiB a bucket; enough for a line's p50, p99, max.
fn bucket_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1_000, 3_600_000_000_000, 1).expect("static bounds are valid")
}

struct Bucket {
    ops: u64,
    errors: u64,
    latency: Option<Histogram<u64>>,
}

/// Records operations into buckets as they finish.
pub struct Buckets {
    start_unix_ns: u64,
    width_ns: u64,
    /// Absolute index (wall-clock ns / width) of `buckets[0]`.
    first: u64,
    buckets: Vec<Bucket>,
}

impl Buckets {
    pub fn new(start_unix_ns: u64) -> Buckets {
        Buckets {
            start_unix_ns,
            width_ns: FIRST_WIDTH_NS,
            first: start_unix_ns / FIRST_WIDTH_NS,
            buckets: Vec::new(),
        }
    }

    /// One operation that finished `since_start_ns` after the start.
    pub fn record(&mut self, since_start_ns: u64, latency_ns: Option<u64>, error: bool) {
        let at = self.start_unix_ns.saturating_add(since_start_ns);
        while at / self.width_ns - self.first >= MAX_BUCKETS {
            self.widen();
        }
        let i = (at / self.width_ns - self.first) as usize;
        while self.buckets.len() <= i {
            self.buckets.push(Bucket {
                ops: 0,
                errors: 0,
                latency: None,
            });
        }
        let b = &mut self.buckets[i];
        b.ops += 1;
        b.errors += error as u64;
        if let Some(ns) = latency_ns {
            b.latency
                .get_or_insert_with(bucket_histogram)
                .saturating_record(ns.max(1_000));
        }
    }

    fn widen(&mut self) {
        let width = self.width_ns.saturating_mul(10);
        let first = self.first * self.width_ns / width;
        let mut wide: Vec<Bucket> = Vec::new();
        for (i, b) in std::mem::take(&mut self.buckets).into_iter().enumerate() {
            let j = ((self.first + i as u64) * self.width_ns / width - first) as usize;
            while wide.len() <= j {
                wide.push(Bucket {
                    ops: 0,
                    errors: 0,
                    latency: None,
                });
            }
            let w = &mut wide[j];
            w.ops += b.ops;
            w.errors += b.errors;
            if let Some(h) = b.latency {
                match &mut w.latency {
                    Some(into) => {
                        hdr::add(into, &h);
                    }
                    None => w.latency = Some(h),
                }
            }
        }
        self.width_ns = width;
        self.first = first;
        self.buckets = wide;
    }

    pub fn report(&self) -> BucketTimeline {
        BucketTimeline {
            width_ns: self.width_ns,
            buckets: self
                .buckets
                .iter()
                .enumerate()
                .filter(|(_, b)| b.ops > 0)
                .map(|(i, b)| BucketReport {
                    index: self.first + i as u64,
                    ops: b.ops,
                    errors: b.errors,
                    hdr: b.latency.as_ref().map(hdr::encode).unwrap_or_default(),
                })
                .collect(),
        }
    }
}

/// The report's timeline in buckets: only buckets with operations are listed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default)]
pub struct BucketTimeline {
    pub width_ns: u64,
    pub buckets: Vec<BucketReport>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default)]
pub struct BucketReport {
    /// Wall-clock (Unix) nanoseconds / `width_ns`: where the bucket starts.
    pub index: u64,
    pub ops: u64,
    pub errors: u64,
    /// The bucket's latency histogram ([`hdr`]); empty when no operation had a reply.
    pub hdr: String,
}

/// One point of a timeline chart. Latencies are `None` in a bucket without replies.
#[derive(Debug, Clone, PartialEq)]
pub struct TimelinePoint {
    /// Seconds from the start of the first bucket.
    pub t_s: f64,
    pub ops: u64,
    pub errors: u64,
    /// Replies with a latency in the bucket: what its percentiles are taken over.
    pub samples: u64,
    pub p50_us: Option<f64>,
    pub p99_us: Option<f64>,
    pub max_us: Option<f64>,
}

impl BucketTimeline {
    /// Shard timelines added into one, at the widest of their widths.
    pub fn merge<'a>(all: impl IntoIterator<Item = &'a BucketTimeline>) -> Result<Self, String> {
        let all: Vec<&BucketTimeline> = all.into_iter().collect();
        let mut out = BucketTimeline::empty(all.iter().map(|t| t.width_ns).max().unwrap_or(0));
        for t in all {
            out = out.joined(t)?;
        }
        Ok(out)
    }

    /// A timeline without buckets, for [`Self::joined`] to add into.
    pub fn empty(width_ns: u64) -> BucketTimeline {
        BucketTimeline {
            width_ns,
            buckets: Vec::new(),
        }
    }

    /// `other`'s buckets added to `self`'s, at `self`'s width (which must be the wider).
    pub fn joined(self, other: &BucketTimeline) -> Result<Self, String> {
        let width_ns = self.width_ns.max(1);
        let mut sums: std::collections::BTreeMap<u64, (u64, u64, Option<Histogram<u64>>)> =
            Default::default();
        let sources = [
            (&self.buckets, self.width_ns),
            (&other.buckets, other.width_ns),
        ];
        for (buckets, w) in sources {
            for b in buckets.iter() {
                let e = sums
                    .entry(b.index.saturating_mul(w.max(1)) / width_ns)
                    .or_default();
                e.0 += b.ops;
                e.1 += b.errors;
                if !b.hdr.is_empty() {
                    let h = hdr::decode(&b.hdr)?;
                    let into = e.2.get_or_insert_with(bucket_histogram);
                    if !hdr::add(into, &h) {
                        return Err("a timeline bucket's histogram cannot be added".into());
                    }
                }
            }
        }
        Ok(BucketTimeline {
            width_ns,
            buckets: sums
                .into_iter()
                .map(|(index, (ops, errors, h))| BucketReport {
                    index,
                    ops,
                    errors,
                    hdr: h.as_ref().map(hdr::encode).unwrap_or_default(),
                })
                .collect(),
        })
    }

    /// The width a chart draws: the report's, times [`join_factor`].
    pub fn chart_width_ns(&self) -> u64 {
        let (Some(a), Some(b)) = (self.buckets.first(), self.buckets.last()) else {
            return self.width_ns;
        };
        let ops = self.buckets.iter().map(|b| b.ops).sum();
        self.width_ns * join_factor(b.index - a.index + 1, ops)
    }

    /// The points a chart draws, every bucket from the first to the last, empty ones included (a
    /// latency line breaks there).
    pub fn points(&self) -> Vec<TimelinePoint> {
        let width = self.chart_width_ns();
        let Some(first) = self.buckets.first() else {
            return Vec::new();
        };
        let factor = (width / self.width_ns.max(1)).max(1);
        let base = first.index / factor;
        let mut joined: Vec<(u64, u64, Option<Histogram<u64>>)> = Vec::new();
        for b in &self.buckets {
            let j = (b.index / factor - base) as usize;
            while joined.len() <= j {
                joined.push((0, 0, None));
            }
            let e = &mut joined[j];
            e.0 += b.ops;
            e.1 += b.errors;
            if let Ok(h) = hdr::decode(&b.hdr) {
                match &mut e.2 {
                    Some(into) => {
                        hdr::add(into, &h);
                    }
                    None => e.2 = Some(h),
                }
            }
        }
        let us = |h: &Histogram<u64>, q: f64| h.value_at_quantile(q) as f64 / 1e3;
        joined
            .into_iter()
            .enumerate()
            .map(|(i, (ops, errors, h))| {
                let h = h.filter(|h| !h.is_empty());
                TimelinePoint {
                    t_s: i as f64 * width as f64 / 1e9,
                    ops,
                    errors,
                    samples: h.as_ref().map_or(0, |h| h.len()),
                    p50_us: h.as_ref().map(|h| us(h, 0.5)),
                    p99_us: h.as_ref().map(|h| us(h, 0.99)),
                    max_us: h.as_ref().map(|h| h.max() as f64 / 1e3),
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::figures::buckets::MAX_POINTS;

    fn run(span_ns: u64, ops: u64) -> BucketTimeline {
        let mut b = Buckets::new(1_700_000_000_000_000_000);
        for i in 0..ops {
            b.record(i * span_ns / ops, Some(200_000), false);
        }
        b.report()
    }

    #[test]
    fn a_run_of_any_length_gets_a_few_hundred_points() {
        for (span_ns, want_width) in [
            (30_000_000u64, 100_000u64),
            (3_000_000_000, 10_000_000),
            (600_000_000_000, 2_000_000_000),
        ] {
            let t = run(span_ns, 20_000);
            let points = t.points();
            assert_eq!(t.chart_width_ns(), want_width, "span {span_ns}");
            assert!(
                (50..=MAX_POINTS as usize + 1).contains(&points.len()),
                "{} points for a span of {span_ns} ns",
                points.len()
            );
            assert_eq!(points.iter().map(|p| p.ops).sum::<u64>(), 20_000);
            assert!(points.iter().all(|p| p.p50_us.is_some()));
        }
    }

    #[test]
    fn an_idle_stretch_is_a_gap_and_shards_add_up() {
        let mut b = Buckets::new(0);
        b.record(1_000_000, Some(5_000_000), false);
        b.record(9_000_000, Some(1_000_000), true);
        let t = b.report();
        let p = t.points();
        assert_eq!(t.width_ns, 100_000);
        assert_eq!(p.len(), 41, "2 ops: 200 µs points");
        assert_eq!(p[1].p50_us, None, "no reply there: no latency");
        assert_eq!(p[1].ops, 0);
        let mut c = Buckets::new(0);
        c.record(1_000_000_000, Some(1_000_000), false);
        let merged = BucketTimeline::merge([&t, &c.report()]).unwrap();
        assert_eq!(merged.width_ns, 10_000_000, "the widest width");
        assert_eq!(merged.buckets.len(), 2);
        assert_eq!(merged.buckets[0].ops, 2);
        assert_eq!(merged.buckets[0].errors, 1);
        let p = merged.points();
        assert_eq!(p.len(), 21);
        assert!(p[0].max_us.unwrap() > 4_500.0);
    }
}
