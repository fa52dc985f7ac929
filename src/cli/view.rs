//! `inspect` and `cat`: looking at a capture.

use clap::Args;
use mongotape::capture::CaptureSet;
use mongotape::report::{self, cat::CatOptions, inspect::inspect_files};
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Args)]
pub struct InspectArgs {
    /// Capture file, or the segments of a rotated recording (several files, or their folder).
    #[arg(required = true, num_args = 1..)]
    files: Vec<PathBuf>,
    /// Print JSON instead of tables.
    #[arg(long)]
    json: bool,
}

pub fn inspect(args: InspectArgs) -> anyhow::Result<ExitCode> {
    let report = inspect_files(&args.files)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", report.render_text());
    }
    // A capture that could not be read to its end still prints what was readable, then fails.
    Ok(if report.error.is_some() {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    })
}

#[derive(Args)]
pub struct CatArgs {
    /// Capture file, or the segments of a rotated recording (several files, or their folder).
    #[arg(required = true, num_args = 1..)]
    files: Vec<PathBuf>,
    /// Only these connections (repeatable).
    #[arg(long = "conn")]
    conns: Vec<u64>,
    /// Only this command (repeatable); replies follow their request's command.
    #[arg(long = "command")]
    commands: Vec<String>,
    /// Only this namespace, `db` or `db.collection` (repeatable).
    #[arg(long = "ns")]
    namespaces: Vec<String>,
    /// Leave out message bodies.
    #[arg(long)]
    no_body: bool,
    /// Also print connection events (open, close, client metadata, gaps).
    #[arg(long)]
    events: bool,
    /// Stop after this many lines.
    #[arg(long)]
    limit: Option<u64>,
}

pub fn cat(args: CatArgs) -> anyhow::Result<ExitCode> {
    let mut reader = CaptureSet::open(&args.files)?;
    let options = CatOptions {
        conns: args.conns,
        commands: args.commands,
        namespaces: args.namespaces,
        no_body: args.no_body,
        events: args.events,
        limit: args.limit,
    };
    let mut out = BufWriter::new(std::io::stdout().lock());
    let end = match report::cat::cat(&mut reader, &options, &mut out) {
        Ok(end) => end,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => return Ok(ExitCode::SUCCESS),
        Err(e) => return Err(e.into()),
    };
    out.flush()?;
    if let Some(e) = end.capture_error {
        eprintln!("mongotape: {e}");
        return Ok(ExitCode::from(2));
    }
    Ok(ExitCode::SUCCESS)
}
