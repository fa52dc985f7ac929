//! The `.mtape` capture format (spec: `docs/capture-format.md`): a zstd stream of length-prefixed,
//! CRC-checked records holding raw wire messages and connection events.
//!
//! `record` is the encoding (no I/O); `writer` and `reader` stream it to and from files;
//! `segments` is a recording as files (rotation, limits, no overwriting); `set` reads segments
//! (a folder or a list) as one capture.

pub mod error;
pub mod reader;
pub mod record;
pub mod segments;
pub mod set;
pub mod writer;

pub use error::CaptureError;
pub use reader::CaptureReader;
pub use record::{
    CloseEvent, EndEvent, GapEvent, HelloRewriteEvent, Metadata, OpenEvent, Record, RecordKind,
    Side, FORMAT_VERSION,
};
pub use segments::{EndReason, SegmentPlan, SegmentWriter, Written};
pub use set::CaptureSet;
pub use writer::CaptureWriter;

#[cfg(test)]
mod tests;
