//! What the command line prints and how: the log's level (`-v`, `-q`, `MONGOTAPE_LOG`), escape
//! codes only on a terminal without `NO_COLOR`, stdout that may be closed early (`| head`),
//! stderr that may be a pipe whose reader is gone (no line written there stops the program), and
//! report files (never written through a symbolic link).

use std::io::{IsTerminal, Write};

/// Colour, redrawn status lines and progress bars: only on a terminal, and never with `NO_COLOR`
/// set to anything but the empty string (no-color.org).
pub fn styled(stream: &impl IsTerminal) -> bool {
    stream.is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// The log on stderr. `MONGOTAPE_LOG` (a tracing filter such as `debug` or
/// `mongotape::replay=trace`) wins when set; otherwise `-v` debug, `-vv` trace, `-q` and `-qq`
/// warnings, `-qqq` errors only, info by default.
pub fn init_tracing(verbose: u8, quiet: u8) {
    let level = match (verbose, quiet) {
        (0, 0) => "info",
        // Addresses to connect to (`replay --metrics`) are info lines that -q keeps.
        (0, 1 | 2) => "warn,mongotape::address=info",
        (0, _) => "error",
        (1, _) => "debug",
        _ => "trace",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("MONGOTAPE_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(level));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(styled(&std::io::stderr()))
        .with_target(false)
        // Its fallback for a failed write is `eprintln!`, which panics when stderr is a broken
        // pipe: a log line that cannot be written is dropped instead.
        .log_internal_errors(false)
        .init();
}

/// Writes `text` to stdout; a reader that went away (`| head`) ends the output, not the program.
pub fn text(text: &str) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|_| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => r,
    }
}

/// A report as indented JSON on stdout.
pub fn json(report: &impl serde::Serialize) -> anyhow::Result<()> {
    let mut s = serde_json::to_string_pretty(report)?;
    s.push('\n');
    Ok(text(&s)?)
}

/// A line on stderr, for [`note!`]. A reader that went away (a closed pipe, an ssh session that
/// dropped) must not stop the program: the error is ignored, where `eprintln!` would panic.
pub fn line(args: std::fmt::Arguments) {
    let _ = writeln!(std::io::stderr(), "{args}");
}

/// `eprintln!` that never panics: see [`line`].
macro_rules! note {
    ($($arg:tt)*) => {
        $crate::cli::output::line(format_args!($($arg)*))
    };
}
pub(crate) use note;

/// Writes a report file (`-o`, `--report`, `--html`): a regular file is replaced, a symbolic
/// link is refused, naming the path.
pub fn report_file(path: &std::path::Path, bytes: &[u8], what: &str) -> anyhow::Result<()> {
    use anyhow::Context;
    mongotape::capture::output::write_report(path, bytes)
        .with_context(|| format!("cannot write the {what} to {}", path.display()))
}

/// Where a run's report goes (`replay`, an A/B replay, `merge`): its JSON to `-o`, its page to
/// `--html`, its text on stdout unless quiet.
pub struct Outputs<'a> {
    pub report: Option<&'a std::path::Path>,
    pub html: Option<&'a std::path::Path>,
    pub quiet: bool,
}

/// Writes `report` where `to` says, in one order: the JSON file (`what` names it in an error),
/// the HTML page, then the text (when `text` gives one: a run that failed before sending anything
/// has no table to show).
pub fn report<R: serde::Serialize>(
    report: &R,
    to: &Outputs<'_>,
    what: &str,
    html: impl FnOnce(&R) -> String,
    text: impl FnOnce(&R) -> Option<String>,
) -> anyhow::Result<()> {
    if let Some(path) = to.report {
        report_file(path, &serde_json::to_vec_pretty(report)?, what)?;
    }
    if let Some(path) = to.html {
        report_file(path, html(report).as_bytes(), "HTML report")?;
    }
    if !to.quiet {
        if let Some(text) = text(report) {
            self::text(&text)?;
        }
    }
    Ok(())
}
