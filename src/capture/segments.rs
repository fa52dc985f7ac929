//! A recording as files: one capture, or numbered segments that rotate by size or time, and the
//! limits that end a recording. Each segment is a whole capture on its own (metadata first, an
//! `end` record last, written as `NAME.partial` and renamed when closed); a connection still
//! open when a segment closes is opened again at the start of the next one, marked `continued`,
//! with its client metadata, so a segment read alone is complete and a set read in order joins up.

use super::error::CaptureError;
use super::output;
use super::record::{EndEvent, Metadata, OpenEvent, Record, RecordKind};
use super::writer::CaptureWriter;
use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Where a recording goes, when it rotates, and when it ends.
#[derive(Debug, Clone, Default)]
pub struct SegmentPlan {
    /// `--out`: the capture, or with rotation the name segments are numbered after
    /// (`trace.mtape` -> `trace-000001.mtape`, `trace-000002.mtape`, ...).
    pub path: PathBuf,
    /// Replace existing files instead of refusing to start.
    pub force: bool,
    /// Start a new segment once the current one holds this many bytes on disk.
    pub rotate_bytes: Option<u64>,
    /// Start a new segment this often.
    pub rotate_every: Option<Duration>,
    /// End the recording once the capture (all segments) holds this many bytes on disk.
    pub max_bytes: Option<u64>,
    /// End the recording after this long.
    pub duration: Option<Duration>,
}

impl SegmentPlan {
    pub fn rotates(&self) -> bool {
        self.rotate_bytes.is_some() || self.rotate_every.is_some()
    }

    /// The file of segment `n` (from 1), or the capture itself without rotation.
    pub fn segment_path(&self, n: u32) -> PathBuf {
        if !self.rotates() {
            return self.path.clone();
        }
        let stem = self
            .path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "capture".into());
        let ext = self
            .path
            .extension()
            .map(|e| e.to_string_lossy().into_owned())
            .unwrap_or_else(|| "mtape".into());
        self.path.with_file_name(format!("{stem}-{n:06}.{ext}"))
    }

    /// Refuses to start over files a previous recording left, unless `force`, and over a
    /// symbolic link in any case (a dangling one too: it is not an absent file).
    /// The folder must exist, so a wrong `--out` is said before any upstream is contacted.
    pub fn check_free(&self) -> Result<(), CaptureError> {
        let first = self.segment_path(1);
        let folder = first
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let is_folder = std::fs::metadata(folder).and_then(|m| {
            if m.is_dir() {
                Ok(())
            } else {
                Err(std::io::Error::from(std::io::ErrorKind::NotADirectory))
            }
        });
        if let Err(source) = is_folder {
            return Err(CaptureError::Io {
                action: "create",
                path: first,
                source,
            });
        }
        for path in [first.clone(), partial(&first)] {
            output::refuse_symlink(&path).map_err(CaptureError::Output)?;
            if !self.force && path.symlink_metadata().is_ok() {
                return Err(CaptureError::Exists { path });
            }
        }
        Ok(())
    }
}

/// What a write did to the recording.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Written {
    /// Recorded; the recording goes on.
    Recorded,
    /// Recorded, and a limit (`--duration`, `--max-size`) ended the recording: it is closed.
    Ended(EndReason),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EndReason {
    Duration,
    MaxSize,
}

impl EndReason {
    pub fn as_str(self) -> &'static str {
        match self {
            EndReason::Duration => "--duration reached",
            EndReason::MaxSize => "--max-size reached",
        }
    }
}

/// Writes a recording by its plan.
pub struct SegmentWriter {
    plan: SegmentPlan,
    meta: Metadata,
    level: i32,
    writer: Option<CaptureWriter<File>>,
    segment: u32,
    segment_started: Instant,
    started: Instant,
    /// Bytes on disk of the segments already closed.
    closed_bytes: u64,
    /// Bytes on disk, all segments: shared with the status line.
    total_bytes: Arc<AtomicU64>,
    /// Open connections: their `open` and `client_metadata` payloads, to carry into a new segment.
    open: BTreeMap<u64, (Record, Option<Record>)>,
    /// What the current segment holds, for its `end` record.
    counts: EndEvent,
    last_ts: u64,
}

impl SegmentWriter {
    pub fn create(plan: SegmentPlan, meta: Metadata, level: i32) -> Result<Self, CaptureError> {
        plan.check_free()?;
        let now = Instant::now();
        let mut w = SegmentWriter {
            plan,
            meta,
            level,
            writer: None,
            segment: 0,
            segment_started: now,
            started: now,
            closed_bytes: 0,
            total_bytes: Arc::new(AtomicU64::new(0)),
            open: BTreeMap::new(),
            counts: EndEvent::default(),
            last_ts: 0,
        };
        w.open_segment()?;
        Ok(w)
    }

    /// Bytes on disk over all segments, updated as the writer goes.
    pub fn bytes_counter(&self) -> Arc<AtomicU64> {
        self.total_bytes.clone()
    }

    /// Segments started so far.
    pub fn segments(&self) -> u32 {
        self.segment
    }

    fn current(&mut self) -> &mut CaptureWriter<File> {
        self.writer
            .as_mut()
            .expect("a segment is open while recording")
    }

    /// The current segment's size on disk once flushed, at most (limits must never be passed
    /// by what the compressor still holds).
    fn current_bytes(&self) -> u64 {
        self.writer.as_ref().map(|w| w.size_bound()).unwrap_or(0)
    }

    fn open_segment(&mut self) -> Result<(), CaptureError> {
        self.segment += 1;
        let mut meta = self.meta.clone();
        if self.plan.rotates() {
            meta.segment = Some(self.segment);
        }
        let path = self.writing_path();
        // O_EXCL without --force, O_NOFOLLOW with it: never through a link planted meanwhile.
        let mut writer = if self.plan.force {
            CaptureWriter::create(&path, &meta, self.level)?
        } else {
            CaptureWriter::create_new(&path, &meta, self.level)?
        };
        for (open, client) in self.open.values() {
            let mut event: OpenEvent = open.event().unwrap_or_else(|_| OpenEvent {
                client: String::new(),
                upstream: String::new(),
                continued: false,
            });
            event.continued = true;
            let again = Record::json(RecordKind::Open, open.conn_id, self.last_ts, &event);
            writer.write(&again)?;
            if let Some(client) = client {
                writer.write(client)?;
            }
        }
        self.writer = Some(writer);
        self.counts = EndEvent {
            connections: self.open.len() as u64,
            ..EndEvent::default()
        };
        self.segment_started = Instant::now();
        Ok(())
    }

    /// Segments are written under `.partial` and renamed when closed; a single capture is
    /// written in place, as it always was, so a killed proxy leaves it where it was named.
    fn writing_path(&self) -> PathBuf {
        let path = self.plan.segment_path(self.segment);
        if self.plan.rotates() {
            partial(&path)
        } else {
            path
        }
    }

    pub fn write(&mut self, record: &Record) -> Result<Written, CaptureError> {
        self.last_ts = self.last_ts.max(record.ts_ns);
        match record.kind {
            RecordKind::Open => {
                self.counts.connections += 1;
                self.open.insert(record.conn_id, (record.clone(), None));
            }
            RecordKind::Request | RecordKind::Reply => {
                self.counts.messages += 1;
                self.counts.wire_bytes += record.payload.len() as u64;
            }
            RecordKind::Gap => {
                if let Ok(gap) = record.event::<super::record::GapEvent>() {
                    self.counts.dropped_messages += gap.dropped_messages;
                }
            }
            RecordKind::ClientMetadata => {
                if let Some(entry) = self.open.get_mut(&record.conn_id) {
                    entry.1 = Some(record.clone());
                }
            }
            RecordKind::Close => {
                self.open.remove(&record.conn_id);
            }
            _ => {}
        }
        self.current().write(record)?;
        self.after_write()
    }

    /// Checks the limits: a whole record is written first, so every record is in one segment.
    fn after_write(&mut self) -> Result<Written, CaptureError> {
        // What reached the disk, for the counters (it only grows); the bound, which also counts
        // what the compressor still holds, for --max-size.
        let on_disk = self.writer.as_ref().map_or(0, |w| w.compressed_bytes());
        self.total_bytes
            .store(self.closed_bytes + on_disk, Ordering::Relaxed);
        let segment_bytes = self.current_bytes();
        let total = self.closed_bytes + segment_bytes;
        if self.plan.max_bytes.is_some_and(|max| total >= max) {
            return Ok(Written::Ended(EndReason::MaxSize));
        }
        if self
            .plan
            .duration
            .is_some_and(|d| self.started.elapsed() >= d)
        {
            return Ok(Written::Ended(EndReason::Duration));
        }
        // Rotation counts what is on disk, as `--rotate-size` says: the bound would count the
        // compressor's uncompressed input and cut segments a tenth of the size asked.
        let by_size = self.plan.rotate_bytes.is_some_and(|b| on_disk >= b);
        let by_time = self
            .plan
            .rotate_every
            .is_some_and(|every| self.segment_started.elapsed() >= every);
        if by_size || by_time {
            self.rotate()?;
        }
        Ok(Written::Recorded)
    }

    /// Ends the recording when its duration has passed although nothing was written.
    pub fn tick(&mut self) -> Result<Written, CaptureError> {
        if self.writer.is_none() {
            return Ok(Written::Recorded);
        }
        self.after_write()
    }

    pub fn flush(&mut self) -> Result<(), CaptureError> {
        match self.writer.as_mut() {
            Some(w) => w.flush(),
            None => Ok(()),
        }
    }

    fn rotate(&mut self) -> Result<(), CaptureError> {
        let counts = std::mem::take(&mut self.counts);
        self.close_segment(counts)?;
        self.open_segment()
    }

    fn close_segment(&mut self, end: EndEvent) -> Result<(), CaptureError> {
        let Some(mut writer) = self.writer.take() else {
            return Ok(());
        };
        writer.write(&Record::json(RecordKind::End, 0, self.last_ts, &end))?;
        let bytes = writer.compressed_counter();
        writer.finish()?;
        self.closed_bytes += bytes.load(Ordering::Relaxed);
        self.total_bytes.store(self.closed_bytes, Ordering::Relaxed);
        if self.plan.rotates() {
            let done = self.plan.segment_path(self.segment);
            std::fs::rename(partial(&done), &done).map_err(|source| CaptureError::Io {
                action: "rename",
                path: done,
                source,
            })?;
        }
        Ok(())
    }

    /// Closes the recording with an `end` record: the proxy's totals when given (the last
    /// segment of a recording that ran to its end), else what this segment holds.
    pub fn finish(&mut self, totals: Option<EndEvent>) -> Result<(), CaptureError> {
        let end = totals.unwrap_or_else(|| std::mem::take(&mut self.counts));
        self.close_segment(end)
    }

    /// Makes what was written readable after a failed write (the `end` record may not fit).
    pub fn abandon(&mut self) {
        if let Some(w) = self.writer.as_mut() {
            let _ = w.flush();
        }
    }
}

/// The name a segment has while it is written.
pub fn partial(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".partial");
    PathBuf::from(name)
}
