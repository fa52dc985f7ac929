//! `mongotape analyze`: is it the server or the client, from a capture alone.

use super::output;
use clap::Args;
use mongotape::report::analyze::text::render_text;
use mongotape::report::analyze::{analyze_files_limited, Limits};
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
    /// under `shapes_other`.
    #[arg(long, value_name = "N", default_value_t = mongotape::shape::DEFAULT_MAX_SHAPES)]
    max_shapes: usize,
    /// The slowest requests listed (`slowest`: time, connection, application, shape, latency,
    /// body); 0 lists none.
    #[arg(long, value_name = "K", default_value_t = mongotape::figures::slowest::DEFAULT_SLOWEST)]
    slowest: usize,
}

pub fn run(args: AnalyzeArgs) -> anyhow::Result<ExitCode> {
    let limits = Limits {
        max_shapes: args.max_shapes,
        slowest: args.slowest,
    };
    let report = analyze_files_limited(&args.files, args.label.as_deref(), limits)?;
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
    Ok(super::view::damage_status(&c.read_errors, c.complete).into())
}
