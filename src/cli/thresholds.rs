//! `replay`'s pass/fail gates as options: `--fail-on-divergence`, `--max-error-rate`,
//! `--max-p99`, `--fail-on-state-divergence`. They are judged by `mongotape::replay::gates`, after the reports are written.

use super::exit::Exit;
use clap::Args;
use mongotape::replay::gates::{Ending, Gates, P99Limit};
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
    /// Exit 4 when a target's end state differs from the capture's (needs --check-state; in an
    /// A/B replay, also when the targets ended with different data).
    #[arg(long, requires = "check_state")]
    pub fail_on_state_divergence: bool,
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

impl ThresholdArgs {
    fn gates(&self) -> Gates {
        Gates {
            fail_on_divergence: self.fail_on_divergence,
            max_error_rate: self.max_error_rate,
            max_p99: self.max_p99.clone(),
            fail_on_state_divergence: self.fail_on_state_divergence,
        }
    }
}

/// The replay's exit status, after saying on stderr how each threshold went and why the status is
/// not 0.
pub fn exit_status(report: &ReplayReport, thresholds: &ThresholdArgs) -> Exit {
    let judged = thresholds.gates().judge(report);
    for line in &judged.lines {
        super::output::note!("mongotape: {line}");
    }
    match judged.ending {
        Ending::Passed => Exit::Ok,
        Ending::Failed => Exit::Failure,
        Ending::DamagedCapture => Exit::DamagedCapture,
        Ending::NothingReplayed => Exit::NothingReplayed,
        Ending::ThresholdCrossed => Exit::Threshold,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
