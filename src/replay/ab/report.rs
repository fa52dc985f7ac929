//! The A/B report: every target's own replay report, and side by side per command and per
//! namespace their latencies, throughput, errors and server CPU, with the candidate's mean latency
//! over the control's and its bootstrap interval; then the reply differences. JSON (`--report`,
//! `docs/schemas/ab.schema.json`), text ([`AbReport::render_text`]) and HTML
//! (`report::html::ab`).

use super::collect::{Collected, PairCounts};
use super::config::AbConfig;
use super::diff::Differences;
use super::findings;
use super::stats::PairSample;
use crate::figures::summary::CommandSummary;
use crate::replay::config::options_report;
use crate::replay::report::run::RunReport;
use crate::replay::report::ReplayReport;
use crate::replay::ReplayConfig;

pub use super::model::{
    AbReport, AbRow, AbShapeRow, DifferencesReport, FieldReport, PairsReport, RatioReport,
    TargetReport, MIN_PAIRS_FOR_FINDING, SCHEMA_VERSION,
};

/// The control's view of the machine's load, without the other targets' servers (local
/// processes it would count as other work).
fn machine_load(targets: &[TargetReport]) -> Option<crate::replay::measure::load::LoadReport> {
    let load = targets.first()?.replay.load.clone()?;
    let servers: f64 = targets
        .iter()
        .skip(1)
        .filter_map(|t| t.replay.server.cpu_s)
        .sum();
    let other = load.other_cpu_s - servers;
    Some(load.with_other(other))
}

fn role(i: usize, ab: &AbConfig) -> &'static str {
    match (i, ab.roles().baseline) {
        (0, _) => "control",
        (i, Some(b)) if i == b => "baseline",
        _ => "candidate",
    }
}

impl AbReport {
    fn base(config: &ReplayConfig) -> AbReport {
        AbReport {
            schema_version: SCHEMA_VERSION,
            kind: "ab".into(),
            mongotape_version: env!("CARGO_PKG_VERSION").into(),
            capture: config.capture.display().to_string(),
            options: options_report(config),
            ..AbReport::default()
        }
    }

    /// A target failed before the run started: nothing was replayed.
    pub fn failed(config: &ReplayConfig, ab: &AbConfig, failed: ReplayReport) -> AbReport {
        let label = ab
            .targets
            .iter()
            .find(|t| failed.target.contains(&t.uri) || t.uri.contains(&failed.target))
            .map_or(failed.target.clone(), |t| t.label.clone());
        let mut r = AbReport::base(config);
        r.error = Some(format!(
            "{label}: {}",
            failed.error.clone().unwrap_or_default()
        ));
        r
    }

    pub fn build(
        config: &ReplayConfig,
        ab: &AbConfig,
        reports: Vec<ReplayReport>,
        collected: Collected,
        shapes: Vec<AbShapeRow>,
        run: RunReport,
        wall_s: f64,
    ) -> AbReport {
        let mut r = AbReport::base(config);
        r.wall_s = wall_s;
        r.run = run;
        let labels: Vec<String> = ab.targets.iter().map(|t| t.label.clone()).collect();
        r.targets = reports
            .into_iter()
            .enumerate()
            .map(|(i, rep)| TargetReport::of(labels[i].clone(), role(i, ab), rep))
            .collect();
        let Collected {
            per_command,
            per_shape: _,
            per_namespace,
            overall,
            counts,
            differences,
        } = collected;
        r.pairs = pairs_report(counts, differences.compared);
        control_in_flight(&mut r);
        r.load = machine_load(&r.targets);
        for t in &mut r.targets {
            // Each target's own view would count the other targets' servers as other work.
            t.replay.load = r.load.clone();
        }
        let pick = |t: &TargetReport, key: Option<&str>, ns: bool| -> CommandSummary {
            match (key, ns) {
                (None, _) => t.replay.summary.overall.clone(),
                (Some(k), false) => t
                    .replay
                    .summary
                    .per_command
                    .get(k)
                    .cloned()
                    .unwrap_or_default(),
                (Some(k), true) => t.replay.per_namespace.get(k).cloned().unwrap_or_default(),
            }
        };
        let row = |key: Option<&str>, ns: bool, sample: Option<&PairSample>| {
            let figures = r.targets.iter().map(|t| pick(t, key, ns)).collect();
            row_of(ab, &labels, figures, sample, key.unwrap_or("all requests"))
        };
        r.overall = row(None, false, Some(&overall));
        let commands: Vec<String> = r.targets[0]
            .replay
            .summary
            .per_command
            .keys()
            .cloned()
            .collect();
        r.per_command = commands
            .iter()
            .map(|c| (c.clone(), row(Some(c), false, per_command.get(c))))
            .collect();
        let namespaces: Vec<String> = r.targets[0].replay.per_namespace.keys().cloned().collect();
        r.per_namespace = namespaces
            .iter()
            .map(|n| (n.clone(), row(Some(n), true, per_namespace.get(n))))
            .collect();
        r.shapes = shapes;
        r.differences = DifferencesReport::of(ab, &differences);
        r.replayer_cpu_us_per_op = replayer_cpu_us_per_op(&r.targets);
        r.error = failures(&r.targets);
        r.complete = r.error.is_none() && r.targets.iter().all(|t| t.complete);
        findings::judge(&mut r);
        r.control = findings::control_checks(&r);
        r.findings = findings::findings(&r);
        r.set_aside = findings::set_aside(&r);
        r.warnings = findings::warnings(&r);
        add_plans(&mut r, config.explain);
        r
    }
}

/// The run's `ordering.mean_in_flight`: the control's.
fn control_in_flight(r: &mut AbReport) {
    if let (Some(o), Some(control)) = (&mut r.run.ordering, r.targets.first()) {
        o.mean_in_flight = control
            .replay
            .ordering
            .as_ref()
            .map_or(0.0, |c| c.mean_in_flight);
    }
}

/// `--explain`: every target's plans at the top, side by side per shape, and a finding for each
/// shape whose plan changed (the per-target reports keep none, to say it once).
fn add_plans(r: &mut AbReport, explain: bool) {
    if !explain {
        return;
    }
    let per_target = r
        .targets
        .iter_mut()
        .map(|t| (t.label.clone(), t.replay.plans.take().unwrap_or_default()))
        .collect();
    let (plans, changed) = crate::plan::text::side_by_side(per_target);
    let control = r.targets.first().map_or("A".into(), |t| t.label.clone());
    // The findings come in the order of the changed shapes' first entries.
    let mut hashes: Vec<&str> = Vec::new();
    for e in plans.iter().filter(|e| e.plan_changed == Some(true)) {
        if !hashes.contains(&e.hash.as_str()) {
            hashes.push(&e.hash);
        }
    }
    let findings: Vec<String> = changed
        .into_iter()
        .zip(hashes.iter().map(|h| shape_latency(&r.shapes, &control, h)))
        .map(|(f, latency)| f + &latency)
        .collect();
    r.plans = Some(plans);
    r.findings.extend(findings);
}

/// "; latency B/A 0.41x (95% interval 0.37-0.45x)" for a shape the run measured on every
/// candidate; empty when it has no ratio (too few pairs, or past the shape cap).
fn shape_latency(shapes: &[AbShapeRow], control: &str, hash: &str) -> String {
    let Some(row) = shapes.iter().find(|s| s.hash == hash) else {
        return String::new();
    };
    row.ratios
        .iter()
        .filter_map(|x| {
            let m = x.mean.as_ref()?;
            Some(format!(
                "; latency {}/{control} {}",
                x.target,
                m.interval_text()
            ))
        })
        .collect()
}

impl DifferencesReport {
    fn of(ab: &AbConfig, differences: &Differences) -> DifferencesReport {
        DifferencesReport {
            baseline: ab.roles().baseline.is_some(),
            compared: differences.compared,
            relative_threshold: ab.diff.relative,
            absolute_threshold: ab.diff.absolute,
            noise_threshold: ab.diff.noise_threshold,
            ignored: ab.diff.ignored.clone(),
            strict_order: ab.diff.strict_order,
            reordered: differences.reordered,
            real: differences
                .fields
                .iter()
                .filter(|(_, f)| f.real)
                .map(|(k, _)| k.clone())
                .collect(),
            fields: differences
                .fields
                .iter()
                .filter(|(_, f)| f.differed > 0 || f.noise > 0)
                .map(|(k, f)| (k.clone(), f.into()))
                .collect(),
        }
    }
}

/// This process's CPU over the requests of the target that was sent the most.
fn replayer_cpu_us_per_op(targets: &[TargetReport]) -> Option<f64> {
    targets[0].replay.replayer.cpu_s.and_then(|cpu| {
        let ops = targets
            .iter()
            .map(|t| t.replay.summary.ops)
            .max()
            .unwrap_or(0);
        (ops > 0).then(|| cpu / ops as f64 * 1e6)
    })
}

fn pairs_report(c: PairCounts, compared: u64) -> PairsReport {
    PairsReport {
        paired: c.paired,
        unpaired: c.unpaired,
        unacknowledged: c.unacknowledged,
        replies_compared: compared,
    }
}

fn failures(targets: &[TargetReport]) -> Option<String> {
    let failed: Vec<String> = targets
        .iter()
        .filter_map(|t| t.error.as_ref().map(|e| format!("{} failed: {e}", t.label)))
        .collect();
    (!failed.is_empty()).then(|| failed.join("; "))
}

pub(super) fn row_of(
    ab: &AbConfig,
    labels: &[String],
    targets: Vec<CommandSummary>,
    sample: Option<&PairSample>,
    what: &str,
) -> AbRow {
    let rel = |b: f64, a: f64| (a > 0.0 && b > 0.0).then(|| b / a);
    let control = &targets[0];
    let ratios = (1..targets.len())
        .map(|i| {
            let t = &targets[i];
            let mean = sample.and_then(|s| s.ratio(0, i, &ab.bootstrap));
            let median = sample.and_then(|s| s.median_ratio(0, i, ab.bootstrap.confidence));
            RatioReport {
                target: labels[i].clone(),
                p50: rel(t.latency.p50_us, control.latency.p50_us),
                p99: rel(t.latency.p99_us, control.latency.p99_us),
                ops_per_s: rel(t.ops_per_s, control.ops_per_s),
                sentence: mean.map(|m| {
                    let mut sentence = m.sentence(&labels[i], what);
                    if let Some(md) = &median {
                        sentence.push_str(&format!("; per request, median {}", md.interval_text()));
                    }
                    sentence
                }),
                mean,
                median,
                ..RatioReport::default()
            }
        })
        .collect();
    AbRow {
        sample_us: sample.map_or_else(Vec::new, |s| {
            (0..targets.len()).map(|i| s.latencies_us(i)).collect()
        }),
        targets,
        ratios,
    }
}
