//! `replay`'s pass/fail gates, like k6's thresholds: a CI job runs a replay and fails on its exit
//! status. Checked after the reports are written; each threshold is printed with what was measured.

use super::exit::Exit;
use clap::Args;
use mongotape::figures::summary::CommandSummary;
use mongotape::figures::units;
use mongotape::replay::report::ReplayReport;

#[derive(Args, Debug, Default)]
pub struct ThresholdArgs {
    /// Exit 4 when any reply differed from its recorded reply (the report's `divergences`).
    #[arg(long)]
    pub fail_on_divergence: bool,
    /// Exit 4 when more than this share of the operations got an error reply: `0.01` or `1%`.
    #[arg(long, value_name = "RATE", value_parser = parse_rate)]
    pub max_error_rate: Option<f64>,
    /// Exit 4 when COMMAND's p99 latency is above MS milliseconds; `all` for every operation
    /// together (repeatable). Example: `--max-p99 find=5 --max-p99 insert=10`.
    #[arg(long, value_name = "COMMAND=MS", value_parser = parse_p99)]
    pub max_p99: Vec<P99Limit>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct P99Limit {
    pub command: String,
    pub ms: f64,
}

fn parse_rate(v: &str) -> Result<f64, String> {
    let (number, scale) = match v.trim().strip_suffix('%') {
        Some(pct) => (pct, 100.0),
        None => (v.trim(), 1.0),
    };
    let rate = number
        .trim()
        .parse::<f64>()
        .map(|r| r / scale)
        .map_err(|_| format!("{v:?}: expected a share such as 0.01 or 1%"))?;
    if !(0.0..=1.0).contains(&rate) {
        return Err(format!("{v:?}: a share between 0 and 1 (0% and 100%)"));
    }
    Ok(rate)
}

fn parse_p99(v: &str) -> Result<P99Limit, String> {
    let (command, ms) = v
        .split_once('=')
        .ok_or_else(|| format!("{v:?}: expected COMMAND=MS, such as find=5"))?;
    let ms: f64 = ms
        .trim()
        .parse()
        .ok()
        .filter(|ms: &f64| ms.is_finite() && *ms >= 0.0)
        .ok_or_else(|| format!("{v:?}: {ms:?} is not a number of milliseconds"))?;
    if command.trim().is_empty() {
        return Err(format!("{v:?}: no command before '='"));
    }
    Ok(P99Limit {
        command: command.trim().to_owned(),
        ms,
    })
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

impl ThresholdArgs {
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
        out
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

/// The replay's exit status, after saying on stderr how each threshold went and why the status is
/// not 0. A failure or a damaged capture comes first, then a replay that sent nothing, then the
/// thresholds.
pub fn exit_status(report: &ReplayReport, gates: &ThresholdArgs) -> Exit {
    let verdicts = gates.check(report);
    for v in &verdicts {
        super::output::note!("mongotape: threshold {v}");
    }
    if let Some(e) = &report.error {
        super::output::note!("mongotape: replay failed: {e}");
        return Exit::Failure;
    }
    if let Some(e) = &report.capture_error {
        super::output::note!("mongotape: capture read only in part: {e}");
        return Exit::DamagedCapture;
    }
    if let Some(why) = nothing_replayed(report) {
        // A capture with fewer sessions than shards leaves some shards nothing: not a failure.
        if let Some(shard) = &report.shard {
            super::output::note!(
                "mongotape: shard {} sent nothing: no session of the capture fell to it (or the \
                 filters left none)",
                shard.label
            );
        } else {
            super::output::note!("mongotape: {why}");
            return Exit::NothingReplayed;
        }
    }
    let crossed = verdicts.iter().filter(|v| v.crossed).count();
    if crossed > 0 {
        super::output::note!(
            "mongotape: {crossed} of {} thresholds failed",
            verdicts.len()
        );
        return Exit::Threshold;
    }
    Exit::Ok
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
    use mongotape::replay::measure::metrics::DivergenceReport;

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

    #[test]
    fn options_parse() {
        assert_eq!(parse_rate("1%"), Ok(0.01));
        assert_eq!(parse_rate("0.25"), Ok(0.25));
        assert!(parse_rate("2").is_err() && parse_rate("x").is_err());
        assert_eq!(
            parse_p99("find=5"),
            Ok(P99Limit {
                command: "find".into(),
                ms: 5.0
            })
        );
        assert!(parse_p99("find").is_err() && parse_p99("=5").is_err());
        assert!(parse_p99("find=-1").is_err() && parse_p99("find=fast").is_err());
    }

    #[test]
    fn verdicts_say_what_was_measured() {
        let mut r = report();
        let gates = ThresholdArgs {
            fail_on_divergence: true,
            max_error_rate: Some(0.05),
            max_p99: vec![parse_p99("find=5").unwrap(), parse_p99("insert=5").unwrap()],
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
        assert!(why.contains("2 handshakes"), "{why}");
        assert_eq!(
            exit_status(&r, &ThresholdArgs::default()),
            Exit::NothingReplayed
        );
        // A shard that no session fell to is not a failure: the other shards replay the rest.
        r.shard = Some(mongotape::replay::report::ShardReport {
            index: 1,
            count: 2,
            label: "1/2".into(),
        });
        assert_eq!(exit_status(&r, &ThresholdArgs::default()), Exit::Ok);
        r.requests_read = 0;
        assert!(nothing_replayed(&r).unwrap().contains("no requests"));
    }
}
