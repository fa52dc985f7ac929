//! What the mirror's parts share: the configuration, the comparison's options, production and
//! the control as the shadow reaches them itself (for rechecks), the discrepancy log, the bound
//! on rechecks, and one mirrored request with production's reply ([`Pair`]).

use super::config::{ShadowConfig, MAX_RECHECKS};
use super::discrepancies::DiscrepancyLog;
use super::stats::ShapeKey;
use crate::redact::Redactor;
use crate::replay::ab::diff::DiffOptions;
use crate::replay::client::Target;
use crate::replay::request::Request;
use bytes::Bytes;
use std::sync::Arc;
use tokio::sync::Semaphore;

pub struct Shared {
    pub config: ShadowConfig,
    pub opts: DiffOptions,
    pub production: Target,
    pub control: Option<Target>,
    pub log: Option<DiscrepancyLog>,
    pub rechecks: Arc<Semaphore>,
    /// Hashes values of discrepancy lines under `--redact values` (one key for the run).
    pub redactor: Redactor,
    /// T0 of `--snapshot`, once the snapshot's first read fixed it.
    pub t0: std::sync::OnceLock<StartPoint>,
}

/// When production's snapshot was taken: its cluster time (a snapshot read), and when the
/// shadow learnt it (for writes acknowledged without an `operationTime`).
#[derive(Debug, Clone, Copy)]
pub struct StartPoint {
    pub cluster_time: Option<(u32, u32)>,
    pub fixed: std::time::Instant,
}

impl Shared {
    pub fn new(
        config: ShadowConfig,
        production: Target,
        control: Option<Target>,
        log: Option<DiscrepancyLog>,
    ) -> Shared {
        Shared {
            opts: super::compare::options(&config.ignore_fields),
            redactor: Redactor::new(config.redaction),
            config,
            production,
            control,
            log,
            rechecks: Arc::new(Semaphore::new(MAX_RECHECKS)),
            t0: std::sync::OnceLock::new(),
        }
    }

    /// A reply as a discrepancy line may show it: values hashed under `--redact values`.
    pub fn shown(&self, frame: &[u8]) -> Vec<u8> {
        match self
            .redactor
            .message(frame, crate::redact::Direction::Reply)
        {
            Ok(Some(redacted)) => redacted,
            Ok(None) => frame.to_vec(),
            // A reply that cannot be redacted is not shown.
            Err(_) => Vec::new(),
        }
    }
}

/// One mirrored read: the request as the client sent it, understood, and production's reply.
#[derive(Debug)]
pub struct Pair {
    pub conn_id: u64,
    pub req: Request,
    pub key: ShapeKey,
    pub production: Bytes,
    pub production_ns: u64,
    /// When production's reply came (the proxy's clock: ns since the Unix epoch).
    pub answered_ns: u64,
    /// The request asked for no order (documents compared as a set).
    pub unordered: bool,
    /// The cursor production's reply opened, if any (the candidate's own is mapped to it).
    pub opens_cursor: Option<i64>,
    /// With `--mirror all`: the writes offered to the targets before production answered this
    /// read (every write its connection saw acknowledged among them); a target applies them
    /// before the read is sent to it.
    pub after_writes: u64,
}

impl Pair {
    /// Bytes it holds in a candidate's queue.
    pub fn size(&self) -> usize {
        self.req.msg.len() + self.production.len()
    }

    pub fn is_get_more(&self) -> bool {
        &*self.req.command == "getMore"
    }
}
