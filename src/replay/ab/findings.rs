//! The report's verdicts: every candidate's ratio judged ([`super::verdict`]: mean and median
//! agreeing, beyond A2, stricter on a DISTURBED run), the control checks (what A2 showed against
//! A per command, namespace and query shape), the findings in the order worth reading, the
//! ratios set aside with why, and the warnings about the figures themselves.

use super::control::{self, ControlCheck};
use super::model::{AbReport, RatioReport, MIN_PAIRS_FOR_FINDING};
use super::verdict::{self, Evidence};
use crate::figures::errors::grouped;
use crate::figures::units;

/// A target where more than this share of the requests failed gets a warning.
pub const FAILED_WARNING: f64 = crate::figures::failures::WARN_SHARE;

/// The label of the control's copy (A2), if the run has one.
fn baseline_label(r: &AbReport) -> Option<String> {
    let t = r.targets.iter().find(|t| t.role == "baseline")?;
    Some(t.label.clone())
}

fn candidates(r: &AbReport) -> Vec<String> {
    r.targets
        .iter()
        .filter(|t| t.role == "candidate")
        .map(|t| t.label.clone())
        .collect()
}

/// Sets `finding` and `not_a_finding` on every candidate's ratio of every row.
pub fn judge(r: &mut AbReport) {
    let disturbed = r.load.as_ref().is_some_and(|l| l.disturbed);
    let baseline = baseline_label(r);
    let candidates = candidates(r);
    let judge_row = |ratios: &mut Vec<RatioReport>| {
        let a2 = baseline
            .as_ref()
            .and_then(|b| ratios.iter().find(|x| &x.target == b))
            .map_or((None, None), |x| (x.mean, x.median));
        for x in ratios.iter_mut() {
            if !candidates.contains(&x.target) {
                continue;
            }
            let e = Evidence {
                mean: x.mean.as_ref(),
                median: x.median.as_ref(),
                baseline_mean: a2.0.as_ref(),
                baseline_median: a2.1.as_ref(),
                disturbed,
            };
            let v = verdict::judge(&e);
            x.finding = v == Some(Ok(()));
            x.not_a_finding = v.and_then(Result::err);
        }
    };
    judge_row(&mut r.overall.ratios);
    r.per_command
        .values_mut()
        .for_each(|row| judge_row(&mut row.ratios));
    r.per_namespace
        .values_mut()
        .for_each(|row| judge_row(&mut row.ratios));
    r.shapes
        .iter_mut()
        .for_each(|row| judge_row(&mut row.ratios));
}

/// The baseline's mean ratio in a row, when the run has a baseline (A2).
fn baseline_ratio<'a>(
    baseline: Option<&str>,
    ratios: &'a [RatioReport],
) -> Option<(&'a str, &'a crate::replay::ab::stats::RatioEstimate)> {
    let ratio = ratios
        .iter()
        .find(|x| Some(x.target.as_str()) == baseline)?;
    Some((ratio.target.as_str(), ratio.mean.as_ref()?))
}

/// With A2, every command, namespace and query shape: what A2/A was, and each candidate judged
/// against it.
pub fn control_checks(r: &AbReport) -> Vec<ControlCheck> {
    let control = r.targets.first().map_or("A", |t| t.label.as_str());
    let baseline = baseline_label(r);
    let candidates = candidates(r);
    let commands = r
        .per_command
        .iter()
        .map(|(k, row)| ("command", k.clone(), None, row));
    let namespaces = r.per_namespace.iter();
    let rows = commands
        .map(|(kind, name, hash, row)| (kind, name, hash, &row.ratios))
        .chain(namespaces.map(|(k, row)| ("namespace", k.clone(), None, &row.ratios)))
        .chain(r.shapes.iter().map(|s| {
            let name = format!("`{}`", s.shape);
            ("shape", name, Some(s.hash.as_str()), &s.ratios)
        }));
    let mut out = Vec::new();
    for (kind, name, hash, ratios) in rows {
        let Some((baseline, a2)) = baseline_ratio(baseline.as_deref(), ratios) else {
            continue;
        };
        for ratio in ratios {
            let Some(b) = ratio
                .mean
                .filter(|m| candidates.contains(&ratio.target) && m.pairs >= MIN_PAIRS_FOR_FINDING)
            else {
                continue;
            };
            let names = control::Names {
                kind,
                name: &name,
                hash,
                control,
                baseline,
                candidate: &ratio.target,
            };
            out.push(control::check(&names, a2, &b));
        }
    }
    out
}

/// The candidates' ratios per command, per namespace, then per query shape (ranked by how much
/// total time moved).
fn judged(r: &AbReport) -> impl Iterator<Item = &RatioReport> {
    let rows = r.per_command.values().chain(r.per_namespace.values());
    rows.map(|row| &row.ratios)
        .chain(r.shapes.iter().map(|s| &s.ratios))
        .flatten()
}

/// The sentences worth reading first: failures, findings per command, per namespace, then per
/// query shape, real differences.
pub fn findings(r: &AbReport) -> Vec<String> {
    let mut out: Vec<String> = r
        .targets
        .iter()
        .filter_map(|t| {
            t.error
                .as_ref()
                .map(|e| format!("{} failed part-way: {e}", t.label))
        })
        .collect();
    out.extend(
        judged(r)
            .filter(|x| x.finding)
            .filter_map(|x| x.sentence.clone()),
    );
    for name in &r.differences.real {
        let f = &r.differences.fields[name];
        out.push(format!(
            "replies differ on {name} in {} of {} compared requests",
            f.unexplained, f.compared
        ));
    }
    out
}

/// The ratios clear of 1 that are not findings: each sentence with why.
pub fn set_aside(r: &AbReport) -> Vec<String> {
    judged(r)
        .filter_map(|x| {
            let why = x.not_a_finding.as_ref()?;
            let sentence = x.sentence.as_ref()?;
            Some(format!("{sentence}: not a finding, {why}"))
        })
        .collect()
}

/// A line per target where more than [`FAILED_WARNING`] of the requests failed, and with it what
/// a majority of DuplicateKey usually means.
pub fn warnings(r: &AbReport) -> Vec<String> {
    let mut out = Vec::new();
    for t in &r.targets {
        let (ops, failed) = (t.replay.summary.ops, t.replay.summary.overall.errors);
        if ops == 0 || (failed as f64) <= FAILED_WARNING * ops as f64 {
            continue;
        }
        let mut line = format!(
            "{}: {} of {} requests failed ({}): the figures compare failures as much as the workload",
            t.label,
            grouped(failed),
            grouped(ops),
            units::percent(failed as f64 / ops as f64 * 100.0)
        );
        if let Some(hint) = t.replay.errors.duplicate_key_hint() {
            line.push_str("; ");
            line.push_str(&hint);
        }
        out.push(line);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::figures::errors::ErrorByCode;
    use crate::replay::ab::model::{AbShapeRow, TargetReport};
    use crate::replay::ab::stats::RatioEstimate;

    fn est(ratio: f64, low: f64, high: f64) -> Option<RatioEstimate> {
        Some(RatioEstimate {
            ratio,
            low,
            high,
            confidence: 0.95,
            pairs: 200,
        })
    }

    fn target(label: &str, role: &str) -> TargetReport {
        TargetReport {
            label: label.into(),
            role: role.into(),
            ..TargetReport::default()
        }
    }

    fn ratio(
        target: &str,
        mean: Option<RatioEstimate>,
        median: Option<RatioEstimate>,
    ) -> RatioReport {
        RatioReport {
            target: target.into(),
            mean,
            median,
            sentence: Some(format!("{target} differs")),
            ..RatioReport::default()
        }
    }

    #[test]
    fn shapes_are_judged_against_a2_and_a_tail_is_set_aside() {
        let mut r = AbReport {
            targets: vec![
                target("A", "control"),
                target("B", "candidate"),
                target("A2", "baseline"),
            ],
            ..AbReport::default()
        };
        r.shapes.push(AbShapeRow {
            hash: "0123456789abcdef".into(),
            shape: "find shop.orders {status: ?string}".into(),
            ratios: vec![
                ratio("B", est(1.73, 1.50, 1.99), est(1.70, 1.60, 1.80)),
                ratio("A2", est(1.01, 0.99, 1.03), est(1.0, 0.99, 1.01)),
            ],
            ..AbShapeRow::default()
        });
        r.shapes.push(AbShapeRow {
            hash: "fedcba9876543210".into(),
            shape: "find shop.customers {city: ?string}".into(),
            ratios: vec![
                ratio("B", est(0.62, 0.47, 0.81), est(1.0, 0.93, 1.01)),
                ratio("A2", est(1.2, 1.05, 1.4), est(1.0, 0.98, 1.02)),
            ],
            ..AbShapeRow::default()
        });
        judge(&mut r);
        let control = control_checks(&r);
        let kinds: Vec<(&str, Option<&str>, bool)> = control
            .iter()
            .map(|c| (c.kind.as_str(), c.hash.as_deref(), c.within))
            .collect();
        assert_eq!(
            kinds,
            vec![
                ("shape", Some("0123456789abcdef"), false),
                ("shape", Some("fedcba9876543210"), false)
            ]
        );
        assert!(control[0]
            .sentence
            .contains("on `find shop.orders {status: ?string}`"));
        assert_eq!(findings(&r), vec!["B differs"]);
        assert_eq!(
            set_aside(&r),
            vec!["B differs: not a finding, tail only: median 1.00x (0.93-1.01x)"]
        );
        // The copy of the control is never judged.
        assert!(!r.shapes[0].ratios[1].finding && r.shapes[0].ratios[1].not_a_finding.is_none());
    }

    #[test]
    fn many_failed_requests_make_a_warning_with_the_snapshot_hint() {
        let mut b = target("B", "candidate");
        b.replay.summary.ops = 1_000;
        b.replay.summary.overall.errors = 170;
        b.replay.errors.errors_by_code.push(ErrorByCode {
            command: "insert".into(),
            code: Some(11000),
            count: 170,
            ..ErrorByCode::default()
        });
        let mut a = target("A", "control");
        a.replay.summary.ops = 1_000;
        a.replay.summary.overall.errors = 10;
        let r = AbReport {
            targets: vec![a, b],
            ..AbReport::default()
        };
        let w = warnings(&r);
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].starts_with("B: 170 of 1,000 requests failed (17.0%)"),
            "{w:?}"
        );
        assert!(w[0].contains("restore a snapshot"), "{w:?}");
    }
}
