//! What the shadow counts per candidate and per query shape: requests mirrored, shed, lost to a
//! candidate that was down (gaps), compared, matched, differing, confirmed discrepancies, noise,
//! errors by code on each side, both sides' latency (HDR histograms) and a bounded sample of
//! the pairs for the ratio with its interval (`replay::ab::stats`). Bounded: at most
//! `max_shapes` shapes, the rest under [`OTHER`].

use crate::replay::ab::stats::PairSample;
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
    pub errors_production: BTreeMap<i32, u64>,
    pub errors_candidate: BTreeMap<i32, u64>,
    pub production_ns: Histogram<u64>,
    pub candidate_ns: Histogram<u64>,
    pub pairs: PairSample,
    /// The winning plans of the last explain on production and on the candidate.
    pub plans: Option<(String, String)>,
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
        }
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
    pub fn plans(&self, key: &ShapeKey, production: String, candidate: String) {
        self.with(key, |f, _| f.plans = Some((production, candidate)))
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
            };
            *n += 1;
        })
    }

    pub fn answered(&self, key: &ShapeKey, a: Answered) {
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
}
