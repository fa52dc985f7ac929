use super::record::RecordError;
use std::path::PathBuf;
use thiserror::Error;

#[derive(Debug, Error)]
pub enum CaptureError {
    #[error("cannot {action} capture {path}: {source}")]
    Io {
        action: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("capture {path} is {kind}, not a capture file")]
    NotAFile { path: PathBuf, kind: &'static str },
    /// An error in one file of a set of several: the file is named, then the error.
    #[error("segment {path}: {source}")]
    InSegment {
        path: PathBuf,
        source: Box<CaptureError>,
    },
    #[error("capture {path} exists: choose another --out, or --force to replace it")]
    Exists { path: PathBuf },
    #[error("writing the capture failed: {0}")]
    Write(std::io::Error),
    #[error("not a mongotape capture: {detail}")]
    NotACapture { detail: String },
    #[error("capture format version {found} is not supported (this mongotape reads version {supported})")]
    UnsupportedVersion { found: u16, supported: u16 },
    #[error("capture metadata is invalid: {detail}")]
    BadMetadata { detail: String },
    #[error("capture is truncated at offset {offset} (uncompressed; {compressed_offset} bytes into the file): {detail}")]
    Truncated {
        offset: u64,
        compressed_offset: u64,
        detail: String,
    },
    #[error("capture is corrupt at offset {offset} (uncompressed; {compressed_offset} bytes into the file): {detail}")]
    Corrupt {
        offset: u64,
        compressed_offset: u64,
        detail: String,
    },
    /// Creating the file failed: a symbolic link, a non-file, the system's refusal.
    #[error("{0}")]
    Output(#[source] super::output::OutputError),
}

impl CaptureError {
    pub(crate) fn from_record(e: RecordError, compressed_offset: u64) -> CaptureError {
        let offset = match e {
            RecordError::TooShort { offset } | RecordError::Crc { offset, .. } => offset,
        };
        CaptureError::Corrupt {
            offset,
            compressed_offset,
            detail: e.to_string(),
        }
    }

    /// True when the capture ended part-way (a killed proxy): everything before was readable.
    pub fn is_truncation(&self) -> bool {
        match self {
            CaptureError::InSegment { source, .. } => source.is_truncation(),
            other => matches!(other, CaptureError::Truncated { .. }),
        }
    }
}
