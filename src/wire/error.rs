//! Errors from decoding wire messages. Each says what was wrong and where.

use thiserror::Error;

#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum WireError {
    #[error("message length {length} is below the 16-byte header")]
    LengthTooSmall { length: i32 },
    #[error("message length {length} exceeds the {max}-byte maximum")]
    LengthTooLarge { length: usize, max: usize },
    #[error("message is {actual} bytes but its header says {declared}")]
    LengthMismatch { declared: usize, actual: usize },
    #[error("{what} at byte {offset} needs {needed} bytes, only {available} left")]
    Truncated {
        what: &'static str,
        offset: usize,
        needed: usize,
        available: usize,
    },
    #[error("invalid {what} at byte {offset}: {detail}")]
    Invalid {
        what: &'static str,
        offset: usize,
        detail: String,
    },
    #[error("OP_MSG checksum mismatch: message says {expected:#010x}, computed {computed:#010x}")]
    ChecksumMismatch { expected: u32, computed: u32 },
    #[error("OP_MSG flag bits {bits:#x} are required but unknown")]
    UnknownRequiredFlags { bits: u32 },
    #[error("OP_COMPRESSED uses unknown compressor id {id}")]
    UnknownCompressor { id: u8 },
    #[error("OP_COMPRESSED {compressor} payload does not decompress: {detail}")]
    Decompress {
        compressor: &'static str,
        detail: String,
    },
    #[error("OP_COMPRESSED declares {declared} uncompressed bytes but holds {actual}")]
    UncompressedSizeMismatch { declared: usize, actual: usize },
    #[error("OP_COMPRESSED wraps another OP_COMPRESSED")]
    NestedCompression,
}
