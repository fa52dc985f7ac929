//! Streams records into a zstd-compressed capture. The caller decides when to flush; the proxy's
//! recorder flushes at least once a second so a killed proxy leaves a readable file.

use super::error::CaptureError;
use super::output::{self, Existing, OutputError};
use super::record::{Metadata, Record, FORMAT_VERSION, MAGIC};
use super::summary::Tally;
use std::fs::File;
use std::io::{self, Write};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// zstd level 1: about 1 GB/s on one core at ~11x on wire traffic of the seeds' kind.
pub const DEFAULT_LEVEL: i32 = 1;

/// At [`DEFAULT_LEVEL`] and the faster (negative) levels the encoder looks back 128 KiB (zstd's
/// own for level 1: 512 KiB) through a hash table of 4,096 entries (8,192): 16 KiB of table
/// instead of 32, on a core the recorder shares with forwarding, the clients and the server. The
/// recorder's CPU per recorded insert fell by a fifth (0.94-1.01 to 0.75-0.79 µs) for a capture
/// of the same size (docs/benchmarks.md, "The recorder's own CPU is the proxy's tail").
const FAST_WINDOW_LOG: u32 = 17;
const FAST_HASH_LOG: u32 = 12;

/// Counts the compressed bytes that reach the file.
pub struct Counting<W> {
    inner: W,
    written: Arc<AtomicU64>,
}

impl<W: Write> Write for Counting<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.written.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

pub struct CaptureWriter<W: Write> {
    encoder: zstd::stream::write::Encoder<'static, Counting<W>>,
    scratch: Vec<u8>,
    uncompressed: u64,
    compressed: Arc<AtomicU64>,
    records: u64,
    /// Uncompressed bytes at the last flush: everything before is in the file.
    flushed: u64,
    /// What the file's summary will say ([`super::summary`]), written by [`CaptureWriter::finish`].
    tally: Tally,
}

impl CaptureWriter<File> {
    /// Creates (or truncates) `path`, readable by its owner only (a replaced file too). A symbolic
    /// link at `path` is refused, never written through.
    pub fn create(path: &Path, meta: &Metadata, level: i32) -> Result<Self, CaptureError> {
        Self::open(path, Existing::Replace, meta, level)
    }

    /// Creates `path`, which must not exist (not even as a dangling link): `O_CREAT|O_EXCL`.
    pub fn create_new(path: &Path, meta: &Metadata, level: i32) -> Result<Self, CaptureError> {
        Self::open(path, Existing::Refuse, meta, level)
    }

    fn open(
        path: &Path,
        existing: Existing,
        meta: &Metadata,
        level: i32,
    ) -> Result<Self, CaptureError> {
        let file = output::create(path, existing, 0o600).map_err(|e| match e {
            OutputError::Exists { path } => CaptureError::Exists { path },
            e => CaptureError::Output(e),
        })?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            file.set_permissions(std::fs::Permissions::from_mode(0o600))
                .map_err(|source| CaptureError::Io {
                    action: "restrict permissions of",
                    path: path.to_owned(),
                    source,
                })?;
        }
        CaptureWriter::new(file, meta, level)
    }
}

impl<W: Write> CaptureWriter<W> {
    pub fn new(inner: W, meta: &Metadata, level: i32) -> Result<Self, CaptureError> {
        let compressed = Arc::new(AtomicU64::new(0));
        let counting = Counting {
            inner,
            written: compressed.clone(),
        };
        let mut encoder =
            zstd::stream::write::Encoder::new(counting, level).map_err(CaptureError::Write)?;
        if level == DEFAULT_LEVEL || level < 0 {
            use zstd::stream::raw::CParameter::{HashLog, WindowLog};
            for parameter in [WindowLog(FAST_WINDOW_LOG), HashLog(FAST_HASH_LOG)] {
                encoder
                    .set_parameter(parameter)
                    .map_err(CaptureError::Write)?;
            }
        }
        let mut w = CaptureWriter {
            encoder,
            scratch: Vec::with_capacity(64 * 1024),
            uncompressed: 0,
            compressed,
            records: 0,
            flushed: 0,
            tally: Tally::default(),
        };
        let json = serde_json::to_vec(meta).expect("metadata serializes");
        let mut head = Vec::with_capacity(14 + json.len());
        head.extend_from_slice(&MAGIC);
        head.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        head.extend_from_slice(&(json.len() as u32).to_le_bytes());
        head.extend_from_slice(&json);
        w.encoder.write_all(&head).map_err(CaptureError::Write)?;
        w.uncompressed += head.len() as u64;
        w.flush()?;
        Ok(w)
    }

    pub fn write(&mut self, record: &Record) -> Result<(), CaptureError> {
        self.scratch.clear();
        record.encode_into(&mut self.scratch);
        self.encoder
            .write_all(&self.scratch)
            .map_err(CaptureError::Write)?;
        self.uncompressed += self.scratch.len() as u64;
        self.records += 1;
        self.tally.see(record);
        Ok(())
    }

    /// Makes everything written so far decodable from the file.
    pub fn flush(&mut self) -> Result<(), CaptureError> {
        self.encoder.flush().map_err(CaptureError::Write)?;
        self.flushed = self.uncompressed;
        Ok(())
    }

    /// An upper bound of the file's size once everything written so far is flushed: what reached
    /// the file plus what the compressor may still hold (it never grows data by much).
    pub fn size_bound(&self) -> u64 {
        self.compressed.load(Ordering::Relaxed) + (self.uncompressed - self.flushed)
    }

    /// Ends the zstd frame, appends the file's summary (a skippable frame) and returns the
    /// underlying writer.
    pub fn finish(self) -> Result<W, CaptureError> {
        let mut counting = self.encoder.finish().map_err(CaptureError::Write)?;
        counting
            .write_all(&self.tally.frame())
            .map_err(CaptureError::Write)?;
        counting.flush().map_err(CaptureError::Write)?;
        Ok(counting.inner)
    }

    pub fn uncompressed_bytes(&self) -> u64 {
        self.uncompressed
    }

    /// Compressed bytes handed to the file so far; shared so a status line can read it.
    /// Compressed bytes that reached the underlying writer so far.
    pub fn compressed_bytes(&self) -> u64 {
        self.compressed.load(Ordering::Relaxed)
    }

    pub fn compressed_counter(&self) -> Arc<AtomicU64> {
        self.compressed.clone()
    }

    pub fn records(&self) -> u64 {
        self.records
    }
}
