//! Several captures read as one, in order: the segments of a rotated recording (a folder, or a list
//! of files). Memory stays that of one [`CaptureReader`]. A connection carried into a segment
//! (`open` marked `continued`) is not opened twice, and segments but the last are expected to end
//! with an `end` record, which is not passed on: only the last segment's is.

use super::error::CaptureError;
use super::reader::CaptureReader;
use super::record::{Metadata, OpenEvent, Record, RecordKind};
use std::collections::{HashSet, VecDeque};
use std::fs::File;
use std::path::{Path, PathBuf};

/// The capture files named by `inputs`, in reading order: a file as given; a folder's `*.mtape`
/// files by name, then its `*.mtape.partial` (a segment still being written, or left by a
/// killed proxy). Refuses an empty folder or a missing path, naming it.
pub fn resolve(inputs: &[PathBuf]) -> Result<Vec<PathBuf>, CaptureError> {
    let mut files = Vec::new();
    for input in inputs {
        let meta = std::fs::metadata(input).map_err(|source| CaptureError::Io {
            action: "open",
            path: input.clone(),
            source,
        })?;
        if !meta.is_dir() {
            files.push(input.clone());
            continue;
        }
        let listing = std::fs::read_dir(input).map_err(|source| CaptureError::Io {
            action: "list",
            path: input.clone(),
            source,
        })?;
        let mut whole = Vec::new();
        let mut partial = Vec::new();
        for entry in listing.flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.ends_with(".mtape") {
                whole.push(path);
            } else if name.ends_with(".mtape.partial") {
                partial.push(path);
            }
        }
        if whole.is_empty() && partial.is_empty() {
            return Err(CaptureError::NotACapture {
                detail: format!("{} holds no .mtape file", input.display()),
            });
        }
        whole.sort();
        partial.sort();
        files.extend(whole);
        files.extend(partial);
    }
    Ok(files)
}

/// Reads a list of captures as one. A segment that does not open or read to its end is reported
/// (an `Err` naming it, when the set has several files) and reading goes on with the next one.
pub struct CaptureSet {
    paths: Vec<PathBuf>,
    /// The file `reader` reads.
    index: usize,
    reader: CaptureReader<File>,
    /// Errors of segments that did not open, passed on before the next record.
    errors: VecDeque<CaptureError>,
    open: HashSet<u64>,
    /// Offsets of the segments already read, so positions stay increasing across the set.
    offset_base: u64,
    compressed_base: u64,
    records: u64,
    pending_end: Option<Record>,
    /// A record read after an `end` in the same segment, passed on at the next call.
    queued: Option<Record>,
    skip_metadata: Option<u64>,
    done: bool,
}

impl CaptureSet {
    /// Opens the first capture of `inputs` that opens (see [`resolve`]); the others open as
    /// reading goes. Fails when none opens.
    pub fn open(inputs: &[PathBuf]) -> Result<CaptureSet, CaptureError> {
        let paths = resolve(inputs)?;
        if paths.is_empty() {
            return Err(CaptureError::NotACapture {
                detail: "no capture given".into(),
            });
        }
        let mut errors = VecDeque::new();
        for index in 0..paths.len() {
            match CaptureReader::open(&paths[index]) {
                Ok(reader) => {
                    return Ok(CaptureSet {
                        paths,
                        index,
                        reader,
                        errors,
                        open: HashSet::new(),
                        offset_base: 0,
                        compressed_base: 0,
                        records: 0,
                        pending_end: None,
                        queued: None,
                        skip_metadata: None,
                        done: false,
                    })
                }
                Err(e) => errors.push_back(named(&paths, index, e)),
            }
        }
        Err(none_opens(errors))
    }

    /// One capture file, as a set of one.
    pub fn open_file(path: &Path) -> Result<CaptureSet, CaptureError> {
        CaptureSet::open(&[path.to_owned()])
    }

    /// The first readable segment's metadata.
    pub fn metadata(&self) -> &Metadata {
        self.reader.metadata()
    }

    pub fn paths(&self) -> &[PathBuf] {
        &self.paths
    }

    /// The file being read now (the one an error was found in).
    pub fn current_path(&self) -> &Path {
        &self.paths[self.index]
    }

    /// Uncompressed bytes consumed so far, over all segments.
    pub fn offset(&self) -> u64 {
        self.offset_base + self.reader.offset()
    }

    /// Compressed bytes taken from the files so far.
    pub fn compressed_offset(&self) -> u64 {
        self.compressed_base + self.reader.compressed_offset()
    }

    /// True once the last segment's `end` record was read.
    pub fn saw_end(&self) -> bool {
        self.index + 1 == self.paths.len() && self.reader.saw_end()
    }

    pub fn records_read(&self) -> u64 {
        self.records
    }

    /// The next record, `None` once every segment was read, or the error that stopped reading
    /// one segment (reading goes on with the next segment at the next call).
    pub fn next_record(&mut self) -> Option<Result<Record, CaptureError>> {
        if let Some(e) = self.errors.pop_front() {
            return Some(Err(e));
        }
        if let Some(record) = self.queued.take() {
            self.records += 1;
            return Some(Ok(record));
        }
        if self.done {
            return None;
        }
        loop {
            match self.reader.next_record() {
                Some(Ok(record)) => {
                    if let Some(record) = self.pass(record) {
                        self.records += 1;
                        return Some(Ok(record));
                    }
                }
                Some(Err(e)) => {
                    let e = named(&self.paths, self.index, e);
                    self.next_segment();
                    return Some(Err(e));
                }
                None if self.index + 1 < self.paths.len() => {
                    self.next_segment();
                    if let Some(e) = self.errors.pop_front() {
                        return Some(Err(e));
                    }
                }
                None => {
                    self.done = true;
                    let end = self.pending_end.take()?;
                    self.records += 1;
                    return Some(Ok(end));
                }
            }
        }
    }

    /// What of a segment's record the set passes on.
    fn pass(&mut self, record: Record) -> Option<Record> {
        match record.kind {
            RecordKind::Open => {
                let continued = record
                    .event::<OpenEvent>()
                    .map(|e| e.continued)
                    .unwrap_or(false);
                let new = self.open.insert(record.conn_id);
                // A carried connection's client metadata follows its open: skip that too.
                if continued && !new {
                    self.skip_metadata = Some(record.conn_id);
                    return None;
                }
                Some(record)
            }
            RecordKind::ClientMetadata if self.skip_metadata == Some(record.conn_id) => {
                self.skip_metadata = None;
                None
            }
            RecordKind::Close => {
                self.open.remove(&record.conn_id);
                Some(record)
            }
            // Only the last segment's end stands for the whole set.
            RecordKind::End => {
                self.pending_end = Some(record);
                None
            }
            _ => {
                self.skip_metadata = None;
                match self.pending_end.take() {
                    // An end in the middle of a segment: passed on where it stood.
                    Some(end) => {
                        self.queued = Some(record);
                        Some(end)
                    }
                    None => Some(record),
                }
            }
        }
    }

    /// Moves to the next segment that opens; those that do not are queued as errors. Past the
    /// last one, reading is done.
    fn next_segment(&mut self) {
        self.pending_end = None;
        let mut index = self.index + 1;
        while index < self.paths.len() {
            match CaptureReader::open(&self.paths[index]) {
                Ok(reader) => {
                    self.offset_base += self.reader.offset();
                    self.compressed_base += self.reader.compressed_offset();
                    self.index = index;
                    self.reader = reader;
                    return;
                }
                Err(e) => self.errors.push_back(named(&self.paths, index, e)),
            }
            index += 1;
        }
        self.done = true;
    }
}

/// An error of one file of a set, named when the set has several files (a single file's errors
/// read as they did: the user named that file).
fn named(paths: &[PathBuf], index: usize, e: CaptureError) -> CaptureError {
    if paths.len() < 2 {
        return e;
    }
    CaptureError::InSegment {
        path: paths[index].clone(),
        source: Box::new(e),
    }
}

/// The error of a set none of whose files opens: a single file's own, else each file's.
fn none_opens(mut errors: VecDeque<CaptureError>) -> CaptureError {
    if errors.len() == 1 {
        return errors.pop_front().expect("one error");
    }
    let each: Vec<String> = errors.iter().map(|e| e.to_string()).collect();
    CaptureError::NotACapture {
        detail: format!(
            "none of the {} files opens: {}",
            each.len(),
            each.join("; ")
        ),
    }
}

impl Iterator for CaptureSet {
    type Item = Result<Record, CaptureError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_record()
    }
}
