//! `mongotape compare`: reports side by side.

use super::exit::Exit;
use super::output;
use anyhow::Context;
use clap::Args;
use mongotape::report::compare::{compare, load_summary};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Args)]
pub struct CompareArgs {
    /// Report JSON files (`analyze --json` or replay reports); ratios are against the first.
    #[arg(required = true, num_args = 1..)]
    reports: Vec<PathBuf>,
    /// Print JSON instead of tables (docs/schemas/compare.schema.json).
    #[arg(short, long)]
    json: bool,
    /// Also write a self-contained HTML report with charts here.
    #[arg(long, value_name = "OUT.html")]
    html: Option<PathBuf>,
}

pub fn run(args: CompareArgs) -> anyhow::Result<ExitCode> {
    let summaries = args
        .reports
        .iter()
        .map(|p| load_summary(p))
        .collect::<Result<Vec<_>, _>>()?;
    let files: Vec<String> = args
        .reports
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    let report = compare(&summaries, &files);
    if args.json {
        output::json(&report)?;
    } else {
        output::text(&report.render_text())?;
    }
    if let Some(path) = &args.html {
        std::fs::write(path, report.render_html())
            .with_context(|| format!("cannot write the HTML report to {}", path.display()))?;
        eprintln!("mongotape: HTML report written to {}", path.display());
    }
    Ok(Exit::Ok.into())
}
