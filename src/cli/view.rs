//! `inspect` and `cat`: looking at a capture.

use super::exit::Exit;
use super::output::{self, note};
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
    Ok(damage_status(&report.read_errors, report.complete).into())
}

/// The status of a reader (`inspect`, `cat`, `analyze`) once it printed what it could read: 3
/// when a file was damaged or the capture has no end record (a killed recorder, or one still
/// writing), each said on stderr; else 0.
pub fn damage_status(read_errors: &[impl std::fmt::Display], complete: bool) -> Exit {
    for e in read_errors {
        note!("mongotape: {e}");
    }
    if !read_errors.is_empty() {
        return Exit::DamagedCapture;
    }
    if !complete {
        note!(
            "mongotape: the capture has no end record: the recorder did not shut down cleanly \
             (killed, or still recording); everything in it was read",
        );
        return Exit::DamagedCapture;
    }
    Exit::Ok
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
    /// Only this namespace, `db`, `db.collection` or a prefix ending in `*` (repeatable).
    #[arg(long = "ns")]
    namespaces: Vec<String>,
    /// Leave out message bodies.
    #[arg(long)]
    no_body: bool,
    /// Also print connection events (open, close, client metadata, gaps, hello rewrites).
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
    /// Print only the K slowest requests, slowest first, as a table (latency from request to
    /// reply in the capture, t, connection, application, shape); with --json one JSON object
    /// each, with the request's body and the reply's outcome.
    #[arg(long, value_name = "K")]
    slowest: Option<usize>,
    /// With --slowest: JSON lines instead of a table (every other listing is JSON already).
    #[arg(short, long)]
    json: bool,
    #[command(flatten)]
    window: super::window::WindowArgs,
}

fn slowest_format(args: &CatArgs) -> report::cat::SlowestFormat {
    match args.json || args.pretty {
        true => report::cat::SlowestFormat::Json {
            pretty: args.pretty,
            no_body: args.no_body,
        },
        false => report::cat::SlowestFormat::Table,
    }
}

pub fn cat(args: CatArgs) -> anyhow::Result<ExitCode> {
    let filtered = !(args.window.is_empty()
        && args.conns.is_empty()
        && args.commands.is_empty()
        && args.namespaces.is_empty());
    let mut reader = args.window.options()?.apply(CaptureSet::open(&args.files)?);
    let format = slowest_format(&args);
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
    let listed = match args.slowest {
        Some(k) => report::cat::slowest(&mut reader, k, format, &mut out),
        None => report::cat::cat(&mut reader, &options, &mut out),
    };
    let end = match listed {
        Ok(end) => end,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => return Ok(ExitCode::SUCCESS),
        Err(e) => return Err(e.into()),
    };
    if let Err(e) = out.flush() {
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            return Err(e.into());
        }
    }
    if end.too_deep_documents > 0 {
        note!(
            "mongotape: {} document(s) nest deeper than {} levels: printed as {}",
            end.too_deep_documents,
            mongotape::wire::depth::MAX_DEPTH,
            report::cat::too_deep_json()
        );
    }
    if end.unanswered_untracked > 0 {
        note!(
            "mongotape: {} requests were not kept for pairing (over the bound on unanswered \
             requests): replies to them are printed without their command",
            end.unanswered_untracked
        );
    }
    // With --limit the listing may stop before the end record.
    let complete = end.complete || args.limit.is_some_and(|l| end.lines >= l);
    let status = damage_status(&end.capture_errors, complete);
    if filtered && end.lines == 0 {
        super::window::nothing_matched("nothing printed", reader.summary().as_ref());
        // A damaged capture says so first: what matched nothing may be what the damage cut.
        if matches!(status, Exit::Ok) {
            return Ok(Exit::NothingReplayed.into());
        }
    }
    Ok(status.into())
}
