//! `mongotape restore`: a snapshot loaded into a server, alone (a Kubernetes Job before a sharded
//! replay's pods, a target loaded by hand). Everything else is in `mongotape::state::load`.

use super::exit::{ensure_usage, usage, Exit};
use super::help::About;
use super::output::note;
use anyhow::Context;
use clap::Args;
use mongotape::state::restore_plan::RestoreCommandReport;
use mongotape::state::{DbTargets, LoadOptions, LoadReport, SnapshotDir, StateError};
use std::path::PathBuf;
use std::process::ExitCode;

pub const ABOUT: About = About::new(
    "Examples:
  mongotape restore run.mtape.snapshot -t mongodb://replay-db:27017/
  mongotape restore start.snapshot -t 127.0.0.1:27017 --db-map shop:shop_test --connections 8
  mongotape restore run.mtape -t 127.0.0.1:27017 --json     (the capture's own snapshot)

Each collection is dropped on the target, created with its options, loaded, then indexed.
A damaged snapshot file (truncated or corrupt .bson) exits with 3 after loading what came
before the damage. See docs/state.md, \"Restoring\".",
    &[Exit::Ok, Exit::Failure, Exit::Usage, Exit::DamagedCapture],
);

#[derive(Args)]
pub struct RestoreArgs {
    /// The snapshot folder (mongotape's or mongodump's), or a capture whose snapshot to restore
    /// (`CAPTURE.snapshot/` beside it, or the folder its `snapshot` record names).
    dir: PathBuf,
    /// The server to load: `host:port` or a connection string.
    #[arg(short, long, value_name = "URI")]
    target: String,
    /// Restore database FROM as TO (repeatable).
    #[arg(long = "db-map", value_name = "FROM:TO")]
    db_map: Vec<String>,
    /// Documents per insert.
    #[arg(long, default_value_t = mongotape::state::load::DEFAULT_BATCH, value_name = "N")]
    batch_size: usize,
    /// Connections inserting at once (memory: about 2 x N + 1 batches).
    #[arg(long, default_value_t = mongotape::state::load::DEFAULT_CONNECTIONS, value_name = "N")]
    connections: usize,
    /// Print the report as JSON (docs/schemas/restore.schema.json) instead of a line of text.
    #[arg(long)]
    json: bool,
    /// No progress bar (it is shown only when stderr is a terminal anyway).
    #[arg(long)]
    no_progress: bool,
    /// No summary on stdout (the global -q).
    #[arg(skip)]
    pub quiet: bool,
}

/// `FROM:TO` pairs, a wrong one a usage error naming the option.
pub fn db_map(texts: &[String]) -> anyhow::Result<Vec<(String, String)>> {
    texts
        .iter()
        .map(|m| {
            m.split_once(':')
                .filter(|(f, t)| !f.is_empty() && !t.is_empty())
                .map(|(f, t)| (f.to_owned(), t.to_owned()))
                .ok_or_else(|| usage(format!("--db-map {m:?}: expected FROM:TO")))
        })
        .collect()
}

pub fn run(args: RestoreArgs) -> anyhow::Result<ExitCode> {
    ensure_usage!(args.batch_size > 0, "--batch-size 0: must be at least 1");
    ensure_usage!(args.connections > 0, "--connections 0: must be at least 1");
    let map = db_map(&args.db_map)?;
    let dir = mongotape::replay::restore::snapshot_dir(&args.dir, std::slice::from_ref(&args.dir))?;
    let snapshot = SnapshotDir::open(&dir)?;
    let opts = LoadOptions {
        uri: super::snapshot::uri_of(&args.target),
        batch_size: args.batch_size,
        connections: args.connections,
        databases: DbTargets { map, clones: 1 },
        counters: None,
    };
    let progress = !args.no_progress && !args.quiet && super::output::styled(&std::io::stderr());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let loaded = runtime.block_on(async {
        match progress {
            true => mongotape::state::load::load_showing_progress(&snapshot, &opts).await,
            false => mongotape::state::load(&snapshot, &opts).await,
        }
    });
    let report = match loaded {
        Ok(r) => r,
        Err(e @ StateError::Corrupt { .. }) => {
            note!("mongotape: error: {e}");
            return Ok(Exit::DamagedCapture.into());
        }
        Err(e) => return Err(e.into()),
    };
    if args.json {
        super::output::json(&RestoreCommandReport {
            schema_version: mongotape::figures::SCHEMA_VERSION,
            kind: "restore".into(),
            snapshot: dir.display().to_string(),
            point: snapshot.point.as_ref().map(|p| p.to_string()),
            target: mongotape::state::layout::without_credentials(&opts.uri),
            load: report,
        })?;
    } else if !args.quiet {
        super::output::text(&summary(&dir, &report))?;
    }
    Ok(Exit::Ok.into())
}

fn summary(dir: &std::path::Path, r: &LoadReport) -> String {
    format!(
        "restored {}: {} collections, {} documents, {} bytes, {} indexes in {:.2} s \
         ({:.0} documents/s, {:.1} MB/s)\n",
        dir.display(),
        r.collections.len(),
        r.documents,
        r.bytes,
        r.indexes,
        r.seconds,
        r.docs_per_s,
        r.mb_per_s
    )
}
