//! What the feed and every lane share: the run ([`Run`]) and the targets it goes to, each with its
//! own state ([`TargetState`]): one for a replay, one per target for A/B.

use super::counter;
use super::run::Run;
use super::target::TargetState;
use crate::replay::request::Scope;
use std::sync::Arc;

pub struct Shared {
    pub run: Arc<Run>,
    /// Never empty.
    pub targets: Vec<Arc<TargetState>>,
}

impl Shared {
    /// The feed announces a cursor to every target (each resolves its own live id).
    pub fn expect_cursor(&self, scope: Scope, recorded: i64) {
        for t in &self.targets {
            t.cursors.expect(scope, recorded);
        }
    }

    /// Requests sent so far: the target's count, or in A/B those handed to every target.
    pub fn sent(&self) -> u64 {
        match &self.targets[..] {
            [one] => counter::get(&one.counters.sent),
            _ => counter::get(&self.run.counters.paired),
        }
    }
}
