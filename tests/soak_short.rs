//! The one-minute soak: `tools/soak --minutes 1` against the debug binary (restarts and stalls of
//! the upstream under mixed pymongo traffic; every acknowledged write must be in the capture and the
//! proxy's memory must stay flat).

mod common;

use common::*;
use std::process::Command;
use std::time::Duration;

#[test]
fn one_minute_soak_loses_no_acknowledged_write() {
    let dir = tempdir();
    let mut command = Command::new(workspace_root().join("tools/soak"));
    command
        .args(["--minutes", "1", "--clients", "4", "--work"])
        .arg(dir.path())
        .env("MONGOTAPE", mongotape_bin())
        .env("MONGOTAPE_SECANTUSD", secantusd_path());
    let out = run_command(command, Duration::from_secs(150));
    assert!(out.success(), "{}\n{}", out.stdout, out.stderr);
    assert!(
        out.stdout.contains("missing                0"),
        "{}",
        out.stdout
    );
}
