//! Slices of a capture: `mongotape slice`, and the `--since`/`--until`/`--app` filters of `cat`,
//! `analyze` and `replay`. A [`Slicer`] wraps any [`RecordSource`] and passes on what the
//! filters keep, as a valid capture that stays replayable:
//!
//! - a connection with a kept message goes out with its open record and handshake metadata
//!   first, even when it opened long before the window (its open is then marked `continued`);
//! - a reply goes with its request; a getMore or killCursors only when the reply that opened its
//!   cursor was kept ([`cursors`](Slicer)); a transaction whole or not at all ([`txn`]);
//! - what was left out is counted by reason ([`summary`]).
//!
//! Streaming, memory bounded: the state grows with the connections, cursors and transactions
//! open at once, never with the capture; records are held back only while a transaction they
//! follow is undecided, up to a bound. `filter` is the matching alone (also used by `replay`'s
//! `--command`/`--namespace` and `cat`'s), `conns` the state per connection, `bounded` a map
//! that forgets its oldest entries.
//!
//! Layers, bottom up: bounded filter summary < conns txn < slicer

mod bounded;
mod conns;
pub mod filter;
mod slicer;
pub mod summary;
mod txn;

pub use filter::{Bound, ConnFilter, FilterError, MessageFilter, SliceOptions};
pub use slicer::Slicer;
pub use summary::{Fate, Reason, SliceSummary};

use crate::capture::{CaptureError, CaptureWriter, Metadata, RecordSource};

impl SliceOptions {
    /// `source` read through a [`Slicer`] when a filter is set, as it is otherwise.
    pub fn apply<S: RecordSource>(self, source: S) -> Either<S> {
        match self.is_empty() {
            true => Either::Whole(source),
            false => Either::Sliced(Box::new(Slicer::new(source, self))),
        }
    }
}

/// What [`write`] did: the slice's counts, the records that could not be read, and whether the
/// source was read to its end.
pub struct Written {
    pub summary: SliceSummary,
    pub errors: Vec<CaptureError>,
    pub source_complete: bool,
}

/// Writes what `options` keep of `source` into the capture `create` opens with `meta` (the
/// slice's metadata, its start moved to the slice's first record) and finishes it, then reads
/// the rest of `source` only to count what lies past the window. A record that cannot be read
/// is set aside (the slice goes on), a record that cannot be written ends it.
pub fn write<S: RecordSource, W: std::io::Write>(
    source: S,
    options: SliceOptions,
    mut meta: Metadata,
    create: impl FnOnce(&Metadata) -> Result<CaptureWriter<W>, CaptureError>,
) -> Result<Written, CaptureError> {
    let mut slicer = Slicer::new(source, options);
    let mut errors = Vec::new();
    let mut first = None;
    while let Some(record) = slicer.next_record() {
        match record {
            Ok(r) => {
                first = Some(r);
                break;
            }
            Err(e) => errors.push(e),
        }
    }
    if let Some(r) = &first {
        meta.start_at(r.ts_ns);
    }
    let mut writer = create(&meta)?;
    let rest = std::iter::from_fn(|| slicer.next_record());
    for record in first.into_iter().map(Ok).chain(rest) {
        match record {
            Ok(r) => writer.write(&r)?,
            Err(e) => errors.push(e),
        }
    }
    writer.finish()?;
    errors.extend(slicer.count_rest());
    let summary = slicer.summary();
    let source_complete = summary.complete || slicer.into_inner().saw_end();
    Ok(Written {
        summary,
        errors,
        source_complete,
    })
}

/// A capture read whole, or through a [`Slicer`].
pub enum Either<S: RecordSource> {
    Whole(S),
    Sliced(Box<Slicer<S>>),
}

impl<S: RecordSource> Either<S> {
    /// The slice's counts, when sliced.
    pub fn summary(&self) -> Option<SliceSummary> {
        match self {
            Either::Whole(_) => None,
            Either::Sliced(s) => Some(s.summary()),
        }
    }

    /// See [`Slicer::count_rest`]; nothing to do for a capture read whole.
    pub fn count_rest(&mut self) -> Option<crate::capture::CaptureError> {
        match self {
            Either::Whole(_) => None,
            Either::Sliced(s) => s.count_rest(),
        }
    }

    fn source(&self) -> &dyn RecordSource {
        match self {
            Either::Whole(s) => s,
            Either::Sliced(s) => s.as_ref(),
        }
    }
}

impl<S: RecordSource> RecordSource for Either<S> {
    fn metadata(&self) -> &crate::capture::Metadata {
        self.source().metadata()
    }
    fn next_record(
        &mut self,
    ) -> Option<Result<crate::capture::Record, crate::capture::CaptureError>> {
        match self {
            Either::Whole(s) => s.next_record(),
            Either::Sliced(s) => s.next_record(),
        }
    }
    fn offset(&self) -> u64 {
        self.source().offset()
    }
    fn compressed_offset(&self) -> u64 {
        self.source().compressed_offset()
    }
    fn saw_end(&self) -> bool {
        self.source().saw_end()
    }
    fn records_read(&self) -> u64 {
        self.source().records_read()
    }
}

impl<S: RecordSource> Slicer<S> {
    /// Once the slice is read: when its window ended before the capture did, reads the rest of
    /// the capture only to count its messages (`after_until`), so that the summary accounts for
    /// every message of the capture. The first reading error ends the count (returned).
    pub fn count_rest(&mut self) -> Option<crate::capture::CaptureError> {
        if !self.past_until {
            return None;
        }
        while let Some(record) = self.inner.next_record() {
            let record = match record {
                Ok(r) => r,
                Err(e) => return Some(e),
            };
            let bytes = record.payload.len() as u64;
            match record.kind {
                crate::capture::RecordKind::Request => self.summary.after_window(true, bytes),
                crate::capture::RecordKind::Reply => self.summary.after_window(false, bytes),
                _ => {}
            }
        }
        None
    }
}

impl<S: RecordSource> RecordSource for Slicer<S> {
    fn metadata(&self) -> &crate::capture::Metadata {
        self.inner().metadata()
    }
    fn next_record(
        &mut self,
    ) -> Option<Result<crate::capture::Record, crate::capture::CaptureError>> {
        Slicer::next_record(self)
    }
    fn offset(&self) -> u64 {
        self.inner().offset()
    }
    fn compressed_offset(&self) -> u64 {
        self.inner().compressed_offset()
    }
    fn saw_end(&self) -> bool {
        self.complete()
    }
    fn records_read(&self) -> u64 {
        self.inner().records_read()
    }
}

#[cfg(test)]
mod tests;
