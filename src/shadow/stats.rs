//! What the shadow counts per candidate and per query shape: requests mirrored, shed, lost to a
//! candidate that was down (gaps), compared, matched, differing, confirmed discrepancies, noise,
//! errors by code on each side, both sides' latency (HDR histograms) and a bounded sample of
//! the pairs for the ratio with its interval (`replay::ab::stats`). Bounded: at most
//! `max_shapes` shapes, the rest under [`OTHER`].

use crate::replay::ab::stats::{Bootstrap, PairSample, RatioEstimate};
use hdrhistogram::Histogram;
use rand::rngs::StdRng;
use rand::SeedableRng;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// The shape every request past the table's bound is counted under.
pub const OTHER: &str = "other";
/// Latency pairs kept per shape (reservoir sampling beyond).
pub const PAIRS_PER_SHAPE: usize = 2_000;
/// A shape's latency has shifted when the median of its per-read ratios (target over
/// production), with its whole 95% interval, lies beyond this factor either way.
pub const SHIFT: f64 = 1.2;
/// Reads of a shape before its latency is first judged; then at every power of two and every
/// 1,024 reads.
pub const SHIFT_MIN_READS: u64 = 32;
/// A periodic report estimates a shape's ratios again once its pairs have grown by 1/this since
/// the last estimate (the report at stop, whenever they changed): a bootstrap of a full sample
/// is a million draws, and most shapes barely move between two reports.
const REESTIMATE_GROWTH: u64 = 8;

/// A shape's ratio of means and median ratio, estimated when its sample had `seen` pairs.
#[derive(Debug, Clone, Copy)]
struct Estimated {
    seen: u64,
    ratio: Option<RatioEstimate>,
    median: Option<RatioEstimate>,
}

/// Why a shape was explained.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExplainedFor {
    /// A read still differed when sent again.
    Discrepancy,
    /// Its latency shifted ([`shift`]).
    Latency,
}

impl ExplainedFor {
    pub fn as_str(self) -> &'static str {
        match self {
            ExplainedFor::Discrepancy => "discrepancy",
            ExplainedFor::Latency => "latency",
        }
    }
}

/// The winning plans of one explain on both sides, and why it was asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plans {
    pub production: String,
    pub candidate: String,
    pub reason: ExplainedFor,
}

/// `"slower"` or `"faster"` when the ratio and its whole interval lie beyond [`SHIFT`] (at its
/// full confidence), else `None`.
pub fn shift(r: &RatioEstimate, confidence: f64) -> Option<&'static str> {
    if r.confidence < confidence {
        None
    } else if r.low > SHIFT {
        Some("slower")
    } else if r.high < 1.0 / SHIFT {
        Some("faster")
    } else {
        None
    }
}

/// One shape's figures for one candidate.
#[derive(Debug, Clone)]
pub struct ShapeFigures {
    pub command: String,
    pub namespace: String,
    pub mirrored: u64,
    pub shed: u64,
    pub gaps: u64,
    /// getMores whose cursor the candidate does not have (its find was shed or failed).
    pub orphans: u64,
    pub matched: u64,
    /// Differed at first, then matched when sent again (data that changed in between).
    pub settled: u64,
    pub discrepancies: u64,
    /// Differences the control showed too.
    pub noise: u64,
    /// Differences not sent again (getMores, or too many rechecks at once).
    pub unconfirmed: u64,
    /// Reads of a namespace the snapshot holds, answered before the candidate's restore was done.
    pub not_ready: u64,
    pub errors_production: BTreeMap<i32, u64>,
    pub errors_candidate: BTreeMap<i32, u64>,
    pub production_ns: Histogram<u64>,
    pub candidate_ns: Histogram<u64>,
    pub pairs: PairSample,
    /// The winning plans of the last explain on production and on the candidate.
    pub plans: Option<Plans>,
}

impl ShapeFigures {
    fn new(command: &str, namespace: &str) -> ShapeFigures {
        let hist = || Histogram::new_with_bounds(1, 3_600_000_000_000, 2).expect("valid bounds");
        ShapeFigures {
            command: command.into(),
            namespace: namespace.into(),
            mirrored: 0,
            shed: 0,
            gaps: 0,
            orphans: 0,
            matched: 0,
            settled: 0,
            discrepancies: 0,
            noise: 0,
            unconfirmed: 0,
            not_ready: 0,
            errors_production: BTreeMap::new(),
            errors_candidate: BTreeMap::new(),
            production_ns: hist(),
            candidate_ns: hist(),
            pairs: PairSample::with_cap(2, PAIRS_PER_SHAPE),
            plans: None,
        }
    }
}

/// A shape as the mirror names it: its text, command and namespace.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ShapeKey {
    pub text: String,
    pub command: String,
    pub namespace: String,
}

/// What happened to one mirrored request, for [`CandidateStats::count`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    Shed,
    Gap,
    Orphan,
    Settled,
    Discrepancy,
    Noise,
    Unconfirmed,
    NotReady,
}

/// One answered request: both sides' latency and error codes, and whether the replies matched.
#[derive(Debug, Clone, Copy)]
pub struct Answered {
    pub production_ns: u64,
    pub candidate_ns: u64,
    pub production_error: Option<i32>,
    pub candidate_error: Option<i32>,
    pub matched: bool,
}

/// One candidate's figures, shared by its lanes, rechecks and the report.
pub struct CandidateStats {
    shapes: Mutex<(HashMap<String, ShapeFigures>, StdRng)>,
    max_shapes: usize,
    /// Connections to the candidate that failed or were dropped (a timeout, a close, garbage).
    pub connection_failures: AtomicU64,
    /// Connections opened (the first and every reconnection).
    pub connections: AtomicU64,
    /// When each shape was last explained (bounded as the shapes are).
    explained: Mutex<HashMap<String, std::time::Instant>>,
    /// Each shape's last estimates (the same keys as `shapes`).
    estimated: Mutex<HashMap<String, Estimated>>,
    /// Its mirrored writes (`--mirror all`).
    pub writes: WriteCounters,
}

impl std::fmt::Debug for CandidateStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CandidateStats")
    }
}

impl CandidateStats {
    pub fn new(max_shapes: usize) -> CandidateStats {
        CandidateStats {
            shapes: Mutex::new((HashMap::new(), StdRng::seed_from_u64(1))),
            max_shapes: max_shapes.max(1),
            connection_failures: AtomicU64::new(0),
            connections: AtomicU64::new(0),
            explained: Mutex::default(),
            estimated: Mutex::default(),
            writes: WriteCounters::default(),
        }
    }

    /// The ratio of means (bootstrap interval) and the median ratio of `shape`'s pairs, target
    /// over production: estimated again when `pairs` grew enough since the last time
    /// ([`REESTIMATE_GROWTH`]), or with `exact` when they changed at all.
    pub fn estimates(
        &self,
        shape: &str,
        pairs: &PairSample,
        boot: &Bootstrap,
        exact: bool,
    ) -> (Option<RatioEstimate>, Option<RatioEstimate>) {
        let mut cache = self.estimated.lock().unwrap_or_else(|e| e.into_inner());
        let fresh = |e: &Estimated| match exact {
            true => e.seen == pairs.seen,
            false => pairs.seen < e.seen + e.seen / REESTIMATE_GROWTH + 1,
        };
        if let Some(e) = cache.get(shape).filter(|e| fresh(e)) {
            return (e.ratio, e.median);
        }
        let e = Estimated {
            seen: pairs.seen,
            ratio: pairs.ratio(0, 1, boot),
            median: pairs.median_ratio(0, 1, boot.confidence),
        };
        cache.insert(shape.to_owned(), e);
        (e.ratio, e.median)
    }

    /// Whether `shape` may be explained now (not within `every` of the last time); if so, now
    /// is the last time.
    pub fn may_explain(&self, shape: &str, every: std::time::Duration) -> bool {
        let mut last = self.explained.lock().unwrap_or_else(|e| e.into_inner());
        let now = std::time::Instant::now();
        if last
            .get(shape)
            .is_some_and(|t| now.duration_since(*t) < every)
        {
            return false;
        }
        if last.len() >= 2 * self.max_shapes {
            last.retain(|_, t| now.duration_since(*t) < every);
        }
        last.insert(shape.to_owned(), now);
        true
    }

    /// Keeps the plans of `key` on production and on the candidate.
    pub fn plans(&self, key: &ShapeKey, plans: Plans) {
        self.with(key, |f, _| f.plans = Some(plans))
    }

    fn with<R>(&self, key: &ShapeKey, f: impl FnOnce(&mut ShapeFigures, &mut StdRng) -> R) -> R {
        let mut guard = self.shapes.lock().unwrap_or_else(|e| e.into_inner());
        let (shapes, rng) = &mut *guard;
        let text = if shapes.contains_key(&key.text) || shapes.len() < self.max_shapes {
            key.text.as_str()
        } else {
            OTHER
        };
        let figures = shapes.entry(text.to_owned()).or_insert_with(|| match text {
            OTHER => ShapeFigures::new(OTHER, ""),
            _ => ShapeFigures::new(&key.command, &key.namespace),
        });
        f(figures, rng)
    }

    pub fn count(&self, key: &ShapeKey, event: Event) {
        self.with(key, |f, _| {
            let n = match event {
                Event::Shed => &mut f.shed,
                Event::Gap => &mut f.gaps,
                Event::Orphan => &mut f.orphans,
                Event::Settled => &mut f.settled,
                Event::Discrepancy => &mut f.discrepancies,
                Event::Noise => &mut f.noise,
                Event::Unconfirmed => &mut f.unconfirmed,
                Event::NotReady => &mut f.not_ready,
            };
            *n += 1;
        })
    }

    /// Counts one answered read; true when this read is one at which the shape's latency is
    /// judged ([`SHIFT_MIN_READS`]) and it has shifted ([`shift`]): time to explain it.
    pub fn answered(&self, key: &ShapeKey, a: Answered) -> bool {
        self.with(key, |f, rng| {
            f.mirrored += 1;
            f.matched += u64::from(a.matched);
            if let Some(code) = a.production_error {
                *f.errors_production.entry(code).or_default() += 1;
            }
            if let Some(code) = a.candidate_error {
                *f.errors_candidate.entry(code).or_default() += 1;
            }
            let (p, c) = (a.production_ns.max(1), a.candidate_ns.max(1));
            let _ = f.production_ns.record(p);
            let _ = f.candidate_ns.record(c);
            f.pairs.offer(&[p, c], rng);
            let n = f.production_ns.len();
            let judged = n >= SHIFT_MIN_READS && (n.is_power_of_two() || n % 1024 == 0);
            judged
                && f.pairs
                    .median_ratio(0, 1, 0.95)
                    .is_some_and(|r| shift(&r, 0.95).is_some())
        })
    }

    pub fn connection_failed(&self) {
        self.connection_failures.fetch_add(1, Ordering::Relaxed);
    }

    /// Every shape's figures, copied.
    pub fn shapes(&self) -> Vec<(String, ShapeFigures)> {
        let guard = self.shapes.lock().unwrap_or_else(|e| e.into_inner());
        let mut all: Vec<_> = guard
            .0
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        all.sort_by(|a, b| a.0.cmp(&b.0));
        all
    }
}

/// Where a target's mirrored writes stand (`--mirror all`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteState {
    /// The snapshot of production is being taken or restored into it: writes wait in the queue.
    Restoring,
    /// Writes are applied as production acknowledges them.
    Mirroring,
    /// Writes were dropped (the queue's bound, a failure): reads only from now.
    ReadsOnly,
}

impl WriteState {
    pub fn name(self) -> &'static str {
        match self {
            WriteState::Restoring => "restoring",
            WriteState::Mirroring => "mirroring",
            WriteState::ReadsOnly => "reads_only",
        }
    }
}

/// A target's mirrored writes, counted (`--mirror all`; `enabled` false otherwise).
#[derive(Debug, Default)]
pub struct WriteCounters {
    pub enabled: std::sync::atomic::AtomicBool,
    /// [`WriteState`] as a number (0 restoring, 1 mirroring, 2 reads only).
    pub state: std::sync::atomic::AtomicU8,
    /// Writes applied to the target.
    pub mirrored: AtomicU64,
    /// Writes the target answered with an error (or more write errors) where production did not.
    pub failed: AtomicU64,
    /// Writes acknowledged before T0: already in the snapshot restored, not applied again.
    pub in_snapshot: AtomicU64,
    /// Writes not applied because the target went to reads only.
    pub dropped: AtomicU64,
    /// Writes waiting now, and the most that ever waited.
    pub queued: AtomicU64,
    pub queued_peak: AtomicU64,
}

impl WriteCounters {
    pub fn state(&self) -> WriteState {
        match self.state.load(Ordering::Acquire) {
            0 => WriteState::Restoring,
            1 => WriteState::Mirroring,
            _ => WriteState::ReadsOnly,
        }
    }

    /// Moves to `to` unless reads only already; says whether it moved.
    pub fn set_state(&self, to: WriteState) -> bool {
        let to = to as u8;
        self.state
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |s| {
                (s != 2).then_some(to)
            })
            .is_ok_and(|was| was != to)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(i: usize) -> ShapeKey {
        ShapeKey {
            text: format!("find db.c{i} {{}}"),
            command: "find".into(),
            namespace: format!("db.c{i}"),
        }
    }

    #[test]
    fn shapes_past_the_bound_are_other() {
        let stats = CandidateStats::new(2);
        for i in 0..5 {
            stats.count(&key(i), Event::Shed);
        }
        let shapes = stats.shapes();
        assert_eq!(shapes.len(), 3);
        let other = shapes.iter().find(|(k, _)| k == OTHER).unwrap();
        assert_eq!(other.1.shed, 3);
    }

    fn answer(stats: &CandidateStats, production_ns: u64, candidate_ns: u64) -> bool {
        let a = Answered {
            production_ns,
            candidate_ns,
            production_error: None,
            candidate_error: None,
            matched: true,
        };
        stats.answered(&key(0), a)
    }

    #[test]
    fn a_periodic_report_estimates_a_shape_again_only_once_it_grew() {
        let stats = CandidateStats::new(4);
        let shape = &key(0).text;
        let boot = Bootstrap::default();
        let pairs_of = |exact| {
            let shapes = stats.shapes();
            let (ratio, median) = stats.estimates(shape, &shapes[0].1.pairs, &boot, exact);
            (ratio.unwrap().pairs, median.unwrap().pairs)
        };
        (0..100).for_each(|i| _ = answer(&stats, 1000 + i, 1100));
        assert_eq!(pairs_of(false), (100, 100));
        (0..5).for_each(|_| _ = answer(&stats, 1000, 1100));
        assert_eq!(pairs_of(false), (100, 100), "5% more: the last estimates");
        assert_eq!(pairs_of(true), (105, 105), "at stop: estimated again");
        (0..14).for_each(|_| _ = answer(&stats, 1000, 1100));
        assert_eq!(
            pairs_of(false),
            (119, 119),
            "past 1/8 more: estimated again"
        );
    }

    #[test]
    fn a_shift_is_flagged_at_the_judged_reads_only_when_the_whole_interval_is_beyond() {
        let level = CandidateStats::new(4);
        // Alternately 10% faster and slower: never a shift.
        let flagged = (0..256)
            .filter(|i| answer(&level, 1000, 900 + 200 * (i % 2)))
            .count();
        assert_eq!(flagged, 0);
        let slower = CandidateStats::new(4);
        let judged: Vec<u64> = (1..=256u64)
            .filter(|_| answer(&slower, 1000, 3000))
            .collect();
        // Flagged at 32, 64, 128 and 256 reads, never in between.
        assert_eq!(judged.len(), 4);
        let r = RatioEstimate {
            ratio: 0.5,
            low: 0.4,
            high: 0.8,
            confidence: 0.95,
            pairs: 100,
        };
        assert_eq!(shift(&r, 0.95), Some("faster"));
        assert_eq!(shift(&RatioEstimate { high: 0.9, ..r }, 0.95), None);
        assert_eq!(
            shift(
                &RatioEstimate {
                    confidence: 0.5,
                    ..r
                },
                0.95
            ),
            None
        );
    }
}
