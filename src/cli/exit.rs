//! Exit statuses: one meaning each, the same for every subcommand, listed in every `--help` and in
//! the README.

use std::fmt;
use std::process::ExitCode;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// Everything done.
    Ok = 0,
    /// A file, the network, the upstream or the target failed; the replay ended early.
    Failure = 1,
    /// A bad option or argument (clap's own status for usage errors).
    Usage = 2,
    /// The capture is truncated or corrupt: everything before the damage was read and reported.
    DamagedCapture = 3,
    /// `replay`: a threshold (`--fail-on-divergence`, `--max-error-rate`, `--max-p99`,
    /// `--fail-on-state-divergence`) was crossed.
    Threshold = 4,
    /// `replay`: nothing was replayed (everything filtered out, an empty capture, handshakes
    /// only); `cat`, `analyze`, `slice`: the filters matched nothing.
    NothingReplayed = 5,
    /// `merge`: some shard reports are missing or their replay failed; the rest were merged.
    IncompleteMerge = 6,
}

impl Exit {
    pub const ALL: [Exit; 7] = [
        Exit::Ok,
        Exit::Failure,
        Exit::Usage,
        Exit::DamagedCapture,
        Exit::Threshold,
        Exit::NothingReplayed,
        Exit::IncompleteMerge,
    ];

    pub fn code(self) -> u8 {
        self as u8
    }

    fn meaning(self) -> &'static str {
        match self {
            Exit::Ok => "success",
            Exit::Failure => "runtime failure (a file, the network, the upstream or the target)",
            Exit::Usage => "usage error (a bad option or argument)",
            Exit::DamagedCapture => "the capture is damaged; read and reported up to the damage",
            Exit::Threshold => "a replay threshold was crossed (reports still written)",
            Exit::NothingReplayed => {
                "nothing was replayed or matched the filters (filtered out, empty, handshakes only)"
            }
            Exit::IncompleteMerge => "merge: shard reports missing or failed; the rest merged",
        }
    }

    /// The `Exit status:` paragraph of a `--help`, listing `codes`.
    pub fn help(codes: &[Exit]) -> String {
        let mut out = String::from("Exit status:\n");
        for e in codes {
            out.push_str(&format!("  {}  {}\n", e.code(), e.meaning()));
        }
        out
    }
}

impl From<Exit> for ExitCode {
    fn from(e: Exit) -> ExitCode {
        ExitCode::from(e.code())
    }
}

/// An option or argument that parsed but makes no sense; exits with [`Exit::Usage`].
#[derive(Debug)]
pub struct UsageError(pub String);

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// `Err(usage(...))` from a subcommand exits 2, like clap's own usage errors. The message names
/// the option (`tests/cli_conventions.rs` reads every one in `src/cli/`).
pub fn usage(message: impl Into<String>) -> anyhow::Error {
    UsageError(message.into()).into()
}

/// `anyhow::ensure!` for options: unless `cond`, the subcommand returns a [`UsageError`] (exit 2)
/// with the message, which names the option. `anyhow`'s own `ensure!` and `bail!` would exit 1.
macro_rules! ensure_usage {
    ($cond:expr, $($message:tt)+) => {
        if !$cond {
            return Err($crate::cli::exit::usage(format!($($message)+)));
        }
    };
}
pub(crate) use ensure_usage;

/// Whether `cause` says an option or argument was wrong: a value that does not parse or an option
/// that cannot be honoured, found before anything is contacted.
fn is_usage(cause: &(dyn std::error::Error + 'static)) -> bool {
    use mongotape::metrics::MetricsError;
    use mongotape::net::NetError;
    use mongotape::proxy::ProxyError;
    use mongotape::replay::{client::TargetError, ReplayError};
    if cause.is::<UsageError>() {
        return true;
    }
    if let Some(e) = cause.downcast_ref::<mongotape::capture::output::OutputError>() {
        return e.is_usage();
    }
    if let Some(e) = cause.downcast_ref::<ReplayError>() {
        return match e {
            ReplayError::Option(_) => true,
            ReplayError::Target(t) => t.malformed,
            ReplayError::Metrics(m) => not_an_address(m),
            _ => false,
        };
    }
    if let Some(t) = cause.downcast_ref::<TargetError>() {
        return t.malformed;
    }
    if let Some(m) = cause.downcast_ref::<MetricsError>() {
        return not_an_address(m);
    }
    match cause.downcast_ref::<ProxyError>() {
        Some(ProxyError::ListenPlan(_)) => return true,
        Some(ProxyError::Metrics(m)) => return not_an_address(m),
        _ => {}
    }
    matches!(
        cause.downcast_ref::<NetError>(),
        Some(NetError::ConnString { .. } | NetError::Unsupported { .. })
    )
}

/// `--metrics` given something that is no address (`--metrics 9216`); one that is taken or does
/// not resolve is a failure.
fn not_an_address(e: &mongotape::metrics::MetricsError) -> bool {
    let mongotape::metrics::MetricsError::Listen { source, .. } = e;
    source.kind() == std::io::ErrorKind::InvalidInput
}

/// The status for an error that ended a subcommand.
pub fn of_error(e: &anyhow::Error) -> Exit {
    if e.chain().any(is_usage) {
        Exit::Usage
    } else {
        Exit::Failure
    }
}

/// The message for an error, each cause said once. Library errors put their cause in their own
/// message (they also end up alone in reports and log lines), so a cause whose text is already
/// said is not repeated, as anyhow's `{:#}` would.
pub fn message(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if out.contains(&text) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&text);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_is_distinct_and_listed() {
        let help = Exit::help(&Exit::ALL);
        for (i, e) in Exit::ALL.iter().enumerate() {
            assert_eq!(e.code() as usize, i);
            assert!(help.contains(&format!("  {i}  ")), "{help}");
        }
    }

    #[test]
    fn a_cause_already_said_is_not_repeated() {
        let io = std::io::Error::from(std::io::ErrorKind::NotFound);
        let said = format!("cannot open x.mtape: {io}");
        #[derive(Debug)]
        struct Wraps(String, std::io::Error);
        impl fmt::Display for Wraps {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }
        impl std::error::Error for Wraps {
            fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
                Some(&self.1)
            }
        }
        let e = anyhow::Error::new(Wraps(said.clone(), io)).context("inspect");
        assert_eq!(message(&e), format!("inspect: {said}"));
        let e = anyhow::anyhow!("entirely new").context("--target");
        assert_eq!(message(&e), "--target: entirely new");
    }
}
