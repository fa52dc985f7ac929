//! A replay's pass/fail gates, like k6's thresholds: a CI job runs a replay and fails on its exit
//! status. Judged after the reports are written; each threshold is said with what was measured.

use super::report::ReplayReport;
use crate::figures::summary::CommandSummary;
use crate::figures::units;
use crate::state::verdict::collections;

/// The thresholds given (`--fail-on-divergence`, `--max-error-rate`, `--max-p99`,
/// `--fail-on-state-divergence`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Gates {
    /// Any reply that differed from its recorded reply fails.
    pub fail_on_divergence: bool,
    /// A share of the operations, 0 to 1, that may get an error reply.
    pub max_error_rate: Option<f64>,
    pub max_p99: Vec<P99Limit>,
    /// A target whose end state differs from the capture's, or could not be checked, fails.
    pub fail_on_state_divergence: bool,
}

/// A command's p99 latency bound (`all`: every operation together).
#[derive(Debug, Clone, PartialEq)]
pub struct P99Limit {
    pub command: String,
    pub ms: f64,
}

/// One threshold and how the replay did against it.
#[derive(Debug, PartialEq)]
pub struct Verdict {
    pub threshold: String,
    pub measured: String,
    pub crossed: bool,
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let status = if self.crossed { "FAILED" } else { "passed" };
        write!(f, "{status}: {}: {}", self.threshold, self.measured)
    }
}

/// How a replay ended, first match wins: a failure or a damaged capture, then a replay that sent
/// nothing, then the thresholds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    Passed,
    Failed,
    DamagedCapture,
    NothingReplayed,
    ThresholdCrossed,
}

/// The ending and what to say of it, line by line, in order.
#[derive(Debug, PartialEq)]
pub struct Judgement {
    pub ending: Ending,
    pub lines: Vec<String>,
}

impl Gates {
    /// Every threshold given, against the report.
    pub fn check(&self, report: &ReplayReport) -> Vec<Verdict> {
        let mut out = Vec::new();
        if self.fail_on_divergence {
            let n: u64 = report.divergences.values().map(|d| d.count).sum();
            let per: Vec<String> = report
                .divergences
                .iter()
                .map(|(c, d)| format!("{c} {}", d.count))
                .collect();
            out.push(Verdict {
                threshold: "--fail-on-divergence".into(),
                measured: match n {
                    0 => "0 divergences".into(),
                    _ => format!("{n} divergences: {}", per.join(", ")),
                },
                crossed: n > 0,
            });
        }
        if let Some(max) = self.max_error_rate {
            let all = &report.summary.overall;
            let rate = all.errors as f64 / all.count.max(1) as f64;
            out.push(Verdict {
                threshold: format!("--max-error-rate {}", percent(max)),
                measured: format!(
                    "{} errors in {} ops, {}",
                    all.errors,
                    all.count,
                    percent(rate)
                ),
                crossed: rate > max,
            });
        }
        for limit in &self.max_p99 {
            out.push(p99_verdict(report, limit));
        }
        if self.fail_on_state_divergence {
            out.push(state_verdict(report));
        }
        out
    }

    /// How the replay ended, with each threshold's verdict and the reason the ending is not a pass.
    pub fn judge(&self, report: &ReplayReport) -> Judgement {
        let verdicts = self.check(report);
        let mut lines: Vec<String> = verdicts.iter().map(|v| format!("threshold {v}")).collect();
        let (ending, line) = ending(report, &verdicts);
        lines.extend(line);
        if ending == Ending::ThresholdCrossed {
            let crossed = verdicts.iter().filter(|v| v.crossed).count();
            lines.push(format!("{crossed} of {} thresholds failed", verdicts.len()));
        }
        Judgement { ending, lines }
    }
}

/// The ending, and what to say of it before the thresholds' count.
fn ending(report: &ReplayReport, verdicts: &[Verdict]) -> (Ending, Option<String>) {
    if let Some(e) = &report.error {
        return (Ending::Failed, Some(format!("replay failed: {e}")));
    }
    if let Some(e) = &report.capture_error {
        let line = format!("capture read only in part: {e}");
        return (Ending::DamagedCapture, Some(line));
    }
    let mut said = None;
    if let Some(why) = nothing_replayed(report) {
        // A capture with fewer sessions than shards leaves some shards nothing: not a failure.
        let Some(shard) = &report.shard else {
            return (Ending::NothingReplayed, Some(why));
        };
        said = Some(format!(
            "shard {} sent nothing: no session of the capture fell to it (or the filters left \
             none)",
            shard.label
        ));
    }
    match verdicts.iter().any(|v| v.crossed) {
        true => (Ending::ThresholdCrossed, said),
        false => (Ending::Passed, said),
    }
}

/// A share with enough digits for a threshold such as 0.1%.
fn percent(share: f64) -> String {
    format!("{:.2}%", share * 100.0)
}

fn p99_verdict(report: &ReplayReport, limit: &P99Limit) -> Verdict {
    let threshold = format!("--max-p99 {}={}", limit.command, limit.ms);
    let summary: Option<&CommandSummary> = match limit.command.as_str() {
        "all" => Some(&report.summary.overall),
        c => report.summary.per_command.get(c),
    };
    match summary.filter(|s| s.latency.count > 0) {
        // A gate on a command that never ran (or a misspelt one) must not pass silently.
        None => Verdict {
            threshold,
            measured: format!("no {} operation with a reply was replayed", limit.command),
            crossed: true,
        },
        Some(s) => Verdict {
            threshold,
            measured: format!("p99 {}", units::duration_us(s.latency.p99_us)),
            crossed: s.latency.p99_us > limit.ms * 1000.0,
        },
    }
}

/// `--fail-on-state-divergence`: the end state as checked; a check not made fails, as a gate
/// on a command that never ran does.
pub fn state_verdict(report: &ReplayReport) -> Verdict {
    let threshold = "--fail-on-state-divergence".to_owned();
    let Some(state) = &report.state else {
        return Verdict {
            threshold,
            measured: "the end state was not checked (--check-state)".into(),
            crossed: true,
        };
    };
    let measured = match state.verdict.as_str() {
        "equal" => format!("state: equal ({})", collections(state.collections)),
        "differs" => {
            let each: Vec<String> = (state.differing.iter())
                .map(|d| {
                    let (a, b) = (d.documents, d.other_documents);
                    format!("{} ({a} documents recorded, {b} on the target)", d.other_ns)
                })
                .collect();
            format!(
                "state differs in {} of {}: {}",
                state.differing.len(),
                collections(state.collections),
                each.join(", ")
            )
        }
        _ => format!(
            "state unknown: {}",
            state.error.as_deref().unwrap_or("not checked")
        ),
    };
    Verdict {
        threshold,
        measured,
        crossed: state.verdict != "equal",
    }
}

/// Why a replay that ended without error sent nothing, if it did.
pub fn nothing_replayed(report: &ReplayReport) -> Option<String> {
    if report.sent > 0 || report.error.is_some() {
        return None;
    }
    if report.requests_read == 0 {
        return Some("nothing was replayed: the capture holds no requests".into());
    }
    let why: Vec<String> = report
        .skipped
        .iter()
        .filter(|(_, n)| **n > 0)
        .map(|(k, n)| match k.as_str() {
            "filtered" => format!("{n} left out by the filters ({})", filters(report)),
            "handshake" => format!(
                "{n} handshake and authentication commands (each replay connection makes its own)"
            ),
            "ping" => format!("{n} pings (monitoring, not the workload)"),
            "op_command" => format!(
                "{n} OP_COMMAND (3.2-4.0's command opcode, which a current server no longer takes)"
            ),
            _ => format!("{k} {n}"),
        })
        .collect();
    Some(format!(
        "nothing was replayed: of {} requests read, {}",
        report.requests_read,
        if why.is_empty() {
            "none was sent".into()
        } else {
            why.join(", ")
        }
    ))
}

fn filters(report: &ReplayReport) -> String {
    match report.options.filters.is_empty() {
        true => "none given".into(),
        false => report.options.filters.join(", "),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::measure::metrics::DivergenceReport;

    fn report() -> ReplayReport {
        let mut r = ReplayReport {
            sent: 10,
            requests_read: 12,
            ..Default::default()
        };
        r.summary.overall.count = 10;
        r.summary.overall.errors = 1;
        let mut find = CommandSummary::default();
        find.latency.count = 10;
        find.latency.p99_us = 7_500.0;
        r.summary.per_command.insert("find".into(), find);
        r
    }

    fn p99(command: &str, ms: f64) -> P99Limit {
        P99Limit {
            command: command.into(),
            ms,
        }
    }

    #[test]
    fn verdicts_say_what_was_measured() {
        let mut r = report();
        let gates = Gates {
            fail_on_divergence: true,
            max_error_rate: Some(0.05),
            max_p99: vec![p99("find", 5.0), p99("insert", 5.0)],
            ..Gates::default()
        };
        let v = gates.check(&r);
        assert!(!v[0].crossed, "{}", v[0]);
        assert!(
            v[1].crossed && v[1].measured.contains("1 errors in 10 ops"),
            "{}",
            v[1]
        );
        assert!(v[2].crossed && v[2].measured.contains("7.5"), "{}", v[2]);
        assert!(
            v[3].crossed && v[3].measured.contains("no insert"),
            "{}",
            v[3]
        );
        let judged = gates.judge(&r);
        assert_eq!(judged.ending, Ending::ThresholdCrossed);
        assert_eq!(judged.lines.len(), 5, "{:?}", judged.lines);
        assert_eq!(judged.lines[4], "3 of 4 thresholds failed");
        r.divergences.insert(
            "find".into(),
            DivergenceReport {
                count: 2,
                ..Default::default()
            },
        );
        assert!(gates.check(&r)[0].crossed);
    }

    #[test]
    fn the_state_gate_fails_on_a_difference_and_on_no_check() {
        use crate::state::verdict::{CollectionDifference, StateReport};
        let gates = Gates {
            fail_on_state_divergence: true,
            ..Gates::default()
        };
        let mut r = report();
        assert!(gates.check(&r)[0].crossed, "no --check-state: not passed");
        r.state = Some(StateReport {
            verdict: "equal".into(),
            collections: 2,
            ..StateReport::default()
        });
        assert!(!gates.check(&r)[0].crossed);
        let state = r.state.as_mut().unwrap();
        state.verdict = "differs".into();
        state.differing.push(CollectionDifference {
            ns: "shop.orders".into(),
            other_ns: "shop.orders".into(),
            documents: 10,
            other_documents: 9,
            ids: vec!["7".into()],
        });
        let v = &gates.check(&r)[0];
        assert!(v.crossed);
        assert!(
            v.measured
                .contains("shop.orders (10 documents recorded, 9 on the target)"),
            "{v}"
        );
        assert_eq!(gates.judge(&r).ending, Ending::ThresholdCrossed);
    }

    #[test]
    fn nothing_replayed_says_why() {
        let mut r = report();
        assert_eq!(nothing_replayed(&r), None);
        r.sent = 0;
        r.skipped.insert("handshake".into(), 2);
        r.skipped.insert("filtered".into(), 10);
        r.options.filters = vec!["command=nosuch".into()];
        let why = nothing_replayed(&r).unwrap();
        assert!(
            why.contains("10 left out by the filters (command=nosuch)"),
            "{why}"
        );
        assert!(
            why.contains("2 handshake and authentication commands"),
            "{why}"
        );
        let judged = Gates::default().judge(&r);
        assert_eq!(judged.ending, Ending::NothingReplayed);
        assert_eq!(judged.lines, vec![why]);
        // A shard that no session fell to is not a failure: the other shards replay the rest.
        r.shard = Some(crate::replay::report::ShardReport {
            index: 1,
            count: 2,
            label: "1/2".into(),
        });
        let judged = Gates::default().judge(&r);
        assert_eq!(judged.ending, Ending::Passed);
        assert!(judged.lines[0].starts_with("shard 1/2 sent nothing"));
        r.requests_read = 0;
        assert!(nothing_replayed(&r).unwrap().contains("no requests"));
    }
}
