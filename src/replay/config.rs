//! What a replay is asked to do: [`ReplayConfig`] (the `replay` command's options), the errors that
//! stop it before anything is replayed ([`ReplayError`]), and the options as the report states them.

use super::client::TargetError;
use super::report::{OpenLoopReport, OptionsReport};
use super::source::filters::Filters;
use super::source::shard::Shard;
use crate::capture::CaptureError;
use crate::replay::pacing::Pacing;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};
use thiserror::Error;

#[derive(Debug, Clone)]
pub struct ReplayConfig {
    /// The capture, as named in reports (the first input).
    pub capture: PathBuf,
    /// Everything read, in order: one capture, the segments of a rotated recording, or a folder.
    pub inputs: Vec<PathBuf>,
    pub target: String,
    pub pacing: Pacing,
    /// `None`: one replay connection per recorded connection.
    pub connections: Option<usize>,
    pub clones: u32,
    /// `--repeat K`; `None`: not asked, [`ReplayConfig::passes`] decides.
    pub repeat: Option<u64>,
    pub duration: Option<Duration>,
    pub filters: Filters,
    pub db_map: Vec<(String, String)>,
    pub server_pid: Option<u32>,
    /// Read serverStatus before and after.
    pub server_status: bool,
    /// How long to read the server's idle CPU rate before the run (zero: not read).
    pub idle_sample: Duration,
    pub op_timeout: Duration,
    pub read_ahead_bytes: usize,
    pub progress: bool,
    pub label: Option<String>,
    /// `--metrics ADDR`: serve the running replay's Prometheus exposition there.
    pub metrics: Option<String>,
    /// `--shard I/N`: replay only this part of the capture, at `1/N` of any `--rate`.
    pub shard: Option<Shard>,
    /// `--order none`: with `--connections N`, nothing waits for the writes before it.
    pub unordered: bool,
    /// `--start-at`: the replay's clock starts then (every shard at the same moment).
    pub start_at: Option<SystemTime>,
    /// `--max-open-connections`; `None`: from the file limit ([`crate::replay::route::slots`]).
    pub max_open_connections: Option<usize>,
    /// `--explain`: each shape's plan on the target, once, after its first answered request.
    pub explain: bool,
    /// `--max-shapes`: distinct query shapes kept (and explained at most); the rest are counted
    /// under `other`.
    pub max_shapes: usize,
    /// `--slowest K`: the slowest requests the report lists.
    pub slowest: usize,
    /// `--threads N`: the runtime's worker threads, which send and receive ([`worker_threads`]).
    pub threads: Option<usize>,
    /// `--restore [DIR]`: the snapshot loaded into each target before the run and every pass.
    pub restore: Option<crate::state::restore_plan::RestorePlan>,
    /// `--skip-snapshotted [DIR]`: skip the recorded requests the snapshot (the capture's own by
    /// default) already holds, for a target restored by hand with mongorestore
    /// ([`super::source::cut`]; `--restore` implies it).
    pub snapshot_cut: Option<std::sync::Arc<super::source::cut::SnapshotCut>>,
    /// `--check-state [DIR]`: after the run, fingerprint the snapshotted namespaces on each
    /// target and compare them with the capture's end state in DIR (its snapshot folder).
    pub check_state: Option<PathBuf>,
}

impl ReplayConfig {
    pub fn new(capture: impl Into<PathBuf>, target: impl Into<String>) -> ReplayConfig {
        let capture = capture.into();
        ReplayConfig {
            inputs: vec![capture.clone()],
            capture,
            target: target.into(),
            pacing: Pacing::Recorded { speed: 1.0 },
            connections: None,
            clones: 1,
            repeat: None,
            duration: None,
            filters: Filters::default(),
            db_map: Vec::new(),
            server_pid: None,
            server_status: true,
            idle_sample: Duration::from_secs(1),
            op_timeout: Duration::from_secs(60),
            read_ahead_bytes: 64 * 1024 * 1024,
            progress: false,
            label: None,
            metrics: None,
            shard: None,
            unordered: false,
            start_at: None,
            max_open_connections: None,
            explain: false,
            max_shapes: crate::shape::DEFAULT_MAX_SHAPES,
            slowest: crate::figures::slowest::DEFAULT_SLOWEST,
            threads: None,
            restore: None,
            snapshot_cut: None,
            check_state: None,
        }
    }
}

impl ReplayConfig {
    /// The capture was recorded with `--redact values` (its metadata says so).
    pub fn capture_redacted(&self) -> bool {
        crate::capture::CaptureSet::open(&self.inputs)
            .is_ok_and(|set| set.metadata().redaction.as_deref() == Some("values"))
    }
}

/// Failures before anything was replayed. Once replaying has begun, failures end up in the report.
#[derive(Debug, Error)]
pub enum ReplayError {
    #[error(transparent)]
    Target(#[from] TargetError),
    #[error(transparent)]
    Capture(#[from] CaptureError),
    #[error("invalid option: {0}")]
    Option(String),
    #[error("cannot start the async runtime: {0}")]
    Runtime(std::io::Error),
    #[error(transparent)]
    Metrics(#[from] crate::metrics::MetricsError),
    /// `--restore`: the snapshot or the setup file cannot be used.
    #[error(transparent)]
    State(#[from] crate::state::StateError),
}

impl ReplayConfig {
    /// Passes over the capture: as asked, else once, or without end until the duration is over
    /// when one is set (`None`).
    pub fn passes(&self) -> Option<u64> {
        match (self.repeat, self.duration) {
            (Some(r), _) => Some(r),
            (None, Some(_)) => None,
            (None, None) => Some(1),
        }
    }

    /// How many replay connections may be open at once, and where that comes from.
    pub fn connection_limit(&self) -> (usize, String) {
        match self.max_open_connections {
            Some(n) => (n.max(1), "--max-open-connections".into()),
            None => match super::route::slots::default_limit() {
                (n, Some(soft)) => (
                    n,
                    format!(
                        "the file limit, ulimit -n {soft}, less {}",
                        super::route::slots::RESERVED_FDS
                    ),
                ),
                (n, None) => (n, "no file limit; the default ceiling".into()),
            },
        }
    }
}

pub(crate) fn options_report(c: &ReplayConfig) -> OptionsReport {
    let f = &c.filters;
    let mut filters = Vec::new();
    filters.extend(f.commands.iter().map(|x| format!("command={x}")));
    filters.extend(f.exclude_commands.iter().map(|x| format!("command!={x}")));
    filters.extend(f.namespaces.iter().map(|x| format!("namespace={x}")));
    filters.extend(
        f.exclude_namespaces
            .iter()
            .map(|x| format!("namespace!={x}")),
    );
    filters.extend(f.connections.iter().map(|x| format!("connection={x}")));
    filters.extend(f.window_labels.iter().cloned());
    OptionsReport {
        pacing: c.pacing.describe(),
        connections: c.connections,
        clones: c.clones,
        repeat: c.passes(),
        duration_s: c.duration.map(|d| d.as_secs_f64()),
        db_map: c.db_map.iter().map(|(a, b)| format!("{a}:{b}")).collect(),
        filters,
        open_loop: OpenLoopReport::of(&c.pacing),
    }
}

/// The threads that send and receive: `--threads`, or one fewer than the cores (at least one), so
/// the capture reader, a thread of its own, has a core. On 2 cores one worker sends as much as two
/// against a server that answers at once, for 10% less CPU per operation (docs/benchmarks.md).
pub fn worker_threads(threads: Option<usize>) -> usize {
    threads
        .unwrap_or_else(|| {
            std::thread::available_parallelism()
                .map_or(1, |n| n.get())
                .saturating_sub(1)
        })
        .max(1)
}
