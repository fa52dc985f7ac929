//! `mongotape snapshot`: the starting state of some namespaces, in mongodump's layout. Everything
//! else is in `mongotape::state`.

use super::exit::{ensure_usage, usage, Exit};
use super::help::About;
use super::output::note;
use anyhow::Context;
use clap::Args;
use mongotape::state::{NsPattern, SnapshotOptions};
use std::path::PathBuf;
use std::process::ExitCode;

pub const ABOUT: About = About::new(
    "Examples:
  mongotape snapshot mongodb://db0:27017/?replicaSet=rs0 --ns 'shop.*' -o start.snapshot
  mongotape snapshot 127.0.0.1:27017 --ns shop.orders --ns shop.customers -o s --gzip

See docs/state.md.",
    &[Exit::Ok, Exit::Failure, Exit::Usage],
);

#[derive(Args)]
pub struct SnapshotArgs {
    /// The server to read: `host:port` or a connection string (its credentials are used to
    /// read, never written down).
    uri: String,
    /// Namespaces to snapshot: `DB.*` (every collection of DB) or `DB.COLLECTION`; repeatable.
    /// Never admin, config, local or a system.* collection.
    #[arg(long = "ns", value_name = "PATTERN", required = true, num_args = 1..)]
    ns: Vec<String>,
    /// The snapshot's folder (must not exist; written as DIR.partial until complete).
    #[arg(short, long, value_name = "DIR")]
    out: PathBuf,
    /// Compress each file with gzip (`.bson.gz`, `.metadata.json.gz`), as mongodump --gzip.
    #[arg(long)]
    gzip: bool,
    /// Documents per batch read: what the snapshot holds in memory at once.
    #[arg(long, default_value_t = mongotape::state::source::DEFAULT_BATCH, value_name = "N")]
    batch_size: u32,
    /// `values`: every string and binary value of the documents replaced by a keyed hash of the
    /// same length, under a fresh key (equal values stay equal within the snapshot). To pair a
    /// redacted snapshot with a redacted capture, take both with `record --redact values
    /// --snapshot`, which shares the capture's key (docs/state.md, "Redacted snapshots").
    #[command(flatten)]
    redact: super::redact::RedactArg,
    /// No summary on stdout (the global -q).
    #[arg(skip)]
    pub quiet: bool,
}

/// Parses `--ns`/`--snapshot` patterns; a wrong one is a usage error naming the option.
pub fn patterns(option: &str, texts: &[String]) -> anyhow::Result<Vec<NsPattern>> {
    texts
        .iter()
        .map(|t| NsPattern::parse(t).map_err(|e| usage(format!("{option} {e}"))))
        .collect()
}

/// A bare `host:port` as a connection string.
pub fn uri_of(upstream: &str) -> String {
    match upstream.contains("://") {
        true => upstream.to_owned(),
        false => format!("mongodb://{upstream}/"),
    }
}

pub fn run(args: SnapshotArgs) -> anyhow::Result<ExitCode> {
    let patterns = patterns("--ns", &args.ns)?;
    ensure_usage!(args.batch_size > 0, "--batch-size 0: must be at least 1");
    mongotape::state::writer::SnapshotWriter::check_free(&args.out)?;
    let opts = SnapshotOptions {
        uri: uri_of(&args.uri),
        patterns,
        out: args.out.clone(),
        gzip: args.gzip,
        batch_size: args.batch_size,
        redact: (args.redact.redaction() == mongotape::redact::Redaction::Values)
            .then(mongotape::redact::ValueKey::random),
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let manifest = runtime.block_on(mongotape::state::take(&opts, |_| {}))?;
    if !args.quiet {
        note!(
            "mongotape: snapshot {}: {} collections, {} documents, {} bytes at {}",
            args.out.display(),
            manifest.collections.len(),
            manifest.documents,
            manifest.bytes,
            manifest.point
        );
    }
    Ok(Exit::Ok.into())
}
