//! What an A/B run is asked: its targets in their roles and the options of the comparison. Below
//! the report and the shape table, which read it, and the run, which takes it.

use super::collect::Roles;
use super::diff::DiffOptions;
use super::stats;

/// One target of an A/B run.
#[derive(Debug, Clone)]
pub struct AbTarget {
    pub uri: String,
    pub label: String,
    pub server_pid: Option<u32>,
}

/// What an A/B run is asked, beyond the replay's own options.
#[derive(Debug, Clone)]
pub struct AbConfig {
    /// Control first, then the candidate, then (optionally) the control's copy.
    pub targets: Vec<AbTarget>,
    pub diff: DiffOptions,
    pub bootstrap: stats::Bootstrap,
}

impl AbConfig {
    pub fn roles(&self) -> Roles {
        Roles {
            count: self.targets.len(),
            control: 0,
            baseline: (self.targets.len() >= 3).then_some(2),
        }
    }
}
