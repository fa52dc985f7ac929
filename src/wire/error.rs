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

/// A bson crate error as a sentence: `malformed BSON bytes at key "a": expected buffer to contain
/// at least 2147418116 bytes, but it only has 9` (its own text reads `BSON error at key "a".
/// Kind: Malformed BSON bytes. Message: ...`).
pub fn bson_error_text(e: &bson::error::Error) -> String {
    let kind = e.kind.to_string();
    let mut chars = kind.chars();
    let mut text: String = match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => "invalid BSON".into(),
    };
    if let Some(key) = &e.key {
        text.push_str(&format!(" at key {key:?}"));
    } else if let Some(index) = e.index {
        text.push_str(&format!(" at array index {index}"));
    }
    if let Some(message) = e.message.as_deref().filter(|m| !m.is_empty()) {
        text.push_str(": ");
        text.push_str(message.trim_end_matches('.'));
    }
    text
}
