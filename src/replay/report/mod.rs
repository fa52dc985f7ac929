//! The replay report: JSON (`--report`) with the shared [`ReportSummary`] under `summary`, and a text
//! summary for stdout ([`text`]: the same latency table the HTML page shows, built once).
//!
//! Layers, bottom up: shapes < mod.rs shapes_text < run < text why

pub mod run;
pub mod shapes;
pub mod shapes_text;
mod text;
mod why;

use super::measure::buckets::BucketTimeline;
use super::measure::knee::KneeReport;
use super::measure::metrics::{DivergenceReport, HistogramsReport, LagReport, SecondReport};
use super::measure::server::StatusSnapshot;
use crate::figures::errors::ErrorsReport;
use crate::figures::failures::FailuresWarning;
use crate::figures::phases::PhaseReport;
use crate::figures::slowest::SlowRequest;
use crate::figures::summary::{CommandSummary, LatencySummary, ReportSummary};
use crate::replay::pacing::Pacing;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default)]
pub struct ServerReport {
    pub pid: Option<u32>,
    /// How the pid was known: `--server-pid` or `port`.
    #[schemars(extend("enum" = ["--server-pid", "port", null]))]
    pub pid_source: Option<String>,
    #[schemars(range(min = 0))]
    pub cpu_s: Option<f64>,
    #[schemars(range(min = 0))]
    pub cpu_s_per_1k_ops: Option<f64>,
    /// The server's CPU rate with nothing sent, in cores, read for `idle_sample_s` just before
    /// the run (`--idle-sample`).
    #[schemars(range(min = 0))]
    pub idle_cpu_cores: Option<f64>,
    #[schemars(range(min = 0))]
    pub idle_sample_s: Option<f64>,
    /// `cpu_s` less `idle_cpu_cores` over the run's wall time: what the operations cost.
    #[schemars(range(min = 0))]
    pub cpu_net_s: Option<f64>,
    #[schemars(range(min = 0))]
    pub cpu_net_s_per_1k_ops: Option<f64>,
    pub status_before: Option<StatusSnapshot>,
    pub status_after: Option<StatusSnapshot>,
    /// after - before of opcounters, network and connections.
    pub delta: Option<serde_json::Value>,
    pub status_error: Option<String>,
}

impl ServerReport {
    /// Several runs' (shards') view of one server over `ops` operations in all: each measured
    /// all of the server's CPU over nearly the same time, so the widest measurement stands for
    /// the run (not their sum), its rates over `ops`.
    pub fn merge(parts: &[&ServerReport], ops: u64) -> ServerReport {
        let ops = ops.max(1) as f64;
        let widest = parts.iter().filter(|s| s.cpu_s.is_some()).max_by(|a, b| {
            a.cpu_s
                .partial_cmp(&b.cpu_s)
                .unwrap_or(std::cmp::Ordering::Equal)
        });
        match widest {
            Some(w) => {
                let mut r = (*w).clone();
                r.cpu_s_per_1k_ops = r.cpu_s.map(|c| c / ops * 1000.0);
                r.cpu_net_s_per_1k_ops = r.cpu_net_s.map(|c| c / ops * 1000.0);
                r
            }
            None => parts.first().map(|s| (*s).clone()).unwrap_or_default(),
        }
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default)]
pub struct ReplayerReport {
    #[schemars(range(min = 0))]
    pub cpu_s: Option<f64>,
    #[schemars(range(min = 0))]
    pub cpu_us_per_op: Option<f64>,
    /// Worker threads that sent and received (`--threads`), beside the capture reader's.
    pub threads: Option<usize>,
    /// The capture reader thread's part of `cpu_s`: reading, pairing and writing out the requests.
    #[schemars(range(min = 0))]
    pub reader_cpu_s: Option<f64>,
    #[schemars(range(min = 0))]
    pub reader_cpu_us_per_op: Option<f64>,
}

impl ReplayerReport {
    /// Several replayers' CPU (the shards') added up over `ops` operations in all; `None` when
    /// none measured it.
    pub fn merge(parts: &[&ReplayerReport], ops: u64) -> Option<ReplayerReport> {
        let ops = ops.max(1) as f64;
        let measured: Vec<f64> = parts.iter().filter_map(|r| r.cpu_s).collect();
        if measured.is_empty() {
            return None;
        }
        let cpu: f64 = measured.iter().sum();
        let reader: Option<f64> = parts.iter().map(|r| r.reader_cpu_s).sum();
        Some(ReplayerReport {
            cpu_s: Some(cpu),
            cpu_us_per_op: Some(cpu / ops * 1e6),
            threads: None,
            reader_cpu_s: reader,
            reader_cpu_us_per_op: reader.map(|c| c / ops * 1e6),
        })
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default)]
pub struct OptionsReport {
    pub pacing: String,
    pub connections: Option<usize>,
    pub clones: u32,
    pub repeat: Option<u64>,
    #[schemars(range(min = 0))]
    pub duration_s: Option<f64>,
    pub db_map: Vec<String>,
    pub filters: Vec<String>,
    /// The open-loop schedule for all shards together (`--rate`, `--ramp`), for the knee.
    pub open_loop: Option<OpenLoopReport>,
}

/// Recorded latency per command: request to reply in the capture, as `analyze` measures it.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default)]
pub struct RecordedReport {
    pub per_command: BTreeMap<String, LatencySummary>,
    /// The histograms behind them ([`super::measure::hdr`]), for charts and `merge`.
    pub histograms: BTreeMap<String, String>,
    /// The recorded latency histogram of each query shape, by hash (`other` past the cap).
    pub per_shape: BTreeMap<String, String>,
}

impl RecordedReport {
    pub fn of(hists: &BTreeMap<String, hdrhistogram::Histogram<u64>>) -> RecordedReport {
        RecordedReport {
            per_command: hists
                .iter()
                .map(|(k, h)| (k.clone(), LatencySummary::from_ns_histogram(h)))
                .collect(),
            histograms: hists
                .iter()
                .map(|(k, h)| (k.clone(), super::measure::hdr::encode(h)))
                .collect(),
            per_shape: BTreeMap::new(),
        }
    }
}

/// `--rate R`: from = to = R, over_s = 0. `--rate A..B --ramp T [--ramp-steps K]`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct OpenLoopReport {
    #[schemars(range(min = 0))]
    pub from: f64,
    #[schemars(range(min = 0))]
    pub to: f64,
    #[schemars(range(min = 0))]
    pub over_s: f64,
    pub steps: u32,
}

impl OpenLoopReport {
    pub fn of(p: &Pacing) -> Option<OpenLoopReport> {
        match *p {
            Pacing::Rate { ops_per_s } => Some(OpenLoopReport {
                from: ops_per_s,
                to: ops_per_s,
                over_s: 0.0,
                steps: 0,
            }),
            Pacing::Ramp {
                from,
                to,
                over_s,
                steps,
            } => Some(OpenLoopReport {
                from,
                to,
                over_s,
                steps,
            }),
            _ => None,
        }
    }

    pub fn pacing(&self) -> Pacing {
        if self.over_s > 0.0 {
            Pacing::Ramp {
                from: self.from,
                to: self.to,
                over_s: self.over_s,
                steps: self.steps,
            }
        } else {
            Pacing::Rate {
                ops_per_s: self.from,
            }
        }
    }
}

/// `--connections N`: how much the order between writes and what follows them held the replay back.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default)]
pub struct OrderingReport {
    pub connections: usize,
    /// Requests that followed a write of their namespace sent on another connection.
    pub followed_a_write: u64,
    /// Of those, how many had to wait for it, and for how long in all.
    pub waited: u64,
    #[schemars(range(min = 0))]
    pub wait_s: f64,
    /// Requests in flight on average (sum of latencies / wall time): the concurrency the
    /// dependencies allowed, out of `connections` x clones.
    #[schemars(range(min = 0))]
    pub mean_in_flight: f64,
}

/// One lane per recorded connection: requests that waited for their logical session's previous
/// request, sent on another connection ([`crate::replay::route::session_order`]).
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SessionOrderReport {
    /// Requests whose session's previous request went on another connection.
    pub followed: u64,
    /// Of those, how many had to wait for it, and for how long in all.
    pub waited: u64,
    #[schemars(range(min = 0))]
    pub wait_s: f64,
}

impl SessionOrderReport {
    /// Several runs' session waits added up; `None` when no run kept sessions in order.
    pub fn merge<'a>(
        parts: impl IntoIterator<Item = &'a SessionOrderReport>,
    ) -> Option<SessionOrderReport> {
        parts.into_iter().fold(None, |sum, o| {
            let s = sum.unwrap_or_default();
            Some(SessionOrderReport {
                followed: s.followed + o.followed,
                waited: s.waited + o.waited,
                wait_s: s.wait_s + o.wait_s,
            })
        })
    }
}

/// How many replay connections were open at once (`--max-open-connections`,
/// [`crate::replay::route::slots`]).
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default)]
pub struct ConnectionLimitReport {
    /// At most this many open at once.
    pub limit: usize,
    /// Where the limit comes from: `--max-open-connections`, or the process's file limit.
    pub from: String,
    /// The most the replay would open at once without a limit: the recorded connections open at
    /// once at most (times `--clones`), or `--connections` x clones.
    pub wanted: u64,
    /// The most replay connections open at once.
    pub peak_open: u64,
    /// Times a connection waited for a slot.
    pub waited: u64,
    /// Times a connection with nothing to send was closed to give its slot to a waiting one.
    pub given_up: u64,
}

/// The most shards a capture is cut into (`--shard I/N`, `--shards N`, a report's `shard.count`):
/// Kubernetes' bound on an Indexed Job's completions. The replayer and `merge` allocate per shard.
pub const MAX_SHARDS: u32 = 100_000;

/// Which part of the capture a shard replayed (`--shard I/N`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ShardReport {
    pub index: u32,
    pub count: u32,
    /// `I/N`
    #[schemars(pattern(r"^[0-9]+/[0-9]+$"))]
    pub label: String,
}

/// What a merged report was merged from (`mongotape merge`).
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default)]
pub struct MergeReport {
    /// N, from the shard labels.
    pub shards_expected: u32,
    /// Labels (`I/N`) of the shards merged.
    pub merged: Vec<String>,
    /// Labels of the shards with no report.
    pub missing: Vec<String>,
    /// Shards whose replay ended early or read the capture only in part, with why.
    pub failed: BTreeMap<String, String>,
    /// The report files read.
    pub files: Vec<String>,
}

/// `--skip-snapshotted`: the recorded writes the snapshot already holds, left out of the replay
/// (docs/state.md, "What the snapshot already holds").
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SnapshotCutReport {
    /// The snapshot folder the point was read from.
    pub dir: String,
    /// The snapshot's point in time, T0.
    pub t0: crate::state::SnapshotPoint,
    /// `operation_time`: every write was placed by its recorded reply's `operationTime` against
    /// T0; `wall_clock`: some writes (`by_wall_clock`) had none (a standalone upstream, legacy or
    /// unacknowledged writes, a snapshot without a cluster time) and were placed by their
    /// recorded time against the snapshot's read window instead.
    pub method: String,
    /// Writes left out as already in the snapshot, by command; they add up to
    /// `skipped.before_snapshot`.
    pub skipped: BTreeMap<String, u64>,
    /// Writes to the snapshotted collections replayed as later than the snapshot.
    pub replayed: u64,
    /// Writes whose place against T0 cannot be told, replayed: without `operationTime` and
    /// recorded inside the clock uncertainty window (`window_s`), or statements of a
    /// multi-document transaction.
    pub uncertain: u64,
    /// Writes placed by the wall clock, for want of an `operationTime`.
    pub by_wall_clock: u64,
    /// The clock uncertainty window, in seconds: from the snapshot's first read to the moment
    /// its point was fixed (a snapshot read) or its last read ended (plain reads). Null when the
    /// snapshot does not say when it was read.
    pub window_s: Option<f64>,
    /// Collections the snapshot read at a later point than T0, with that point
    /// (`Timestamp(t, i)`): their writes are placed against their own point.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub read_points: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default)]
pub struct ReplayReport {
    /// [`crate::figures::SCHEMA_VERSION`]: the layout of this JSON (docs/schemas/).
    #[schemars(extend("const" = crate::figures::SCHEMA_VERSION))]
    pub schema_version: u32,
    /// `replay` (a merged report too, marked by `merge`; an A/B report says `ab`).
    #[schemars(extend("const" = "replay"))]
    pub kind: String,
    pub mongotape_version: String,
    pub capture: String,
    /// The target, password never included.
    pub target: String,
    /// What `--target` turned out to be: a single server, a replica set (primary, secondaries), mongos.
    pub topology: String,
    pub options: OptionsReport,
    /// `--shard I/N`: this report covers one part of the capture.
    pub shard: Option<ShardReport>,
    /// A merged report: which shard reports it adds up.
    pub merge: Option<MergeReport>,
    /// When the replay's clock started (after `--start-at`), Unix seconds.
    #[schemars(range(min = 0))]
    pub started_at_unix_s: f64,
    /// False when the replay ended early (`error` says why) or read the capture only in part
    /// (`capture_error`).
    pub complete: bool,
    pub error: Option<String>,
    /// Where a truncated or corrupt capture stopped; everything before was replayed.
    pub capture_error: Option<String>,
    /// The figures `compare` reads (kind `replay`).
    #[schemars(extend("properties" = { "kind": { "const": "replay" } }))]
    pub summary: ReportSummary,
    #[schemars(range(min = 0))]
    pub recorded_span_s: f64,
    /// The latency the capture recorded for the requests replayed, to set beside the replay's.
    pub recorded: RecordedReport,
    pub iterations: u64,
    pub requests_read: u64,
    pub sent: u64,
    /// Of `sent`, how many went compressed (recorded compressed, and the target agreed to a compressor).
    pub compressed: u64,
    pub unacknowledged: u64,
    pub connections_opened: u64,
    /// Requests not replayed, by why (handshake, filtered, ...).
    pub skipped: BTreeMap<String, u64>,
    /// `--skip-snapshotted`: which recorded writes the snapshot already held (left out, counted
    /// as `skipped.before_snapshot`) and how that was told.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snapshot_cut: Option<SnapshotCutReport>,
    /// The requests of `skipped.filtered` by which filter left them out (first pass): the keys
    /// of `slice`'s reasons for `--since`, `--until` and `--app` (`before_since`, `after_until`,
    /// `connection_filter`, `cursor_opened_outside`, `transaction_outside_window`, ...), and
    /// `request_filter` for `--command`, `--namespace` and `--connection`.
    pub filtered_by: BTreeMap<String, u64>,
    pub per_namespace: BTreeMap<String, CommandSummary>,
    /// Schedule lag: send time minus intended send time, for every request; `clock`, the same for
    /// the requests their lane reached before their time (the pacing clock's own lateness); `held`,
    /// the requests reached only after it (an earlier reply on their connection, the order's rules,
    /// an open-loop backlog); `from_send`, in open loop, the latency from the actual send (the
    /// server's own; the summary counts from the intended time).
    pub lag: LagReport,
    /// Replies that differed from the recorded ones, by command.
    pub divergences: BTreeMap<String, DivergenceReport>,
    pub stray_replies: u64,
    /// Requests sent again on the new primary after a "not primary" reply (the primary changed).
    pub retried_not_primary: u64,
    /// Requests sent again on a new connection (to the primary found again) after the target
    /// dropped the connection they were in flight on: reads, and writes that are retryable.
    pub retried_dropped_connection: u64,
    pub timeline: Vec<SecondReport>,
    /// The timeline again, in buckets as wide as the run's length calls for (the charts use it).
    pub timeline_buckets: BucketTimeline,
    /// The replay cut at the capture's step markers; empty without markers.
    pub phases: Vec<PhaseReport>,
    /// Open loop: where the server stopped keeping up.
    pub knee: Option<KneeReport>,
    /// `--connections N`: the order kept between dependent requests, and the concurrency left.
    pub ordering: Option<OrderingReport>,
    /// One lane per recorded connection: requests that waited for their logical session's previous
    /// request, sent on another connection (a driver uses a session for one operation at a time, on
    /// any pooled connection). Null with `--connections`.
    pub session_order: Option<SessionOrderReport>,
    /// How many replay connections were open at once (`--max-open-connections`, default the file
    /// limit less 64): the limit, what the replay would have opened at once without it, the most
    /// open at once, and how often a connection waited for a slot or was closed while idle to free
    /// one. Null in A/B replays.
    pub connection_limit: Option<ConnectionLimitReport>,
    /// The histograms behind every percentile, serialized losslessly for `merge`.
    pub histograms: HistogramsReport,
    /// Query shapes (`docs/shapes.md`): `shapes`, `shapes_other`, `shapes_cap`.
    #[serde(flatten)]
    pub shapes: shapes::ReplayShapes,
    pub server: ServerReport,
    pub replayer: ReplayerReport,
    /// The machine's load around the run, as tools/compare-drivers measures it: the 1-minute load
    /// average before and after, and the CPU other processes used meanwhile; `disturbed` when they
    /// kept more than a quarter of a core busy on average (the figures may be off). Null where
    /// /proc cannot be read.
    pub load: Option<super::measure::load::LoadReport>,
    /// `--restore`: the snapshot loaded into this target before the run and before every later
    /// pass, how long each load took, and the `--restore-setup` commands applied after it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub restore: Option<crate::state::restore_plan::RestoreReport>,
    /// The capture was recorded with faults injected (`record --fault`): its `fault` records per
    /// rule and action. The recorded errors, delays and closes were the proxy's, not the server's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub faults: Option<crate::fault::FaultsInjected>,
    /// `--explain`: each explained shape's plan on the target, in the order the shapes were met.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plans: Option<Vec<crate::plan::PlanEntry>>,
    /// `--check-state`: the target's end state against the capture's (`docs/state.md`, "The end
    /// state").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state: Option<crate::state::verdict::StateReport>,
    /// The target's errors by command and code (`errors_by_code`, `errors_by_code_other`).
    #[serde(flatten)]
    pub errors: ErrorsReport,
    /// Set when more than 5% of the operations failed: how many, the most frequent error and
    /// what to do (the text's `WARNING` line). Null otherwise.
    pub failures: Option<FailuresWarning>,
    /// The K slowest requests replayed (`--slowest K`), by the replay's latency; a merged report
    /// keeps the K slowest of its shards.
    pub slowest: Vec<SlowRequest>,
}

impl ReplayReport {
    /// The warning when a large share of the operations failed, from the summary and the errors
    /// by code (set once both are final: a replay's, an A/B target's, a merge's).
    pub fn warn_of_failures(&mut self) {
        self.failures = FailuresWarning::of(&self.summary.overall, &self.errors);
    }

    /// Each plan's documents examined over the run ([`crate::plan::PlanEntry::count_requests`]),
    /// from its shape's requests, and each shape's documents examined per request
    /// (`docs_per_request`), from its plan (joined by hash; a shape past the cap counts none).
    pub fn count_plans(&mut self) {
        let Some(plans) = &mut self.plans else {
            return;
        };
        for p in plans {
            let shape = self
                .shapes
                .shapes
                .iter_mut()
                .find(|s| s.replayed.hash == p.hash);
            if let Some(s) = shape {
                p.count_requests(s.replayed.figures.count);
                s.replayed.figures.docs_per_request = p.docs_examined;
            }
        }
    }
}
