//! `mongotape merge`: shard reports in, one report out. Everything else is in
//! `mongotape::replay::merge`.

use super::exit::Exit;
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Args)]
pub struct MergeArgs {
    /// The shard reports (`replay --shard I/N --report ...`).
    #[arg(required = true, num_args = 1..)]
    reports: Vec<PathBuf>,
    /// Write the merged JSON report here (docs/schemas/merge.schema.json).
    #[arg(short = 'o', long, value_name = "FILE")]
    report: Option<PathBuf>,
    /// Write the merged HTML report here.
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
    /// No text summary on stdout (the global -q).
    #[arg(skip)]
    pub quiet: bool,
}

pub fn run(args: MergeArgs) -> anyhow::Result<ExitCode> {
    let outputs = [args.report.as_deref(), args.html.as_deref()];
    mongotape::capture::output::guard(&args.reports, &outputs)?;
    let merged = mongotape::replay::merge::merge_files(&args.reports)?;
    let out = super::output::Outputs {
        report: args.report.as_deref(),
        html: args.html.as_deref(),
        quiet: args.quiet,
    };
    super::output::report(
        &merged,
        &out,
        "merged report",
        mongotape::report::html::replay::render_html,
        |r| Some(r.render_text()),
    )?;
    let Some(m) = &merged.merge else {
        return Ok(Exit::Ok.into());
    };
    if !m.missing.is_empty() {
        super::output::note!(
            "mongotape: merge: missing shard(s) {}",
            m.missing.join(", ")
        );
    }
    for (label, why) in &m.failed {
        super::output::note!("mongotape: merge: shard {label} failed: {why}");
    }
    Ok(if m.missing.is_empty() && m.failed.is_empty() {
        Exit::Ok
    } else {
        Exit::IncompleteMerge
    }
    .into())
}
