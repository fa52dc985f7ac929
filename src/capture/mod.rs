//! The `.mtape` capture format (spec: `docs/capture-format.md`): a zstd stream of length-prefixed,
//! CRC-checked records holding raw wire messages and connection events.
//!
//! `record` is the encoding (no I/O); `writer` and `reader` stream it to and from files;
//! `output` creates files, never through a symbolic link; `summary` is what a finished file ends
//! with (peak of open connections, faults), read without decompressing;
//! `segments` is a recording as files (rotation, limits, no overwriting); `set` reads segments
//! (a folder or a list) as one capture.
//!
//! Layers, bottom up: output record < error summary < reader writer < segments set

pub mod error;
pub mod output;
pub mod reader;
pub mod record;
pub mod segments;
pub mod set;
pub mod summary;
pub mod writer;

pub use error::CaptureError;
pub use reader::CaptureReader;
pub use record::rfc3339;
pub use record::{
    CloseEvent, CollectionFingerprint, EndEvent, FaultEvent, GapEvent, HelloRewriteEvent, Metadata,
    OpenEvent, Record, RecordKind, Side, SnapshotEvent, StateEndEvent, FAULT, FORMAT_VERSION,
    SNAPSHOT, STATE_END,
};
pub use segments::{EndReason, SegmentPlan, SegmentWriter, Written};
pub use set::CaptureSet;
pub use writer::CaptureWriter;

/// What reports and the replayer read records from: one capture file ([`CaptureReader`]) or the
/// segments of a rotated recording read as one ([`CaptureSet`]).
pub trait RecordSource {
    fn metadata(&self) -> &Metadata;
    /// The next record, `None` at a clean end, or the error that stopped reading.
    fn next_record(&mut self) -> Option<Result<Record, CaptureError>>;
    /// Uncompressed bytes consumed so far.
    fn offset(&self) -> u64;
    /// Compressed bytes taken from the file(s) so far.
    fn compressed_offset(&self) -> u64;
    /// True once the (last) `end` record was read.
    fn saw_end(&self) -> bool;
    fn records_read(&self) -> u64;
}

impl<R: std::io::Read> RecordSource for CaptureReader<R> {
    fn metadata(&self) -> &Metadata {
        CaptureReader::metadata(self)
    }
    fn next_record(&mut self) -> Option<Result<Record, CaptureError>> {
        CaptureReader::next_record(self)
    }
    fn offset(&self) -> u64 {
        CaptureReader::offset(self)
    }
    fn compressed_offset(&self) -> u64 {
        CaptureReader::compressed_offset(self)
    }
    fn saw_end(&self) -> bool {
        CaptureReader::saw_end(self)
    }
    fn records_read(&self) -> u64 {
        CaptureReader::records_read(self)
    }
}

/// A source lent out: read through it, then asked what it saw.
impl<S: RecordSource + ?Sized> RecordSource for &mut S {
    fn metadata(&self) -> &Metadata {
        (**self).metadata()
    }
    fn next_record(&mut self) -> Option<Result<Record, CaptureError>> {
        (**self).next_record()
    }
    fn offset(&self) -> u64 {
        (**self).offset()
    }
    fn compressed_offset(&self) -> u64 {
        (**self).compressed_offset()
    }
    fn saw_end(&self) -> bool {
        (**self).saw_end()
    }
    fn records_read(&self) -> u64 {
        (**self).records_read()
    }
}

impl RecordSource for CaptureSet {
    fn metadata(&self) -> &Metadata {
        CaptureSet::metadata(self)
    }
    fn next_record(&mut self) -> Option<Result<Record, CaptureError>> {
        CaptureSet::next_record(self)
    }
    fn offset(&self) -> u64 {
        CaptureSet::offset(self)
    }
    fn compressed_offset(&self) -> u64 {
        CaptureSet::compressed_offset(self)
    }
    fn saw_end(&self) -> bool {
        CaptureSet::saw_end(self)
    }
    fn records_read(&self) -> u64 {
        CaptureSet::records_read(self)
    }
}

#[cfg(test)]
mod tests;
