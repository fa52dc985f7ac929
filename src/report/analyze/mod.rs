//! `mongotape analyze`: from a capture alone, is it the server or the client? Per connection and per
//! driver: the server's time against the client's, round trips, bytes and extra commands per logical
//! operation, latency percentiles per command, and a timeline. Definitions:
//! `docs/analyze.md`.
//!
//! This file holds the report's schema. The pass over the capture is in `pass` (its per-connection
//! clock in `conn`, its per-command figures in `commands`, its timeline in `timeline`), the end
//! of a connection and of the capture in `finish`; the renderings are [`text`] and
//! [`crate::report::html::analyze`].
//!
//! Layers, bottom up: conn explain shapes < mod.rs why < commands tables timeline < tally text < finish pass

mod commands;
mod conn;
pub mod explain;
mod finish;
mod pass;
mod shapes;
pub mod tables;
mod tally;
pub mod text;
mod timeline;
mod why;

use crate::figures::errors::ErrorsReport;
use crate::figures::phases::PhaseReport;
use crate::figures::slowest::SlowRequest;
use crate::figures::summary::{LatencySummary, ReportSummary};
use crate::shape::ShapesReport;
pub use conn::{ConnClock, Gaps, TimeSplit};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub use pass::{
    analyze, analyze_explained, analyze_file, analyze_files, analyze_files_explained,
    analyze_files_limited, analyze_files_sliced, analyze_files_with, analyze_limited, analyze_with,
    Limits,
};

/// What a request is for, seen from the workload.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "camelCase")]
pub enum Category {
    /// A logical operation the application asked for (find, insert, update, aggregate, drop, ...).
    Operation,
    /// Connection set-up on a workload connection: hello/isMaster, authentication, buildInfo, ping.
    Handshake,
    /// Server monitoring: every request of a monitoring connection.
    Monitoring,
    /// Session bookkeeping (endSessions, refreshSessions, killSessions).
    Sessions,
    /// A cursor's next batch.
    GetMore,
    KillCursors,
    /// Legacy acknowledgement of a legacy write.
    GetLastError,
}

impl Category {
    pub fn name(self) -> &'static str {
        match self {
            Category::Operation => "operation",
            Category::Handshake => "handshake",
            Category::Monitoring => "monitoring",
            Category::Sessions => "sessions",
            Category::GetMore => "getMore",
            Category::KillCursors => "killCursors",
            Category::GetLastError => "getLastError",
        }
    }

    /// The category of a command sent on a workload connection.
    pub fn of(command: &str) -> Category {
        match command {
            "getMore" => Category::GetMore,
            "killCursors" => Category::KillCursors,
            "endSessions" | "refreshSessions" | "killSessions" | "killAllSessions" => {
                Category::Sessions
            }
            "getLastError" | "getlasterror" => Category::GetLastError,
            c if crate::wire::info::is_handshake_command(c) => Category::Handshake,
            _ => Category::Operation,
        }
    }
}

/// Commands a monitoring connection sends: hello in its spellings, and authentication.
pub fn is_monitoring_command(command: &str) -> bool {
    matches!(
        command,
        "hello"
            | "isMaster"
            | "ismaster"
            | "saslStart"
            | "saslContinue"
            | "authenticate"
            | "getnonce"
    )
}

/// What a connection was used for.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// At least one request beyond hello and authentication.
    Workload,
    /// Only hello (several, or awaitable/exhaust) and authentication: a driver's server monitor.
    Monitoring,
    /// One handshake and nothing else (a pool connection never used).
    HandshakeOnly,
    /// No request at all.
    Idle,
}

impl Role {
    pub fn name(self) -> &'static str {
        match self {
            Role::Workload => "workload",
            Role::Monitoring => "monitoring",
            Role::HandshakeOnly => "handshake-only",
            Role::Idle => "idle",
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ConnReport {
    pub id: u64,
    pub client: String,
    /// `name version` from the handshake's client metadata, `unknown` without one.
    pub driver: String,
    pub application: Option<String>,
    pub role: Option<Role>,
    /// Seconds from the capture's first record to the open (or first event).
    pub opened_s: f64,
    /// False when the capture ended with the connection still open.
    pub closed: bool,
    pub requests: u64,
    /// Requests that waited for a reply.
    pub round_trips: u64,
    pub replies: u64,
    pub bytes: u64,
    pub ops: u64,
    /// Requests per category other than `operation`.
    pub extra: BTreeMap<String, u64>,
    pub times: TimeSplit,
    #[schemars(range(min = 0, max = 1))]
    pub client_bound_share: Option<f64>,
}

impl ConnReport {
    /// The driver a connection is grouped under: `name version`, plus ` (app)` when it named itself.
    pub(super) fn driver_key(&self) -> String {
        match &self.application {
            Some(app) => format!("{} ({app})", self.driver),
            None => self.driver.clone(),
        }
    }
}

/// Per logical operation (workload connections only).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PerOp {
    #[schemars(range(min = 0))]
    pub requests: f64,
    #[schemars(range(min = 0))]
    pub round_trips: f64,
    #[schemars(range(min = 0))]
    pub bytes: f64,
    /// Extra requests per category, per operation.
    pub extra: BTreeMap<String, f64>,
    /// Server and client time per operation, microseconds.
    #[schemars(range(min = 0))]
    pub server_us: f64,
    #[schemars(range(min = 0))]
    pub client_us: f64,
}

/// Sums over a set of connections.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Totals {
    pub connections: u64,
    pub requests: u64,
    pub round_trips: u64,
    pub replies: u64,
    pub bytes: u64,
    pub ops: u64,
    pub extra: BTreeMap<String, u64>,
    /// Connection-time: summed over the connections, so it can exceed the capture's duration.
    pub times: TimeSplit,
    #[schemars(range(min = 0, max = 1))]
    pub client_bound_share: Option<f64>,
    pub per_op: Option<PerOp>,
}

impl Totals {
    pub fn add(&mut self, c: &ConnReport) {
        self.connections += 1;
        self.requests += c.requests;
        self.round_trips += c.round_trips;
        self.replies += c.replies;
        self.bytes += c.bytes;
        self.ops += c.ops;
        for (k, v) in &c.extra {
            *self.extra.entry(k.clone()).or_default() += v;
        }
        self.times.add(&c.times);
    }

    /// Fills the derived figures once every connection is in.
    pub fn finish(&mut self) {
        self.client_bound_share = self.times.client_bound_share();
        self.per_op = (self.ops > 0).then(|| {
            let ops = self.ops as f64;
            PerOp {
                requests: self.requests as f64 / ops,
                round_trips: self.round_trips as f64 / ops,
                bytes: self.bytes as f64 / ops,
                extra: self
                    .extra
                    .iter()
                    .map(|(k, v)| (k.clone(), *v as f64 / ops))
                    .collect(),
                server_us: self.times.server_ns as f64 / 1e3 / ops,
                client_us: self.times.client_ns as f64 / 1e3 / ops,
            }
        });
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DriverReport {
    /// `name version` (plus ` (app)` when the application named itself).
    pub driver: String,
    pub workload: Totals,
    /// Monitoring, handshake-only and idle connections.
    pub other: Totals,
    /// Latency of this driver's logical operations, per command.
    pub per_command: BTreeMap<String, LatencySummary>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CommandReport {
    pub command: String,
    pub category: Option<Category>,
    pub requests: u64,
    pub replies: u64,
    pub no_reply_expected: u64,
    pub errors: u64,
    pub request_bytes: u64,
    pub reply_bytes: u64,
    pub latency: LatencySummary,
    /// Latency distribution: `[upper bound µs, share of replies %]`, log-spaced buckets.
    pub distribution: Vec<[f64; 2]>,
}

/// One bucket of the timeline (workload connections); buckets are `timeline_bucket_s` wide.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TimelinePoint {
    /// Start of the bucket, seconds from the capture's first record.
    pub t_s: f64,
    /// Logical operations sent in this bucket, and as a rate.
    pub ops: u64,
    #[schemars(range(min = 0))]
    pub ops_per_s: f64,
    /// Replies to logical operations received in this bucket, and their latency.
    pub replies: u64,
    #[schemars(range(min = 0))]
    pub mean_us: f64,
    #[schemars(range(min = 0))]
    pub max_us: f64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CaptureFacts {
    pub start_time: String,
    /// The server the proxy recorded from; empty for an import that was not told it (`source`
    /// says where an import came from).
    pub upstream: String,
    /// Where an imported capture came from, as its metadata says (`pcap: app.pcap`); absent for
    /// a capture the proxy recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// Only for a slice (`mongotape slice`): the capture it was cut from and the filters
    /// (`run.mtape: since=90s app=checkout`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slice: Option<String>,
    pub records: u64,
    #[schemars(range(min = 0))]
    pub duration_s: f64,
    /// The capture ends with a clean `end` record.
    pub complete: bool,
    /// Set when reading stopped early: what and where (the first of `read_errors`).
    pub error: Option<String>,
    /// Every reading error, in order: in a set of segments each names its file, and reading went
    /// on with the next segment.
    #[serde(default)]
    pub read_errors: Vec<String>,
    pub dropped_messages: u64,
    pub undecodable_messages: u64,
    pub unanswered_requests: u64,
    /// Requests not kept for pairing once the bound on unanswered requests was reached
    /// (`report::pair`: 1,000 per connection, 10,000 in all); a reply to one is unsolicited.
    #[serde(default)]
    pub unanswered_untracked: u64,
    /// Connections that opened while 10,000 others were open: counted in every total and per
    /// command, their time unattributed, none listed or told apart by driver.
    #[serde(default)]
    pub connections_folded: u64,
    pub unsolicited_replies: u64,
}

impl CaptureFacts {
    /// Where the capture comes from, for people: `recorded 2026-12-05T05:00:00Z from upstream
    /// 127.0.0.1:27017`, or `imported from pcap: app.pcap, starting ...`; a slice adds `, cut from
    /// ...`.
    pub fn origin(&self) -> String {
        let mut out = match (&self.source, self.upstream.is_empty()) {
            (Some(source), true) => format!("imported from {source}, starting {}", self.start_time),
            (Some(source), false) => format!(
                "imported from {source} (upstream {}), starting {}",
                self.upstream, self.start_time
            ),
            (None, true) => format!("recorded {}", self.start_time),
            (None, false) => format!(
                "recorded {} from upstream {}",
                self.start_time, self.upstream
            ),
        };
        if let Some(slice) = &self.slice {
            out.push_str(&format!(", cut from {slice}"));
        }
        out
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AnalyzeReport {
    /// [`crate::figures::SCHEMA_VERSION`]: the layout of this JSON (docs/schemas/).
    #[serde(default)]
    #[schemars(extend("const" = crate::figures::SCHEMA_VERSION))]
    pub schema_version: u32,
    /// The figures `compare` reads (kind `analyze`).
    #[schemars(extend("properties" = { "kind": { "const": "analyze" } }))]
    pub summary: ReportSummary,
    pub capture: CaptureFacts,
    /// Workload connections.
    pub workload: Totals,
    /// Monitoring, handshake-only and idle connections: kept apart so they do not distort the
    /// workload's figures.
    pub other: Totals,
    pub drivers: Vec<DriverReport>,
    /// Commands on workload connections, most requested first.
    pub commands: Vec<CommandReport>,
    /// Commands on the other connections.
    pub other_commands: Vec<CommandReport>,
    /// Up to 10,000 connections (the first to close), by id; all of them count in the totals.
    pub connections: Vec<ConnReport>,
    /// Connections beyond those listed.
    pub connections_not_listed: u64,
    /// Width of a timeline bucket: 10 ms, 100 ms, 1 s, ... so there are at most 1,000.
    #[schemars(extend("exclusiveMinimum" = 0))]
    pub timeline_bucket_s: f64,
    pub timeline: Vec<TimelinePoint>,
    /// The capture cut at its step markers (`wire::marker`); empty without markers.
    #[serde(default)]
    pub phases: Vec<PhaseReport>,
    /// Query shapes (`docs/shapes.md`): `shapes`, most total time first, `shapes_other` and
    /// `shapes_cap`.
    #[serde(flatten)]
    pub shapes: ShapesReport,
    /// The latency histograms (ns) of the shapes with the most time, for the page's charts.
    #[serde(skip)]
    pub shape_histograms: Vec<(String, hdrhistogram::Histogram<u32>)>,
    /// `--explain URI`: each shape's first request explained on that server (`docs/shapes.md`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plans: Option<Vec<crate::plan::PlanEntry>>,
    /// The workload's errors by command and code (`errors_by_code`, `errors_by_code_other`).
    #[serde(flatten, default)]
    pub errors: ErrorsReport,
    /// The K slowest workload requests (`--slowest`), slowest first.
    #[serde(default)]
    pub slowest: Vec<SlowRequest>,
    /// `record --fault`: the faults injected while recording (the capture's `fault` records),
    /// per rule and action; absent when none were. Their errors, delays and closes are in the
    /// figures above.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub faults: Option<crate::fault::FaultsInjected>,
}
