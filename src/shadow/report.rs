//! The shadow's report (`--report shadow.json`), rewritten every `--report-every` seconds and at
//! stop, and its text summary. Per target (each candidate and the control), per query shape:
//! requests mirrored, shed, lost while the target was down, matched, confirmed discrepancies,
//! noise, errors by code on each side, both sides' latency, and the candidate's latency over
//! production's with its interval (`replay::ab::stats`, as the A/B report gives it), judged
//! against the control's (the A2 rule, `replay::ab::control`) when there is one.

use super::stats::{shift, CandidateStats, ShapeFigures};
use crate::replay::ab::control::{self, ControlCheck, Names};
use crate::replay::ab::stats::{Bootstrap, RatioEstimate};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// `mongotape shadow --report`: the live shadow's comparison of candidates with production.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ShadowReport {
    /// `shadow`: how `compare` knows this report.
    #[schemars(extend("const" = "shadow"))]
    pub kind: String,
    pub schema_version: u32,
    pub mongotape_version: String,
    /// When the shadow started (RFC 3339).
    pub started: String,
    /// Seconds since then.
    pub seconds: f64,
    /// True in the report written at stop; false in the periodic ones.
    pub complete: bool,
    /// Production, as `--upstream` names it (password masked).
    pub production: String,
    /// Reads dropped before the mirror saw them (its intake was full): not mirrored anywhere.
    pub intake_dropped: u64,
    /// Reads the filters left out (`--sample`, `--namespace`, `--command`, `--app`): not
    /// mirrored anywhere, by choice (not counted as shed).
    pub filtered: u64,
    /// Each candidate, then the control.
    pub targets: Vec<TargetReport>,
}

/// One mirrored target.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TargetReport {
    /// Its connection string, password masked.
    pub label: String,
    /// `candidate` or `control`.
    #[schemars(extend("enum" = ["candidate", "control"]))]
    pub role: String,
    /// Connections opened to it (the first ones and every reconnection).
    pub connections: u64,
    /// Connections that failed or were dropped: refused, timed out, closed, garbage.
    pub connection_failures: u64,
    /// The shapes' counts added up.
    pub totals: Counts,
    /// Its mirrored writes, with `--mirror all`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub writes: Option<WritesReport>,
    pub shapes: Vec<ShapeEntry>,
}

/// A target's mirrored writes (`--mirror all`): those production acknowledged, applied in the
/// order it acknowledged them.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct WritesReport {
    /// `restoring` (production's snapshot is being taken or restored into the target: writes
    /// wait), `mirroring`, or `reads_only` (writes were dropped: reads only from then on).
    #[schemars(extend("enum" = ["restoring", "mirroring", "reads_only"]))]
    pub state: String,
    /// Writes applied to the target.
    pub mirrored: u64,
    /// Writes the target answered with an error (or more write errors) where production did not.
    pub failed: u64,
    /// Writes acknowledged before T0: in the snapshot restored already, not applied again.
    pub in_snapshot: u64,
    /// Writes waiting now, and the most that waited at once (during the restore).
    pub queued: u64,
    pub queued_peak: u64,
    /// Writes not applied because the target went to reads only.
    pub dropped: u64,
}

impl WritesReport {
    fn of(w: &super::stats::WriteCounters) -> Option<WritesReport> {
        use std::sync::atomic::Ordering::Relaxed;
        w.enabled.load(Relaxed).then(|| WritesReport {
            state: w.state().name().into(),
            mirrored: w.mirrored.load(Relaxed),
            failed: w.failed.load(Relaxed),
            in_snapshot: w.in_snapshot.load(Relaxed),
            queued: w.queued.load(Relaxed),
            queued_peak: w.queued_peak.load(Relaxed),
            dropped: w.dropped.load(Relaxed),
        })
    }
}

/// What happened to the reads of one shape (or of all).
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Counts {
    /// Reads sent to the target and answered.
    pub mirrored: u64,
    /// Reads not sent: the target's queue or the connection's outstanding bound was full.
    pub shed: u64,
    /// Reads lost while the target was down or being reconnected.
    pub gaps: u64,
    /// getMores whose cursor the target does not have (its opening read was shed or lost).
    pub orphans: u64,
    /// Answered with a reply equal to production's (after normalization).
    pub matched: u64,
    /// Differed, then matched when sent again to both sides (data that changed in between).
    pub settled: u64,
    /// Differed, and still differed when sent again: real differences.
    pub discrepancies: u64,
    /// Differed, but the control differed from production the same way.
    pub noise: u64,
    /// Differed and could not be sent again (a getMore, or too many rechecks at once).
    pub unconfirmed: u64,
    /// Reads of a namespace production's snapshot holds, answered by production before the
    /// restore into the target was done (`--snapshot`): not compared, and not shed either.
    #[serde(default)]
    pub not_ready: u64,
}

impl Counts {
    fn of(f: &ShapeFigures) -> Counts {
        Counts {
            mirrored: f.mirrored,
            shed: f.shed,
            gaps: f.gaps,
            orphans: f.orphans,
            matched: f.matched,
            settled: f.settled,
            discrepancies: f.discrepancies,
            noise: f.noise,
            unconfirmed: f.unconfirmed,
            not_ready: f.not_ready,
        }
    }

    fn add(&mut self, o: &Counts) {
        self.mirrored += o.mirrored;
        self.shed += o.shed;
        self.gaps += o.gaps;
        self.orphans += o.orphans;
        self.matched += o.matched;
        self.settled += o.settled;
        self.discrepancies += o.discrepancies;
        self.noise += o.noise;
        self.unconfirmed += o.unconfirmed;
        self.not_ready += o.not_ready;
    }
}

/// Latency in microseconds.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Latency {
    pub p50: f64,
    pub p99: f64,
    pub mean: f64,
    pub max: f64,
}

impl Latency {
    fn of(h: &Histogram<u64>) -> Option<Latency> {
        (!h.is_empty()).then(|| Latency {
            p50: h.value_at_quantile(0.5) as f64 / 1e3,
            p99: h.value_at_quantile(0.99) as f64 / 1e3,
            mean: h.mean() / 1e3,
            max: h.max() as f64 / 1e3,
        })
    }
}

/// One query shape on one target.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ShapeEntry {
    /// The shape's text (`find shop.orders {status: ?string}`), or `other`.
    pub shape: String,
    #[schemars(pattern(r"^[0-9a-f]{16}$"))]
    pub hash: String,
    pub command: String,
    pub namespace: String,
    #[serde(flatten)]
    pub counts: Counts,
    /// Error replies by code, production's and the target's (for the same reads).
    pub errors_production: BTreeMap<String, u64>,
    pub errors_target: BTreeMap<String, u64>,
    pub production_latency_us: Option<Latency>,
    pub target_latency_us: Option<Latency>,
    /// The target's mean latency over production's on the same reads, with its interval.
    pub ratio: Option<RatioEstimate>,
    /// The median of the per-read ratios, with its distribution-free interval.
    pub median_ratio: Option<RatioEstimate>,
    /// This shape's share of production's time over the mirrored reads (0 to 1).
    pub share_of_production_time: f64,
    /// `slower` or `faster`: the median of the per-read ratios and its whole 95% interval lie
    /// beyond 1.2x either way (a latency shift; absent otherwise). With a control, absent too
    /// when the control's median ratio on this shape allows as much (the A2 rule).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_shift: Option<String>,
    /// The winning plan on production and on the target (`IXSCAN {g: 1} -> FETCH`), from the
    /// last explain of a read of this shape that still differed when sent again or whose
    /// latency shifted (at most two per shape and target in 15 minutes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan_production: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan_target: Option<String>,
    /// Whether the two plans differ (present when both were explained).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan_changed: Option<bool>,
    /// Why the plans were asked: `discrepancy` (a read still differed) or `latency` (a shift).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan_reason: Option<String>,
    /// The candidate's ratio judged against the control's on this shape (the A2 rule).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub control: Option<ControlCheck>,
}

/// The control's ratios per shape (the mean's, and the median's), and its label, when there is
/// a control.
struct ControlRatios<'a> {
    label: &'a str,
    ratios: BTreeMap<String, RatioEstimate>,
    medians: BTreeMap<String, RatioEstimate>,
}

/// `slower` or `faster` when the median ratio shifted ([`shift`]), unless the control's median
/// ratio on the same shape allows as much (the A2 rule): then production and its copy differ
/// by that much on this machine too. A shape the control has no ratio for is judged alone.
fn latency_shift(
    median: Option<&RatioEstimate>,
    control: Option<Option<&RatioEstimate>>,
) -> Option<String> {
    let shifted = shift(median?, 0.95)?;
    match control.flatten() {
        Some(a2) if control::within(a2, median?) => None,
        _ => Some(shifted.to_owned()),
    }
}

/// Builds the report from each target's figures: `(label, role, stats)`.
pub fn build(
    head: (&str, f64, bool, u64, u64),
    targets: &[(String, &'static str, &CandidateStats)],
    started: &str,
) -> ShadowReport {
    let (production, seconds, complete, intake_dropped, filtered) = head;
    let boot = Bootstrap::default();
    let control = targets.iter().find(|t| t.1 == "control").map(|t| {
        let mut ratios = ControlRatios {
            label: &t.0,
            ratios: BTreeMap::new(),
            medians: BTreeMap::new(),
        };
        for (k, f) in t.2.shapes() {
            let (ratio, median) = t.2.estimates(&k, &f.pairs, &boot, complete);
            if let Some(r) = ratio {
                ratios.ratios.insert(k.clone(), r);
            }
            if let Some(m) = median {
                ratios.medians.insert(k, m);
            }
        }
        ratios
    });
    let out = targets
        .iter()
        .map(|(label, role, stats)| {
            let control = control.as_ref().filter(|_| *role == "candidate");
            target_report(label, role, stats, control, (&boot, complete))
        })
        .collect();
    ShadowReport {
        kind: "shadow".into(),
        schema_version: 1,
        mongotape_version: env!("CARGO_PKG_VERSION").into(),
        started: started.into(),
        seconds,
        complete,
        production: production.into(),
        intake_dropped,
        filtered,
        targets: out,
    }
}

fn target_report(
    label: &str,
    role: &str,
    stats: &CandidateStats,
    control: Option<&ControlRatios<'_>>,
    (boot, exact): (&Bootstrap, bool),
) -> TargetReport {
    let shapes = stats.shapes();
    let time = |f: &ShapeFigures| f.production_ns.mean() * f.production_ns.len() as f64;
    let total_ns: f64 = shapes.iter().map(|(_, f)| time(f)).sum();
    let mut totals = Counts::default();
    let mut entries = Vec::new();
    for (text, f) in &shapes {
        let counts = Counts::of(f);
        totals.add(&counts);
        let (ratio, median) = stats.estimates(text, &f.pairs, boot, exact);
        let check = control.and_then(|c| {
            let names = Names {
                kind: "shape",
                name: text,
                hash: None,
                control: "production",
                baseline: c.label,
                candidate: label,
            };
            Some(control::check(&names, c.ratios.get(text)?, ratio.as_ref()?))
        });
        entries.push(ShapeEntry {
            shape: text.clone(),
            hash: crate::shape::hash(text),
            command: f.command.clone(),
            namespace: f.namespace.clone(),
            counts,
            errors_production: codes(&f.errors_production),
            errors_target: codes(&f.errors_candidate),
            production_latency_us: Latency::of(&f.production_ns),
            target_latency_us: Latency::of(&f.candidate_ns),
            ratio,
            latency_shift: latency_shift(median.as_ref(), control.map(|c| c.medians.get(text))),
            median_ratio: median,
            share_of_production_time: if total_ns > 0.0 {
                time(f) / total_ns
            } else {
                0.0
            },
            control: check,
            plan_changed: f.plans.as_ref().map(|p| p.production != p.candidate),
            plan_production: f.plans.as_ref().map(|p| p.production.clone()),
            plan_target: f.plans.as_ref().map(|p| p.candidate.clone()),
            plan_reason: f.plans.as_ref().map(|p| p.reason.as_str().to_owned()),
        });
    }
    entries.sort_by(|a, b| {
        (b.counts.discrepancies, b.counts.mirrored)
            .cmp(&(a.counts.discrepancies, a.counts.mirrored))
    });
    TargetReport {
        label: label.to_owned(),
        role: role.to_owned(),
        connections: stats.connections.load(std::sync::atomic::Ordering::Relaxed),
        connection_failures: stats
            .connection_failures
            .load(std::sync::atomic::Ordering::Relaxed),
        totals,
        writes: WritesReport::of(&stats.writes),
        shapes: entries,
    }
}

fn codes(m: &BTreeMap<i32, u64>) -> BTreeMap<String, u64> {
    m.iter().map(|(c, n)| (c.to_string(), *n)).collect()
}

/// The summary printed at stop: a line per target, then its shapes with discrepancies.
pub fn text(r: &ShadowReport) -> String {
    let mut out = format!("shadow of {} for {:.0}s\n", r.production, r.seconds);
    if r.intake_dropped > 0 {
        out += &format!(
            "  {} reads dropped before mirroring (intake full)\n",
            r.intake_dropped
        );
    }
    if r.filtered > 0 {
        out += &format!("  {} reads left out by the filters\n", r.filtered);
    }
    for t in &r.targets {
        let c = &t.totals;
        out += &format!(
            "{} {}: {} mirrored, {} matched, {} discrepancies, {} noise, {} settled, {} \
             unconfirmed, {} shed, {} lost while down, {} reconnections\n",
            t.role,
            t.label,
            c.mirrored,
            c.matched,
            c.discrepancies,
            c.noise,
            c.settled,
            c.unconfirmed,
            c.shed,
            c.gaps,
            t.connection_failures
        );
        if let Some(w) = &t.writes {
            out += &format!(
                "  writes {}: {} mirrored, {} failed, {} in the snapshot, {} dropped, {} queued \
                 at most\n",
                w.state, w.mirrored, w.failed, w.in_snapshot, w.dropped, w.queued_peak
            );
        }
        for s in t
            .shapes
            .iter()
            .filter(|s| s.counts.discrepancies > 0)
            .take(10)
        {
            out += &format!("  {} discrepancies: {}\n", s.counts.discrepancies, s.shape);
        }
        for s in t.shapes.iter().take(5) {
            if let Some(ratio) = &s.ratio {
                out += &format!("  {}: {}\n", s.shape, ratio.interval_text());
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn est(ratio: f64, low: f64, high: f64) -> RatioEstimate {
        RatioEstimate::test(ratio, low, high)
    }

    /// A shift the control shows as well is no finding; one beyond the control's band is, and
    /// so is one on a shape the control has no ratio for.
    #[test]
    fn a_latency_shift_the_control_shows_too_is_not_one() {
        let faster = est(0.78, 0.72, 0.82);
        assert_eq!(
            latency_shift(Some(&faster), None).as_deref(),
            Some("faster")
        );
        let copy_too = est(0.80, 0.74, 0.86);
        assert_eq!(latency_shift(Some(&faster), Some(Some(&copy_too))), None);
        let copy_same = est(1.0, 0.95, 1.05);
        let slower = est(5.0, 4.5, 5.5);
        assert_eq!(
            latency_shift(Some(&slower), Some(Some(&copy_same))).as_deref(),
            Some("slower")
        );
        assert_eq!(
            latency_shift(Some(&faster), Some(None)).as_deref(),
            Some("faster")
        );
        let none = est(1.1, 0.9, 1.3);
        assert_eq!(latency_shift(Some(&none), None), None);
        assert_eq!(latency_shift(None, None), None);
    }
}
