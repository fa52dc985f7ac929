//! A warning when a large share of a run's operations failed: the latencies of such a run are
//! mostly those of errors, and its exit status alone (0 without `--max-error-rate`) says nothing.
//! Built from the run's summary and its errors by code, the same way for a replay, each A/B target
//! and a merged report; said in the text and kept in the JSON (`failures`).

use super::errors::{grouped, ErrorsReport};
use super::summary::CommandSummary;
use super::units;
use crate::wire::codes;
use serde::{Deserialize, Serialize};

/// Failed operations above this share of the run get the warning.
pub const WARN_SHARE: f64 = 0.05;

/// A large share of the operations failed (more than [`WARN_SHARE`], 5%).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default)]
pub struct FailuresWarning {
    /// Operations that got an error reply or a write error (`summary.overall.errors`).
    pub failed: u64,
    /// Operations in all (`summary.overall.count`).
    pub ops: u64,
    /// `failed` / `ops`, 0 to 1.
    #[schemars(range(min = 0, max = 1))]
    pub share: f64,
    /// The most frequent error, as `errors_by_code` names it: `DuplicateKey (11000) on insert`;
    /// null when no error was counted by code.
    pub top_error: Option<String>,
    /// The top error's code, null when it had none.
    pub top_code: Option<i32>,
    /// What to do: restore a snapshot taken when the recording started (a target that already
    /// holds the data, or lacks it, fails the recorded writes and reads), and
    /// `--max-error-rate` to make such a run fail.
    pub hint: String,
}

impl FailuresWarning {
    /// The warning for a run with these figures, `None` when at most [`WARN_SHARE`] of its
    /// operations failed.
    pub fn of(overall: &CommandSummary, errors: &ErrorsReport) -> Option<FailuresWarning> {
        let share = overall.errors as f64 / overall.count.max(1) as f64;
        if overall.errors == 0 || share <= WARN_SHARE {
            return None;
        }
        let top = errors.errors_by_code.first();
        let hint = match top.and_then(|e| e.code) {
            Some(codes::DUPLICATE_KEY) => {
                "the target usually already holds the data the capture inserts: restore a snapshot \
                 taken when the recording started before replaying"
            }
            _ => {
                "the target's data or setup differs from what the recording started from: \
                 restore a snapshot taken when the recording started before replaying"
            }
        };
        Some(FailuresWarning {
            failed: overall.errors,
            ops: overall.count,
            share: share.min(1.0),
            top_error: top.map(|e| format!("{} on {}", e.name(), e.command)),
            top_code: top.and_then(|e| e.code),
            hint: format!(
                "{hint} (docs/production.md, \"A consistent starting point for replay\"); \
                 --max-error-rate makes such a run fail"
            ),
        })
    }

    /// `WARNING: 17.0% of the operations failed (1,600 of 9,400), most with DuplicateKey
    /// (11000) on insert: HINT`, one line (the report wraps it).
    pub fn line(&self) -> String {
        let most = self
            .top_error
            .as_ref()
            .map(|e| format!(", most with {e}"))
            .unwrap_or_default();
        format!(
            "WARNING: {} of the operations failed ({} of {}){most}: {}",
            units::share(Some(self.share)),
            grouped(self.failed),
            grouped(self.ops),
            self.hint
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::figures::errors::ErrorByCode;

    fn overall(count: u64, errors: u64) -> CommandSummary {
        CommandSummary {
            count,
            errors,
            ..CommandSummary::default()
        }
    }

    fn errors(code: i32, name: &str, count: u64) -> ErrorsReport {
        ErrorsReport {
            errors_by_code: vec![ErrorByCode {
                command: "insert".into(),
                code: Some(code),
                code_name: Some(name.into()),
                write_error: true,
                count,
                ..ErrorByCode::default()
            }],
            errors_by_code_other: 0,
        }
    }

    #[test]
    fn a_large_share_failed_is_said_with_its_top_error_and_the_restore_hint() {
        let dup = errors(11000, "DuplicateKey", 1_600);
        let w = FailuresWarning::of(&overall(9_400, 1_600), &dup).unwrap();
        assert_eq!(w.top_code, Some(11000));
        assert!((w.share - 0.1702).abs() < 1e-3, "{w:?}");
        let line = w.line();
        assert!(
            line.starts_with(
                "WARNING: 17.0% of the operations failed (1,600 of 9,400), most with \
                 DuplicateKey (11000) on insert: the target usually already holds the data"
            ),
            "{line}"
        );
        assert!(line.contains("restore a snapshot") && line.contains("--max-error-rate"));
        let other = errors(26, "NamespaceNotFound", 900);
        let w = FailuresWarning::of(&overall(9_400, 900), &other).unwrap();
        assert!(w
            .line()
            .contains("NamespaceNotFound (26) on insert: the target's data or setup"));
        assert!(w.line().contains("restore a snapshot"));
    }

    #[test]
    fn a_small_share_or_none_gets_no_warning() {
        let dup = errors(11000, "DuplicateKey", 5);
        assert_eq!(
            FailuresWarning::of(&overall(100, 5), &dup),
            None,
            "5% is not above"
        );
        assert!(FailuresWarning::of(&overall(100, 6), &dup).is_some());
        assert_eq!(FailuresWarning::of(&overall(0, 0), &dup), None);
        let none = FailuresWarning::of(&overall(10, 10), &ErrorsReport::default()).unwrap();
        assert_eq!(none.top_error, None);
        assert!(none
            .line()
            .starts_with("WARNING: 100.0% of the operations failed (10 of 10): "));
    }
}
