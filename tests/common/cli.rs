//! The `mongotape` binary built for these tests, run to completion: `analyze` and `inspect` with
//! their JSON parsed.

use super::process::{run_command, CommandOutput};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// The mongotape binary built for these tests.
pub fn mongotape_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_mongotape"))
}

/// Runs the mongotape binary to completion.
pub fn mongotape<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> CommandOutput {
    let mut cmd = Command::new(mongotape_bin());
    cmd.args(args);
    run_command(cmd, Duration::from_secs(120))
}

/// `mongotape analyze FILE --json [extra]`, parsed; panics unless it succeeds.
pub fn analyze_json(capture: &Path, extra: &[&str]) -> serde_json::Value {
    let mut args: Vec<String> = vec![
        "analyze".into(),
        capture.display().to_string(),
        "--json".into(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    let out = mongotape(&args);
    assert!(
        out.success(),
        "analyze failed ({}):\n{}",
        out.status,
        out.stderr
    );
    serde_json::from_str(&out.stdout)
        .unwrap_or_else(|e| panic!("analyze --json: {e}\n{}", out.stdout))
}

/// `mongotape inspect FILE --json`, parsed.
pub fn inspect_json(capture: &Path) -> serde_json::Value {
    let out = mongotape(&[
        "inspect".to_string(),
        capture.display().to_string(),
        "--json".into(),
    ]);
    assert!(out.success(), "inspect failed: {}", out.stderr);
    serde_json::from_str(&out.stdout).expect("inspect --json")
}

/// A JSON value that must be a count (panics otherwise).
pub fn u(v: &serde_json::Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}
