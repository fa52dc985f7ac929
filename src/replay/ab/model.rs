//! What an A/B report holds: the JSON's types (`docs/schemas/ab.schema.json`); `report` fills
//! them in, `tables`, `text` and the page render them.

use super::control::ControlCheck;
use super::diff::FieldDiff;
use super::stats::RatioEstimate;
use crate::figures::summary::CommandSummary;
use crate::replay::report::run::RunReport;
use crate::replay::report::{OptionsReport, ReplayReport};
use crate::shape::ShapeFigures;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub use crate::figures::report_file::AB_SCHEMA_VERSION as SCHEMA_VERSION;

pub use super::verdict::MIN_PAIRS_FOR_FINDING;

#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default)]
pub struct AbReport {
    #[schemars(extend("const" = SCHEMA_VERSION))]
    pub schema_version: u32,
    /// Always `ab`.
    #[schemars(extend("const" = "ab"))]
    pub kind: String,
    pub mongotape_version: String,
    pub capture: String,
    /// The replay options, as in a replay report.
    pub options: OptionsReport,
    #[schemars(range(min = 0))]
    pub wall_s: f64,
    /// Every target, control first.
    #[schemars(length(max = 3))]
    pub targets: Vec<TargetReport>,
    pub pairs: PairsReport,
    /// The run's own counters, the same for every target (the feed's and the order's):
    /// requests due after `--duration`, and the order kept between connections.
    pub run: RunReport,
    pub overall: AbRow,
    pub per_command: BTreeMap<String, AbRow>,
    pub per_namespace: BTreeMap<String, AbRow>,
    pub differences: DifferencesReport,
    /// Per query shape (docs/shapes.md): its figures on every target (matched by hash) and each
    /// candidate's mean and median latency over the control's on the same requests of the shape,
    /// most moved total time first.
    pub shapes: Vec<AbShapeRow>,
    /// The run's findings as sentences: significant ratios (mean and median agreeing, beyond
    /// A2; `docs/ab.md`, "What makes a finding"), real differences, failed targets.
    pub findings: Vec<String>,
    /// Ratios with an interval clear of 1 that are not findings, each with why ("tail only:
    /// median 1.00x (0.93-1.01x)"): per command, namespace and query shape.
    pub set_aside: Vec<String>,
    /// What makes the figures doubtful: a target where many requests failed, with what to do.
    pub warnings: Vec<String>,
    /// With A2: per command, namespace and query shape, what A2 (a copy of A) showed against A,
    /// and each candidate's ratio judged against it; a ratio `within` it is not a finding
    /// (`docs/ab.md`, "The A2 rule"). Empty without A2.
    pub control: Vec<ControlCheck>,
    /// This process's CPU per request sent to all targets, microseconds.
    pub replayer_cpu_us_per_op: Option<f64>,
    /// False when a target failed or the run stopped early.
    pub complete: bool,
    pub error: Option<String>,
    /// The machine's load around the run, every target's server left out of the others' CPU.
    pub load: Option<crate::replay::measure::load::LoadReport>,
    /// `--explain`: each shape's plan on every target (`target`), with `plan_changed`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plans: Option<Vec<crate::plan::PlanEntry>>,
    /// `--check-state`: the targets' end states against each other (each target's against the
    /// capture's is in its `replay.state`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state_between: Option<crate::state::verdict::StatesBetween>,
}

impl TargetReport {
    pub(super) fn of(label: String, role: &str, rep: ReplayReport) -> TargetReport {
        let per_op = |per_1k: Option<f64>| per_1k.map(|s| s * 1000.0);
        TargetReport {
            label,
            role: role.into(),
            complete: rep.complete,
            error: rep.error.clone(),
            server_cpu_us_per_op: per_op(rep.summary.server_cpu_s_per_1k_ops),
            server_cpu_net_us_per_op: per_op(rep.summary.server_cpu_net_s_per_1k_ops),
            replay: rep,
        }
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default)]
pub struct TargetReport {
    pub label: String,
    /// `control` (A), `candidate` (B) or `baseline` (A2, the control's copy).
    #[schemars(extend("enum" = ["control", "candidate", "baseline"]))]
    pub role: String,
    pub complete: bool,
    pub error: Option<String>,
    pub server_cpu_us_per_op: Option<f64>,
    /// The same net of the server's idle rate (`docs/replay.md`): the figure targets compare by.
    pub server_cpu_net_us_per_op: Option<f64>,
    /// The target's whole replay report, as a single-target replay writes it.
    pub replay: ReplayReport,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default)]
pub struct PairsReport {
    /// Requests answered by every target (their latencies are paired).
    pub paired: u64,
    /// Requests some target did not answer (it failed, or skipped it).
    pub unpaired: u64,
    pub unacknowledged: u64,
    /// Replies compared field by field.
    pub replies_compared: u64,
}

/// One command (or namespace, or all): each target's figures, and each candidate against the control.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default)]
pub struct AbRow {
    /// In target order.
    pub targets: Vec<CommandSummary>,
    pub ratios: Vec<RatioReport>,
    /// A sample of the paired latencies per target, microseconds (HTML only).
    #[serde(skip)]
    pub sample_us: Vec<Vec<f64>>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default)]
pub struct RatioReport {
    /// The target compared with the control.
    pub target: String,
    pub p50: Option<f64>,
    pub p99: Option<f64>,
    pub ops_per_s: Option<f64>,
    /// Mean latency over the control's on the same requests, with its bootstrap interval.
    pub mean: Option<RatioEstimate>,
    /// The median of the per-request latency ratios, with its distribution-free interval: the
    /// typical request, which a few slow outliers do not move.
    pub median: Option<RatioEstimate>,
    pub sentence: Option<String>,
    /// A candidate's ratio that is a finding (`docs/ab.md`, "What makes a finding").
    pub finding: bool,
    /// Why a candidate's ratio with the mean or the median interval clear of 1 is not a finding:
    /// "tail only: median 1.00x (0.93-1.01x)", "within what A2 shows: ...", "DISTURBED run: ...".
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_a_finding: Option<String>,
}

/// One query shape on every target.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default)]
pub struct AbShapeRow {
    #[schemars(pattern(r"^[0-9a-f]{16}$"))]
    pub hash: String,
    pub command: String,
    pub namespace: String,
    pub shape: String,
    /// Each target's figures for the shape, in target order.
    pub targets: Vec<ShapeFigures>,
    /// Each candidate against the control, on the same requests of this shape.
    pub ratios: Vec<RatioReport>,
    /// The most any target's total time on the shape moved from the control's, µs (the rank).
    #[schemars(range(min = 0))]
    pub moved_us: f64,
    /// A sample of the paired latencies per target, microseconds (HTML only).
    #[serde(skip)]
    pub sample_us: Vec<Vec<f64>>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default)]
pub struct DifferencesReport {
    /// Whether a second baseline (A2) filtered noise.
    pub baseline: bool,
    pub compared: u64,
    pub relative_threshold: f64,
    pub absolute_threshold: f64,
    pub noise_threshold: f64,
    pub ignored: Vec<String>,
    /// `--strict-order`: documents compared by position even when the request asked for no order.
    pub strict_order: bool,
    /// Requests that asked for no order whose replies held the same documents in another order
    /// (no difference unless `strict_order`).
    pub reordered: u64,
    /// Fields with real differences (control vs candidate, not explained by noise).
    pub real: Vec<String>,
    /// Every field that differed between any two targets, with its counts and examples.
    pub fields: BTreeMap<String, FieldReport>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default)]
pub struct FieldReport {
    pub compared: u64,
    pub differed: u64,
    pub noise: u64,
    pub unexplained: u64,
    #[schemars(range(min = 0, max = 1))]
    pub noise_rate: f64,
    pub real: bool,
    pub commands: BTreeMap<String, u64>,
    pub examples: Vec<serde_json::Value>,
}

impl From<&FieldDiff> for FieldReport {
    fn from(f: &FieldDiff) -> FieldReport {
        FieldReport {
            compared: f.compared,
            differed: f.differed,
            noise: f.noise,
            unexplained: f.unexplained,
            noise_rate: f.noise_rate,
            real: f.real,
            commands: f.commands.clone(),
            examples: f.examples.clone(),
        }
    }
}
