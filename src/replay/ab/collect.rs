//! The A/B collector: what the paired lanes hand over for each request (every target's latency
//! and reply), kept bounded: a sample of paired latencies per command and per namespace, and the
//! reply differences per field.

use super::diff::{DiffOptions, Differences, Replies};
use super::stats::PairSample;
use crate::replay::measure::observed::{Observed, PairSink};
use crate::shape::ShapeId;
use rand::rngs::StdRng;
use rand::SeedableRng;
use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

/// Pairs kept per query shape: a capture may have thousands of shapes (up to `--max-shapes`),
/// so each keeps fewer than a command does (24 KB at most with three targets).
pub const SHAPE_SAMPLE_CAP: usize = 1_000;

/// Which target plays which part.
#[derive(Debug, Clone, Copy)]
pub struct Roles {
    /// Targets in all.
    pub count: usize,
    /// The control (A): always the first.
    pub control: usize,
    /// The second baseline (A2), same setup as the control, when given.
    pub baseline: Option<usize>,
}

/// Requests seen on every target, and those some target missed.
#[derive(Debug, Default, Clone, Copy)]
pub struct PairCounts {
    pub paired: u64,
    /// Some target failed, skipped the request, or was already gone.
    pub unpaired: u64,
    /// Unacknowledged writes: sent everywhere, no latency to pair.
    pub unacknowledged: u64,
}

pub struct Collected {
    pub per_command: BTreeMap<String, PairSample>,
    /// By query shape (the feed's id), a smaller sample each ([`SHAPE_SAMPLE_CAP`]).
    pub per_shape: HashMap<ShapeId, PairSample>,
    pub per_namespace: BTreeMap<String, PairSample>,
    pub overall: PairSample,
    pub counts: PairCounts,
    pub differences: Differences,
}

impl Collected {
    fn empty(width: usize) -> Collected {
        Collected {
            per_command: BTreeMap::new(),
            per_shape: HashMap::new(),
            per_namespace: BTreeMap::new(),
            overall: PairSample::new(width),
            counts: PairCounts::default(),
            differences: Differences::default(),
        }
    }
}

pub struct Collector {
    roles: Roles,
    opts: DiffOptions,
    inner: Mutex<(Collected, StdRng)>,
}

impl Collector {
    pub fn new(roles: Roles, opts: DiffOptions, seed: u64) -> Collector {
        Collector {
            roles,
            opts,
            inner: Mutex::new((Collected::empty(roles.count), StdRng::seed_from_u64(seed))),
        }
    }

    /// What was collected, once the lanes are done (tasks still winding down may hold the sink).
    pub fn take(&self) -> Collected {
        let mut guard = self.inner.lock().expect("collector lock");
        let mut c = std::mem::replace(&mut guard.0, Collected::empty(self.roles.count));
        c.differences
            .finish(&self.opts, self.roles.baseline.is_some());
        c
    }

    /// The candidates: every target but the control and its copy.
    pub fn candidates(roles: &Roles) -> impl Iterator<Item = usize> + '_ {
        (0..roles.count).filter(move |i| *i != roles.control && Some(*i) != roles.baseline)
    }

    /// The replies of a request every target answered.
    fn compare(
        &self,
        c: &mut Collected,
        command: &str,
        namespace: &str,
        (seen, unordered): (&[Option<Observed>], bool),
    ) {
        let body = |i: usize| seen[i].as_ref().and_then(|o| o.body.as_deref());
        let Some(control) = body(self.roles.control) else {
            return;
        };
        let baseline = self.roles.baseline.map(body);
        if baseline == Some(None) {
            return;
        }
        for b in Self::candidates(&self.roles) {
            let Some(candidate) = body(b) else {
                continue;
            };
            c.differences.add(
                &self.opts,
                &Replies {
                    command,
                    namespace,
                    control,
                    candidate,
                    baseline: baseline.flatten(),
                    unordered,
                },
            );
        }
    }
}

impl PairSink for Collector {
    fn paired(
        &self,
        command: &str,
        namespace: &str,
        shape: Option<ShapeId>,
        seen: &[Option<Observed>],
    ) {
        self.pair(command, namespace, shape, seen, false);
    }

    fn paired_unsorted(
        &self,
        command: &str,
        namespace: &str,
        shape: Option<ShapeId>,
        seen: &[Option<Observed>],
    ) {
        self.pair(command, namespace, shape, seen, true);
    }
}

impl Collector {
    /// One request every target saw: its latencies sampled (also per query shape), its replies
    /// compared.
    fn pair(
        &self,
        command: &str,
        namespace: &str,
        shape: Option<ShapeId>,
        seen: &[Option<Observed>],
        unordered: bool,
    ) {
        let mut guard = self.inner.lock().expect("collector lock");
        let (c, rng) = &mut *guard;
        if seen.iter().any(Option::is_none) {
            c.counts.unpaired += 1;
            return;
        }
        // At most three targets: no allocation per request.
        let mut latencies = [0u64; 3];
        for (l, o) in latencies.iter_mut().zip(seen.iter().flatten()) {
            match o.latency_ns {
                Some(ns) => *l = ns,
                None => {
                    c.counts.unacknowledged += 1;
                    return;
                }
            }
        }
        let width = self.roles.count;
        let latencies = &latencies[..width];
        c.counts.paired += 1;
        c.overall.offer(latencies, rng);
        sample_of(&mut c.per_command, command, width).offer(latencies, rng);
        sample_of(&mut c.per_namespace, namespace, width).offer(latencies, rng);
        if let Some(id) = shape {
            c.per_shape
                .entry(id)
                .or_insert_with(|| PairSample::with_cap(width, SHAPE_SAMPLE_CAP))
                .offer(latencies, rng);
        }
        self.compare(c, command, namespace, (seen, unordered));
    }
}

/// The sample under `key`, created on first use (no allocation once it exists).
fn sample_of<'m>(
    map: &'m mut BTreeMap<String, PairSample>,
    key: &str,
    width: usize,
) -> &'m mut PairSample {
    if !map.contains_key(key) {
        map.insert(key.to_owned(), PairSample::new(width));
    }
    map.get_mut(key).expect("inserted above")
}
