//! Why a message cannot be redacted, for every part of `redact/`: below the walkers that fail
//! with it and the redactor that reports it.

use super::budget::{OverBudget, INFLATE_PER_BYTE};
use crate::wire::depth::TooDeep;
use crate::wire::WireError;

/// Why a message cannot be redacted. The recorder leaves such a message out of the capture.
#[derive(Debug, thiserror::Error)]
pub enum RedactError {
    #[error(transparent)]
    Wire(#[from] WireError),
    #[error("a BSON document does not decode: {}", crate::wire::bson_error_text(.0))]
    Bson(#[from] bson::error::Error),
    #[error(transparent)]
    TooDeep(#[from] TooDeep),
    #[error(
        "OP_COMPRESSED declares {declared} uncompressed bytes, more than the {left} the \
         {scope}'s inflation budget still holds ({} per compressed byte sent)",
        INFLATE_PER_BYTE
    )]
    InflateBudget {
        declared: usize,
        left: u64,
        scope: &'static str,
    },
}

impl RedactError {
    /// Why, in words that quote nothing of the message: the reason a capture's `gap` record gives.
    pub fn reason(&self) -> &'static str {
        match self {
            RedactError::Wire(
                WireError::Decompress { .. }
                | WireError::UncompressedSizeMismatch { .. }
                | WireError::UnknownCompressor { .. }
                | WireError::NestedCompression,
            ) => "unredactable: compressed, does not inflate to its declared size",
            RedactError::Wire(_) | RedactError::Bson(_) => "unredactable: does not decode",
            RedactError::TooDeep(_) => "unredactable: nested deeper than the depth limit",
            RedactError::InflateBudget {
                scope: "recorder", ..
            } => "unredactable: compressed past the recorder's inflation budget",
            RedactError::InflateBudget { .. } => {
                "unredactable: compressed past its connection's inflation budget"
            }
        }
    }
}

impl From<OverBudget> for RedactError {
    fn from(e: OverBudget) -> Self {
        RedactError::InflateBudget {
            declared: e.declared,
            left: e.left,
            scope: e.scope,
        }
    }
}
