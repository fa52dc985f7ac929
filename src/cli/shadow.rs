//! `mongotape shadow`: the proxy of `record` (its options, flattened) with the live mirror of
//! `mongotape::shadow` attached, the periodic report, and the summary at stop.

use super::help::About;
use super::output::note;
use super::record::{self, RecordArgs};
use anyhow::Context;
use clap::{Args, ValueEnum};
use mongotape::figures::units::parse_duration;
use mongotape::shadow::filter::{self, Filter};
use mongotape::shadow::report::{self, ShadowReport};
use mongotape::shadow::{config, Shadow, ShadowConfig, Targets};
use mongotape::state::pattern::NsPattern;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

pub const ABOUT: About = About::new(
    "Examples:
  # Mirror the application's reads to a candidate (an upgrade, a new index, new hardware)
  mongotape shadow -u 127.0.0.1:27017 -l 127.0.0.1:27018 --no-record \\
      --candidate 'mongodb://candidate:27017/?directConnection=true' \\
      --report shadow.json --discrepancies discrepancies.jsonl

  # With a control (a second server of production's version): what it differs by is noise
  mongotape shadow -u 127.0.0.1:27017 --no-record --candidate cand:27017 --control ctl:27017 \\
      --report shadow.json --report-every 30 --ignore-field lastSeen

  # Record as well, with values hashed in the capture and in the discrepancy lines
  mongotape shadow -u 127.0.0.1:27017 -o run.mtape --redact values --candidate cand:27017 \\
      --discrepancies d.jsonl

The client's reply is always production's; the mirror never makes it wait. See docs/shadow.md.",
    &[
        super::exit::Exit::Ok,
        super::exit::Exit::Failure,
        super::exit::Exit::Usage,
    ],
);

#[derive(Clone, Copy, PartialEq, ValueEnum)]
enum Mirror {
    /// find, aggregate without $out/$merge, count, distinct, and their getMores.
    Reads,
    /// The reads, and the writes production acknowledged (insert, update, delete,
    /// findAndModify, bulkWrite, create/drop/index commands, aggregate with $out/$merge), in its
    /// order; needs --snapshot or --assume-same-state.
    All,
}

#[derive(Clone, Copy, ValueEnum)]
enum Priority {
    /// SCHED_IDLE: the mirror takes only CPU time nothing else wants; on a host whose cores
    /// are busy it falls behind and sheds (counted), the clients never give it a cycle, and the
    /// candidate's latency includes the mirror's waits for a CPU (latency findings mislead).
    Idle,
    /// nice 10: a small share of a busy host's CPU, taken from the clients and the proxy.
    Low,
    /// The forwarding threads' priority: the most reads mirrored on a busy host, at the
    /// clients' cost.
    Normal,
}

impl From<Priority> for config::MirrorPriority {
    fn from(p: Priority) -> Self {
        match p {
            Priority::Idle => config::MirrorPriority::Idle,
            Priority::Low => config::MirrorPriority::Low,
            Priority::Normal => config::MirrorPriority::Normal,
        }
    }
}

#[derive(Clone, Copy, ValueEnum)]
enum SampleBy {
    /// A whole connection or none of it.
    Connection,
    /// Each request on its own (a getMore follows its cursor's first read).
    Request,
}

#[derive(Args)]
pub struct ShadowArgs {
    #[command(flatten)]
    pub record: Box<RecordArgs>,
    /// A server to mirror the reads to (repeatable): a connection string with its own
    /// credentials. Example: `--candidate 'mongodb://user:pw@cand:27017/?authSource=admin'`.
    #[arg(long, required = true, value_name = "URI")]
    candidate: Vec<String>,
    /// A second server of production's version: the differences it shows too are noise, and a
    /// candidate's latency ratio is judged against its own (the A2 rule).
    #[arg(long, value_name = "URI")]
    control: Option<String>,
    /// Production as the shadow reaches it to send a differing read again [default: --upstream;
    /// give one with credentials of the shadow's own when production needs them].
    #[arg(long, value_name = "URI")]
    production: Option<String>,
    /// What is mirrored.
    #[arg(long, value_enum, default_value = "reads")]
    mirror: Mirror,
    /// With --mirror all and no --snapshot: the targets already hold production's data (writes
    /// into a target that does not start from production's state compare nothing).
    #[arg(long, conflicts_with = "snapshot")]
    assume_same_state: bool,
    /// With --snapshot: the folder production's snapshot goes to (it must not exist)
    /// [default: beside -o, else beside --report: OUT.snapshot].
    #[arg(long, value_name = "DIR", requires = "snapshot")]
    snapshot_dir: Option<PathBuf>,
    /// Memory per target for acknowledged writes waiting to be applied (during the restore);
    /// beyond it the target goes on with reads only.
    #[arg(long, default_value_t = config::DEFAULT_WRITE_QUEUE_MB, value_name = "MB")]
    write_queue_mb: usize,
    /// Memory per candidate for reads waiting to be mirrored; beyond it reads are shed.
    #[arg(long, default_value_t = config::DEFAULT_QUEUE_MB, value_name = "MB")]
    queue_mb: usize,
    /// Mirrored reads waiting per client connection and candidate; beyond it reads are shed.
    #[arg(long, default_value_t = config::DEFAULT_MAX_OUTSTANDING, value_name = "N")]
    max_outstanding: usize,
    /// A reply field never compared (repeatable; array positions as `[]`), beside the fields
    /// every server fills from its clock. Example: `--ignore-field cursor.firstBatch[].seenAt`.
    #[arg(long, value_name = "FIELD")]
    ignore_field: Vec<String>,
    /// Mirror this share (0 to 100) of the connections (or of the requests, --sample-by);
    /// the rest is counted as filtered.
    #[arg(long, default_value_t = 100.0, value_name = "PERCENT")]
    sample: f64,
    /// What --sample picks, by a hash of the connection id (and request id) seeded with
    /// --sample-seed: the same seed picks the same connections in the same run of connections.
    #[arg(long, value_enum, default_value = "connection", value_name = "UNIT")]
    sample_by: SampleBy,
    /// The seed of --sample's hash.
    #[arg(long, default_value_t = 1, value_name = "N")]
    sample_seed: u64,
    /// Mirror only the reads of these namespaces (repeatable): `DB.*` or `DB.COLLECTION`, as
    /// `record --snapshot` takes them. Example: `--namespace shop.orders --namespace crm.*`.
    #[arg(long, value_name = "PATTERN")]
    namespace: Vec<String>,
    /// Mirror only these commands (repeatable): find, aggregate, count, distinct (a getMore
    /// follows its cursor's first read).
    #[arg(long = "command", value_name = "NAME")]
    commands: Vec<String>,
    /// Mirror only the connections whose handshake names this application (repeatable; the
    /// driver's appName).
    #[arg(long, value_name = "NAME")]
    app: Vec<String>,
    /// Write each confirmed discrepancy as a JSON line to FILE (values hashed with --redact values).
    #[arg(long, value_name = "FILE")]
    discrepancies: Option<PathBuf>,
    /// Write the report (JSON, docs/schemas/shadow.schema.json) to FILE, every --report-every
    /// seconds and at stop.
    #[arg(long, value_name = "FILE")]
    report: Option<PathBuf>,
    /// Write the report as a page (HTML, self-contained) to FILE, with --report's cadence.
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
    /// Seconds between two writes of --report and --html.
    #[arg(long, default_value = "60", value_parser = parse_duration, value_name = "SECS")]
    report_every: Duration,
    /// How long a candidate may take to answer one read before its connection is dropped and
    /// opened again (with backoff).
    #[arg(long, default_value = "5s", value_parser = parse_duration, value_name = "DURATION")]
    candidate_timeout: Duration,
    /// How long a read that differed waits before it is sent again to both sides.
    #[arg(long, default_value = "200ms", value_parser = parse_duration, value_name = "DURATION")]
    recheck_delay: Duration,
    /// The mirror's place in the host's scheduler (its thread and the rolling report's): idle
    /// (the default) never slows the clients and mirrors with the CPU they leave (a reply is
    /// timed by the kernel's arrival stamp, so the mirror's own waits are not the candidate's);
    /// low and normal mirror more on a busy host at the clients' cost (docs/shadow.md,
    /// "Priority").
    #[arg(long, value_enum, default_value = "idle", value_name = "PRIORITY")]
    mirror_priority: Priority,
}

/// record's options that the shadow cannot honour (sniffing): hidden from `shadow --help`,
/// refused by [`run`] when given.
const RECORD_ONLY: &[&str] = &["interface", "server_port", "sniff_buffer"];

/// `shadow`'s command with record's options it cannot honour hidden, and record's `--snapshot`
/// as the shadow takes it (with `--mirror all`, without `-o`).
pub fn hide_record_only(command: clap::Command) -> clap::Command {
    RECORD_ONLY
        .iter()
        .fold(command, |c, id| c.mut_arg(*id, |a| a.hide(true)))
        .mut_arg("snapshot", |a| {
            a.requires(clap::builder::Resettable::<clap::Id>::Reset)
                .help(
                    "With --mirror all: snapshot the namespaces matching PATTERN (`DB.*` or \
                 `DB.COLLECTION`; repeatable) on production at one cluster time T0, restore it \
                 into every candidate (and the control), then apply the writes acknowledged \
                 after T0. Example: `--snapshot 'shop.*'`. See docs/shadow.md.",
                )
        })
}

pub fn run(mut args: ShadowArgs, quiet: bool) -> anyhow::Result<ExitCode> {
    args.record.quiet |= quiet;
    if args.record.interface.is_some() {
        return Err(super::exit::usage(
            "shadow mirrors what its proxy forwards: --interface, --server-port and \
             --sniff-buffer are record's only",
        ));
    }
    if args.record.out.is_none() {
        args.record.no_record = true;
    }
    // The shadow takes the snapshot itself: record must not.
    let patterns = std::mem::take(&mut args.record.snapshot);
    let config = shadow_config(&args, &patterns)?;
    let targets = Targets::parse_blocking(&config).map_err(|e| match e.is_usage() {
        true => super::exit::usage(e.to_string()),
        false => e.into(),
    })?;
    let shadow: Arc<OnceLock<Shadow>> = Arc::default();
    let outputs = Outputs {
        json: args.report.clone(),
        html: args.html.clone(),
    };
    let every = args.report_every;
    let priority = config.priority;
    let periodic = outputs.clone();
    let held = shadow.clone();
    let status = record::run_with(*args.record, move |proxy| {
        let started = Shadow::start(config, targets)?;
        proxy.set_tap(started.tap());
        proxy.add_collector(started.collector());
        let _ = held.set(started);
        if periodic.json.is_some() || periodic.html.is_some() {
            // A thread of its own: the intervals' bootstrap never takes the forwarding's time.
            std::thread::Builder::new()
                .name("mongotape-report".into())
                .spawn(move || {
                    priority.apply();
                    rewrite_report(held, periodic, every)
                })
                .context("starting the report's thread")?;
        }
        Ok(())
    })?;
    if let Some(shadow) = shadow.get() {
        finish(shadow, &outputs, quiet)?;
    }
    Ok(status)
}

/// The shadow's settings from its command line.
fn shadow_config(args: &ShadowArgs, patterns: &[String]) -> anyhow::Result<ShadowConfig> {
    let writes = writes_config(args, patterns)?;
    Ok(ShadowConfig {
        candidates: args.candidate.clone(),
        control: args.control.clone(),
        production: args
            .production
            .clone()
            .unwrap_or_else(|| args.record.upstream.clone()),
        queue_bytes: args.queue_mb.saturating_mul(1024 * 1024),
        max_outstanding: args.max_outstanding,
        recheck_delay: args.recheck_delay,
        ignore_fields: args.ignore_field.clone(),
        discrepancies: args.discrepancies.clone(),
        redaction: args.record.redact.redaction(),
        reply_timeout: args.candidate_timeout,
        filter: filter(args)?,
        writes,
        priority: args.mirror_priority.into(),
        ..ShadowConfig::default()
    })
}

/// At stop: the writes drained, the final report written and printed.
fn finish(shadow: &Shadow, outputs: &Outputs, quiet: bool) -> anyhow::Result<()> {
    if !shadow.drain_writes(WRITES_AT_STOP) {
        tracing::warn!(
            "writes still waiting after {}s: the targets' state may lag production's",
            WRITES_AT_STOP.as_secs()
        );
    }
    shadow.stop();
    let report = shadow.report(true);
    {
        let _writing = WRITING.lock().unwrap_or_else(|e| e.into_inner());
        outputs.write(&report)?;
    }
    if !quiet {
        note!("{}", report::text(&report).trim_end());
    }
    Ok(())
}

/// `--mirror all`'s settings; writes without a way to start from production's state, or a
/// snapshot without writes, are usage errors.
fn writes_config(
    args: &ShadowArgs,
    patterns: &[String],
) -> anyhow::Result<Option<config::WritesConfig>> {
    if args.mirror == Mirror::Reads {
        if !patterns.is_empty() || args.assume_same_state {
            return Err(super::exit::usage(
                "--snapshot and --assume-same-state are for the writes of --mirror all",
            ));
        }
        return Ok(None);
    }
    let queue_bytes = args.write_queue_mb.saturating_mul(1024 * 1024);
    if patterns.is_empty() {
        if !args.assume_same_state {
            return Err(super::exit::usage(
                "--mirror all needs the candidates to start from production's state: give \
                 --snapshot PATTERN (the shadow restores production's snapshot into them), or \
                 --assume-same-state if they hold production's data already",
            ));
        }
        let snapshot = None;
        return Ok(Some(config::WritesConfig {
            queue_bytes,
            snapshot,
        }));
    }
    let patterns = patterns
        .iter()
        .map(|p| NsPattern::parse(p).map_err(|e| super::exit::usage(format!("--snapshot {e}"))))
        .collect::<Result<Vec<_>, _>>()?;
    let beside = args.record.out.as_ref().or(args.report.as_ref());
    let dir = match (&args.snapshot_dir, beside) {
        (Some(dir), _) => dir.clone(),
        (None, Some(file)) => mongotape::proxy::snapshot::dir_beside(file),
        (None, None) => {
            return Err(super::exit::usage(
                "--snapshot: give --snapshot-dir DIR (or -o or --report, beside which it goes)",
            ))
        }
    };
    let snapshot = Some(config::SnapshotPlan { patterns, dir });
    Ok(Some(config::WritesConfig {
        queue_bytes,
        snapshot,
    }))
}

/// The filters of `args`; a pattern, a command or a share that cannot be used is a usage error.
fn filter(args: &ShadowArgs) -> anyhow::Result<Filter> {
    if !(0.0..=100.0).contains(&args.sample) {
        return Err(super::exit::usage(format!(
            "--sample {}: a percentage from 0 to 100",
            args.sample
        )));
    }
    let namespaces = args
        .namespace
        .iter()
        .map(|p| NsPattern::parse(p).map_err(|e| super::exit::usage(format!("--namespace: {e}"))))
        .collect::<Result<_, _>>()?;
    let reads = ["getMore"].iter().chain(config::READ_COMMANDS);
    if let Some(c) = args
        .commands
        .iter()
        .find(|c| !reads.clone().any(|r| r == c))
    {
        return Err(super::exit::usage(format!(
            "--command {c}: only reads are mirrored ({})",
            config::READ_COMMANDS.join(", ")
        )));
    }
    Ok(Filter {
        percent: args.sample,
        by: match args.sample_by {
            SampleBy::Connection => filter::SampleBy::Connection,
            SampleBy::Request => filter::SampleBy::Request,
        },
        seed: args.sample_seed,
        namespaces,
        commands: args.commands.clone(),
        apps: args.app.clone(),
    })
}

/// How long the shadow waits at stop for the acknowledged writes to be applied.
const WRITES_AT_STOP: Duration = Duration::from_secs(30);

/// Held while the report is written: the periodic one never lands after the last.
static WRITING: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Rewrites the report every `every` until the shadow has stopped (the last one is written at
/// stop by [`run`]).
fn rewrite_report(shadow: Arc<OnceLock<Shadow>>, outputs: Outputs, every: Duration) {
    loop {
        std::thread::sleep(every.max(Duration::from_secs(1)));
        if let Some(shadow) = shadow.get() {
            let _writing = WRITING.lock().unwrap_or_else(|e| e.into_inner());
            if shadow.is_stopped() {
                return;
            }
            if let Err(e) = outputs.write(&shadow.report(false)) {
                tracing::warn!("{e:#}");
            }
        }
    }
}

/// Where the report goes: `--report` (JSON) and `--html`.
#[derive(Clone)]
struct Outputs {
    json: Option<PathBuf>,
    html: Option<PathBuf>,
}

impl Outputs {
    fn write(&self, report: &ShadowReport) -> anyhow::Result<()> {
        if let Some(path) = &self.json {
            write_whole(path, "--report", &serde_json::to_vec_pretty(report)?)?;
        }
        if let Some(path) = &self.html {
            let page = mongotape::report::html::shadow::render_html(report);
            write_whole(path, "--html", page.as_bytes())?;
        }
        Ok(())
    }
}

/// Writes a file whole: to a file beside it, then renamed over it.
fn write_whole(path: &Path, option: &str, bytes: &[u8]) -> anyhow::Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    std::fs::write(&tmp, bytes).with_context(|| format!("{option} {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("{option} {}", path.display()))?;
    Ok(())
}
