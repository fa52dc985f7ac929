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
    let report = read_report(&report_path);
    Replay { output, report }
}

/// Like [`try_replay`], panicking unless it succeeded.
pub fn replay(capture: &Path, target: &str, args: &[&str]) -> Replay {
    let r = try_replay(capture, target, args);
    assert!(r.output.success(), "replay failed: {}", r.describe());
    assert_eq!(r.report["complete"], true, "{}", r.describe());
    r
}

/// An A/B replay (`--target` per entry of `targets`) with its JSON report.
pub struct AbRun {
    pub output: CommandOutput,
    pub report: serde_json::Value,
    pub html: String,
}

impl AbRun {
    /// The report of target `label` (its whole replay report under `replay`).
    pub fn target(&self, label: &str) -> &serde_json::Value {
        self.report["targets"]
            .as_array()
            .and_then(|t| t.iter().find(|t| t["label"] == label))
            .unwrap_or_else(|| panic!("no target {label}: {}", self.describe()))
    }

    /// Candidate `label` against the control on `command`: the mean latency ratio and its interval.
    pub fn ratio(&self, command: &str, label: &str) -> &serde_json::Value {
        self.report["per_command"][command]["ratios"]
            .as_array()
            .and_then(|r| r.iter().find(|r| r["target"] == label))
            .map(|r| &r["mean"])
            .unwrap_or_else(|| panic!("no ratio for {label} on {command}: {}", self.describe()))
    }

    pub fn describe(&self) -> String {
        format!(
            "status {}\nstdout:\n{}\nstderr:\n{}",
            self.output.status, self.output.stdout, self.output.stderr
        )
    }

    /// Checks the report against docs/schemas/ab.schema.json (Python's jsonschema, which tools/setup installs with kubernetes-validate).
    pub fn assert_schema(&self) {
        let schema = super::workspace_root().join("docs/schemas/ab.schema.json");
        let script = "import json, sys, jsonschema\n\
                      jsonschema.validate(json.loads(sys.argv[2]), json.load(open(sys.argv[1])))\n";
        super::pymongo::python(
            script,
            &[schema.display().to_string(), self.report.to_string()],
        );
    }
}

/// `mongotape replay CAPTURE --target T1 --target T2 ... --report R --html H ARGS...`, whatever its
/// outcome.
pub fn try_ab_replay(capture: &Path, targets: &[&str], args: &[&str]) -> AbRun {
    let dir = tempdir();
    let report_path = dir.path().join("ab.json");
    let html_path = dir.path().join("ab.html");
    let mut command = Command::new(mongotape_bin());
    command.arg("replay").arg(capture);
    for t in targets {
        command.args(["--target", t]);
    }
    command
        .arg("--report")
        .arg(&report_path)
        .arg("--html")
        .arg(&html_path)
        .args(args);
    let output = run_command(command, REPLAY_TIMEOUT);
    let report = read_report(&report_path);
    let html = std::fs::read_to_string(&html_path).unwrap_or_default();
    AbRun {
        output,
        report,
        html,
    }
}

/// Like [`try_ab_replay`], panicking unless every target completed.
pub fn ab_replay(capture: &Path, targets: &[&str], args: &[&str]) -> AbRun {
    let r = try_ab_replay(capture, targets, args);
    assert!(r.output.success(), "A/B replay failed: {}", r.describe());
    assert_eq!(r.report["complete"], true, "{}", r.describe());
    r
}

/// A report the replay wrote, or null when it wrote none (or nothing readable).
fn read_report(path: &std::path::Path) -> serde_json::Value {
    std::fs::read(path)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or(serde_json::Value::Null)
}
