//! Why, beyond how much, in `mongotape analyze`: the workload's errors by command and code
//! (`errors_by_code`) and its K slowest requests (`slowest`), each with the query shape it was
//! charged to.

use super::shapes::ShapeBook;
use crate::figures::errors::{ErrorSeen, ErrorTally, ErrorsReport, DEFAULT_MAX_ERROR_ENTRIES};
use crate::figures::slowest::{body_text, SlowRequest, Slowest};
use crate::report::pair::Pending;
use crate::wire::info::is_handshake_command;
use crate::wire::Message;
use bytes::Bytes;

/// A request is kept for the slowest list only up to this size (a share of its record, held
/// until its reply): 10,000 unanswered requests at most stay bounded in memory.
pub(super) const MAX_KEPT_REQUEST: usize = 64 * 1024;

#[derive(Debug, Default)]
pub(super) struct Why {
    pub(super) errors: ErrorTally,
    pub(super) slowest: Slowest,
}

impl Why {
    pub(super) fn new(slowest: usize, redacted: bool) -> Why {
        Why {
            errors: ErrorTally::new(DEFAULT_MAX_ERROR_ENTRIES, redacted),
            slowest: Slowest::new(slowest),
        }
    }

    /// The request bytes to keep until its reply, if the slowest list is kept at all.
    pub(super) fn keep(&self, payload: &Bytes) -> Option<Bytes> {
        (self.slowest.admits(u64::MAX) && payload.len() <= MAX_KEPT_REQUEST)
            .then(|| payload.clone())
    }

    pub(super) fn report(&self) -> (ErrorsReport, Vec<SlowRequest>) {
        (self.errors.report(), self.slowest.sorted())
    }
}

/// A reply being booked: its connection (the entry that books it, and the recorded id), when it
/// came, its bytes, and the request it answers.
pub(super) struct Answered<'a> {
    /// Whether its connection is a workload one, and the application it named.
    pub(super) conn: Option<(bool, Option<&'a str>)>,
    /// The capture's first record.
    pub(super) first_ns: u64,
    /// The recorded connection and the reply's time.
    pub(super) at: (u64, u64),
    pub(super) reply: &'a [u8],
    pub(super) request_id: i32,
    pub(super) pending: &'a Pending,
    pub(super) error: bool,
}

impl Why {
    /// A workload reply's error by code, and its request among the slowest.
    pub(super) fn explain(&mut self, shapes: &ShapeBook, a: Answered<'_>) {
        let p = a.pending;
        let (workload, application) = a.conn.unwrap_or_default();
        if !workload || is_handshake_command(&p.info.command) {
            return;
        }
        if a.error {
            let errors = &mut self.errors;
            ErrorSeen::of_frame(a.reply, |seen| {
                errors.add(&p.info.command, &seen, || {
                    p.shape.and_then(|s| shapes.describe(s))
                });
            });
        }
        let latency = a.at.1.saturating_sub(p.ts_ns);
        if !self.slowest.admits(latency) {
            return;
        }
        let (shape_hash, shape) = p
            .shape
            .and_then(|s| shapes.describe(s))
            .map_or((None, None), |(h, t)| (Some(h), Some(t)));
        let (body, body_cut) = match p.payload.as_deref().map(Message::parse) {
            Some(Ok(msg)) => body_text(&msg),
            Some(Err(e)) => (format!("(undecodable: {e})"), false),
            None => (format!("(not kept: {} bytes)", p.bytes), true),
        };
        let request = SlowRequest {
            at_s: p.ts_ns.saturating_sub(a.first_ns) as f64 / 1e9,
            connection: a.at.0,
            request_id: a.request_id,
            application: application.map(str::to_owned),
            command: p.info.command.clone(),
            namespace: p.info.namespace(),
            shape_hash,
            shape,
            recorded_us: Some(latency as f64 / 1e3),
            replayed_us: None,
            body,
            body_cut,
        };
        self.slowest.push(latency, request);
    }
}
