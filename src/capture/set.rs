//! Several captures read as one, in order: the segments of a rotated recording (a folder, or a list
//! of files). Memory stays that of one [`CaptureReader`]. A connection carried into a segment
//! (`open` marked `continued`) is not opened twice, and segments but the last are expected to end
//! with an `end` record, which is not passed on: only the last segment's is.

use super::error::CaptureError;
use super::reader::CaptureReader;
use super::record::{Metadata, OpenEvent, Record, RecordKind};
use std::collections::{HashMap, VecDeque};
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
    /// Open connections, each with a hash of the client metadata it recorded (none yet: 0).
    open: HashMap<u64, u64>,
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
                        open: HashMap::new(),
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
                let new = !self.open.contains_key(&record.conn_id);
                self.open.entry(record.conn_id).or_insert(0);
                // A carried connection's client metadata follows its open: skip that too.
                if continued && !new {
                    self.skip_metadata = Some(record.conn_id);
                    return None;
                }
                Some(record)
            }
            RecordKind::ClientMetadata => {
                // Skipped only when it repeats what the connection already recorded: a connection
                // carried into a segment before its metadata came records its real one there.
                let seen = fingerprint(&record.payload);
                let carried = self.skip_metadata.take() == Some(record.conn_id)
                    && self.open.get(&record.conn_id) == Some(&seen);
                if let Some(h) = self.open.get_mut(&record.conn_id) {
                    *h = seen;
                }
                if carried {
                    return None;
                }
                self.passed(record)
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
                self.passed(record)
            }
        }
    }

    /// Moves to the next segment that opens; those that do not are queued as errors. Past the
    /// last one, reading is done.
    /// A record passed on; an end met in the middle of a segment goes out first, where it stood.
    fn passed(&mut self, record: Record) -> Option<Record> {
        match self.pending_end.take() {
            Some(end) => {
                self.queued = Some(record);
                Some(end)
            }
            None => Some(record),
        }
    }

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

/// A hash of a client metadata payload, never 0 (0 stands for "none recorded yet").
fn fingerprint(payload: &[u8]) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    payload.hash(&mut h);
    h.finish() | 1
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::{CaptureWriter, EndEvent};
    use std::time::Duration;

    /// A capture of `n` requests on connection `conn`, closed with an end record.
    fn capture(path: &Path, conn: u64, n: u64) {
        let mut w = CaptureWriter::create(path, &Metadata::default(), 1).unwrap();
        for i in 0..n {
            let payload = format!("request {i} of {conn}").into_bytes();
            w.write(&Record::new(RecordKind::Request, conn, i, payload))
                .unwrap();
        }
        w.write(&Record::json(RecordKind::End, 0, n, &EndEvent::default()))
            .unwrap();
        w.finish().unwrap();
    }

    fn mkfifo(path: &Path) {
        let ok = std::process::Command::new("mkfifo")
            .arg(path)
            .status()
            .unwrap();
        assert!(ok.success());
    }

    /// Runs `f` on a thread and waits for it a bounded time: without the file type check, opening
    /// a FIFO blocks for ever.
    fn bounded<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || tx.send(f()));
        rx.recv_timeout(Duration::from_secs(30))
            .expect("reading hung (a FIFO opened?)")
    }

    #[test]
    fn a_fifo_or_a_directory_named_mtape_is_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe.mtape");
        mkfifo(&fifo);
        let f = fifo.clone();
        let err = bounded(move || CaptureReader::open(&f).err().unwrap().to_string());
        assert_eq!(
            err,
            format!(
                "capture {} is a FIFO (named pipe), not a capture file",
                fifo.display()
            )
        );
        let folder = dir.path().join("x.mtape");
        std::fs::create_dir(&folder).unwrap();
        let err = CaptureReader::open(&folder).err().unwrap().to_string();
        assert!(err.contains("x.mtape is a directory"), "{err}");
        // Given alone, the FIFO is the set's error; a folder holding only these, each named.
        let f = fifo.clone();
        let err = bounded(move || CaptureSet::open(&[f]).err().unwrap().to_string());
        assert!(err.contains("FIFO"), "{err}");
        let d = dir.path().to_owned();
        let err = bounded(move || CaptureSet::open(&[d]).err().unwrap().to_string());
        assert!(err.contains("pipe.mtape is a FIFO"), "{err}");
        assert!(err.contains("x.mtape is a directory"), "{err}");
    }

    #[test]
    fn each_damaged_segment_is_named_and_the_ones_after_it_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = |n: u32| dir.path().join(format!("rec-{n:06}.mtape"));
        for n in 1..=4 {
            capture(&path(n), u64::from(n), 50);
        }
        // Segment 2 cut in the middle, segment 3 a FIFO in its place, then a directory.
        let two = std::fs::read(path(2)).unwrap();
        std::fs::write(path(2), &two[..two.len() / 2]).unwrap();
        std::fs::remove_file(path(3)).unwrap();
        mkfifo(&path(3));
        std::fs::create_dir(path(5)).unwrap();
        let d = dir.path().to_owned();
        let (records, errors, saw_end) = bounded(move || {
            let mut set = CaptureSet::open(&[d]).unwrap();
            let (mut records, mut errors) = (Vec::new(), Vec::new());
            for r in set.by_ref() {
                match r {
                    Ok(r) => records.push(r),
                    Err(e) => errors.push(e.to_string()),
                }
            }
            (records, errors, set.saw_end())
        });
        assert_eq!(errors.len(), 3, "{errors:?}");
        let named = |n: u32, what: &str| {
            let name = path(n).display().to_string();
            errors
                .iter()
                .any(|e| e.starts_with(&format!("segment {name}: ")) && e.contains(what))
        };
        assert!(named(2, "truncated at offset"), "{errors:?}");
        assert!(named(3, "is a FIFO"), "{errors:?}");
        assert!(named(5, "is a directory"), "{errors:?}");
        let per_conn = |c: u64| {
            records
                .iter()
                .filter(|r| r.kind == RecordKind::Request && r.conn_id == c)
                .count()
        };
        assert_eq!((per_conn(1), per_conn(4)), (50, 50), "whole segments read");
        assert!(per_conn(2) < 50, "segment 2 read up to the cut");
        assert!(!saw_end, "the last file of the set is not a capture");
    }
}
