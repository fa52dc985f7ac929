//! `mongotape replay` run to completion against a target, and its JSON report read back.

use super::cli::mongotape_bin;
use super::process::{run_command, CommandOutput};
use super::tempdir;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// Upper bound for one replay run in a test; a hang fails the test instead of the job.
pub const REPLAY_TIMEOUT: Duration = Duration::from_secs(180);

pub struct Replay {
    pub output: CommandOutput,
    pub report: serde_json::Value,
}

impl Replay {
    pub fn ops(&self) -> u64 {
        self.report["summary"]["ops"].as_u64().unwrap_or(0)
    }

    pub fn count(&self, command: &str) -> u64 {
        self.report["summary"]["per_command"][command]["count"]
            .as_u64()
            .unwrap_or(0)
    }

    pub fn skipped(&self, why: &str) -> u64 {
        self.report["skipped"][why].as_u64().unwrap_or(0)
    }

    pub fn divergences(&self) -> u64 {
        self.report["divergences"]
            .as_object()
            .map(|m| m.values().map(|d| d["count"].as_u64().unwrap_or(0)).sum())
            .unwrap_or(0)
    }

    pub fn describe(&self) -> String {
        format!(
            "status {}\nstdout:\n{}\nstderr:\n{}\nreport: {}",
            self.output.status,
            self.output.stdout,
            self.output.stderr,
            serde_json::to_string_pretty(&self.report).unwrap_or_default()
        )
    }
}

/// `mongotape replay CAPTURE --target URI --report R ARGS...`, whatever its outcome.
pub fn try_replay(capture: &Path, target: &str, args: &[&str]) -> Replay {
    try_replay_via(&[], capture, target, args)
}

/// [`try_replay`] with the binary started through `wrapper` (e.g. `ip netns exec NAME`).
pub fn try_replay_via(wrapper: &[&str], capture: &Path, target: &str, args: &[&str]) -> Replay {
    let dir = tempdir();
    let report_path = dir.path().join("report.json");
    let mut command = match wrapper.split_first() {
        Some((program, rest)) => {
            let mut c = Command::new(program);
            c.args(rest).arg(mongotape_bin());
            c
        }
        None => Command::new(mongotape_bin()),
    };
    command
        .arg("replay")
        .arg(capture)
        .args(["--target", target, "--report"])
        .arg(&report_path)
        .args(args);
    let output = run_command(command, REPLAY_TIMEOUT);
    let report = std::fs::read(&report_path)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or(serde_json::Value::Null);
    Replay { output, report }
}

/// Like [`try_replay`], panicking unless it succeeded.
pub fn replay(capture: &Path, target: &str, args: &[&str]) -> Replay {
    let r = try_replay(capture, target, args);
    assert!(r.output.success(), "replay failed: {}", r.describe());
    assert_eq!(r.report["complete"], true, "{}", r.describe());
    r
}
