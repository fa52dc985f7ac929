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

use crate::capture::RecordSource;

impl SliceOptions {
    /// `source` read through a [`Slicer`] when a filter is set, as it is otherwise.
    pub fn apply<S: RecordSource>(self, source: S) -> Either<S> {
        match self.is_empty() {
            true => Either::Whole(source),
            false => Either::Sliced(Box::new(Slicer::new(source, self))),
        }
    }
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
