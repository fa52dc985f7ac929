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
/// `--queue-mb` when not given.
pub const DEFAULT_QUEUE_MB: usize = 64;
/// `--max-outstanding` when not given.
pub const DEFAULT_MAX_OUTSTANDING: usize = 10;
/// How long a read that differed waits before it is sent again to both sides.
pub const DEFAULT_RECHECK_DELAY: Duration = Duration::from_millis(200);
/// Rechecks running at once; a difference found beyond it stays unconfirmed.
pub const MAX_RECHECKS: usize = 4;

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
