//! `mongotape compare`: reports side by side.

use super::exit::Exit;
use super::output;
use clap::Args;
use mongotape::report::compare::{compare, compare_repeats, compare_shapes, load_columns};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Args)]
#[command(
    after_help = "Repeated runs: give every run's report and --group. Reports with the same \
label (set by `analyze --label` / `replay --label`) are rounds of one run, in the order given, and make \
one column: each figure is the median over the rounds with its spread (min-max), and each ratio has a \
95% bootstrap interval over the rounds (each column resampled independently, fixed seed), starred when it excludes 1 \
(beyond noise).\n\n  mongotape compare --group pymongo-r0.json php-r0.json pymongo-r1.json \
php-r1.json pymongo-r2.json php-r2.json"
)]
pub struct CompareArgs {
    /// Report JSON files (`analyze --json`, replay or A/B reports: an A/B report is a column per
    /// target; a shadow's report is production and a column per target); ratios are against the
    /// first.
    #[arg(required = true, num_args = 1..)]
    reports: Vec<PathBuf>,
    /// Reports with the same label are repeats of one run: one column with medians, spreads and
    /// ratio intervals (see below).
    #[arg(long)]
    group: bool,
    /// Print JSON instead of tables (docs/schemas/compare.schema.json).
    #[arg(short, long)]
    json: bool,
    /// Also write a self-contained HTML report with charts here.
    #[arg(long, value_name = "OUT.html")]
    html: Option<PathBuf>,
}

pub fn run(args: CompareArgs) -> anyhow::Result<ExitCode> {
    mongotape::capture::output::guard(&args.reports, &[args.html.as_deref()])?;
    // An A/B report is a column per target.
    let loaded = load_columns(&args.reports)?;
    let (summaries, files, errors) = (loaded.summaries, loaded.files, loaded.errors);
    let labels: Vec<String> = summaries.iter().map(|s| s.label.clone()).collect();
    let report = if args.group {
        compare_repeats(&summaries, &files)
    } else {
        let mut report = compare(&summaries, &files);
        report.shapes = compare_shapes(&loaded.shapes);
        report
    }
    .with_errors(&labels, &files, errors);
    if args.json {
        output::json(&report)?;
    } else {
        output::text(&report.render_text())?;
    }
    if let Some(path) = &args.html {
        output::report_file(path, report.render_html().as_bytes(), "HTML report")?;
        output::note!("mongotape: HTML report written to {}", path.display());
    }
    Ok(Exit::Ok.into())
}
