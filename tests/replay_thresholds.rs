//! `replay`'s thresholds, as a CI job uses them: a real capture replayed against the real server,
//! the exit status 4 when a threshold fails, the reports written all the same, and each threshold
//! printed with what was measured.

mod common;
use common::*;

fn sample() -> std::path::PathBuf {
    workspace_root().join("captures/pymongo.mtape")
}

fn thresholds_said(r: &Replay) -> Vec<&str> {
    r.output
        .stderr
        .lines()
        .filter(|l| l.starts_with("mongotape: threshold "))
        .collect()
}

#[test]
fn thresholds_gate_the_exit_status_and_say_what_was_measured() {
    let server = Server::start_with(&["--standalone"]);
    // The capture drops its database first; without that, a second replay inserts the same _ids
    // again and the server refuses them.
    let args = [
        "--fast",
        "--exclude-command",
        "dropDatabase",
        "--db-map",
        "fixtures:gates",
        "--fail-on-divergence",
        "--max-error-rate",
        "0",
        "--max-p99",
        "all=60000",
    ];
    let first = try_replay(&sample(), &server.uri(), &args);
    assert_eq!(first.output.status.code(), Some(0), "{}", first.describe());
    let said = thresholds_said(&first);
    assert_eq!(said.len(), 3, "{}", first.describe());
    assert!(
        said.iter().all(|l| l.contains("threshold passed: ")),
        "{said:?}"
    );
    assert!(
        said[0].contains("--fail-on-divergence: 0 divergences"),
        "{said:?}"
    );
    assert!(said[2].contains("--max-p99 all=60000: p99 "), "{said:?}");

    let again = try_replay(&sample(), &server.uri(), &args);
    assert_eq!(again.output.status.code(), Some(4), "{}", again.describe());
    assert_eq!(
        again.report["schema_version"], 1,
        "the report is still written"
    );
    let diverged = again.divergences();
    let errors = again.report["summary"]["overall"]["errors"]
        .as_u64()
        .unwrap();
    assert!(diverged > 0 && errors > 0, "{}", again.describe());
    let said = thresholds_said(&again);
    assert!(
        said[0].starts_with("mongotape: threshold FAILED: --fail-on-divergence: ")
            && said[0].contains(&format!("{diverged} divergences: insert ")),
        "{said:?}"
    );
    assert!(
        said[1].contains("FAILED: --max-error-rate 0.00%: ")
            && said[1].contains(&format!("{errors} errors in ")),
        "{said:?}"
    );
    assert!(said[2].contains("passed: --max-p99 all=60000"), "{said:?}");
    assert!(
        again.output.stderr.contains("2 of 3 thresholds failed"),
        "{}",
        again.describe()
    );
}

#[test]
fn a_p99_threshold_names_the_command_and_its_p99() {
    let server = Server::start_with(&["--standalone"]);
    let r = try_replay(
        &sample(),
        &server.uri(),
        &[
            "--fast",
            "--max-p99",
            "insert=0.000001",
            "--max-p99",
            "insret=5",
        ],
    );
    assert_eq!(r.output.status.code(), Some(4), "{}", r.describe());
    assert_eq!(r.report["complete"], true, "{}", r.describe());
    let said = thresholds_said(&r);
    assert!(
        said[0].starts_with("mongotape: threshold FAILED: --max-p99 insert=0.000001: p99 "),
        "{said:?}"
    );
    // A misspelt command fails rather than passing unchecked.
    assert!(
        said[1].contains("FAILED: --max-p99 insret=5: no insret operation"),
        "{said:?}"
    );
}

#[test]
fn a_replay_that_sends_nothing_exits_5_and_says_why() {
    let server = Server::start_with(&["--standalone"]);
    let r = try_replay(&sample(), &server.uri(), &["--fast", "--command", "nosuch"]);
    assert_eq!(r.output.status.code(), Some(5), "{}", r.describe());
    assert!(
        r.output.stderr.contains(
            "nothing was replayed: of 169 requests read, 164 left out by the filters \
             (command=nosuch), 5 handshake and authentication commands"
        ),
        "{}",
        r.describe()
    );
    assert_eq!(
        r.report["sent"],
        0,
        "the report is written: {}",
        r.describe()
    );
}
