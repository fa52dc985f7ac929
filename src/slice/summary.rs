//! What a slice kept and what it left out, and why: the counts `slice` prints (text on stderr,
//! JSON with `--json`).

use serde::Serialize;
use std::collections::BTreeMap;

/// Why a message was left out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Reason {
    /// Before `--since`.
    BeforeWindow,
    /// After `--until`.
    AfterWindow,
    /// Its connection fails `--connection`, `--client`, `--app` or `--driver`.
    Connection,
    /// Its command or namespace fails `--command` or `--namespace`.
    Message,
    /// A getMore or killCursors whose cursor was opened by a reply the slice left out (or before
    /// the capture began).
    CursorOrigin,
    /// A reply to a request the capture does not hold (or no longer tracked).
    Unpaired,
    /// A statement of a transaction that started or ended outside the window (or before the
    /// capture began).
    TransactionPartial,
    /// A statement of a transaction none of whose statements passed the filters.
    TransactionUnmatched,
    /// A statement of a transaction that also ran on connections the filters leave out.
    TransactionConnections,
    /// A statement of a transaction the capture never commits or aborts.
    TransactionUnfinished,
    /// A statement of a transaction that held more records back than the slicer keeps.
    TransactionTooLong,
}

impl Reason {
    /// The key in the JSON summary.
    pub fn name(self) -> &'static str {
        match self {
            Reason::BeforeWindow => "before_since",
            Reason::AfterWindow => "after_until",
            Reason::Connection => "connection_filter",
            Reason::Message => "message_filter",
            Reason::CursorOrigin => "cursor_opened_outside",
            Reason::Unpaired => "reply_unpaired",
            Reason::TransactionPartial => "transaction_outside_window",
            Reason::TransactionUnmatched => "transaction_unmatched",
            Reason::TransactionConnections => "transaction_other_connections",
            Reason::TransactionUnfinished => "transaction_unfinished",
            Reason::TransactionTooLong => "transaction_too_long",
        }
    }

    /// The reason said for people.
    pub fn for_people(self) -> &'static str {
        match self {
            Reason::BeforeWindow => "before --since",
            Reason::AfterWindow => "after --until",
            Reason::Connection => "connection left out (--connection, --client, --app, --driver)",
            Reason::Message => "command or namespace left out (--command, --namespace)",
            Reason::CursorOrigin => "getMore/killCursors whose cursor was opened outside the slice",
            Reason::Unpaired => "reply to a request the capture does not hold",
            Reason::TransactionPartial => "transaction not wholly inside the window",
            Reason::TransactionUnmatched => "transaction none of whose statements matched",
            Reason::TransactionConnections => "transaction that also ran on connections left out",
            Reason::TransactionUnfinished => "transaction never committed or aborted",
            Reason::TransactionTooLong => "transaction holding back too many records",
        }
    }
}

/// Requests and replies, and their wire bytes.
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq, Eq, schemars::JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Messages {
    pub requests: u64,
    pub replies: u64,
    /// Their wire bytes.
    pub bytes: u64,
}

#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq, schemars::JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct SliceSummary {
    #[schemars(extend("const" = crate::figures::SCHEMA_VERSION))]
    pub schema_version: u32,
    /// The capture's messages: what the slice read (what lies after `--until` read only to be
    /// counted, as `after_until`).
    pub read: Messages,
    /// What it kept.
    pub kept: Messages,
    /// Connections with something kept (each written with its open record and handshake
    /// metadata first).
    pub connections_kept: u64,
    /// Of those, connections opened before the window (their open is marked `continued`).
    pub connections_opened_before: u64,
    pub transactions_kept: u64,
    /// Transactions left out whole: cut by a window edge, none of whose statements matched, run on
    /// connections left out, never finished, or holding back too many records.
    pub transactions_dropped: u64,
    /// Requests left out, by reason ([`Reason::name`]).
    pub dropped_requests: BTreeMap<&'static str, u64>,
    /// Replies left out with their request, by the request's reason.
    pub dropped_replies: BTreeMap<&'static str, u64>,
    /// Whether the slice ends with an end record: the capture's was read, or the window ended
    /// before the capture did.
    pub complete: bool,
}

impl SliceSummary {
    pub fn dropped_requests_total(&self) -> u64 {
        self.dropped_requests.values().sum()
    }

    /// True when nothing but events was kept.
    pub fn nothing_kept(&self) -> bool {
        self.kept.requests == 0 && self.kept.replies == 0
    }

    /// A message after `--until` that was not read for the slice, only counted.
    pub(super) fn after_window(&mut self, request: bool, bytes: u64) {
        match request {
            true => self.read.requests += 1,
            false => self.read.replies += 1,
        }
        self.read.bytes += bytes;
        self.drop(request, Reason::AfterWindow);
    }

    pub(super) fn drop(&mut self, request: bool, reason: Reason) {
        let map = match request {
            true => &mut self.dropped_requests,
            false => &mut self.dropped_replies,
        };
        *map.entry(reason.name()).or_default() += 1;
    }

    /// The summary for people, a few lines.
    pub fn render_text(&self) -> String {
        let mut out = format!(
            "kept {} of {} requests and {} of {} replies ({} bytes), on {} connections ({} \
             opened before the window); transactions: {} kept, {} dropped\n",
            self.kept.requests,
            self.read.requests,
            self.kept.replies,
            self.read.replies,
            self.kept.bytes,
            self.connections_kept,
            self.connections_opened_before,
            self.transactions_kept,
            self.transactions_dropped,
        );
        let mut reasons: Vec<(Reason, u64, u64)> = ALL_REASONS
            .iter()
            .map(|r| {
                let n = |m: &BTreeMap<&str, u64>| m.get(r.name()).copied().unwrap_or(0);
                (*r, n(&self.dropped_requests), n(&self.dropped_replies))
            })
            .filter(|(_, q, p)| q + p > 0)
            .collect();
        reasons.sort_by_key(|(r, q, p)| (std::cmp::Reverse(q + p), *r));
        for (r, requests, replies) in reasons {
            out.push_str(&format!(
                "dropped {requests} requests and {replies} replies: {}\n",
                r.for_people()
            ));
        }
        out
    }
}

pub const ALL_REASONS: [Reason; 11] = [
    Reason::BeforeWindow,
    Reason::AfterWindow,
    Reason::Connection,
    Reason::Message,
    Reason::CursorOrigin,
    Reason::Unpaired,
    Reason::TransactionPartial,
    Reason::TransactionUnmatched,
    Reason::TransactionConnections,
    Reason::TransactionUnfinished,
    Reason::TransactionTooLong,
];

/// A message's fate, once judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fate {
    Keep,
    Drop(Reason),
    /// Follows transaction `id`, undecided until its commit or abort.
    Txn(u64),
}

impl Fate {
    pub(super) fn is_drop(self) -> bool {
        matches!(self, Fate::Drop(_))
    }
}
