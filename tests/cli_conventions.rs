//! The command line's conventions: exit statuses, errors said once and naming what failed, help
//! with examples, completions and a man page from the same definitions, no escape codes off a
//! terminal or with `NO_COLOR`, `-q` and `-v`.

mod common;
use common::*;
use std::process::Command;
use std::time::Duration;

const SUBCOMMANDS: [&str; 9] = [
    "record",
    "inspect",
    "cat",
    "replay",
    "analyze",
    "compare",
    "merge",
    "completions",
    "man",
];

#[test]
fn a_missing_file_is_named_once() {
    let dir = tempdir();
    let missing = dir.path().join("no-such.mtape");
    let path = missing.display().to_string();
    let runs: [&[&str]; 6] = [
        &["inspect", &path],
        &["cat", &path],
        &["analyze", &path],
        &["replay", &path, "-t", "127.0.0.1:9"],
        &["compare", &path],
        &["merge", &path],
    ];
    for args in runs {
        let out = mongotape(args);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", out.stderr);
        let err = out.stderr.trim_end();
        assert_eq!(err.lines().count(), 1, "{args:?}: one line: {err}");
        assert!(err.starts_with("mongotape: error: "), "{args:?}: {err}");
        assert!(err.contains(&path), "{args:?}: names the file: {err}");
        assert_eq!(
            err.matches("No such file or directory").count(),
            1,
            "{args:?}: the cause said once: {err}"
        );
    }
}

#[test]
fn usage_errors_exit_2_and_name_the_option() {
    let out = mongotape(&["replay", "x.mtape"]);
    assert_eq!(out.status.code(), Some(2), "{}", out.stderr);
    assert!(out.stderr.contains("--target"), "{}", out.stderr);
    // Options that parse but do not fit together are usage errors too.
    for (args, option) in [
        (&["--rate", "1..2"][..], "--rate"),
        (&["--max-p99", "find"][..], "--max-p99"),
        (&["--max-error-rate", "150%"][..], "--max-error-rate"),
        (&["--db-map", "nocolon"][..], "--db-map"),
    ] {
        let mut all = vec!["replay", "x.mtape", "-t", "127.0.0.1:9"];
        all.extend(args);
        let out = mongotape(&all);
        assert_eq!(out.status.code(), Some(2), "{all:?}: {}", out.stderr);
        assert!(out.stderr.contains(option), "{all:?}: {}", out.stderr);
    }
}

#[test]
fn every_help_ends_with_examples_and_exit_statuses() {
    for sub in SUBCOMMANDS {
        let out = mongotape(&[sub, "--help"]);
        assert!(out.success(), "{sub}: {}", out.stderr);
        let help = &out.stdout;
        let examples = help
            .find("\nExamples:\n")
            .unwrap_or_else(|| panic!("{sub}: {help}"));
        let statuses = help
            .find("\nExit status:\n")
            .unwrap_or_else(|| panic!("{sub}: {help}"));
        assert!(examples < statuses, "{sub}: examples, then statuses");
        assert!(help.contains(&format!("mongotape {sub} ")), "{sub}: {help}");
        assert!(help.contains("  0  success"), "{sub}: {help}");
        assert!(help.contains("  2  usage error"), "{sub}: {help}");
    }
    let replay = mongotape(&["replay", "--help"]).stdout;
    for line in [
        "  3  the capture is damaged",
        "  4  a replay threshold",
        "  5  nothing",
    ] {
        assert!(replay.contains(line), "{replay}");
    }
    let top = mongotape(&["--help"]).stdout;
    assert!(
        top.contains("  6  merge:") && top.contains("MONGOTAPE_LOG"),
        "{top}"
    );
}

#[test]
fn completions_and_the_man_page_come_from_the_definitions() {
    let bash = mongotape(&["completions", "bash"]);
    assert!(bash.success(), "{}", bash.stderr);
    assert!(bash.stdout.contains("_mongotape()"), "{}", bash.stdout);
    for word in SUBCOMMANDS
        .iter()
        .chain(&["--max-p99", "--canonical", "--target"])
    {
        assert!(bash.stdout.contains(word), "bash completion lacks {word}");
    }
    for shell in ["zsh", "fish"] {
        let out = mongotape(&["completions", shell]);
        assert!(
            out.success() && out.stdout.contains("replay"),
            "{shell}: {}",
            out.stderr
        );
    }

    let man = mongotape(&["man"]);
    assert!(man.success(), "{}", man.stderr);
    assert!(man.stdout.contains(".TH mongotape"), "{}", man.stdout);
    for sub in SUBCOMMANDS {
        assert!(man.stdout.contains(sub), "the man page lacks {sub}");
    }
    let dir = tempdir();
    let out = mongotape(&["man", "--dir", dir.path().to_str().unwrap()]);
    assert!(out.success(), "{}", out.stderr);
    let replay = std::fs::read_to_string(dir.path().join("mongotape-replay.1")).unwrap();
    assert!(replay.contains("fail\\-on\\-divergence"), "{replay}");
}

/// `record` towards a closed port, into a folder that does not exist: it logs a warning and an
/// info line, then fails; `args` go before the subcommand.
fn failing_record(args: &[&str], env: &[(&str, &str)]) -> CommandOutput {
    let mut cmd = Command::new(mongotape_bin());
    cmd.args(args)
        .args(["record", "-u", "127.0.0.1:9", "-l", "127.0.0.1:0"])
        .args(["-o", "/nonexistent-mongotape-dir/x.mtape"])
        .env_remove("MONGOTAPE_LOG")
        .env_remove("NO_COLOR");
    for (k, v) in env {
        cmd.env(k, v);
    }
    run_command(cmd, Duration::from_secs(60))
}

#[test]
fn no_escape_codes_off_a_terminal_and_quiet_is_quieter() {
    let out = failing_record(&[], &[]);
    assert_eq!(out.status.code(), Some(1), "{}", out.stderr);
    assert!(
        out.stderr.contains("WARN") && out.stderr.contains("INFO"),
        "{}",
        out.stderr
    );
    assert!(
        !out.stderr.contains('\x1b'),
        "escape codes: {:?}",
        out.stderr
    );
    assert!(
        out.stderr.contains("/nonexistent-mongotape-dir/x.mtape"),
        "{}",
        out.stderr
    );

    // -q quiets the status line and summaries, not the log (the metrics address is an info line).
    let q = failing_record(&["-q"], &[]);
    assert!(q.stderr.contains("INFO"), "{}", q.stderr);
    let quiet = failing_record(&["-qq"], &[]);
    assert!(
        quiet.stderr.contains("WARN") && !quiet.stderr.contains("INFO"),
        "{}",
        quiet.stderr
    );
    let quieter = failing_record(&["-qqq"], &[]);
    assert!(!quieter.stderr.contains("WARN"), "{}", quieter.stderr);
    assert!(
        quieter.stderr.contains("mongotape: error:"),
        "{}",
        quieter.stderr
    );
    let verbose = failing_record(&["-vv"], &[]);
    assert!(verbose.stderr.contains("INFO"), "{}", verbose.stderr);
    // MONGOTAPE_LOG, when set, is the filter.
    let env = failing_record(&[], &[("MONGOTAPE_LOG", "error"), ("NO_COLOR", "1")]);
    assert!(
        !env.stderr.contains("WARN") && !env.stderr.contains('\x1b'),
        "{}",
        env.stderr
    );
}

/// `mongotape ARGS` with a terminal for stdout and stderr (`script` from util-linux gives it a
/// pseudo-terminal); everything it wrote.
fn on_a_terminal(args: &str, no_color: bool) -> String {
    let line = format!("{} {args}", mongotape_bin().display());
    let mut cmd = Command::new("script");
    cmd.args(["-qec", &line, "/dev/null"])
        .env_remove("MONGOTAPE_LOG")
        .env_remove("NO_COLOR");
    if no_color {
        cmd.env("NO_COLOR", "1");
    }
    // A missing `script` fails here, naming the command.
    run_command(cmd, Duration::from_secs(60)).stdout
}

#[test]
fn colour_on_a_terminal_unless_no_color_is_set() {
    let args = "record -u 127.0.0.1:9 -l 127.0.0.1:0 -o /nonexistent-mongotape-dir/x.mtape";
    let coloured = on_a_terminal(args, false);
    assert!(
        coloured.contains("WARN") && coloured.contains('\x1b'),
        "{coloured:?}"
    );
    let plain = on_a_terminal(args, true);
    assert!(
        plain.contains("WARN") && !plain.contains('\x1b'),
        "{plain:?}"
    );
}
