//! Reads a capture record by record. Memory is bounded by the largest record (64 MiB at most),
//! whatever the capture's size. After the first error the reader stops; everything before it has
//! been returned.

use super::error::CaptureError;
use super::record::{
    Metadata, Record, RecordKind, FORMAT_VERSION, MAGIC, MAX_METADATA_LEN, MAX_RECORD_LEN,
    RECORD_FIXED_LEN,
};
use std::fs::File;
use std::io::{self, BufReader, Read};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Counts the compressed bytes the decoder has taken from the file.
/// Also keeps the file's first bytes, to say what a file that is not a capture looks like.
struct Counting<R> {
    inner: R,
    read: Arc<AtomicU64>,
    first: Vec<u8>,
}

/// The four bytes every zstd frame starts with.
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];
/// Enough to tell a mongoreplay playback file (its first key ends at byte 24); 8 are shown.
const FIRST_KEPT: usize = 24;

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        if self.first.len() < FIRST_KEPT {
            let take = n.min(FIRST_KEPT - self.first.len());
            self.first.extend_from_slice(&buf[..take]);
        }
        self.read.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

/// Why the 14-byte header could not be read, from the file's first bytes.
fn header_failure(first: &[u8], short: Short) -> String {
    let shown = &first[..first.len().min(8)];
    let hex = shown
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(" ");
    if first.is_empty() {
        "the file is empty".into()
    } else if let Some(kind) = import_format(first) {
        format!("this is {kind}: `mongotape import` it into a capture first")
    } else if first.len() < ZSTD_MAGIC.len() || first[..4] != ZSTD_MAGIC {
        let text = if shown.iter().all(|b| b.is_ascii_graphic() || *b == b' ') {
            format!(" {:?}", String::from_utf8_lossy(shown))
        } else {
            String::new()
        };
        format!("not zstd-compressed (first bytes {hex}{text})")
    } else {
        match short {
            Short::Io(e) => format!("a zstd stream that does not decompress: {e}"),
            Short::Eof { got } => {
                format!(
                    "zstd data that ends after {got} bytes, shorter than the 14-byte file header"
                )
            }
        }
    }
}

/// What `mongotape import` reads, by its first bytes: pcap (either byte order, micro- or
/// nanosecond), pcapng, a mongoreplay playback file (a BSON document naming
/// `playbackfileversion` first).
fn import_format(first: &[u8]) -> Option<&'static str> {
    match first.get(..4)? {
        [0x0a, 0x0d, 0x0d, 0x0a] => Some("a packet capture (pcapng)"),
        [0xd4, 0xc3, 0xb2, 0xa1] | [0xa1, 0xb2, 0xc3, 0xd4] => Some("a packet capture (pcap)"),
        [0x4d, 0x3c, 0xb2, 0xa1] | [0xa1, 0xb2, 0x3c, 0x4d] => Some("a packet capture (pcap)"),
        _ if first
            .get(5..)
            .is_some_and(|b| b.starts_with(b"playbackfileversion")) =>
        {
            Some("a mongoreplay playback file")
        }
        _ => None,
    }
}

/// The decompressed stream, read through a buffer of its own: a record is two small reads (its
/// length, its body), and each read straight from the decoder was a call into zstd's streaming
/// state machine and a copy out of its window. Through the buffer, zstd decompresses
/// [`DECODED_BUF`] bytes per call and a record's reads are copies.
type Decoder<R> = BufReader<zstd::stream::read::Decoder<'static, BufReader<Counting<R>>>>;

/// Decompressed bytes read ahead (half of zstd's largest block).
const DECODED_BUF: usize = 64 << 10;

pub struct CaptureReader<R: Read> {
    decoder: Decoder<R>,
    metadata: Metadata,
    offset: u64,
    compressed: Arc<AtomicU64>,
    done: bool,
    saw_end: bool,
    records: u64,
    /// A record's bytes as read, reused from record to record (the record keeps a copy of its
    /// payload); given back to the allocator past [`SCRATCH_KEPT`].
    scratch: Vec<u8>,
}

/// The most a reader keeps of its scratch buffer between records.
const SCRATCH_KEPT: usize = 1 << 20;

impl CaptureReader<File> {
    /// Opens a capture file. Only a regular file (or a link to one) is opened: a FIFO would block
    /// in open(2) until something writes to it, a directory reads as nothing.
    pub fn open(path: &Path) -> Result<Self, CaptureError> {
        let io = |source| CaptureError::Io {
            action: "open",
            path: path.to_owned(),
            source,
        };
        regular_file(path, &std::fs::metadata(path).map_err(io)?)?;
        let file = File::open(path).map_err(io)?;
        // Checked again on what was opened, in case the name changed in between.
        regular_file(path, &file.metadata().map_err(io)?)?;
        CaptureReader::new(file)
    }
}

/// Refuses what is not a regular file, saying what it is.
pub(super) fn regular_file(path: &Path, meta: &std::fs::Metadata) -> Result<(), CaptureError> {
    match special_kind(meta) {
        None => Ok(()),
        Some(kind) => Err(CaptureError::NotAFile {
            path: path.to_owned(),
            kind,
        }),
    }
}

/// What a file is when it is not a regular file (`None` for a regular file): every reader of
/// files opens only regular ones, since a FIFO blocks in open(2) until something writes to it.
pub fn special_kind(meta: &std::fs::Metadata) -> Option<&'static str> {
    use std::os::unix::fs::FileTypeExt;
    let t = meta.file_type();
    Some(if t.is_file() {
        return None;
    } else if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO (named pipe)"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_block_device() || t.is_char_device() {
        "a device"
    } else {
        "a special file"
    })
}

/// What stopped a read: the stream ended inside `what`, or the decompressor failed.
enum Short {
    Eof { got: usize },
    Io(io::Error),
}

impl<R: Read> CaptureReader<R> {
    pub fn new(inner: R) -> Result<Self, CaptureError> {
        let compressed = Arc::new(AtomicU64::new(0));
        let counting = Counting {
            inner,
            read: compressed.clone(),
            first: Vec::new(),
        };
        let decoder =
            zstd::stream::read::Decoder::new(counting).map_err(|e| CaptureError::NotACapture {
                detail: e.to_string(),
            })?;
        let decoder = BufReader::with_capacity(DECODED_BUF, decoder);
        let mut reader = CaptureReader {
            decoder,
            metadata: Metadata::default(),
            offset: 0,
            compressed,
            done: false,
            saw_end: false,
            records: 0,
            scratch: Vec::new(),
        };
        reader.read_header()?;
        Ok(reader)
    }

    fn read_header(&mut self) -> Result<(), CaptureError> {
        let mut head = [0u8; 14];
        if let Err(short) = self.fill(&mut head) {
            let first = &self.decoder.get_ref().get_ref().get_ref().first;
            return Err(CaptureError::NotACapture {
                detail: header_failure(first, short),
            });
        }
        if head[..8] != MAGIC {
            return Err(CaptureError::NotACapture {
                detail: "bad magic".into(),
            });
        }
        let version = u16::from_le_bytes([head[8], head[9]]);
        if version != FORMAT_VERSION {
            return Err(CaptureError::UnsupportedVersion {
                found: version,
                supported: FORMAT_VERSION,
            });
        }
        let len = u32::from_le_bytes([head[10], head[11], head[12], head[13]]) as usize;
        if len > MAX_METADATA_LEN {
            return Err(CaptureError::BadMetadata {
                detail: format!("{len} bytes is over the {MAX_METADATA_LEN}-byte limit"),
            });
        }
        let mut json = vec![0u8; len];
        self.fill(&mut json)
            .map_err(|short| self.short_error("metadata", short))?;
        self.metadata = serde_json::from_slice(&json).map_err(|e| CaptureError::BadMetadata {
            detail: e.to_string(),
        })?;
        self.offset = 14 + len as u64;
        Ok(())
    }

    pub fn metadata(&self) -> &Metadata {
        &self.metadata
    }

    /// Uncompressed bytes consumed so far.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Compressed bytes the decoder has taken from the file so far (it reads ahead a little).
    pub fn compressed_offset(&self) -> u64 {
        self.compressed.load(Ordering::Relaxed)
    }

    /// True once an `end` record was read: the recorder shut down cleanly.
    pub fn saw_end(&self) -> bool {
        self.saw_end
    }

    pub fn records_read(&self) -> u64 {
        self.records
    }

    fn fill(&mut self, buf: &mut [u8]) -> Result<(), Short> {
        let mut got = 0;
        while got < buf.len() {
            match self.decoder.read(&mut buf[got..]) {
                Ok(0) => return Err(Short::Eof { got }),
                Ok(n) => got += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(Short::Io(e)),
            }
        }
        Ok(())
    }

    fn short_error(&self, what: &str, short: Short) -> CaptureError {
        let compressed_offset = self.compressed_offset();
        match short {
            Short::Eof { got } => CaptureError::Truncated {
                offset: self.offset,
                compressed_offset,
                detail: format!("the file ends {got} bytes into a {what}"),
            },
            // zstd reports a stream cut mid-block as an error rather than as end of file.
            Short::Io(e) if e.kind() == io::ErrorKind::UnexpectedEof || is_incomplete(&e) => {
                CaptureError::Truncated {
                    offset: self.offset,
                    compressed_offset,
                    detail: format!("the compressed stream ends inside a {what}: {e}"),
                }
            }
            Short::Io(e) => CaptureError::Corrupt {
                offset: self.offset,
                compressed_offset,
                detail: format!("zstd cannot decode the {what}: {e}"),
            },
        }
    }

    /// The next record, `None` at a clean end, or the error that stopped reading.
    pub fn next_record(&mut self) -> Option<Result<Record, CaptureError>> {
        if self.done {
            return None;
        }
        let result = self.read_record();
        match &result {
            Ok(Some(r)) => {
                self.records += 1;
                if r.kind == RecordKind::End {
                    self.saw_end = true;
                }
            }
            _ => self.done = true,
        }
        result.transpose()
    }

    fn read_record(&mut self) -> Result<Option<Record>, CaptureError> {
        let mut len = [0u8; 4];
        match self.fill(&mut len) {
            Ok(()) => {}
            Err(Short::Eof { got: 0 }) => return Ok(None),
            Err(short) => return Err(self.short_error("record length", short)),
        }
        let len = u32::from_le_bytes(len) as usize;
        if !(RECORD_FIXED_LEN..=MAX_RECORD_LEN).contains(&len) {
            return Err(CaptureError::Corrupt {
                offset: self.offset,
                compressed_offset: self.compressed_offset(),
                detail: format!(
                    "record length {len} is outside {RECORD_FIXED_LEN}..={MAX_RECORD_LEN}"
                ),
            });
        }
        let mut body = std::mem::take(&mut self.scratch);
        body.clear();
        body.resize(len + 4, 0);
        let filled = self.fill(&mut body);
        let record = filled
            .map_err(|short| self.short_error("record", short))
            .and_then(|()| {
                Record::decode(&body, self.offset)
                    .map_err(|e| CaptureError::from_record(e, self.compressed_offset()))
            });
        if record.is_ok() {
            self.offset += 4 + body.len() as u64;
        }
        if body.capacity() <= SCRATCH_KEPT {
            self.scratch = body;
        }
        Ok(Some(record?))
    }
}

fn is_incomplete(e: &io::Error) -> bool {
    let text = e.to_string();
    text.contains("incomplete") || text.contains("Incomplete") || text.contains("truncated")
}

impl<R: Read> Iterator for CaptureReader<R> {
    type Item = Result<Record, CaptureError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_record()
    }
}
