//! `mongotape replay`: options in, report out. Everything else is in `mongotape::replay`.

use super::exit::usage;
use super::thresholds::ThresholdArgs;
use clap::Args;
use mongotape::figures::units::parse_duration;
use mongotape::replay::client::Target;
use mongotape::replay::source::cut::{CutError, CutFrom, SnapshotCut};
use mongotape::replay::source::shard::Shard;
use mongotape::replay::{self, Filters, Pacing, ReplayConfig};
use mongotape::state::restore_plan::{RestorePlan, SetupCommand};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

#[derive(Args)]
pub struct ReplayArgs {
    /// Capture to replay: a file, or the segments of a rotated recording (several files, or their
    /// folder), read as one in order.
    #[arg(required = true, num_args = 1..)]
    captures: Vec<PathBuf>,
    /// The server to replay against, as a connection string: `host:port`,
    /// `mongodb://[user:pass@]host1:port,host2:port/[db]?replicaSet=..&tls=true&authSource=..` or
    /// `mongodb+srv://`. A replica set's primary is found from hello; reads whose recorded
    /// `$readPreference` allows it go to a secondary; several mongos share the connections.
    /// Options the replayer cannot honour are an error naming them (docs/replay.md).
    /// Given two or three times: an A/B replay into every target at once (A, B, then A2 a copy of
    /// A's setup to measure noise); see docs/ab.md.
    #[arg(short, long, required = true)]
    target: Vec<String>,
    /// Recorded timing scaled by this factor (2 = twice as fast, 0.5 = half speed).
    #[arg(long, default_value_t = 1.0, conflicts_with_all = ["fast", "rate"])]
    speed: f64,
    /// As fast as the server answers; each connection still waits for its replies (closed loop).
    #[arg(long, conflicts_with = "rate")]
    fast: bool,
    /// Open loop at this many requests per second; latency counts from each intended send time.
    /// `A..B` with --ramp: from A to B. With --shard, the rate of all shards together.
    #[arg(long, value_name = "OPS")]
    rate: Option<String>,
    /// With --rate A..B: the ramp's length (`60s`, `2m` or seconds); the rate then holds at B.
    /// The knee is reported: where a command's p99 breaks or throughput falls behind, and
    /// whether the server or the replayer's connections held the rate back.
    #[arg(long, value_name = "TIME", requires = "rate", value_parser = parse_duration)]
    ramp: Option<Duration>,
    /// With --ramp: climb in K equal steps instead of linearly.
    #[arg(long, value_name = "K", requires = "ramp")]
    ramp_steps: Option<u32>,
    /// Replay only part I of N of the capture (0-based); sessions stay whole on one shard.
    #[arg(long, value_name = "I/N", conflicts_with = "shards")]
    shard: Option<String>,
    /// N shards, this one's index from JOB_COMPLETION_INDEX (a Kubernetes Indexed Job).
    #[arg(long, value_name = "N")]
    shards: Option<u32>,
    /// Start the replay's clock at this time (RFC 3339 or Unix seconds), so shards start together.
    #[arg(long, value_name = "TIME")]
    start_at: Option<String>,
    /// Spread the recorded requests over N connections (per clone) instead of one per recorded
    /// connection.
    #[arg(long, value_name = "N")]
    connections: Option<usize>,
    /// At most N replay connections open at once (default: the file limit, `ulimit -n`, less 64,
    /// at most 20,000). The others wait for one to be free; a connection with nothing to send
    /// is closed for a waiting one and opened again when it sends again.
    #[arg(long, value_name = "N")]
    max_open_connections: Option<usize>,
    /// The slowest requests the report lists (`slowest`: when recorded, connection, shape,
    /// recorded and replayed latency, body); 0 lists none.
    #[arg(long, value_name = "K", default_value_t = mongotape::figures::slowest::DEFAULT_SLOWEST)]
    slowest: usize,
    /// Threads that send requests and read replies (default: one fewer than the cores, at least
    /// 1; the capture reader has a thread of its own). Example: `--threads 2` on an 8-core machine
    /// that also runs the server under test, to leave it the other cores.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=1024))]
    threads: Option<u16>,
    /// With --connections: `namespace` (default) keeps a write and every later request on its
    /// namespace in recorded order across connections; `none` lets everything run side by side
    /// (the most load a capture can give, e.g. to find a server's ceiling; a read may then see the
    /// database before a write recorded earlier). Example: `--connections 8 --order none`.
    #[arg(long, value_enum, default_value = "namespace", value_name = "ORDER")]
    order: OrderArg,
    /// Skip the recorded requests the snapshot DIR (the capture's own by default, from `record
    /// --snapshot`) already holds: the writes answered at or before its point in time. For a
    /// target restored by hand with mongorestore. The report's `snapshot_cut` says how many, and
    /// how they were told (docs/state.md, "What the snapshot already holds").
    #[arg(long, value_name = "DIR")]
    skip_snapshotted: Option<Option<PathBuf>>,
    /// Distinct query shapes kept in the report (docs/shapes.md); the requests of further ones
    /// are added up under `shapes_other`.
    #[arg(long, value_name = "N", default_value_t = mongotape::shape::DEFAULT_MAX_SHAPES)]
    max_shapes: usize,
    /// K copies of the traffic at once, each in its own databases (`bench` -> `bench_1`..`bench_K`).
    #[arg(long, value_name = "K", default_value_t = 1)]
    clones: u32,
    /// Replay the capture K times in a row, each pass with fresh sessions.
    #[arg(long, value_name = "K")]
    repeat: Option<u64>,
    /// Stop after this many seconds; without --repeat the capture repeats until then.
    #[arg(short, long, value_name = "SECONDS", value_parser = parse_duration)]
    duration: Option<Duration>,
    /// Replay only these commands (comma-separated, repeatable).
    #[arg(long = "command", value_delimiter = ',')]
    commands: Vec<String>,
    /// Leave out these commands (comma-separated, repeatable).
    #[arg(long = "exclude-command", value_delimiter = ',')]
    exclude_commands: Vec<String>,
    /// Replay only this namespace: `db`, `db.coll` or a prefix ending in `*` (repeatable).
    #[arg(long = "namespace")]
    namespaces: Vec<String>,
    /// Leave out this namespace (same forms as --namespace, repeatable).
    #[arg(long = "exclude-namespace")]
    exclude_namespaces: Vec<String>,
    /// Replay only these recorded connection ids (comma-separated, repeatable).
    #[arg(long = "connection", value_delimiter = ',')]
    connection_ids: Vec<u64>,
    #[command(flatten)]
    window: super::window::WindowArgs,
    /// Rename a database: `from:to` (repeatable).
    #[arg(long = "db-map", value_name = "FROM:TO")]
    db_map: Vec<String>,
    /// Write the JSON report here (docs/schemas/replay.schema.json).
    #[arg(short = 'o', long, value_name = "FILE")]
    report: Option<PathBuf>,
    /// Write an HTML report here (one self-contained file with charts).
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
    /// The server's process id, for its CPU time (default: the local process listening on the
    /// target's port, when there is one).
    /// In an A/B replay, one per target in target order (the rest found by port).
    #[arg(long)]
    server_pid: Vec<u32>,
    /// Do not read serverStatus before and after.
    #[arg(long)]
    no_server_status: bool,
    /// Seconds to read the server's idle CPU rate before the run, nothing sent, so that the
    /// report also gives its CPU per operation net of that rate (0: not read). Needs the
    /// server's process (local, or --server-pid).
    #[arg(long, default_value_t = 1.0, value_name = "SECS")]
    idle_sample: f64,
    /// Explain each query shape once on the target (on a connection of its own, after the shape's
    /// first request answered without an error; writes are explained, not applied): the plan,
    /// keys and documents examined, in the report's `plans` (docs/shapes.md). In an A/B replay,
    /// on every target, with the shapes whose plan changed.
    #[arg(long)]
    explain: bool,
    /// Seconds to wait for any one reply (or connection) before giving up on the target.
    #[arg(long, default_value = "60", value_parser = parse_duration, value_name = "SECS")]
    op_timeout: Duration,
    /// Memory for requests read ahead of the replay, in MiB.
    #[arg(long, default_value_t = 64)]
    read_ahead_mb: usize,
    /// Label for this run in reports (default: the capture's file name). In an A/B replay, one per
    /// target in target order (default A, B, A2).
    #[arg(long)]
    label: Vec<String>,
    /// No progress bar (it is shown only when stderr is a terminal anyway).
    #[arg(long)]
    no_progress: bool,
    /// No text summary on stdout, no progress bar (the global -q).
    #[arg(skip)]
    pub quiet: bool,
    /// Serve the running replay's metrics in the Prometheus text format on http://ADDR/metrics:
    /// ops, errors and latency per command, schedule lag, progress, requests sent, connections.
    /// Example: `--metrics 127.0.0.1:9217`. See docs/production.md, "Metrics".
    #[arg(long, value_name = "ADDR")]
    metrics: Option<String>,
    /// Load a snapshot into every target before the run and before every --repeat pass: each
    /// snapshotted collection dropped, created with its options, loaded, indexed (into every
    /// database --db-map and --clones map it to). DIR: a snapshot folder (mongotape's or
    /// mongodump's); without it, the capture's own (CAPTURE.snapshot/ beside it, or the folder
    /// its snapshot record names). Implies --skip-snapshotted and --check-state with the same
    /// folder, where it has a point in time and an end state. See docs/state.md, "Restoring".
    #[arg(long, value_name = "DIR", num_args = 0..=1)]
    restore: Option<Option<PathBuf>>,
    /// With --restore: commands run after each load, per target: a JSON list of
    /// {"target": "B", "db": "shop", "command": {"dropIndexes": "orders", "index": "status_1"}}
    /// ("target": a label, or "*" for every target).
    #[arg(long, value_name = "FILE", requires = "restore")]
    restore_setup: Option<PathBuf>,
    /// After the run, fingerprint the snapshotted namespaces on each target (each --db-map and
    /// --clones database) and compare them with the capture's end state in DIR (default: the
    /// capture's own snapshot folder, CAPTURE.snapshot): `state: equal`, or the collections that
    /// differ with both counts and up to 5 differing _ids; on A/B, the targets against each other
    /// too. See docs/state.md, "The end state".
    #[arg(long, value_name = "DIR")]
    check_state: Option<Option<PathBuf>>,
    #[command(flatten)]
    ab: super::replay_ab::AbArgs,
    #[command(flatten)]
    thresholds: ThresholdArgs,
}

fn non_negative_secs(v: f64, name: &str) -> anyhow::Result<Duration> {
    if !(v >= 0.0 && v.is_finite() && v <= 3600.0) {
        return Err(usage(format!(
            "{name} {v:?}: must be a number of seconds from 0 to 3600"
        )));
    }
    Ok(Duration::from_secs_f64(v))
}

fn rate_arg(v: &str) -> anyhow::Result<f64> {
    v.trim().parse().map_err(|_| {
        usage(format!(
            "--rate {v:?}: expected a number of operations per second"
        ))
    })
}

fn pacing(args: &ReplayArgs) -> anyhow::Result<Pacing> {
    if args.fast {
        return Ok(Pacing::Fast);
    }
    let Some(rate) = &args.rate else {
        return Ok(Pacing::Recorded { speed: args.speed });
    };
    match (rate.split_once(".."), &args.ramp) {
        (Some((a, b)), Some(ramp)) => Ok(Pacing::Ramp {
            from: rate_arg(a)?,
            to: rate_arg(b)?,
            over_s: ramp.as_secs_f64(),
            steps: args.ramp_steps.unwrap_or(0),
        }),
        (Some(_), None) => Err(usage("--rate A..B needs --ramp TIME")),
        (None, Some(_)) => Err(usage("--ramp needs --rate A..B")),
        (None, None) => Ok(Pacing::Rate {
            ops_per_s: rate_arg(rate)?,
        }),
    }
}

/// RFC 3339 (`2026-12-01T10:00:00Z`) or Unix seconds.
fn start_at_arg(v: &str) -> anyhow::Result<std::time::SystemTime> {
    if let Ok(secs) = v.trim().parse::<f64>() {
        // Up to the year 9999, as RFC 3339 says times.
        return Duration::try_from_secs_f64(secs)
            .ok()
            .filter(|d| d.as_secs() <= 253_402_300_799)
            .map(|d| std::time::UNIX_EPOCH + d)
            .ok_or_else(|| {
                usage(format!(
                    "--start-at {v:?}: expected Unix seconds from 0 to 253402300799 (the year 9999)"
                ))
            });
    }
    humantime::parse_rfc3339_weak(v.trim()).map_err(|_| {
        usage(format!(
            "--start-at {v:?}: expected RFC 3339 or Unix seconds"
        ))
    })
}

fn shard_arg(args: &ReplayArgs) -> anyhow::Result<Option<Shard>> {
    match (&args.shard, args.shards) {
        (Some(s), _) => Ok(Some(s.parse().map_err(usage)?)),
        (None, Some(n)) => Ok(Some(Shard::from_env(n).map_err(usage)?)),
        (None, None) => Ok(None),
    }
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum OrderArg {
    Namespace,
    None,
}

/// The replay's configuration from the options (the lists moved out of `args`).
fn replay_config(args: &mut ReplayArgs) -> anyhow::Result<ReplayConfig> {
    let pacing = pacing(args)?;
    let mut db_map = Vec::new();
    for m in &args.db_map {
        let (from, to) = m
            .split_once(':')
            .filter(|(f, t)| !f.is_empty() && !t.is_empty())
            .ok_or_else(|| usage(format!("--db-map {m:?}: expected FROM:TO")))?;
        db_map.push((from.to_owned(), to.to_owned()));
    }
    let mut config = ReplayConfig::new(&args.captures[0], &args.target[0]);
    config.inputs = args.captures.clone();
    config.pacing = pacing;
    config.connections = args.connections;
    config.clones = args.clones;
    if args.max_open_connections == Some(0) {
        return Err(usage("--max-open-connections must be at least 1"));
    }
    config.max_open_connections = args.max_open_connections;
    config.slowest = args.slowest;
    config.threads = args.threads.map(usize::from);
    config.duration = args.duration;
    if let (None, Pacing::Ramp { over_s, .. }) = (config.duration, pacing) {
        // A ramp runs to its end by default.
        config.duration = Some(Duration::from_secs_f64(over_s));
    }
    config.shard = shard_arg(args)?;
    config.unordered = args.order == OrderArg::None;
    config.max_shapes = args.max_shapes;
    config.start_at = args.start_at.as_deref().map(start_at_arg).transpose()?;
    config.repeat = args.repeat;
    config.filters = Filters {
        commands: std::mem::take(&mut args.commands),
        exclude_commands: std::mem::take(&mut args.exclude_commands),
        namespaces: std::mem::take(&mut args.namespaces),
        exclude_namespaces: std::mem::take(&mut args.exclude_namespaces),
        connections: std::mem::take(&mut args.connection_ids),
        window: args.window.options()?,
        window_labels: args.window.labels(),
    };
    config.db_map = db_map;
    config.server_pid = args.server_pid.first().copied();
    config.server_status = !args.no_server_status;
    config.idle_sample = non_negative_secs(args.idle_sample, "--idle-sample")?;
    config.explain = args.explain;
    config.op_timeout = args.op_timeout;
    config.read_ahead_bytes = args.read_ahead_mb.max(1) * 1024 * 1024;
    config.progress = !args.no_progress && !args.quiet && super::output::styled(&std::io::stderr());
    config.label = args.label.first().cloned();
    config.metrics = args.metrics.take();
    config.restore = match &args.restore {
        None => None,
        Some(dir) => Some(RestorePlan {
            dir: dir.clone(),
            batch_size: mongotape::state::load::DEFAULT_BATCH,
            connections: mongotape::state::load::DEFAULT_CONNECTIONS,
            setup: match &args.restore_setup {
                Some(file) => SetupCommand::read_file(file)?,
                None => Vec::new(),
            },
        }),
    };
    config.snapshot_cut = snapshot_cut(args, &config.inputs)?;
    config.check_state = args.check_state.as_ref().map(|dir| match dir {
        Some(dir) => dir.clone(),
        None => mongotape::proxy::snapshot::dir_beside(&args.captures[0]),
    });
    if config.check_state.is_none() {
        config.check_state = implied_check(args, &config.inputs)?;
    }
    Ok(config)
}

/// `--restore` implies `--check-state` on the folder it loads, when that folder holds an end state
/// (a mongodump folder has none, and a snapshot of `mongotape snapshot` neither).
fn implied_check(args: &ReplayArgs, inputs: &[PathBuf]) -> anyhow::Result<Option<PathBuf>> {
    let Some(given) = &args.restore else {
        return Ok(None);
    };
    let given = given.as_deref().unwrap_or(std::path::Path::new(""));
    let dir = mongotape::replay::restore::snapshot_dir(given, inputs)?;
    Ok(dir
        .join(mongotape::state::end::END_FILE)
        .is_file()
        .then_some(dir))
}

/// `--skip-snapshotted [DIR]`: the snapshot's point, read before anything is contacted.
fn snapshot_cut(
    args: &ReplayArgs,
    inputs: &[PathBuf],
) -> anyhow::Result<Option<std::sync::Arc<SnapshotCut>>> {
    // `--restore` implies the cut of the folder it loads, when that folder has a point in time.
    let implied = args.skip_snapshotted.is_none();
    let from = match (&args.skip_snapshotted, &args.restore) {
        (None, None) => return Ok(None),
        (Some(None), _) | (None, Some(None)) => CutFrom::Capture,
        (Some(Some(dir)), _) => CutFrom::Dir(dir.clone()),
        (None, Some(Some(given))) => {
            CutFrom::Dir(mongotape::replay::restore::snapshot_dir(given, inputs)?)
        }
    };
    match SnapshotCut::load(&from, inputs) {
        Ok(cut) => Ok(Some(std::sync::Arc::new(cut))),
        Err(CutError::NoPoint { dir }) if implied => {
            super::output::note!(
                "mongotape: --restore {}: the folder has no point in time (mongodump without \
                 --oplog), so every recorded write is replayed (docs/state.md)",
                dir.display()
            );
            Ok(None)
        }
        Err(e) => Err(e.into()),
    }
}

pub fn run(mut args: ReplayArgs) -> anyhow::Result<ExitCode> {
    let outputs = [args.report.as_deref(), args.html.as_deref()];
    mongotape::capture::output::guard(&args.captures, &outputs)?;
    let config = replay_config(&mut args)?;
    // Every target read before anything is contacted: a malformed one is a usage error.
    for (i, uri) in args.target.iter().enumerate() {
        let target = Target::parse_blocking(uri)?;
        if i == 0 && !target.unused.is_empty() {
            super::output::note!(
                "mongotape: --target {}: not used, the recorded requests carry their own",
                target.unused.join(", ")
            );
        }
    }
    let out = super::output::Outputs {
        report: args.report.as_deref(),
        html: args.html.as_deref(),
        quiet: args.quiet,
    };
    if args.target.len() > 1 {
        return super::replay_ab::run(
            config,
            &args.target,
            &args.label,
            &args.server_pid,
            &args.ab,
            args.thresholds.fail_on_state_divergence,
            out,
        );
    }
    let report = replay::run(config)?;
    // A replay that failed before sending anything has no table to show: only its error.
    super::output::report(
        &report,
        &out,
        "report",
        mongotape::report::html::replay::render_html,
        |r| (r.error.is_none() || r.sent > 0).then(|| r.render_text()),
    )?;
    Ok(super::thresholds::exit_status(&report, &args.thresholds).into())
}
