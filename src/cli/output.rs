//! What the command line prints and how: the log's level (`-v`, `-q`, `MONGOTAPE_LOG`), escape
//! codes only on a terminal without `NO_COLOR`, and stdout that may be closed early (`| head`).

use std::io::{IsTerminal, Write};

/// Colour, redrawn status lines and progress bars: only on a terminal, and never with `NO_COLOR`
/// set to anything but the empty string (no-color.org).
pub fn styled(stream: &impl IsTerminal) -> bool {
    stream.is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// The log on stderr. `MONGOTAPE_LOG` (a tracing filter such as `debug` or
/// `mongotape::replay=trace`) wins when set; otherwise `-v` debug, `-vv` trace, `-qq` warnings,
/// `-qqq` errors only, info by default (a single `-q` quiets the status line and summary, not the
/// log: lines such as the metrics address stay).
pub fn init_tracing(verbose: u8, quiet: u8) {
    let level = match (verbose, quiet) {
        (0, 0 | 1) => "info",
        (0, 2) => "warn",
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
