//! Query shapes side by side in an A/B replay (`docs/ab.md`): each shape's figures on every
//! target (from each target's own report, matched by hash), and each candidate's mean latency
//! over the control's on the same requests of the shape, with its paired interval (the same
//! machinery as per command, [`super::stats`]). Ranked by how much total time moved.

use super::config::AbConfig;
use super::report::{row_of, AbShapeRow};
use super::stats::{PairSample, RatioEstimate};
use crate::figures::summary::{CommandSummary, LatencySummary};
use crate::figures::table::Table;
use crate::figures::units;
use crate::replay::report::shapes::{ReplayShape, ShapeSide};
use crate::replay::report::shapes_text::{ellipsis, TEXT_WIDTH};
use crate::replay::report::ReplayReport;
use crate::shape::{ShapeId, ShapeStats, ShapeTable};
use std::collections::HashMap;

/// The figures a ratio row needs, from a shape's entry.
fn summary(s: &ShapeSide) -> CommandSummary {
    CommandSummary {
        count: s.count,
        errors: s.errors,
        ops_per_s: 0.0,
        latency: LatencySummary {
            count: s.count.saturating_sub(s.no_reply),
            mean_us: s.mean_us,
            p50_us: s.p50_us,
            p99_us: s.p99_us,
            ..LatencySummary::default()
        },
    }
}

/// Every shape of the run (the feed's table: ids to shapes), most moved total time first.
pub fn rows(
    ab: &AbConfig,
    labels: &[String],
    reports: &[&ReplayReport],
    table: &ShapeTable<ShapeStats>,
    mut samples: HashMap<ShapeId, PairSample>,
) -> Vec<AbShapeRow> {
    let by_hash: Vec<HashMap<&str, &ReplayShape>> = reports
        .iter()
        .map(|r| {
            r.shapes
                .shapes
                .iter()
                .map(|s| (s.replayed.hash.as_str(), s))
                .collect()
        })
        .collect();
    let (entries, _) = table.parts();
    let mut rows: Vec<AbShapeRow> = entries
        .iter()
        .enumerate()
        .filter_map(|(i, (shape, _))| {
            let hash = shape.hash();
            let sides: Vec<ShapeSide> = by_hash
                .iter()
                .map(|m| {
                    m.get(hash.as_str())
                        .map(|s| ShapeSide::of(&s.replayed))
                        .unwrap_or_default()
                })
                .collect();
            if sides.iter().all(|s| s.count + s.getmores == 0) {
                return None;
            }
            let sample = ShapeId::at(i).and_then(|id| samples.remove(&id));
            let what = format!("`{}`", shape.text);
            let figures = sides.iter().map(summary).collect();
            let row = row_of(ab, labels, figures, sample.as_ref(), &what);
            let control = sides[0].total_us;
            Some(AbShapeRow {
                hash,
                command: shape.command.clone(),
                namespace: shape.namespace.clone(),
                shape: shape.text.clone(),
                moved_us: sides
                    .iter()
                    .map(|s| (s.total_us - control).abs())
                    .fold(0.0, f64::max),
                targets: sides,
                ratios: row.ratios,
                sample_us: row.sample_us,
            })
        })
        .collect();
    rows.sort_by(|a, b| {
        b.moved_us
            .total_cmp(&a.moved_us)
            .then_with(|| a.shape.cmp(&b.shape))
    });
    rows
}

/// Shapes the text lists.
pub const TEXT_ROWS: usize = 10;

/// The shapes side by side: the first `limit` rows; `cut` fits the shape text into 100 columns
/// (the text summary), else keeps it whole (the page).
pub fn table(rows: &[AbShapeRow], labels: &[String], limit: usize, cut: bool) -> Table {
    let mut headers = vec!["shape".to_string()];
    headers.extend(labels.iter().map(|l| format!("total {l}")));
    headers.extend(labels.iter().skip(1).map(|l| format!("{l}/{}", labels[0])));
    let interval = |e: &Option<RatioEstimate>| {
        e.map_or("-".into(), |m| {
            format!(
                "{} ({}-{})",
                units::ratio(m.ratio),
                units::ratio(m.low),
                units::ratio(m.high)
            )
        })
    };
    let mut cells: Vec<Vec<String>> = rows
        .iter()
        .take(limit)
        .map(|r| {
            let mut c = vec![r.shape.clone()];
            c.extend(r.targets.iter().map(|t| units::duration_us(t.total_us)));
            c.extend(r.ratios.iter().map(|x| interval(&x.mean)));
            c
        })
        .collect();
    if cut {
        let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
        for row in &cells {
            for (w, c) in widths.iter_mut().zip(row) {
                *w = (*w).max(c.chars().count());
            }
        }
        let others: usize = widths.iter().skip(1).map(|w| w + 2).sum();
        let width = TEXT_WIDTH.saturating_sub(others).max(20);
        for row in &mut cells {
            row[0] = ellipsis(&row[0], width);
        }
    }
    Table::new(headers).with_rows(cells)
}
