//! `compare --group`: reports that carry the same label are repeats of one run (rounds, in the
//! order given) and become one column: its values are the medians over the rounds, each with its
//! spread (min-max), and each ratio against the first column comes with a 95% bootstrap interval
//! over the rounds, "beyond noise" when it excludes 1. Each column's rounds are resampled with
//! replacement independently (two runs of one round happen at different moments: nothing pairs
//! them). The seed is fixed: the same reports give the same intervals.

use super::rows::{ColumnHead, CommandRows, Interval, MetricRow, Spread};
use super::{compare, CompareReport};
use crate::figures::summary::ReportSummary;
use rand::{rngs::StdRng, Rng, SeedableRng};

const RESAMPLES: usize = 2000;
const SEED: u64 = 1;

/// Compares summaries grouped by label (see the module's documentation); `files[i]` names where
/// `summaries[i]` came from.
pub fn compare_repeats(summaries: &[ReportSummary], files: &[String]) -> CompareReport {
    let groups = groups(summaries);
    let single = compare(summaries, files);
    let fold_all = |rows: &[MetricRow]| rows.iter().map(|r| fold(r, &groups)).collect();
    CompareReport {
        errors_by_code: Vec::new(),
        schema_version: crate::figures::SCHEMA_VERSION,
        columns: groups.iter().map(|g| column(&single.columns, g)).collect(),
        overall: fold_all(&single.overall),
        per_command: single
            .per_command
            .iter()
            .map(|c| CommandRows {
                command: c.command.clone(),
                rows: fold_all(&c.rows),
            })
            .collect(),
        shapes: Vec::new(),
    }
}

/// The indices of the summaries of each label, labels in order of first appearance; a summary
/// without a label is a group of its own.
fn groups(summaries: &[ReportSummary]) -> Vec<Vec<usize>> {
    let mut groups: Vec<(String, Vec<usize>)> = Vec::new();
    for (i, s) in summaries.iter().enumerate() {
        match groups
            .iter_mut()
            .find(|(label, _)| !s.label.is_empty() && *label == s.label)
        {
            Some((_, members)) => members.push(i),
            None => groups.push((s.label.clone(), vec![i])),
        }
    }
    groups.into_iter().map(|(_, members)| members).collect()
}

fn column(columns: &[ColumnHead], members: &[usize]) -> ColumnHead {
    let files: Vec<&str> = members.iter().map(|&i| columns[i].file.as_str()).collect();
    ColumnHead {
        file: files.join(", "),
        runs: members.len(),
        ..columns[members[0]].clone()
    }
}

fn fold(row: &MetricRow, groups: &[Vec<usize>]) -> MetricRow {
    let runs: Vec<Vec<Option<f64>>> = groups
        .iter()
        .map(|g| {
            g.iter()
                .map(|&i| row.values.get(i).copied().flatten())
                .collect()
        })
        .collect();
    let values: Vec<Option<f64>> = runs.iter().map(|r| median(r)).collect();
    let base = values.first().copied().flatten();
    let ratios = values
        .iter()
        .map(|v| match (base, v) {
            (Some(b), Some(v)) if b != 0.0 => Some(v / b),
            _ => None,
        })
        .collect();
    let intervals = runs
        .iter()
        .enumerate()
        .map(|(i, r)| if i == 0 { None } else { bootstrap(r, &runs[0]) })
        .collect();
    MetricRow {
        metric: row.metric.clone(),
        unit: row.unit.clone(),
        values,
        ratios,
        spreads: runs.iter().map(|r| spread(r)).collect(),
        intervals,
    }
}

fn present(values: &[Option<f64>]) -> Vec<f64> {
    values
        .iter()
        .flatten()
        .copied()
        .filter(|v| v.is_finite())
        .collect()
}

fn median(values: &[Option<f64>]) -> Option<f64> {
    let mut v = present(values);
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    Some(if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    })
}

fn spread(values: &[Option<f64>]) -> Option<Spread> {
    let v = present(values);
    let min = v.iter().copied().reduce(f64::min)?;
    let max = v.iter().copied().reduce(f64::max)?;
    Some(Spread {
        min,
        max,
        runs: v.len(),
    })
}

/// The 95% interval of median(a) / median(b), each side's runs resampled independently; None
/// when a side has fewer than two values or a resampled median of `b` is zero.
fn bootstrap(a: &[Option<f64>], b: &[Option<f64>]) -> Option<Interval> {
    let (a, b) = (present(a), present(b));
    if a.len() < 2 || b.len() < 2 {
        return None;
    }
    let mut rng = StdRng::seed_from_u64(SEED);
    let mut resample = |v: &[f64]| -> Option<f64> {
        let pick: Vec<Option<f64>> = (0..v.len())
            .map(|_| Some(v[rng.random_range(0..v.len())]))
            .collect();
        median(&pick)
    };
    let mut ratios = Vec::with_capacity(RESAMPLES);
    for _ in 0..RESAMPLES {
        let den = resample(&b)?;
        let num = resample(&a)?;
        if den == 0.0 {
            return None;
        }
        ratios.push(num / den);
    }
    ratios.sort_by(f64::total_cmp);
    let low = ratios[RESAMPLES * 25 / 1000];
    let high = ratios[RESAMPLES * 975 / 1000];
    Some(Interval {
        low,
        high,
        beyond_noise: low > 1.0 || high < 1.0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(label: &str, ops_per_s: f64) -> ReportSummary {
        let mut s = ReportSummary {
            kind: "replay".into(),
            label: label.into(),
            ops: 100,
            ops_per_s,
            ..Default::default()
        };
        s.overall.ops_per_s = ops_per_s;
        s.per_command.insert("insert".into(), s.overall.clone());
        s
    }

    fn throughput(r: &CompareReport) -> &MetricRow {
        r.overall.iter().find(|m| m.metric == "throughput").unwrap()
    }

    #[test]
    fn repeats_become_one_column_with_median_spread_and_interval() {
        let runs = [
            summary("a", 100.0),
            summary("b", 300.0),
            summary("a", 110.0),
            summary("b", 310.0),
            summary("a", 90.0),
            summary("b", 290.0),
        ];
        let r = compare_repeats(&runs, &[]);
        assert_eq!(r.columns.len(), 2);
        assert_eq!((r.columns[0].runs, r.columns[1].label.as_str()), (3, "b"));
        let tp = throughput(&r);
        assert_eq!(tp.values, vec![Some(100.0), Some(300.0)]);
        assert_eq!(tp.ratios[1], Some(3.0));
        let s = tp.spreads[1].unwrap();
        assert_eq!((s.min, s.max, s.runs), (290.0, 310.0, 3));
        let i = tp.intervals[1].unwrap();
        assert!(i.beyond_noise && i.low > 2.5 && i.high < 3.5, "{i:?}");
        assert_eq!(r.per_command[0].rows[1].values, tp.values);
        let text = r.render_text();
        assert!(text.contains("300 ops/s (290 ops/s-310 ops/s)"), "{text}");
        assert!(text.contains("operations  "), "{text}");
        assert!(
            !text.contains("(100-100)"),
            "a spread of one value is the value: {text}"
        );
        assert!(text.contains("3.00x [2.") && text.contains("]*"), "{text}");
    }

    #[test]
    fn overlapping_repeats_are_within_noise() {
        let runs = [
            summary("a", 100.0),
            summary("b", 105.0),
            summary("a", 120.0),
            summary("b", 95.0),
            summary("a", 90.0),
            summary("b", 118.0),
        ];
        let i = throughput(&compare_repeats(&runs, &[])).intervals[1].unwrap();
        assert!(!i.beyond_noise && i.low < 1.0 && i.high > 1.0, "{i:?}");
    }
}
