//! What can go wrong taking, writing or reading a snapshot, and which side it was: the source
//! server (`Source`), the snapshot's own files (`File`, `Corrupt`), or the command line
//! (`Pattern`); restoring one, the target server (`Target`).

use std::path::PathBuf;
use thiserror::Error;

#[derive(Debug, Error)]
pub enum StateError {
    #[error("namespace pattern {pattern:?}: {why}")]
    Pattern { pattern: String, why: &'static str },
    #[error("source server: {action}: {message}")]
    Source { action: String, message: String },
    #[error("{path}: {action}: {source}")]
    File {
        action: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    Output(#[from] crate::capture::output::OutputError),
    #[error("{path}: corrupt at byte offset {offset}: {why}")]
    Corrupt {
        path: PathBuf,
        offset: u64,
        why: String,
    },
    #[error("{path}: not a snapshot: {why}")]
    NotASnapshot { path: PathBuf, why: String },
    /// A `--restore-setup` file that cannot be used.
    #[error("{path}: restore setup: {why}")]
    Setup { path: PathBuf, why: String },
    /// The server a snapshot is restored into refused or failed.
    #[error("target server: {action}: {message}")]
    Target { action: String, message: String },
}

impl StateError {
    pub(crate) fn source(action: impl Into<String>, e: impl std::fmt::Display) -> StateError {
        StateError::Source {
            action: action.into(),
            message: e.to_string(),
        }
    }

    pub(crate) fn target(action: impl Into<String>, e: impl std::fmt::Display) -> StateError {
        StateError::Target {
            action: action.into(),
            message: e.to_string(),
        }
    }

    pub(crate) fn file(
        action: &'static str,
        path: &std::path::Path,
    ) -> impl FnOnce(std::io::Error) -> StateError {
        let path = path.to_owned();
        move |source| StateError::File {
            action,
            path,
            source,
        }
    }
}
