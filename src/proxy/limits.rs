//! The proxy's bounds on memory and time, with their defaults (see docs/reliability.md).

use super::budget;
use std::time::Duration;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// `--max-buffer-mb`: bytes all connections together may hold in unfinished messages.
    pub max_buffer_bytes: usize,
    /// How long a connection holding more than its share may wait for the buffer budget.
    pub buffer_wait: Duration,
    /// `--reply-timeout`: an upstream that owes a reply and sends nothing for this long is cut.
    pub reply_timeout: Option<Duration>,
    /// `--idle-timeout`: a connection with no request pending and no traffic for this long is closed.
    pub idle_timeout: Option<Duration>,
    /// `--drain-timeout`: after SIGTERM, how long requests already sent may take to be answered.
    pub drain_timeout: Duration,
}

pub const DEFAULT_DRAIN_TIMEOUT: Duration = Duration::from_secs(5);

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_buffer_bytes: budget::DEFAULT_MAX_BUFFER,
            buffer_wait: budget::DEFAULT_BUFFER_WAIT,
            reply_timeout: None,
            idle_timeout: None,
            drain_timeout: DEFAULT_DRAIN_TIMEOUT,
        }
    }
}
