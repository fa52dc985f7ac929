//! What `mongotape shadow` is told: the candidates, the control, the bounds, the comparison's
//! options, and the errors it can end with.

use super::filter::Filter;
use crate::redact::Redaction;
use crate::replay::client::TargetError;
use std::path::PathBuf;
use std::time::Duration;
use thiserror::Error;

/// Requests mirrored to candidates by default (their getMores follow them).
pub const READ_COMMANDS: &[&str] = &["find", "aggregate", "count", "distinct"];
/// Writes mirrored with `--mirror all` (an `aggregate` too when it ends in `$out`/`$merge`).
pub const WRITE_COMMANDS: &[&str] = &[
    "insert",
    "update",
    "delete",
    "findAndModify",
    "findandmodify",
    "bulkWrite",
    "create",
    "createIndexes",
    "drop",
    "dropIndexes",
    "dropDatabase",
    "collMod",
    "renameCollection",
    "commitTransaction",
    "abortTransaction",
];
/// `--write-queue-mb` when not given.
pub const DEFAULT_WRITE_QUEUE_MB: usize = 256;
/// `--queue-mb` when not given.
pub const DEFAULT_QUEUE_MB: usize = 64;
/// `--max-outstanding` when not given.
pub const DEFAULT_MAX_OUTSTANDING: usize = 10;
/// How long a read that differed waits before it is sent again to both sides.
pub const DEFAULT_RECHECK_DELAY: Duration = Duration::from_millis(200);
/// The first wait before connecting again to a candidate that failed; doubled up to [`MAX_BACKOFF`].
pub const MIN_BACKOFF: Duration = Duration::from_millis(100);
pub const MAX_BACKOFF: Duration = Duration::from_secs(5);
/// Rechecks running at once; a difference found beyond it stays unconfirmed.
pub const MAX_RECHECKS: usize = 4;

/// `--mirror-priority`: where the mirror's thread (and the rolling report's) stands in the
/// scheduler against the forwarding and everything else on the host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MirrorPriority {
    /// `SCHED_IDLE` (the default): only CPU time nothing else wants. The application never
    /// gives a cycle to the mirror; on a host whose cores are busy the mirror falls behind and
    /// sheds (counted). Its replies are timed by their arrival (the kernel's stamp), so its
    /// waits for a CPU are not the candidate's.
    #[default]
    Idle,
    /// nice 10: a small share of a busy host's CPU, taken from everything else on it.
    Low,
    /// As the forwarding threads: the most reads mirrored on a busy host, at the clients' cost.
    Normal,
}

impl MirrorPriority {
    /// Sets the calling thread's priority; a system that refuses `SCHED_IDLE` gets nice 10.
    pub fn apply(self) {
        match self {
            MirrorPriority::Idle => {
                if !crate::proxy::gear::background_for_good() {
                    crate::proxy::snapshot::beside_clients();
                }
            }
            MirrorPriority::Low => crate::proxy::snapshot::beside_clients(),
            MirrorPriority::Normal => {}
        }
    }
}

#[derive(Debug, Clone)]
pub struct ShadowConfig {
    /// `--candidate`: each a connection string with its own credentials.
    pub candidates: Vec<String>,
    /// `--control`: a second server of production's version; differences it shows too are noise.
    pub control: Option<String>,
    /// Production as the shadow reaches it for rechecks (the `--upstream` string, or
    /// `--production` with credentials of the shadow's own).
    pub production: String,
    /// `--queue-mb`: bytes of requests and production replies waiting per candidate.
    pub queue_bytes: usize,
    /// `--max-outstanding`: mirrored requests waiting per client connection and candidate.
    pub max_outstanding: usize,
    pub recheck_delay: Duration,
    /// `--ignore-field`: fields never compared, beside the clock fields every server fills.
    pub ignore_fields: Vec<String>,
    /// `--discrepancies`: JSON lines, one per confirmed discrepancy.
    pub discrepancies: Option<PathBuf>,
    /// `--redact values`: values in discrepancy lines hashed as a capture's are.
    pub redaction: Redaction,
    /// Shapes tracked per candidate; the rest are `other`.
    pub max_shapes: usize,
    /// How long a candidate may take to answer one request before its connection is dropped.
    pub reply_timeout: Duration,
    /// `--sample`, `--namespace`, `--command`, `--app`: which reads are mirrored at all.
    pub filter: Filter,
    /// `--mirror all`: writes mirrored too, and how.
    pub writes: Option<WritesConfig>,
    /// `--mirror-priority`: the mirror thread's place in the scheduler.
    pub priority: MirrorPriority,
}

/// `--mirror all`'s settings.
#[derive(Debug, Clone)]
pub struct WritesConfig {
    /// `--write-queue-mb`: bytes of acknowledged writes waiting per target (during the restore);
    /// past it the target goes on with reads only.
    pub queue_bytes: usize,
    /// `--snapshot`: production's snapshot at T0, restored into every target before its writes
    /// are applied (`None` with `--assume-same-state`).
    pub snapshot: Option<SnapshotPlan>,
}

/// What the shadow snapshots at T0 and where it keeps it.
#[derive(Debug, Clone)]
pub struct SnapshotPlan {
    pub patterns: Vec<crate::state::NsPattern>,
    /// `--snapshot-dir`, or beside `-o` or `--report`.
    pub dir: PathBuf,
}

impl Default for ShadowConfig {
    fn default() -> Self {
        ShadowConfig {
            candidates: Vec::new(),
            control: None,
            production: String::new(),
            queue_bytes: DEFAULT_QUEUE_MB * 1024 * 1024,
            max_outstanding: DEFAULT_MAX_OUTSTANDING,
            recheck_delay: DEFAULT_RECHECK_DELAY,
            ignore_fields: Vec::new(),
            discrepancies: None,
            redaction: Redaction::Credentials,
            max_shapes: 200,
            reply_timeout: Duration::from_secs(5),
            filter: Filter::default(),
            writes: None,
            priority: MirrorPriority::default(),
        }
    }
}

#[derive(Debug, Error)]
pub enum ShadowError {
    /// A connection string that cannot be used, named by its option.
    #[error("{option} {}: {}", .source.uri, .source.detail)]
    Target {
        option: &'static str,
        source: TargetError,
    },
    #[error("{what} {path}: {source}")]
    File {
        what: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{0}")]
    Option(String),
}

impl ShadowError {
    pub fn is_usage(&self) -> bool {
        match self {
            ShadowError::Target { source, .. } => source.malformed,
            ShadowError::Option(_) => true,
            ShadowError::File { .. } => false,
        }
    }
}
