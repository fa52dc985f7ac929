//! Query shapes in the replay report (`docs/shapes.md`): each shape's replayed figures (the entry
//! `analyze` writes, [`ShapeReport`]) with the same shape's recorded figures beside them
//! ([`ShapeFigures`], the same figures without the shape), and the
//! per-shape histograms, serialized like every other ([`crate::replay::measure::hdr`]) so that
//! `merge` adds shard reports up per shape exactly.

use crate::replay::measure::hdr;
use crate::replay::measure::shapes::ReplayedShapes;
use crate::shape::{Shape, ShapeFigures, ShapeReport, ShapeStats, ShapeTable, ShapesReport};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};

/// One shape of a replay: the replayed figures, and the capture's for the same requests.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ReplayShape {
    #[serde(flatten)]
    pub replayed: ShapeReport,
    /// The capture's figures of the shape (request to reply as recorded), of the first pass.
    #[serde(default)]
    pub recorded: ShapeFigures,
}

/// The report's top-level `shapes`, `shapes_other` and `shapes_cap`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default)]
pub struct ReplayShapes {
    /// Every shape replayed, most replayed total time first.
    pub shapes: Vec<ReplayShape>,
    /// The requests of every shape past the cap, added up (`hash` and `shape` are `other`).
    pub shapes_other: ReplayShape,
    /// Distinct shapes kept at most (`--max-shapes`).
    pub shapes_cap: u64,
}

/// The per-shape histograms (latency of each shape's own requests), by hash; `other` for the
/// shapes past the cap.
pub type ShapeHistograms = BTreeMap<String, String>;

/// The shapes with both sides' figures and histograms: (replayed, recorded) histograms.
pub struct Built {
    pub shapes: ReplayShapes,
    pub replayed: ShapeHistograms,
    pub recorded: ShapeHistograms,
}

/// Sets the recorded figures (`recorded`) beside the replayed ones, shape by shape; both lists
/// are of the same shapes, keyed by hash.
pub fn pair(
    entries: &[(Shape, ShapeStats)],
    replayed: &[ShapeStats],
    replayed_other: &ShapeStats,
    recorded_other: &ShapeStats,
    cap: u64,
) -> Built {
    let live: Vec<(Shape, ShapeStats)> = entries
        .iter()
        .zip(replayed)
        .map(|((shape, _), s)| (shape.clone(), s.clone()))
        .collect();
    let out = ShapesReport::of_entries(&live, replayed_other, cap);
    let rec = ShapesReport::of_entries(entries, recorded_other, cap);
    let by_hash: HashMap<&str, &ShapeReport> =
        rec.shapes.iter().map(|s| (s.hash.as_str(), s)).collect();
    let with = |r: ShapeReport, rec: Option<&ShapeReport>| ReplayShape {
        recorded: rec.map(|r| r.figures.clone()).unwrap_or_default(),
        replayed: r,
    };
    let histograms = |list: &[(Shape, ShapeStats)], other: &ShapeStats| -> ShapeHistograms {
        let mut m: ShapeHistograms = list
            .iter()
            .filter_map(|(shape, s)| Some((shape.hash(), hdr::encode(s.histogram()?))))
            .collect();
        if let Some(h) = other.histogram() {
            m.insert("other".into(), hdr::encode(h));
        }
        m
    };
    Built {
        replayed: histograms(&live, replayed_other),
        recorded: histograms(entries, recorded_other),
        shapes: ReplayShapes {
            shapes: out
                .shapes
                .into_iter()
                .map(|r| {
                    let rec = by_hash.get(r.hash.as_str()).copied();
                    with(r, rec)
                })
                .collect(),
            shapes_other: with(out.shapes_other, Some(&rec.shapes_other)),
            shapes_cap: out.shapes_cap,
        },
    }
}

/// The shapes of a replay: the feed's table (shapes and recorded figures) and the lanes'
/// replayed figures, which point into it by place.
pub fn of(recorded: &ShapeTable<ShapeStats>, replayed: &ReplayedShapes) -> Built {
    let (entries, recorded_other) = recorded.parts();
    let live: Vec<ShapeStats> = (0..entries.len()).map(|i| replayed.at(i)).collect();
    pair(
        entries,
        &live,
        replayed.other(),
        recorded_other,
        recorded.cap() as u64,
    )
}
