use crate::capture::CaptureError;
use std::path::PathBuf;
use thiserror::Error;

#[derive(Debug, Error)]
pub enum ImportError {
    #[error("cannot open {path}: {source}")]
    Open {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The file is damaged at `offset` (bytes into the file): everything before was imported.
    #[error("{path}: at byte {offset}: {what}")]
    BadFile {
        path: PathBuf,
        offset: u64,
        what: String,
    },
    /// Only regular files are read (a FIFO would block for ever); standard input is named `-`.
    #[error(
        "{path} is {kind}, not a file: only regular files are imported (a pcap can be piped in \
         as `-` or /dev/stdin)"
    )]
    NotAFile { path: PathBuf, kind: &'static str },
    #[error("{path}: not a format mongotape imports ({what})")]
    UnknownFormat { path: PathBuf, what: String },
    #[error("writing the imported capture: {0}")]
    Capture(#[from] CaptureError),
    /// Live sniffing (`record --interface`) could not start or went wrong.
    #[error("sniffing on interface {interface}: {what}")]
    Sniffer { interface: String, what: String },
    #[error("a record came before the capture was created")]
    NotBegun,
}

impl ImportError {
    /// Whether this is damage in an input file (the import goes on with what was read).
    pub fn is_damage(&self) -> bool {
        matches!(self, ImportError::BadFile { .. })
    }
}
