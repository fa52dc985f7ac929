//! The shadow's series on `--metrics`, beside the proxy's: per target and query shape, the reads
//! by what happened to them and their latency on both sides, with bounded cardinality: the [`TOP_SHAPES`] shapes with the most
//! reads by name (their hash, command and namespace), the rest added up as `other`.

use super::stats::{CandidateStats, ShapeFigures, WriteCounters, WriteState, OTHER};
use crate::metrics::expose;
use crate::metrics::histogram::HistogramSnapshot;
use hdrhistogram::Histogram;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::DescriptorEncoder;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// Shapes named per target; the rest are `other`.
pub const TOP_SHAPES: usize = 20;

type Labels = [(&'static str, String); 5];

/// The targets' figures, read at each scrape.
#[derive(Debug)]
pub struct ShadowCollector {
    /// Each target's label, role and figures.
    pub targets: Vec<(String, &'static str, Arc<CandidateStats>)>,
}

/// What happened to reads, and where each count is.
type Count = fn(&ShapeFigures) -> u64;

const OUTCOMES: [(&str, Count); 8] = [
    ("mirrored", |f| f.mirrored),
    ("shed", |f| f.shed),
    ("gap", |f| f.gaps),
    ("matched", |f| f.matched),
    ("discrepancy", |f| f.discrepancies),
    ("noise", |f| f.noise),
    ("unconfirmed", |f| f.unconfirmed),
    ("not_ready", |f| f.not_ready),
];

/// What happened to mirrored writes (`--mirror all`), and where each count is.
type WriteCount = fn(&WriteCounters) -> u64;

const WRITE_OUTCOMES: [(&str, WriteCount); 4] = [
    ("mirrored", |w| w.mirrored.load(Ordering::Relaxed)),
    ("failed", |w| w.failed.load(Ordering::Relaxed)),
    ("in_snapshot", |w| w.in_snapshot.load(Ordering::Relaxed)),
    ("dropped", |w| w.dropped.load(Ordering::Relaxed)),
];

/// Where a side's latencies are in a shape's figures.
type Side = fn(&ShapeFigures) -> &Histogram<u64>;

/// A shape's labels: its hash, command and namespace (`other`'s are empty).
fn shape_labels(text: &str, f: Option<&ShapeFigures>) -> [(&'static str, String); 3] {
    match f {
        Some(f) => [
            ("shape", crate::shape::hash(text)),
            ("command", f.command.clone()),
            ("namespace", f.namespace.clone()),
        ],
        None => [
            ("shape", OTHER.to_owned()),
            ("command", String::new()),
            ("namespace", String::new()),
        ],
    }
}

/// One target's shapes: the [`TOP_SHAPES`] with the most reads, and the rest (`other`).
fn ranked(stats: &CandidateStats) -> (Vec<(String, ShapeFigures)>, Vec<ShapeFigures>) {
    let mut shapes = stats.shapes();
    shapes.sort_by_key(|(_, f)| std::cmp::Reverse(f.mirrored + f.shed + f.gaps));
    let mut top = Vec::new();
    let mut rest = Vec::new();
    for (text, f) in shapes {
        if top.len() >= TOP_SHAPES || text == OTHER {
            rest.push(f);
        } else {
            top.push((text, f));
        }
    }
    (top, rest)
}

impl ShadowCollector {
    /// One target's read counts per shape and outcome.
    fn series(
        label: &str,
        top: &[(String, ShapeFigures)],
        rest: &[ShapeFigures],
    ) -> Vec<(Labels, u64)> {
        let mut out = Vec::new();
        let mut with = |shape: [(&'static str, String); 3], count: &dyn Fn(Count) -> u64| {
            for (outcome, get) in OUTCOMES {
                let [s, c, n] = shape.clone();
                let labels = [
                    ("target", label.to_owned()),
                    s,
                    c,
                    n,
                    ("outcome", outcome.to_owned()),
                ];
                out.push((labels, count(get)));
            }
        };
        for (text, f) in top {
            with(shape_labels(text, Some(f)), &|get| get(f));
        }
        with(shape_labels(OTHER, None), &|get| rest.iter().map(get).sum());
        out
    }

    /// One target's latency histograms per shape: production's and the target's, for the reads
    /// both answered.
    fn latencies(
        label: &str,
        top: &[(String, ShapeFigures)],
        rest: &[ShapeFigures],
    ) -> Vec<(Labels, HistogramSnapshot)> {
        let sides: [(&str, Side); 2] = [
            ("production", |f| &f.production_ns),
            ("target", |f| &f.candidate_ns),
        ];
        let mut out = Vec::new();
        for (side, get) in sides {
            let labelled = |shape: [(&'static str, String); 3]| {
                let [s, c, n] = shape;
                [
                    ("target", label.to_owned()),
                    s,
                    c,
                    n,
                    ("side", side.to_owned()),
                ]
            };
            for (text, f) in top {
                out.push((
                    labelled(shape_labels(text, Some(f))),
                    HistogramSnapshot::of_hdr(get(f)),
                ));
            }
            let mut other = HistogramSnapshot::of_hdr(&Histogram::new(2).expect("valid"));
            for f in rest {
                other.add(&HistogramSnapshot::of_hdr(get(f)));
            }
            out.push((labelled(shape_labels(OTHER, None)), other));
        }
        out
    }
}

impl Collector for ShadowCollector {
    fn encode(&self, mut enc: DescriptorEncoder) -> std::fmt::Result {
        let ranked: Vec<_> = self
            .targets
            .iter()
            .map(|(label, _, stats)| (label, ranked(stats)))
            .collect();
        let series = ranked
            .iter()
            .flat_map(|(label, (top, rest))| Self::series(label, top, rest));
        expose::counters(
            &mut enc,
            "shadow_reads",
            "Reads of production mirrored to a target, by query shape (hash) and what happened: \
             mirrored (answered), shed, gap (target down), matched, discrepancy, noise, unconfirmed, \
             not_ready (its restore was not done).",
            series,
        )?;
        expose::histograms(
            &mut enc,
            "shadow_read_latency_seconds",
            "Latency of the reads mirrored to a target and answered by both sides, by query shape \
             (hash) and side: production (as the proxy saw it) or the target (as the mirror timed \
             it).",
            ranked
                .iter()
                .flat_map(|(label, (top, rest))| Self::latencies(label, top, rest)),
        )?;
        let writing = || {
            self.targets
                .iter()
                .filter(|(_, _, s)| s.writes.enabled.load(Ordering::Relaxed))
        };
        expose::counters(
            &mut enc,
            "shadow_writes",
            "Writes production acknowledged, mirrored to a target (--mirror all), by what happened: \
             mirrored (applied), failed (the target answered an error production did not), \
             in_snapshot (before T0), dropped (the target went to reads only).",
            writing().flat_map(|(label, _, stats)| {
                WRITE_OUTCOMES.iter().map(move |(outcome, get)| {
                    let labels = [
                        ("target", label.clone()),
                        ("outcome", outcome.to_string()),
                    ];
                    (labels, get(&stats.writes))
                })
            }),
        )?;
        expose::counters(
            &mut enc,
            "shadow_writes_reads_only",
            "1 once a target's writes were dropped and it went on with reads only.",
            writing().map(|(label, _, stats)| {
                let gone = stats.writes.state() == WriteState::ReadsOnly;
                (expose::label("target", label.clone()), u64::from(gone))
            }),
        )?;
        expose::counters(
            &mut enc,
            "shadow_connection_failures",
            "Connections to a target that failed or were dropped (it is reconnected with backoff).",
            self.targets.iter().map(|(label, _, stats)| {
                (
                    expose::label("target", label.clone()),
                    stats.connection_failures.load(Ordering::Relaxed),
                )
            }),
        )
    }
}
