//! `inspect` and `cat`: looking at a capture.

use super::exit::Exit;
use super::output;
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
    /// Print JSON instead of tables (docs/schemas/inspect.schema.json).
    #[arg(short, long)]
    json: bool,
}

pub fn inspect(args: InspectArgs) -> anyhow::Result<ExitCode> {
    let report = inspect_files(&args.files)?;
    if args.json {
        output::json(&report)?;
    } else {
        output::text(&report.render_text())?;
    }
    // A capture that could not be read to its end still prints what was readable, then fails.
    Ok(match report.error {
        Some(_) => Exit::DamagedCapture.into(),
        None => Exit::Ok.into(),
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
    /// Stop after this many records.
    #[arg(short = 'n', long)]
    limit: Option<u64>,
    /// Bodies in canonical extended JSON, every BSON type kept (`{"$numberLong": "5"}`,
    /// `{"$date": {"$numberLong": ...}}`), as bsondump writes it; relaxed by default.
    #[arg(long)]
    canonical: bool,
    /// Each record indented over several lines instead of one JSON line each.
    #[arg(long)]
    pretty: bool,
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
        canonical: args.canonical,
        pretty: args.pretty,
    };
    let mut out = BufWriter::new(std::io::stdout().lock());
    let end = match report::cat::cat(&mut reader, &options, &mut out) {
        Ok(end) => end,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => return Ok(ExitCode::SUCCESS),
        Err(e) => return Err(e.into()),
    };
    if let Err(e) = out.flush() {
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            return Err(e.into());
        }
    }
    if let Some(e) = end.capture_error {
        eprintln!("mongotape: {e}");
        return Ok(Exit::DamagedCapture.into());
    }
    Ok(Exit::Ok.into())
}
