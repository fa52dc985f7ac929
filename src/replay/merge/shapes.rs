//! Adding shard reports up per query shape: exact counts, errors, time, documents and bytes, the
//! per-shape histograms added and every percentile read off the sum, on both sides (replayed
//! and recorded). Shapes are matched by hash; a shape past one shard's cap stays in `other`.

use super::error::MergeError;
use super::input::ShardInput;
use crate::replay::measure::hdr;
use crate::replay::report::shapes::{self, Built, ReplayShape};
use crate::shape::{Shape, ShapeStats};
use hdrhistogram::Histogram;
use std::collections::{BTreeMap, HashMap};

/// A shape added up so far: its recorded and replayed figures.
type Sides = (ShapeStats, ShapeStats);

/// One shard's figures of one shape, both sides, read back with their histograms.
fn sides(input: &ShardInput, key: &str, e: &ReplayShape) -> Result<Sides, MergeError> {
    let hist = |m: &BTreeMap<String, String>, what: &str| -> Result<_, MergeError> {
        m.get(key)
            .map(|text| hdr::decode_as::<u32>(text))
            .transpose()
            .map_err(|detail| MergeError::Histogram {
                path: input.path.clone(),
                detail: format!("{what} of shape {key}: {detail}"),
            })
    };
    let r = &input.report;
    let replayed: Option<Histogram<u32>> = hist(&r.histograms.per_shape, "histogram")?;
    let recorded: Option<Histogram<u32>> = hist(&r.recorded.per_shape, "recorded histogram")?;
    Ok((
        ShapeStats::from_report(&e.recorded, recorded),
        ShapeStats::from_report(&e.replayed.figures, replayed),
    ))
}

fn add(into: &mut Sides, from: &Sides) {
    into.0.add(&from.0);
    into.1.add(&from.1);
}

/// The shapes of every shard report, added up.
pub fn add_up(inputs: &[ShardInput]) -> Result<Built, MergeError> {
    let mut order: Vec<(Shape, Sides)> = Vec::new();
    let mut at: HashMap<String, usize> = HashMap::new();
    let mut other = Sides::default();
    let mut cap = 0;
    for input in inputs {
        let r = &input.report.shapes;
        cap = r.shapes_cap.max(cap);
        add(&mut other, &sides(input, "other", &r.shapes_other)?);
        for e in &r.shapes {
            let s = sides(input, &e.replayed.hash, e)?;
            match at.get(&e.replayed.hash) {
                Some(&i) => add(&mut order[i].1, &s),
                None => {
                    at.insert(e.replayed.hash.clone(), order.len());
                    let shape = Shape {
                        command: e.replayed.command.clone(),
                        namespace: e.replayed.namespace.clone(),
                        text: e.replayed.shape.clone(),
                    };
                    order.push((shape, s));
                }
            }
        }
    }
    let recorded: Vec<(Shape, ShapeStats)> = order
        .iter()
        .map(|(shape, (rec, _))| (shape.clone(), rec.clone()))
        .collect();
    let replayed: Vec<ShapeStats> = order.into_iter().map(|(_, (_, live))| live).collect();
    Ok(shapes::pair(&recorded, &replayed, &other.1, &other.0, cap))
}
