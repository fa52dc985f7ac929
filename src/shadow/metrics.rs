//! The shadow's series on `--metrics`, beside the proxy's: per target and query shape, the reads
//! by what happened to them, with bounded cardinality: the [`TOP_SHAPES`] shapes with the most
//! reads by name (their hash, command and namespace), the rest added up as `other`.

use super::stats::{CandidateStats, ShapeFigures, WriteCounters, WriteState, OTHER};
use crate::metrics::expose;
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

impl ShadowCollector {
    /// One target's shapes: the top ones by reads, the rest added into `other`.
    fn series(&self, label: &str, stats: &CandidateStats) -> Vec<(Labels, u64)> {
        let mut shapes = stats.shapes();
        shapes.sort_by_key(|(_, f)| std::cmp::Reverse(f.mirrored + f.shed + f.gaps));
        let mut out = Vec::new();
        let mut other = [0u64; OUTCOMES.len()];
        for (i, (text, f)) in shapes.iter().enumerate() {
            if i >= TOP_SHAPES || text == OTHER {
                for (k, (_, get)) in OUTCOMES.iter().enumerate() {
                    other[k] += get(f);
                }
                continue;
            }
            for (outcome, get) in OUTCOMES {
                let labels = [
                    ("target", label.to_owned()),
                    ("shape", crate::shape::hash(text)),
                    ("command", f.command.clone()),
                    ("namespace", f.namespace.clone()),
                    ("outcome", outcome.to_owned()),
                ];
                out.push((labels, get(f)));
            }
        }
        for (k, (outcome, _)) in OUTCOMES.iter().enumerate() {
            let labels = [
                ("target", label.to_owned()),
                ("shape", OTHER.to_owned()),
                ("command", String::new()),
                ("namespace", String::new()),
                ("outcome", outcome.to_string()),
            ];
            out.push((labels, other[k]));
        }
        out
    }
}

impl Collector for ShadowCollector {
    fn encode(&self, mut enc: DescriptorEncoder) -> std::fmt::Result {
        let series = self
            .targets
            .iter()
            .flat_map(|(label, _, stats)| self.series(label, stats));
        expose::counters(
            &mut enc,
            "shadow_reads",
            "Reads of production mirrored to a target, by query shape (hash) and what happened: \
             mirrored (answered), shed, gap (target down), matched, discrepancy, noise, unconfirmed, \
             not_ready (its restore was not done).",
            series,
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
