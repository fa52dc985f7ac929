//! The recorder: a thread of its own that takes records from the connection tasks and writes the
//! capture. Connection tasks never wait for it: when its queue is full they count the message as
//! dropped and move on, and the recorder writes a `gap` record saying how much was lost.

use super::stats::Stats;
use crate::capture::{
    CaptureError, CaptureWriter, EndEvent, GapEvent, Metadata, Record, RecordKind,
};
use crate::wire::{info, Message};
use std::collections::HashMap;
use std::fs::File;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TryRecvError, TrySendError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The writer makes the file readable up to here at least this often.
pub const FLUSH_INTERVAL: Duration = Duration::from_secs(1);
/// Records written between two looks at the clock and the drop counters.
const BATCH: usize = 1024;
/// How long the recorder sleeps when its queue is empty.
const IDLE_POLL: Duration = Duration::from_millis(2);
/// Requests per connection searched for handshake metadata.
const HANDSHAKE_SEARCH: u32 = 4;

/// The sending side, cloned into every connection task.
#[derive(Clone)]
pub struct RecorderHandle {
    tx: SyncSender<Record>,
    queued_bytes: Arc<AtomicUsize>,
    max_queued_bytes: usize,
    stats: Arc<Stats>,
}

impl RecorderHandle {
    /// Queues a record without waiting. Returns false (and counts the drop) if the queue is full.
    pub fn submit(&self, record: Record) -> bool {
        let size = record.payload.len();
        let queued = self.queued_bytes.fetch_add(size, Ordering::Relaxed);
        // Connection events are tiny and say what the messages mean: only messages count against
        // the byte bound.
        let is_message = matches!(record.kind, RecordKind::Request | RecordKind::Reply);
        if is_message && queued + size > self.max_queued_bytes {
            self.queued_bytes.fetch_sub(size, Ordering::Relaxed);
            self.count_drop(size);
            return false;
        }
        match self.tx.try_send(record) {
            Ok(()) => true,
            Err(TrySendError::Full(_)) | Err(TrySendError::Disconnected(_)) => {
                self.queued_bytes.fetch_sub(size, Ordering::Relaxed);
                self.count_drop(size);
                false
            }
        }
    }

    fn count_drop(&self, size: usize) {
        Stats::add(&self.stats.dropped_messages, 1);
        Stats::add(&self.stats.dropped_bytes, size as u64);
    }
}

pub struct Recorder {
    handle: Option<RecorderHandle>,
    thread: Option<JoinHandle<Result<(), CaptureError>>>,
}

pub struct RecorderOptions {
    pub queue_records: usize,
    pub max_queued_bytes: usize,
    pub zstd_level: i32,
}

impl Default for RecorderOptions {
    fn default() -> Self {
        RecorderOptions {
            queue_records: 256 * 1024,
            max_queued_bytes: 256 * 1024 * 1024,
            zstd_level: crate::capture::writer::DEFAULT_LEVEL,
        }
    }
}

impl Recorder {
    pub fn start(
        path: &Path,
        meta: &Metadata,
        opts: RecorderOptions,
        stats: Arc<Stats>,
    ) -> Result<Recorder, CaptureError> {
        let writer = CaptureWriter::create(path, meta, opts.zstd_level)?;
        let (tx, rx) = sync_channel(opts.queue_records);
        let queued_bytes = Arc::new(AtomicUsize::new(0));
        let handle = RecorderHandle {
            tx,
            queued_bytes: queued_bytes.clone(),
            max_queued_bytes: opts.max_queued_bytes,
            stats: stats.clone(),
        };
        let thread = std::thread::Builder::new()
            .name("mongotape-recorder".into())
            .spawn(move || write_loop(writer, rx, queued_bytes, stats))
            .map_err(CaptureError::Write)?;
        Ok(Recorder {
            handle: Some(handle),
            thread: Some(thread),
        })
    }

    pub fn handle(&self) -> RecorderHandle {
        self.handle.clone().expect("recorder is running")
    }

    /// Waits for every queued record to be written, then ends the capture with an `end` record.
    /// Every handle must have been dropped first, or this waits for them.
    pub fn finish(mut self) -> Result<(), CaptureError> {
        self.handle.take();
        match self.thread.take().map(JoinHandle::join) {
            Some(Ok(result)) => result,
            Some(Err(_)) => Err(CaptureError::Write(std::io::Error::other(
                "recorder thread panicked",
            ))),
            None => Ok(()),
        }
    }
}

fn write_loop(
    mut writer: CaptureWriter<File>,
    rx: Receiver<Record>,
    queued_bytes: Arc<AtomicUsize>,
    stats: Arc<Stats>,
) -> Result<(), CaptureError> {
    let file_bytes = writer.compressed_counter();
    let mut handshakes: HashMap<u64, u32> = HashMap::new();
    let mut reported_drops = (0u64, 0u64);
    let mut last_flush = Instant::now();
    let mut last_ts = 0u64;
    let mut dirty = false;
    let mut result = Ok(());
    'run: loop {
        // Poll rather than block: a sender never has to wake this thread, so submitting a record
        // costs the connection task no system call.
        for _ in 0..BATCH {
            match rx.try_recv() {
                Ok(record) => {
                    queued_bytes.fetch_sub(record.payload.len(), Ordering::Relaxed);
                    last_ts = last_ts.max(record.ts_ns);
                    if let Err(e) = write_one(&mut writer, &record, &mut handshakes, &stats) {
                        result = Err(e);
                        break 'run;
                    }
                    dirty = true;
                }
                Err(TryRecvError::Empty) => {
                    std::thread::sleep(IDLE_POLL);
                    break;
                }
                Err(TryRecvError::Disconnected) => break 'run,
            }
        }
        if let Err(e) = report_drops(&mut writer, &stats, &mut reported_drops, last_ts) {
            result = Err(e);
            break;
        }
        if last_flush.elapsed() >= FLUSH_INTERVAL {
            if dirty {
                if let Err(e) = writer.flush() {
                    result = Err(e);
                    break;
                }
                dirty = false;
            }
            last_flush = Instant::now();
        }
        stats
            .file_bytes
            .store(file_bytes.load(Ordering::Relaxed), Ordering::Relaxed);
    }
    if let Err(e) = &result {
        // Keep the file readable up to here; the proxy goes on forwarding without recording.
        tracing::error!("recorder stopped: {e}; traffic is still forwarded but no longer recorded");
        let _ = writer.flush();
        drop(rx);
        return result;
    }
    report_drops(&mut writer, &stats, &mut reported_drops, last_ts)?;
    let snap = stats.snapshot();
    let end = EndEvent {
        connections: snap.connections_total,
        messages: snap.messages,
        wire_bytes: snap.wire_bytes,
        dropped_messages: snap.dropped_messages,
    };
    writer.write(&Record::json(RecordKind::End, 0, last_ts, &end))?;
    writer.finish()?;
    stats
        .file_bytes
        .store(file_bytes.load(Ordering::Relaxed), Ordering::Relaxed);
    Ok(())
}

fn write_one(
    writer: &mut CaptureWriter<File>,
    record: &Record,
    handshakes: &mut HashMap<u64, u32>,
    stats: &Stats,
) -> Result<(), CaptureError> {
    writer.write(record)?;
    Stats::add(&stats.capture_bytes, record.encoded_len() as u64);
    match record.kind {
        RecordKind::Request | RecordKind::Reply => Stats::add(&stats.recorded_messages, 1),
        RecordKind::Close => {
            handshakes.remove(&record.conn_id);
        }
        _ => {}
    }
    if record.kind == RecordKind::Request {
        // Look for the driver's handshake among a connection's first requests only.
        let seen = handshakes.entry(record.conn_id).or_insert(0);
        if *seen < HANDSHAKE_SEARCH {
            *seen += 1;
            if let Some(meta) = Message::parse(&record.payload)
                .ok()
                .as_ref()
                .and_then(info::client_metadata)
            {
                *seen = HANDSHAKE_SEARCH;
                let meta = Record::new(
                    RecordKind::ClientMetadata,
                    record.conn_id,
                    record.ts_ns,
                    meta.into_bytes(),
                );
                writer.write(&meta)?;
            }
        }
    }
    Ok(())
}

fn report_drops(
    writer: &mut CaptureWriter<File>,
    stats: &Stats,
    reported: &mut (u64, u64),
    ts: u64,
) -> Result<(), CaptureError> {
    let snap = stats.snapshot();
    let now = (snap.dropped_messages, snap.dropped_bytes);
    if now.0 > reported.0 {
        let gap = GapEvent {
            dropped_messages: now.0 - reported.0,
            dropped_bytes: now.1 - reported.1,
            reason: "recorder queue full".into(),
        };
        tracing::warn!(
            "recorder could not keep up: {} messages ({} bytes) forwarded but not recorded",
            gap.dropped_messages,
            gap.dropped_bytes
        );
        writer.write(&Record::json(RecordKind::Gap, 0, ts, &gap))?;
        *reported = now;
    }
    Ok(())
}
