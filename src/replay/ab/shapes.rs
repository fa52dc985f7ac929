//! Query shapes side by side in an A/B replay (`docs/ab.md`): each shape's figures on every
//! target (from each target's own report, matched by hash), and each candidate's mean latency
//! over the control's on the same requests of the shape, with its paired interval (the same
//! machinery as per command, [`super::stats`]). Ranked by how much total time moved.

use super::config::AbConfig;
use super::report::{row_of, AbShapeRow};
use super::stats::PairSample;
use super::tables::{finding_cell, interval};
use crate::figures::summary::{CommandSummary, LatencySummary};
use crate::figures::table::{Column, Table};
use crate::figures::units;
use crate::replay::report::shapes::ReplayShape;
use crate::replay::report::ReplayReport;
use crate::shape::{ShapeFigures, ShapeId, ShapeStats, ShapeTable};
use std::collections::HashMap;

/// The figures a ratio row needs, from a shape's entry.
fn summary(s: &ShapeFigures) -> CommandSummary {
    let latency = LatencySummary {
        count: s.count.saturating_sub(s.no_reply),
        mean_us: s.mean_us,
        p50_us: s.p50_us,
        p99_us: s.p99_us,
        ..LatencySummary::default()
    };
    CommandSummary::of(s.count, s.errors, 0.0, latency)
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
            let sides: Vec<ShapeFigures> = by_hash
                .iter()
                .map(|m| {
                    m.get(hash.as_str())
                        .map(|s| s.replayed.figures.clone())
                        .unwrap_or_default()
                })
                .collect();
            if sides.iter().all(|s| s.count + s.getmores == 0) {
                return None;
            }
            let sample = ShapeId::at(i).and_then(|id| samples.remove(&id));
            let what = format!("`{}`", shape.text);
            let figures = sides.iter().map(summary).collect();
            let mut row = row_of(ab, labels, figures, sample.as_ref(), &what);
            for (i, x) in row.ratios.iter_mut().enumerate() {
                if let Some(sentence) = &mut x.sentence {
                    sentence.push_str(&share_clause(&sides, labels, i + 1));
                }
            }
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

/// What the shape weighs in the workload on the control and on target `i`, and how much its
/// time moved: "; 30% of the replayed requests' summed latency with A, 46% with B; +1.56 s over
/// 200 requests". The share is of the latency of every request replayed into that target, added
/// up (`shapes[].targets[].share`), not of the server's time.
pub fn share_clause(sides: &[ShapeFigures], labels: &[String], i: usize) -> String {
    let (Some(a), Some(b)) = (sides.first(), sides.get(i)) else {
        return String::new();
    };
    let moved = b.total_us - a.total_us;
    format!(
        "; {} of the replayed requests' summed latency with {}, {} with {}; {}{} over {} requests",
        whole_percent(a.share),
        labels[0],
        whole_percent(b.share),
        labels[i],
        if moved < 0.0 { "-" } else { "+" },
        units::rounded_us(moved.abs()),
        units::count(a.count as f64)
    )
}

/// `0.304` as `30%`; under 1% with one decimal (`0.4%`).
fn whole_percent(share: f64) -> String {
    let pct = share * 100.0;
    if pct > 0.0 && pct < 1.0 {
        format!("{pct:.1}%")
    } else {
        format!("{pct:.0}%")
    }
}

/// Shapes the text lists.
pub const TEXT_ROWS: usize = 10;

/// The shapes side by side: the first `limit` rows, each target's total time on the shape and
/// its share of the summed latency of every request replayed into that target, each candidate's
/// mean ratio; the text cuts the shape text to fit 100 columns. The page keeps the text whole
/// and shows the control's count of requests, each target's p50 and p99 and the shares: the
/// totals and ratios are in [`ratios_table`], a row per candidate, so that the page fits. With
/// `--explain` each target's documents examined per request follow.
pub fn table(rows: &[AbShapeRow], labels: &[String], limit: usize) -> Table {
    let rows = &rows[..rows.len().min(limit)];
    let examined = rows
        .iter()
        .any(|r| r.targets.iter().any(|t| t.docs_per_request.is_some()));
    let mut columns = vec![Column::new("shape").fit(), Column::new("count").html_only()];
    columns.extend((labels.iter()).map(|l| Column::new(format!("{l} p50 / p99")).html_only()));
    columns.extend((labels.iter()).map(|l| Column::new(format!("total {l}")).text_only()));
    columns.push(Column::new(format!("share {}", labels.join("/"))));
    columns.extend(
        (labels.iter().skip(1)).map(|l| Column::new(format!("{l}/{}", labels[0])).text_only()),
    );
    if examined {
        columns.push(Column::new(format!("examined/req {}", labels.join("/"))));
    }
    let per_request = |t: &ShapeFigures| {
        t.docs_per_request
            .map_or("-".into(), |d| units::count(d as f64))
    };
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let mut c = vec![r.shape.clone()];
            c.push(units::count(r.targets.first().map_or(0, |t| t.count) as f64));
            c.extend(r.targets.iter().map(|t| match t.count > t.no_reply {
                true => format!(
                    "{} / {}",
                    units::duration_us(t.p50_us),
                    units::duration_us(t.p99_us)
                ),
                false => "-".into(),
            }));
            c.extend(r.targets.iter().map(|t| units::duration_us(t.total_us)));
            let shares: Vec<String> = r.targets.iter().map(|t| whole_percent(t.share)).collect();
            c.push(shares.join("/"));
            c.extend(r.ratios.iter().map(|x| interval(x.mean)));
            if examined {
                let each: Vec<String> = r.targets.iter().map(per_request).collect();
                c.push(each.join("/"));
            }
            c
        })
        .collect();
    Table::with_columns(columns).with_rows(cells)
}

/// The page's shapes against the control: a row per shape and candidate (A2 under the candidate
/// it judges), the candidate's total time on the shape and how far it moved from the control's,
/// its mean and median ratios with their intervals, and whether it is a finding.
pub fn ratios_table(rows: &[AbShapeRow], labels: &[String]) -> Table {
    let control = labels.first().map_or("", String::as_str);
    let mut t = Table::new([
        "shape".to_string(),
        "target".into(),
        "total".into(),
        format!("total - {control}'s"),
        format!("mean over {control} (interval)"),
        format!("median over {control} (interval)"),
        "finding?".into(),
    ]);
    for r in rows {
        let control_total = r.targets.first().map_or(0.0, |s| s.total_us);
        for (x, side) in r.ratios.iter().zip(r.targets.iter().skip(1)) {
            let moved = side.total_us - control_total;
            t.row([
                r.shape.clone(),
                x.target.clone(),
                units::duration_us(side.total_us),
                format!(
                    "{}{}",
                    if moved < 0.0 { "-" } else { "+" },
                    units::duration_us(moved.abs())
                ),
                interval(x.mean),
                interval(x.median),
                finding_cell(x),
            ]);
        }
    }
    t
}
