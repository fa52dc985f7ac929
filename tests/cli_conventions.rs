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
        (
            &["--max-open-connections", "0"][..],
            "--max-open-connections",
        ),
        (&["--start-at=-5"][..], "--start-at"),
        // The A/B options, checked once the targets are read.
        (
            &[
                "-t",
                "127.0.0.1:9",
                "-t",
                "127.0.0.1:9",
                "-t",
                "127.0.0.1:9",
                "-t",
                "127.0.0.1:9",
            ][..],
            "--target",
        ),
        (
            &[
                "-t",
                "127.0.0.1:9",
                "--label",
                "a",
                "--label",
                "b",
                "--label",
                "c",
            ][..],
            "--label",
        ),
        (
            &[
                "-t",
                "127.0.0.1:9",
                "--server-pid",
                "1",
                "--server-pid",
                "2",
                "--server-pid",
                "3",
            ][..],
            "--server-pid",
        ),
        (
            &["-t", "127.0.0.1:9", "--confidence", "1.5"][..],
            "--confidence",
        ),
        // A port alone is no address to listen on (one that is taken is a failure, 1).
        (&["--metrics", "9216"][..], "--metrics"),
    ] {
        let mut all = vec!["replay", "x.mtape", "-t", "127.0.0.1:9"];
        all.extend(args);
        let out = mongotape(&all);
        assert_eq!(out.status.code(), Some(2), "{all:?}: {}", out.stderr);
        assert!(out.stderr.contains(option), "{all:?}: {}", out.stderr);
    }
    // The other subcommands' own checks.
    for (args, option) in [
        (
            &["import", "x.pcap", "-o", "y.mtape", "--window", "0"][..],
            "--window",
        ),
        (&["slice", "x.mtape", "-o", "y.mtape"][..], "--since"),
        (&["analyze", "x.mtape", "--since", "soon"][..], "--since"),
        (
            &[
                "analyze",
                "x.mtape",
                "--explain",
                "127.0.0.1:9",
                "--explain-timeout",
                "0",
            ][..],
            "--explain-timeout",
        ),
        (
            &[
                "record",
                "-u",
                "127.0.0.1:9",
                "--no-record",
                "--metrics",
                "9216",
            ][..],
            "--metrics",
        ),
        (
            &[
                "record",
                "--interface",
                "lo",
                "-o",
                "x.mtape",
                "--metrics",
                "9216",
            ][..],
            "--metrics",
        ),
    ] {
        let out = mongotape(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", out.stderr);
        assert!(out.stderr.contains(option), "{args:?}: {}", out.stderr);
    }
}

#[path = "common/source_tree.rs"]
#[allow(dead_code)]
mod source_tree;

/// The string literal an error message starts with, when the call's argument is one (`"..."` or
/// `format!("...", ...)`); `None` for a message made elsewhere (a library error, named by it).
fn message_literal(args: &str) -> Option<String> {
    let args = args.trim_start();
    let rest = args
        .strip_prefix("format!(")
        .map(str::trim_start)
        .unwrap_or(args);
    let body = rest.strip_prefix('"')?;
    let mut out = String::new();
    let mut chars = body.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => return Some(out),
            '\\' => out.extend(chars.next()),
            c => out.push(c),
        }
    }
    None
}

/// Every error `src/cli/` makes itself is a usage error, in the form that exits 2: `usage(...)`
/// or `ensure_usage!(...)`, never `anyhow`'s `ensure!`, `bail!`, `anyhow!` or `Error::msg` (those
/// exit 1; a runtime failure comes from the library, or is its error with a `context`); and each
/// message written there names the option (`--name`, or the `{option}` / `{name}` it is given).
#[test]
fn every_usage_error_in_the_cli_is_the_usage_form_and_names_the_option() {
    let mut files = Vec::new();
    source_tree::rust_files(&workspace_root().join("src/cli"), &mut files);
    let (mut wrong, mut seen) = (Vec::new(), 0);
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        // Test modules stand at the end of a file; a test may build any error.
        let code = text.split("#[cfg(test)]").next().unwrap();
        let name = file.file_name().unwrap().to_string_lossy();
        for (at, _) in code.match_indices('!') {
            let before = &code[..at];
            let word = before
                .rsplit(|c: char| !(c.is_alphanumeric() || c == '_'))
                .next()
                .unwrap();
            if matches!(word, "ensure" | "bail" | "anyhow" | "format_err")
                && code[at..].starts_with("!(")
            {
                let line = before.lines().count();
                wrong.push(format!(
                    "{name}:{line}: {word}! exits 1; use ensure_usage! or usage()"
                ));
            }
        }
        for (at, _) in code.match_indices("Error::msg(") {
            let line = code[..at].lines().count();
            wrong.push(format!(
                "{name}:{line}: Error::msg exits 1; use ensure_usage! or usage()"
            ));
        }
        for form in ["usage(", "ensure_usage!("] {
            for (at, _) in code.match_indices(form) {
                let prev = code[..at].chars().next_back().unwrap_or(' ');
                if prev.is_alphanumeric() || prev == '_' || code[..at].ends_with("fn ") {
                    continue;
                }
                let mut args = &code[at + form.len()..];
                if form.starts_with("ensure") {
                    // The condition, then the message: `ensure_usage!(cond, "...", ...)`.
                    let Some(comma) = args.find(",\n").or_else(|| args.find(", \"")) else {
                        continue;
                    };
                    args = &args[comma + 1..];
                }
                seen += 1;
                let Some(message) = message_literal(args) else {
                    continue;
                };
                let names = message.contains("--")
                    || message.starts_with("{option}")
                    || message.starts_with("{name}");
                if !names {
                    let line = code[..at].lines().count();
                    wrong.push(format!("{name}:{line}: names no option: {message:?}"));
                }
            }
        }
    }
    assert!(
        seen >= 20,
        "only {seen} usage errors found: is the search still right?"
    );
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// A TCP listener that accepts nothing: the kernel completes a client's handshake, nothing reads
/// or writes. An upstream that never answers, and a witness that nothing was contacted.
struct Silent(std::net::TcpListener);

impl Silent {
    fn new() -> Silent {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        Silent(listener)
    }

    fn addr(&self) -> String {
        self.0.local_addr().unwrap().to_string()
    }

    fn contacted(&self) -> bool {
        self.0.accept().is_ok()
    }
}

fn fixture(name: &str) -> String {
    workspace_root()
        .join("captures")
        .join(name)
        .display()
        .to_string()
}

#[test]
fn option_errors_exit_2_before_anything_is_contacted() {
    let silent = Silent::new();
    let addr = silent.addr();
    let dir = tempdir();
    let out = dir.path().join("x.mtape");
    let out = out.to_str().unwrap();
    let capture = fixture("pymongo.mtape");
    let unknown_option = format!("mongodb://{addr}/?foo=bar");
    // The connection-string specification requires the `/` before the options.
    let no_slash = format!("mongodb://{addr}?w=1");
    for (uri, says) in [
        ("mongodb:/127.0.0.1", "mongodb:/127.0.0.1"),
        ("127.0.0.1:99999", "99999"),
        (unknown_option.as_str(), "foo"),
        (no_slash.as_str(), "must follow a `/`"),
    ] {
        let record = ["record", "-u", uri, "-l", "127.0.0.1:0", "-o", out];
        let replay = ["replay", &capture, "-t", uri];
        let ab = ["replay", &capture, "-t", &addr, "-t", uri];
        for (args, option) in [
            (&record[..], "--upstream"),
            (&replay[..], "--target"),
            (&ab[..], "--target"),
        ] {
            let run = mongotape(args);
            assert_eq!(run.status.code(), Some(2), "{args:?}: {}", run.stderr);
            assert!(
                run.stderr.contains(option) && run.stderr.contains(says),
                "{args:?}: {}",
                run.stderr
            );
        }
    }
    let run = mongotape(&["record", "-u", &addr, "-o", out, "--rotate-size", "0"]);
    assert_eq!(run.status.code(), Some(2), "{}", run.stderr);
    assert!(run.stderr.contains("--rotate-size 0"), "{}", run.stderr);

    // A folder that does not exist is a file failure (1), said before the upstream is contacted.
    let missing = "/nonexistent-mongotape-dir/x.mtape";
    let run = mongotape(&["record", "-u", &addr, "-l", "127.0.0.1:0", "-o", missing]);
    assert_eq!(run.status.code(), Some(1), "{}", run.stderr);
    assert!(run.stderr.contains(missing), "{}", run.stderr);
    assert!(!run.stderr.contains("connecting to"), "{}", run.stderr);

    // Certificate files are named by the option that gave them.
    let record_tls = |cert: &str, key: &str| {
        let args = ["record", "-u", &addr, "-l", "127.0.0.1:0", "-o", out];
        mongotape(&[&args[..], &["--tls-cert", cert, "--tls-key", key]].concat())
    };
    let run = record_tls("nope.pem", "nope-key.pem");
    assert_eq!(run.status.code(), Some(1), "{}", run.stderr);
    assert!(
        run.stderr.contains("--tls-cert nope.pem") && !run.stderr.contains("--upstream"),
        "{}",
        run.stderr
    );
    let pki = Pki::new();
    let run = record_tls(&pki.arg("server.pem"), &pki.arg("server.pem"));
    assert_eq!(run.status.code(), Some(1), "{}", run.stderr);
    assert!(
        run.stderr.contains("--tls-key ") && run.stderr.contains("no PEM private key"),
        "{}",
        run.stderr
    );
    assert!(
        !silent.contacted(),
        "an option error contacted the upstream"
    );
}

#[test]
fn an_upstream_that_never_answers_is_announced_first() {
    let silent = Silent::new();
    // The listener's own address is taken: once the hello has waited its 5 s, record fails.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let listen = taken.local_addr().unwrap().to_string();
    let dir = tempdir();
    let out = dir.path().join("x.mtape");
    let run = mongotape(&[
        "record",
        "-u",
        &silent.addr(),
        "-l",
        &listen,
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(run.status.code(), Some(1), "{}", run.stderr);
    let first = run.stderr.lines().next().unwrap_or_default();
    assert_eq!(
        first,
        format!("mongotape: connecting to {} ...", silent.addr()),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains(&listen), "{}", run.stderr);
}

#[test]
fn a_replay_that_sent_nothing_prints_its_error_and_no_table() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = closed.local_addr().unwrap().to_string();
    drop(closed);
    let dir = tempdir();
    let report = dir.path().join("r.json");
    let run = mongotape(&[
        "replay",
        &fixture("pymongo.mtape"),
        "-t",
        &addr,
        "-o",
        report.to_str().unwrap(),
    ]);
    assert_eq!(run.status.code(), Some(1), "{}", run.stderr);
    assert_eq!(run.stdout, "", "a table of nothing was printed");
    assert!(
        run.stderr.contains("mongotape: replay failed") && run.stderr.contains(&addr),
        "{}",
        run.stderr
    );
    // The report is still written, saying why.
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert!(
        json["error"].as_str().is_some_and(|e| e.contains(&addr)),
        "{json}"
    );
}

#[test]
fn plain_text_to_a_tls_server_names_the_likely_cause() {
    let pki = Pki::new();
    let server = pki.server(&[]);
    let hint = "the server may require TLS: tls=true";
    let run = mongotape(&["replay", &fixture("pymongo.mtape"), "-t", server.addr()]);
    assert_eq!(run.status.code(), Some(1), "{}", run.stderr);
    assert!(run.stderr.contains(hint), "{}", run.stderr);
    // The proxy says it when its hello goes unanswered (then fails: no listener for the member).
    let dir = tempdir();
    let out = dir.path().join("x.mtape");
    let run = mongotape(&[
        "record",
        "-u",
        server.addr(),
        "-l",
        "127.0.0.1:1=127.0.0.1:0",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(run.status.code(), Some(1), "{}", run.stderr);
    assert!(run.stderr.contains(hint), "{}", run.stderr);
}

/// `--help` is wrapped: at most 100 columns off a terminal, and on a wider one.
#[test]
fn every_help_fits_100_columns() {
    let top: [&str; 0] = [];
    let subs = SUBCOMMANDS.iter().chain(["slice", "import"].iter());
    for args in std::iter::once(&top[..]).chain(subs.map(std::slice::from_ref)) {
        for columns in [None, Some("250")] {
            let mut cmd = std::process::Command::new(mongotape_bin());
            cmd.args(args).arg("--help").env_remove("COLUMNS");
            if let Some(c) = columns {
                cmd.env("COLUMNS", c);
            }
            let out = cmd.output().expect("mongotape runs");
            assert!(out.status.success(), "{args:?}");
            let help = String::from_utf8(out.stdout).unwrap();
            let wide: Vec<&str> = help.lines().filter(|l| l.chars().count() > 100).collect();
            assert!(wide.is_empty(), "{args:?} COLUMNS={columns:?}: {wide:#?}");
        }
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
    // Examples are kept as written (no fill: a command is not reflowed mid-way), and the SYNOPSIS
    // names each option's value.
    let examples = replay
        .find(".SH EXTRA\n.nf\nExamples:")
        .expect(".nf before the examples");
    assert!(replay[examples..].contains("\n.fi\n"), "{replay}");
    assert!(
        replay.contains("\\fB\\-\\-speed\\fR \\fISPEED\\fR]")
            && replay.contains("\\fB\\-\\-max\\-p99\\fR \\fICOMMAND=MS\\fR]"),
        "{replay}"
    );
    let stdout_page = mongotape(&["man"]).stdout;
    assert!(stdout_page.contains(".nf\n"), "the page on stdout too");
    // record's usage line shows the --out it requires.
    let record = mongotape(&["record", "--help"]).stdout;
    assert!(
        record.contains("Usage: mongotape record --out <OUT> [OPTIONS]"),
        "{record}"
    );
}

/// The arguments of a `record` in front of `server` that logs an info line (the upstream is a
/// standalone server) and a warning (the only `--listen` mapping names another member), then
/// fails: no member could be given a listener. The capture would go in `dir`.
fn failing_record_args(server: &Server, dir: &std::path::Path) -> Vec<String> {
    let out = dir.join("x.mtape");
    [
        "record",
        "-u",
        server.addr(),
        "-l",
        "127.0.0.1:1=127.0.0.1:0",
        "-o",
        out.to_str().unwrap(),
        "--force",
    ]
    .map(String::from)
    .to_vec()
}

/// `failing_record_args` with `args` before the subcommand.
fn failing_record(server: &Server, args: &[&str], env: &[(&str, &str)]) -> CommandOutput {
    let dir = tempdir();
    let mut cmd = Command::new(mongotape_bin());
    cmd.args(args)
        .args(failing_record_args(server, dir.path()))
        .env_remove("MONGOTAPE_LOG")
        .env_remove("NO_COLOR");
    for (k, v) in env {
        cmd.env(k, v);
    }
    run_command(cmd, Duration::from_secs(60))
}

#[test]
fn no_escape_codes_off_a_terminal_and_quiet_is_quieter() {
    let server = Server::start();
    let out = failing_record(&server, &[], &[]);
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
        out.stderr.contains("mongotape: connecting to "),
        "{}",
        out.stderr
    );

    // -q drops the info lines and the announcements, as the README says; warnings stay.
    let q = failing_record(&server, &["-q"], &[]);
    assert!(
        q.stderr.contains("WARN") && !q.stderr.contains("INFO"),
        "{}",
        q.stderr
    );
    assert!(!q.stderr.contains("connecting to"), "{}", q.stderr);
    let quiet = failing_record(&server, &["-qq"], &[]);
    assert!(
        quiet.stderr.contains("WARN") && !quiet.stderr.contains("INFO"),
        "{}",
        quiet.stderr
    );
    let quieter = failing_record(&server, &["-qqq"], &[]);
    assert!(!quieter.stderr.contains("WARN"), "{}", quieter.stderr);
    assert!(
        quieter.stderr.contains("mongotape: error:"),
        "{}",
        quieter.stderr
    );
    let verbose = failing_record(&server, &["-vv"], &[]);
    assert!(verbose.stderr.contains("INFO"), "{}", verbose.stderr);
    // MONGOTAPE_LOG, when set, is the filter.
    let env = failing_record(
        &server,
        &[],
        &[("MONGOTAPE_LOG", "error"), ("NO_COLOR", "1")],
    );
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
    let server = Server::start();
    let dir = tempdir();
    let args = failing_record_args(&server, dir.path())
        .iter()
        .map(|a| format!("'{a}'"))
        .collect::<Vec<_>>()
        .join(" ");
    let args = args.as_str();
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

/// The options of `sub` whose value is a duration or a time, as its `--help` lists them.
fn timed_options(sub: &str) -> Vec<String> {
    let help = mongotape(&[sub, "--help"]).stdout;
    let timed = ["<DURATION>", "<SECS>", "<SECONDS>", "<TIME>"];
    help.lines()
        .filter(|l| timed.iter().any(|t| l.contains(t)))
        .filter_map(|l| l.split_whitespace().find(|w| w.starts_with("--")))
        .map(str::to_owned)
        .collect()
}

#[test]
fn every_duration_option_out_of_range_is_a_usage_error_naming_it() {
    let dir = tempdir();
    let out = dir.path().join("x.mtape").display().to_string();
    let capture = fixture("pymongo.mtape");
    let commands: [(&str, Vec<&str>); 5] = [
        ("record", vec!["record", "-u", "127.0.0.1:9", "-o", &out]),
        ("replay", vec!["replay", &capture, "-t", "127.0.0.1:9"]),
        (
            "analyze",
            vec!["analyze", &capture, "--explain", "127.0.0.1:9"],
        ),
        ("slice", vec!["slice", &capture, "-o", &out]),
        ("cat", vec!["cat", &capture]),
    ];
    let mut walked = 0;
    for (sub, before) in &commands {
        let options = timed_options(sub);
        assert!(!options.is_empty(), "{sub}: no duration option found");
        for option in &options {
            for value in ["1e300", "-1", "NaN", "1e19"] {
                let arg = format!("{option}={value}");
                let mut args = before.clone();
                if option == "--ramp" {
                    args.extend(["--rate", "1..2"]);
                }
                args.push(&arg);
                let run = mongotape(&args);
                assert_eq!(run.status.code(), Some(2), "{args:?}: {}", run.stderr);
                assert!(
                    run.stderr.contains(option.as_str()),
                    "{args:?}: {}",
                    run.stderr
                );
                assert!(!run.stderr.contains("panicked"), "{args:?}: {}", run.stderr);
            }
            walked += 1;
        }
    }
    // record's eight, replay's seven, analyze's three and the windows of slice and cat.
    assert!(walked >= 22, "{walked} options walked");
}

/// Each tool names the file it was given when it is another tool's: a packet capture given to
/// `inspect` or `cat`, a capture given to `import`; four targets are a usage error.
#[test]
fn a_file_for_another_subcommand_says_which() {
    let dir = tempdir();
    let pcap = dir.path().join("app.pcap");
    let status = std::process::Command::new("python3")
        .arg(workspace_root().join("tools/write_hostile_pcap.py"))
        .args(["forged", pcap.to_str().unwrap()])
        .status()
        .expect("python3 runs");
    assert!(status.success());
    let pcap = pcap.display().to_string();
    for sub in ["inspect", "cat"] {
        let run = mongotape(&[sub, &pcap]);
        assert_eq!(run.status.code(), Some(1), "{sub}: {}", run.stderr);
        assert!(
            run.stderr
                .contains("this is a packet capture (pcap): `mongotape import` it"),
            "{sub}: {}",
            run.stderr
        );
    }
    let capture = fixture("pymongo.mtape");
    let out = dir.path().join("x.mtape");
    let run = mongotape(&["import", &capture, "-o", out.to_str().unwrap()]);
    assert_ne!(run.status.code(), Some(0));
    assert!(
        run.stderr.contains("a mongotape capture already") && run.stderr.contains("slice"),
        "{}",
        run.stderr
    );
    let t = ["-t", "127.0.0.1:1"];
    let run = mongotape(&[&["replay", &capture][..], &t, &t, &t, &t].concat());
    assert_eq!(run.status.code(), Some(2), "{}", run.stderr);
    assert!(run.stderr.contains("at most three"), "{}", run.stderr);
}
