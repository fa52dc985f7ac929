//! `mongotape replay --target A --target B [--target A2]`: the A/B options and outputs. Everything
//! else is in `mongotape::replay::ab`.

use super::exit::{ensure_usage, Exit};
use super::output::Outputs;
use clap::Args;
use mongotape::replay::ab::model::AbReport;
use mongotape::replay::ab::{self, diff::DiffOptions, stats::Bootstrap, AbConfig, AbTarget};
use mongotape::replay::ReplayConfig;
use std::process::ExitCode;

/// Options of an A/B replay (two or three `--target`).
#[derive(Args)]
pub struct AbArgs {
    /// A/B: numbers in replies within this relative difference count as equal (0.05 = 5%).
    #[arg(long, value_name = "FRACTION", default_value_t = 0.0)]
    diff_relative: f64,
    /// A/B: numbers in replies within this absolute difference count as equal.
    #[arg(long, value_name = "AMOUNT", default_value_t = 0.0)]
    diff_absolute: f64,
    /// A/B with A2: a reply field that differs between A and A2 in more than this share of the
    /// requests is noise, left out of the real differences (default 0: any difference between A
    /// and A2 makes the field noise).
    #[arg(long, value_name = "FRACTION", default_value_t = 0.0)]
    noise_threshold: f64,
    /// A/B: a reply field not to compare (its name as reported, e.g. `cursor.firstBatch[].ts`;
    /// repeatable).
    #[arg(long = "ignore-field", value_name = "FIELD")]
    ignore_fields: Vec<String>,
    /// A/B: compare the documents of a reply position by position even when the request asked
    /// for no order (a find without sort, an aggregate without $sort); by default such replies
    /// holding the same documents in another order do not differ.
    #[arg(long)]
    strict_order: bool,
    /// A/B: confidence of the ratio intervals.
    #[arg(long, value_name = "FRACTION", default_value_t = 0.95)]
    confidence: f64,
    /// A/B: seed of the bootstrap (the same run gives the same intervals).
    #[arg(long, value_name = "N", default_value_t = 1)]
    seed: u64,
}

const DEFAULT_LABELS: [&str; 3] = ["A", "B", "A2"];

/// The targets, their labels and pids, and the comparison's options, checked.
fn ab_config(
    uris: &[String],
    labels: &[String],
    pids: &[u32],
    args: &AbArgs,
) -> anyhow::Result<AbConfig> {
    ensure_usage!(
        uris.len() <= 3,
        "--target: at most three (A, B and A2), {} given",
        uris.len()
    );
    ensure_usage!(
        labels.len() <= uris.len(),
        "--label: {} given for {} targets (one per target, in target order)",
        labels.len(),
        uris.len()
    );
    ensure_usage!(
        pids.len() <= uris.len(),
        "--server-pid: {} given for {} targets (one per target, in target order)",
        pids.len(),
        uris.len()
    );
    ensure_usage!(
        args.confidence > 0.0 && args.confidence < 1.0,
        "--confidence must be between 0 and 1"
    );
    let targets = uris
        .iter()
        .enumerate()
        .map(|(i, uri)| AbTarget {
            uri: uri.clone(),
            label: labels
                .get(i)
                .cloned()
                .unwrap_or_else(|| DEFAULT_LABELS[i].to_owned()),
            server_pid: pids.get(i).copied(),
        })
        .collect();
    let mut diff = DiffOptions {
        relative: args.diff_relative,
        absolute: args.diff_absolute,
        noise_threshold: args.noise_threshold,
        strict_order: args.strict_order,
        ..DiffOptions::default()
    };
    diff.ignored.extend(args.ignore_fields.iter().cloned());
    Ok(AbConfig {
        targets,
        diff,
        bootstrap: Bootstrap {
            confidence: args.confidence,
            seed: args.seed,
            ..Bootstrap::default()
        },
    })
}

pub fn run(
    config: ReplayConfig,
    uris: &[String],
    labels: &[String],
    pids: &[u32],
    args: &AbArgs,
    fail_on_state_divergence: bool,
    out: Outputs<'_>,
) -> anyhow::Result<ExitCode> {
    let ab_config = ab_config(uris, labels, pids, args)?;
    let report = ab::run(config, ab_config)?;
    super::output::report(
        &report,
        &out,
        "report",
        mongotape::report::html::ab::render_html,
        |r| Some(r.render_text()),
    )?;
    if let Some(e) = &report.error {
        super::output::note!("mongotape: A/B replay: {e}");
        return Ok(Exit::Failure.into());
    }
    if report
        .targets
        .iter()
        .any(|t| t.replay.capture_error.is_some())
    {
        // As a single replay of a damaged capture exits (2 is a usage error).
        super::output::note!("mongotape: capture read only in part");
        return Ok(Exit::DamagedCapture.into());
    }
    if let Some(exit) = state_status(&report, fail_on_state_divergence) {
        return Ok(exit.into());
    }
    Ok(Exit::Ok.into())
}

/// An A/B replay's exit status for `--fail-on-state-divergence` (the other thresholds judge one
/// target's replay): each target's end against the capture's, and the targets' against each
/// other; `None` when it passed or was not asked.
fn state_status(report: &AbReport, fail_on_state_divergence: bool) -> Option<Exit> {
    if !fail_on_state_divergence {
        return None;
    }
    let mut crossed = false;
    for t in &report.targets {
        let v = mongotape::replay::gates::state_verdict(&t.replay);
        super::output::note!("mongotape: {}: threshold {v}", t.label);
        crossed |= v.crossed;
    }
    if let Some(between) = report.state_between.as_ref().filter(|b| b.differs()) {
        super::output::note!("mongotape: threshold FAILED: {}", between.text().trim_end());
        crossed = true;
    }
    crossed.then_some(Exit::Threshold)
}
