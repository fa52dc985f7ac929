//! The knee of an open-loop run (`--rate`, above all `--rate A..B --ramp T`): the intended rate at
//! which the run stops keeping up, which command broke, and what held it back ([`limit`]).
//!
//! Definition, over the wall-clock seconds of the timeline that lie wholly inside the run's
//! schedule (`docs/replay.md`, "The knee"). The knee is the first second where the operations
//! completed fall below [`THROUGHPUT_SHARE`] of those due (on a ramp from the first whole second:
//! its lowest rates; at a constant rate past the first 10% of the schedule), or, on a ramp past
//! the first 10%, where a command with [`MIN_REPLIES`] replies in it has a p99 above [`P99_FACTOR`]
//! times its own baseline. Like is compared with like: each command against its own baseline, the
//! p99 of its replies in the seconds that start in the first 10% of the schedule (at least the
//! first whole second), or, for a command with fewer than [`MIN_REPLIES`] there, in the seconds
//! from its first appearance until it has them. At a constant rate p99 does not count: a later
//! p99 there is the capture's mix changing, not the rate. The knee's rate is the intended rate at
//! the middle of its second; the last rate that held is the one at the middle of the second
//! before.
//!
//! Layers, bottom up: seconds < limit

mod limit;
mod seconds;
#[cfg(test)]
mod tests;

use crate::figures::units;
use crate::replay::pacing::Pacing;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub use limit::{Limit, BUSY_SHARE, SERVICE_HELD};
pub use seconds::{command_histogram, Bucket, CommandBucket, Schedule};
use seconds::{gather, Baselines, Gathered};

/// Replies a command needs for a baseline, and in a second for that second to be compared.
pub const MIN_REPLIES: u64 = 20;
pub const P99_FACTOR: f64 = 2.0;
pub const THROUGHPUT_SHARE: f64 = 0.9;

pub const DEFINITION: &str = "first whole second where completed operations fall below 90% of those due (on a ramp from the first whole second, at a constant rate after the first 10% of the schedule), or, on a ramp after the first 10%, where a command with 20 replies in the second has a p99 latency above 2x its own baseline: its p99 in the first 10% of the schedule, or in its first seconds with 20 replies";

#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default)]
pub struct KneeReport {
    pub definition: String,
    /// The baseline p99 of `command`.
    #[schemars(range(min = 0))]
    pub baseline_p99_us: f64,
    /// The intended rate (ops/s, all shards) where the knee is; `None`: the run held throughout.
    #[schemars(range(min = 0))]
    pub rate_ops_per_s: Option<f64>,
    /// Seconds from the start of the schedule to the knee's second.
    #[schemars(range(min = 0))]
    pub at_s: Option<f64>,
    /// `p99` or `throughput`.
    #[schemars(extend("enum" = ["p99", "throughput", null]))]
    pub reason: Option<String>,
    /// `command`'s p99 in the knee's second (the whole mix's when no command had a baseline).
    #[schemars(range(min = 0))]
    pub p99_us: Option<f64>,
    #[schemars(range(min = 0))]
    pub achieved_ops_per_s: Option<f64>,
    /// The intended rate of the last second that held.
    #[schemars(range(min = 0))]
    pub last_held_ops_per_s: Option<f64>,
    /// The command whose p99 broke (`reason: p99`), else the one with the most replies at the
    /// knee (or, without a knee, in the whole run).
    pub command: Option<String>,
    /// Each command's baseline: the p99 and mean time from send to reply of its replies in the
    /// first 10% of the schedule, or in its first seconds with 20 replies.
    pub baselines: BTreeMap<String, Baseline>,
    /// What held the rate back at the knee ([`limit`], docs/replay.md, "The knee"): `server`,
    /// `connections` or `replayer`; null without a knee.
    #[schemars(extend("enum" = ["server", "connections", "replayer", null]))]
    pub limit: Option<String>,
    #[serde(flatten)]
    pub figures: limit::Figures,
    /// The knee in a sentence, its figures rounded.
    pub summary: String,
}

/// A command's baseline: its replies' p99 and mean time from send to reply.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default)]
pub struct Baseline {
    #[schemars(range(min = 0))]
    pub p99_us: f64,
    #[schemars(range(min = 0))]
    pub service_us: f64,
    pub replies: u64,
    /// Seconds from the start of the schedule to its first second.
    pub from_s: f64,
}

/// The knee of the schedule; `None` for a run without one (not open loop) or without a whole
/// second inside it.
pub fn find(schedule: &Schedule<'_>, buckets: &[Bucket<'_>]) -> Option<KneeReport> {
    let pacing = schedule.pacing;
    pacing.rate_at(0.0)?;
    let duration_s = schedule.duration_s;
    // Whole seconds inside the schedule, with the offset of their start from the schedule's start.
    let inside: Vec<(f64, &Bucket<'_>)> = buckets
        .iter()
        .map(|b| (b.unix_s as f64 - schedule.started_at_unix_s, b))
        .filter(|(t, _)| *t >= 0.0 && *t + 1.0 <= duration_s)
        .collect();
    let first = inside.first()?;
    let cut = (duration_s * 0.1).max(first.0 + 1e-9);
    let ramp = matches!(pacing, Pacing::Ramp { .. });
    let mut baselines: Baselines<'_> = BTreeMap::new();
    let mut report = KneeReport {
        definition: DEFINITION.into(),
        ..KneeReport::default()
    };
    let mut last_held = None;
    for &(t, b) in &inside {
        // The first 10% gives the baselines; on a ramp (its lowest rates) falling behind there
        // is already the knee.
        let baseline_period = t < cut;
        if baseline_period && !ramp {
            gather(t, b, &mut baselines);
            continue;
        }
        if !baseline_period {
            for g in baselines.values_mut() {
                g.done |= g.replies >= MIN_REPLIES;
            }
        }
        if let Some(knee) = judge(pacing, ramp && !baseline_period, t, b, &baselines) {
            report.rate_ops_per_s = pacing.rate_at(t + 0.5);
            report.at_s = Some(t);
            report.achieved_ops_per_s = Some(b.ops as f64);
            let (limit, figures) = limit::at(schedule, b, &baselines);
            report.limit = Some(limit.name().into());
            report.figures = figures;
            report.command = knee.command.map(str::to_owned);
            report.baseline_p99_us = knee.baseline_ns as f64 / 1e3;
            report.p99_us = Some(knee.p99_ns as f64 / 1e3);
            report.reason = Some(knee.reason.into());
            break;
        }
        last_held = pacing.rate_at(t + 0.5);
        gather(t, b, &mut baselines);
    }
    report.last_held_ops_per_s = last_held;
    if report.command.is_none() {
        let busiest = baselines.iter().max_by_key(|(_, g)| g.replies);
        if let Some((c, g)) = busiest {
            report.command = Some((*c).to_owned());
            report.baseline_p99_us = g.p99_ns() as f64 / 1e3;
        }
    }
    report.baselines = baselines
        .iter()
        .filter(|(_, g)| g.replies > 0)
        .map(|(c, g)| {
            let b = Baseline {
                p99_us: g.p99_ns() as f64 / 1e3,
                service_us: g.service_ns() / 1e3,
                replies: g.replies,
                from_s: g.from_s,
            };
            ((*c).to_owned(), b)
        })
        .collect();
    report.summary = summary(&report, pacing);
    Some(report)
}

struct Broke<'b> {
    reason: &'static str,
    command: Option<&'b str>,
    p99_ns: u64,
    baseline_ns: u64,
}

/// Whether the second at `t` broke: the command furthest above its baseline, else throughput.
fn judge<'b>(
    pacing: &Pacing,
    ramp: bool,
    t: f64,
    b: &'b Bucket<'_>,
    baselines: &Baselines<'_>,
) -> Option<Broke<'b>> {
    let worst = b
        .commands
        .iter()
        .filter(|c| ramp && c.replies >= MIN_REPLIES)
        .filter_map(|c| {
            let g = baselines.get(&*c.command).filter(|g| g.done)?;
            let p99 = c.latency.value_at_quantile(0.99);
            let ratio = p99 as f64 / g.p99_ns().max(1) as f64;
            (ratio > P99_FACTOR).then_some((ratio, c, p99, g.p99_ns()))
        })
        .max_by(|a, b| a.0.total_cmp(&b.0));
    if let Some((_, c, p99_ns, baseline_ns)) = worst {
        return Some(Broke {
            reason: "p99",
            command: Some(&c.command),
            p99_ns,
            baseline_ns,
        });
    }
    let due = pacing.sent_by(t + 1.0) - pacing.sent_by(t);
    if due < 10.0 || b.ops as f64 >= THROUGHPUT_SHARE * due {
        return None;
    }
    let busiest = b.commands.iter().max_by_key(|c| c.replies);
    let (command, p99_ns) = match busiest {
        Some(c) => (Some(&*c.command), c.latency.value_at_quantile(0.99)),
        None => (None, b.latency.value_at_quantile(0.99)),
    };
    let baseline_ns = command
        .and_then(|c| baselines.get(c))
        .map_or(0, Gathered::p99_ns);
    Some(Broke {
        reason: "throughput",
        command,
        p99_ns,
        baseline_ns,
    })
}

/// The knee in a sentence: `knee at ~780 ops/s (4.5 s in): insert p99 1.9 ms vs its baseline
/// 410 µs, 700 ops/s achieved; ...` and what held it back.
fn summary(k: &KneeReport, pacing: &Pacing) -> String {
    let (Some(rate), Some(reason)) = (k.rate_ops_per_s, k.reason.as_deref()) else {
        let last = k.last_held_ops_per_s.or_else(|| pacing.rate_at(0.0));
        return format!(
            "no knee: the run kept up{}",
            last.map_or(String::new(), |r| format!(" to {}", units::rounded_rate(r)))
        );
    };
    let command = k.command.as_deref().unwrap_or("the mix");
    let achieved = units::rounded_rate(k.achieved_ops_per_s.unwrap_or_default());
    let what = match reason {
        "p99" => format!(
            "{command} p99 {} vs its baseline {}, {achieved} achieved",
            units::rounded_us(k.p99_us.unwrap_or_default()),
            units::rounded_us(k.baseline_p99_us)
        ),
        _ => format!(
            "{achieved} achieved, below {:.0}% of the schedule",
            THROUGHPUT_SHARE * 100.0
        ),
    };
    let mut out = format!(
        "knee at ~{} ({} in): {what}",
        units::rounded_rate(rate),
        seconds_in(k.at_s.unwrap_or_default()),
    );
    if let Some(limit) = k.limit.as_deref().and_then(Limit::of_name) {
        out.push_str("; ");
        out.push_str(&limit::sentence(limit, &k.figures));
    }
    out
}

/// Seconds into the schedule as a sentence says them: `0.3 s`, `4.5 s`, `12 s`, `3m05s`.
fn seconds_in(t: f64) -> String {
    if t < 1.0 {
        format!("{:.1} s", t.max(0.0))
    } else if t < 60.0 {
        units::rounded_us(t * 1e6)
    } else {
        units::clock(t)
    }
}
