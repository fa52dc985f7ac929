//! `mongotape analyze`: is it the server or the client, from a capture alone.

use super::exit::usage;
use super::output;
use clap::Args;
use mongotape::report::analyze::analyze_files_sliced;
use mongotape::report::analyze::explain::ExplainTarget;
use mongotape::report::analyze::text::render_text;
use mongotape::report::analyze::Limits;
use mongotape::report::html::analyze::render_html;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Args)]
pub struct AnalyzeArgs {
    /// Capture file, or the segments of a rotated recording (several files, or their folder).
    #[arg(required = true, num_args = 1..)]
    files: Vec<PathBuf>,
    /// Print JSON instead of tables (it carries `summary`, which `compare` reads;
    /// docs/schemas/analyze.schema.json).
    #[arg(short, long)]
    json: bool,
    /// Also write a self-contained HTML report with charts here.
    #[arg(long, value_name = "OUT.html")]
    html: Option<PathBuf>,
    /// The name of this capture's column in `compare` (default: the file stem).
    #[arg(long)]
    label: Option<String>,
    /// Distinct query shapes kept (docs/shapes.md); the requests of further ones are added up
    /// under `shapes_other`. 0 turns shapes off.
    #[arg(long, value_name = "N", default_value_t = mongotape::shape::DEFAULT_MAX_SHAPES)]
    max_shapes: usize,
    /// Explain each query shape's first request (of find, aggregate, count, distinct, update,
    /// delete, findAndModify) on this server, a connection string as `replay --target` takes;
    /// writes are explained, not applied. The plans go in `plans` (docs/shapes.md).
    #[arg(long, value_name = "URI")]
    explain: Option<String>,
    /// With --explain: seconds to wait for the server's connection or any one reply.
    #[arg(long, default_value = "30", requires = "explain", value_name = "SECS",
          value_parser = mongotape::figures::units::parse_duration)]
    explain_timeout: std::time::Duration,
    /// The slowest requests listed (`slowest`: time, connection, application, shape, latency,
    /// body); 0 lists none.
    #[arg(long, value_name = "K", default_value_t = mongotape::figures::slowest::DEFAULT_SLOWEST)]
    slowest: usize,
    #[command(flatten)]
    window: super::window::WindowArgs,
}

pub fn run(args: AnalyzeArgs) -> anyhow::Result<ExitCode> {
    mongotape::capture::output::guard(&args.files, &[args.html.as_deref()])?;
    let timeout = args.explain_timeout;
    let explain = args
        .explain
        .as_deref()
        .map(|uri| ExplainTarget::new(uri, timeout))
        .transpose()
        .map_err(|e| usage(e.to_string()))?;
    let limits = Limits {
        max_shapes: args.max_shapes,
        slowest: args.slowest,
    };
    let slice = args.window.options()?;
    let (report, sliced) = analyze_files_sliced(
        &args.files,
        args.label.as_deref(),
        limits,
        explain.as_ref(),
        slice,
    )?;
    if args.json {
        output::json(&report)?;
    } else {
        output::text(&render_text(&report))?;
    }
    if let Some(path) = &args.html {
        output::report_file(path, render_html(&report).as_bytes(), "HTML report")?;
        output::note!("mongotape: HTML report written to {}", path.display());
    }
    let c = &report.capture;
    let status = super::view::damage_status(&c.read_errors, c.complete);
    if let Some(s) = sliced.filter(|s| s.nothing_kept()) {
        super::window::nothing_matched("the report is empty", Some(&s));
        // A damaged capture says so first (exit 3), as `cat` does.
        if matches!(status, super::exit::Exit::Ok) {
            return Ok(super::exit::Exit::NothingReplayed.into());
        }
    }
    Ok(status.into())
}
