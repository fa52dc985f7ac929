//! What can be wrong with a fault rule: where in which rule, or which file.

use thiserror::Error;

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum FaultError {
    /// A text rule that does not parse; `position` counts characters from 1.
    #[error("fault rule `{rule}`: at character {position}: {what}")]
    Parse {
        rule: String,
        position: usize,
        what: String,
    },
    /// A JSON rule (a `--faults` file or a `PUT /faults` body) that does not say a valid rule.
    #[error("fault rules JSON: {what}")]
    Json { what: String },
}
