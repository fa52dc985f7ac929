//! `mongotape slice`: part of a capture as a capture of its own (docs/slice.md).

use super::exit::{usage, Exit};
use super::output;
use super::window::WindowArgs;
use clap::Args;
use mongotape::capture::{CaptureSet, CaptureWriter};
use mongotape::slice::SliceSummary;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Args)]
pub struct SliceArgs {
    /// Capture file, or the segments of a rotated recording (several files, or their folder).
    #[arg(required = true, num_args = 1..)]
    files: Vec<PathBuf>,
    /// Write the slice here (refused if it exists, unless --force).
    #[arg(short, long, value_name = "OUT.mtape")]
    out: PathBuf,
    /// Replace the output file if it exists.
    #[arg(long)]
    force: bool,
    #[command(flatten)]
    window: WindowArgs,
    /// Only connections whose driver is named so (`pymongo`, `nodejs`, `mongosh`, without case;
    /// repeatable).
    #[arg(long = "driver", value_name = "NAME")]
    drivers: Vec<String>,
    /// Only connections from this client address: an IP, or `ip:port` (repeatable).
    #[arg(long = "client", value_name = "IP")]
    clients: Vec<String>,
    /// Only these recorded connection ids (comma-separated, repeatable).
    #[arg(long = "connection", value_delimiter = ',', value_name = "ID")]
    connections: Vec<u64>,
    /// Only this namespace: `db`, `db.coll` or a prefix ending in `*` (repeatable).
    #[arg(long = "namespace", value_name = "NS")]
    namespaces: Vec<String>,
    /// Only these commands (comma-separated, repeatable); replies go with their requests.
    #[arg(long = "command", value_delimiter = ',', value_name = "NAME")]
    commands: Vec<String>,
    /// Print what was kept and left out as JSON on stdout (the text goes to stderr either way,
    /// unless -q).
    #[arg(short, long)]
    json: bool,
    #[arg(skip)]
    pub quiet: bool,
}

pub fn run(args: SliceArgs) -> anyhow::Result<ExitCode> {
    mongotape::capture::output::guard(&args.files, &[Some(&args.out)])?;
    let mut options = args.window.options()?;
    options.conns.drivers = args.drivers.clone();
    options.conns.clients = args.clients.clone();
    options.conns.connections = args.connections.clone();
    options.messages.namespaces = args.namespaces.clone();
    options.messages.commands = args.commands.clone();
    if options.is_empty() {
        return Err(usage(
            "slice needs a filter: --since, --until, --app, --driver, --client, --connection, \
             --namespace or --command",
        ));
    }
    let reader = CaptureSet::open(&args.files)?;
    let mut meta = reader.metadata().clone();
    meta.slice = Some(describe(&args));
    meta.segment = None;
    let out = &args.out;
    let written = mongotape::slice::write(reader, options, meta, |meta| match args.force {
        true => CaptureWriter::create(out, meta, 1),
        false => CaptureWriter::create_new(out, meta, 1),
    })?;
    let summary = written.summary;
    report(&args, &summary)?;
    if summary.nothing_kept() {
        super::window::nothing_matched(
            &format!("{} holds no message", args.out.display()),
            Some(&summary),
        );
        return Ok(Exit::NothingReplayed.into());
    }
    Ok(super::view::damage_status(&written.errors, written.source_complete).into())
}

fn report(args: &SliceArgs, summary: &SliceSummary) -> anyhow::Result<()> {
    if !args.quiet {
        for line in summary.render_text().lines() {
            output::note!("mongotape: {line}");
        }
        output::note!("mongotape: slice written to {}", args.out.display());
    }
    if args.json {
        output::json(summary)?;
    }
    Ok(())
}

/// What the slice's metadata says of where it came from: the files and the filters.
fn describe(args: &SliceArgs) -> String {
    let files: Vec<String> = args.files.iter().map(|f| f.display().to_string()).collect();
    let mut filters = args.window.labels();
    filters.extend(args.drivers.iter().map(|x| format!("driver={x}")));
    filters.extend(args.clients.iter().map(|x| format!("client={x}")));
    filters.extend(args.connections.iter().map(|x| format!("connection={x}")));
    filters.extend(args.namespaces.iter().map(|x| format!("namespace={x}")));
    filters.extend(args.commands.iter().map(|x| format!("command={x}")));
    format!("{}: {}", files.join(", "), filters.join(" "))
}
