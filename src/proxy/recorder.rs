//! The recorder: a thread of its own that takes records from the connection tasks and writes the
//! capture. Connection tasks never wait for it: when its queue is full they count the message as
//! dropped and move on, and the recorder writes a `gap` record saying how much was lost.

use super::gear::{self, Gear, Wake};
use super::shares::Shares;
use super::stats::Stats;
use crate::capture::{
    CaptureError, EndEvent, GapEvent, Metadata, Record, RecordKind, SegmentPlan, SegmentWriter,
    Written,
};
use crate::redact::{Direction, InflateBudget, Redaction, Redactor, ValueKey};
use crate::wire::{info, Message, MsgHeader, OpCode};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TryRecvError, TrySendError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The writer makes the file readable up to here at least this often.
pub const FLUSH_INTERVAL: Duration = Duration::from_secs(1);
/// Records written between two looks at the clock and the drop counters.
const BATCH: usize = 1024;
/// Requests per connection searched for handshake metadata.
const HANDSHAKE_SEARCH: u32 = 4;

/// Per-connection state looked up for every record: foldhash, not SipHash (the ids are the
/// proxy's own, not a peer's).
type ConnMap<V> = HashMap<u64, V, foldhash::fast::RandomState>;

/// The sending side, cloned into every connection task.
#[derive(Clone)]
pub struct RecorderHandle {
    tx: SyncSender<Record>,
    queued_bytes: Arc<AtomicUsize>,
    shares: Arc<Shares>,
    max_queued_bytes: usize,
    stats: Arc<Stats>,
    /// Turns false when a limit ended the recording: forwarding goes on, nothing is queued.
    recording: Arc<AtomicBool>,
    wake: Arc<Wake>,
    gear: Arc<Gear>,
}

impl RecorderHandle {
    /// Queues a record without waiting. Returns false (and counts the drop) if the queue is full.
    pub fn submit(&self, record: Record) -> bool {
        if !self.recording.load(Ordering::Relaxed) {
            return false;
        }
        let size = record.payload.len();
        let queued = self.queued_bytes.fetch_add(size, Ordering::Relaxed);
        // Connection events are tiny and say what the messages mean: only messages count against
        // the byte bound.
        let is_message = matches!(record.kind, RecordKind::Request | RecordKind::Reply);
        let conn_id = record.conn_id;
        if is_message
            && (queued + size > self.max_queued_bytes
                || !self.shares.admits(conn_id, size, self.max_queued_bytes))
        {
            self.queued_bytes.fetch_sub(size, Ordering::Relaxed);
            self.count_drop(size);
            return false;
        }
        self.shares.add(conn_id, size);
        match self.tx.try_send(record) {
            Ok(()) => {
                self.wake.queued();
                self.gear.queued(queued + size);
                true
            }
            Err(TrySendError::Full(_)) | Err(TrySendError::Disconnected(_)) => {
                self.shares.sub(conn_id, size);
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
    gear: Arc<Gear>,
    /// Set by [`Recorder::abort_handle`]'s owner: stop writing what is queued (see [`write_loop`]).
    abort: Arc<AtomicBool>,
}

pub struct RecorderOptions {
    pub queue_records: usize,
    pub max_queued_bytes: usize,
    pub zstd_level: i32,
    pub redaction: Redaction,
    /// The `--redact values` key, shared with `record --snapshot`; `None`: a fresh one.
    pub key: Option<ValueKey>,
}

impl Default for RecorderOptions {
    fn default() -> Self {
        RecorderOptions {
            queue_records: 256 * 1024,
            max_queued_bytes: 256 * 1024 * 1024,
            zstd_level: crate::capture::writer::DEFAULT_LEVEL,
            redaction: Redaction::default(),
            key: None,
        }
    }
}

impl Recorder {
    /// Creates the capture (refusing to replace one unless the plan says `force`) and starts
    /// the recorder thread.
    pub fn start(
        plan: SegmentPlan,
        meta: &Metadata,
        opts: RecorderOptions,
        stats: Arc<Stats>,
    ) -> Result<Recorder, CaptureError> {
        let mut meta = meta.clone();
        meta.redaction = Some(opts.redaction.name().into());
        let writer = SegmentWriter::create(plan, meta, opts.zstd_level)?;
        let (tx, rx) = sync_channel(opts.queue_records);
        let wake = Arc::new(Wake {
            parked: AtomicBool::new(false),
            thread: std::sync::OnceLock::new(),
        });
        let queued_bytes = Arc::new(AtomicUsize::new(0));
        let shares = Arc::new(Shares::new());
        let recording = Arc::new(AtomicBool::new(true));
        let abort = Arc::new(AtomicBool::new(false));
        let gear = Arc::new(Gear::new(opts.max_queued_bytes, gear::may_come_back()));
        let handle = RecorderHandle {
            tx,
            queued_bytes: queued_bytes.clone(),
            shares: shares.clone(),
            max_queued_bytes: opts.max_queued_bytes,
            stats: stats.clone(),
            recording: recording.clone(),
            wake: wake.clone(),
            gear: gear.clone(),
        };
        let state = LoopState {
            writer,
            redactor: Redactor::with_key(opts.redaction, opts.key.unwrap_or_else(ValueKey::random)),
            handshakes: ConnMap::default(),
            redacting: ConnMap::default(),
            inflate: InflateBudget::global(),
            stats,
            recording,
            abort: abort.clone(),
            last_ts: 0,
        };
        let on_thread = gear.clone();
        let thread = std::thread::Builder::new()
            .name("mongotape-recorder".into())
            .spawn(move || {
                let _ = wake.thread.set(std::thread::current());
                on_thread.start_here();
                write_loop(state, rx, (queued_bytes, shares), (wake, on_thread))
            })
            .map_err(CaptureError::Write)?;
        Ok(Recorder {
            handle: Some(handle),
            thread: Some(thread),
            gear,
            abort,
        })
    }

    /// Message bytes queued for the recorder thread now (the metrics' queue depth).
    pub fn queued_bytes(&self) -> Option<Arc<AtomicUsize>> {
        self.handle.as_ref().map(|h| h.queued_bytes.clone())
    }

    pub fn handle(&self) -> RecorderHandle {
        self.handle.clone().expect("recorder is running")
    }

    /// Setting it makes the recorder stop writing the messages still queued: they are counted as
    /// dropped (a `gap` record says how many), and the capture ends as usual with its `end`
    /// record, so it stays whole. For a second signal while a large backlog is being written.
    pub fn abort_handle(&self) -> Arc<AtomicBool> {
        self.abort.clone()
    }

    /// Waits for every queued record to be written (unless aborted), then ends the capture with
    /// an `end` record. Every handle must have been dropped first, or this waits for them.
    pub fn finish(mut self) -> Result<(), CaptureError> {
        self.handle.take();
        let raised = self.gear.raised();
        if raised > 0 {
            // Each time, the capture was written in a burst that competed with forwarding.
            tracing::info!(
                "the recorder was brought back from the background {raised} time(s): its queue \
                 backed up past {} KiB, or it got no CPU for {} ms",
                self.gear.high_mark() / 1024,
                gear::STARVED.as_millis()
            );
        }
        // What is left is written at normal priority, however busy the host.
        self.gear.to_foreground();
        // A parked recorder notices the last sender gone at once rather than after its park.
        if let Some(thread) = &self.thread {
            thread.thread().unpark();
        }
        match self.thread.take().map(JoinHandle::join) {
            Some(Ok(result)) => result,
            Some(Err(_)) => Err(CaptureError::Write(std::io::Error::other(
                "recorder thread panicked",
            ))),
            None => Ok(()),
        }
    }
}

/// What the recorder thread owns.
struct LoopState {
    writer: SegmentWriter,
    redactor: Redactor,
    handshakes: ConnMap<u32>,
    /// Per open connection: what the redactor may still inflate, and whether a message of it was
    /// already left out (logged once per connection).
    redacting: ConnMap<(InflateBudget, bool)>,
    /// What the redactor may still inflate over every connection.
    inflate: InflateBudget,
    stats: Arc<Stats>,
    recording: Arc<AtomicBool>,
    abort: Arc<AtomicBool>,
    last_ts: u64,
}

fn write_loop(
    mut st: LoopState,
    rx: Receiver<Record>,
    (queued_bytes, shares): (Arc<AtomicUsize>, Arc<Shares>),
    (wake, gear): (Arc<Wake>, Arc<Gear>),
) -> Result<(), CaptureError> {
    let file_bytes = st.writer.bytes_counter();
    let mut reported_drops = (0u64, 0u64);
    let mut last_flush = Instant::now();
    let mut dirty = false;
    let mut result = Ok(Written::Recorded);
    let mut empty_polls = 0u32;
    let mut woken = None;
    'run: loop {
        gear.beat();
        // Poll rather than block while traffic flows: a sender then never has to wake this
        // thread, so submitting a record costs the connection task no system call.
        for _ in 0..BATCH {
            match woken.take().map_or_else(|| rx.try_recv(), Ok) {
                Ok(record) => {
                    empty_polls = 0;
                    let size = record.payload.len();
                    let before = queued_bytes.fetch_sub(size, Ordering::Relaxed);
                    gear.written(before.saturating_sub(size));
                    shares.sub(record.conn_id, record.payload.len());
                    st.last_ts = st.last_ts.max(record.ts_ns);
                    if st.abort.load(Ordering::Relaxed)
                        && matches!(record.kind, RecordKind::Request | RecordKind::Reply)
                    {
                        // Stopped at once: messages are counted, not written; connection events
                        // (tiny, and what the messages mean) still are.
                        Stats::add(&st.stats.dropped_messages, 1);
                        Stats::add(&st.stats.dropped_bytes, record.payload.len() as u64);
                        continue;
                    }
                    result = st.write_one(record);
                    dirty = true;
                    if !matches!(result, Ok(Written::Recorded)) {
                        break 'run;
                    }
                }
                Err(TryRecvError::Empty) => {
                    empty_polls = empty_polls.saturating_add(1);
                    woken = wake.idle(empty_polls, &rx);
                    break;
                }
                Err(TryRecvError::Disconnected) => break 'run,
            }
        }
        result = report_drops(&mut st.writer, &st.stats, &mut reported_drops, st.last_ts)
            .and_then(|()| st.writer.tick());
        if !matches!(result, Ok(Written::Recorded)) {
            break;
        }
        if last_flush.elapsed() >= FLUSH_INTERVAL {
            if dirty {
                if let Err(e) = st.writer.flush() {
                    result = Err(e);
                    break;
                }
                dirty = false;
            }
            gear.flushed();
            last_flush = Instant::now();
        }
        st.publish(&file_bytes);
    }
    st.conclude(rx, result, &mut reported_drops, &file_bytes)
}

impl LoopState {
    /// The recording is over: with the capture's `end` record when it ended well, the file left
    /// readable up to here when writing failed.
    fn conclude(
        mut self,
        rx: Receiver<Record>,
        result: Result<Written, CaptureError>,
        reported_drops: &mut (u64, u64),
        file_bytes: &std::sync::atomic::AtomicU64,
    ) -> Result<(), CaptureError> {
        self.recording.store(false, Ordering::Relaxed);
        match result {
            Err(e) => {
                // The file stays readable up to here; the proxy goes on forwarding, unrecorded.
                tracing::error!(
                    "recorder stopped: {e}; traffic is still forwarded but no longer recorded"
                );
                self.writer.abandon();
                drop(rx);
                Err(e)
            }
            Ok(written) => {
                report_drops(&mut self.writer, &self.stats, reported_drops, self.last_ts)?;
                let snap = self.stats.snapshot();
                let end = EndEvent {
                    connections: snap.connections_total,
                    messages: snap.messages,
                    wire_bytes: snap.wire_bytes,
                    dropped_messages: snap.dropped_messages,
                };
                let segments = self.writer.segments();
                self.writer.finish(Some(end))?;
                self.publish(file_bytes);
                if let Written::Ended(reason) = written {
                    tracing::warn!(
                        "recording ended ({}): capture closed after {segments} segment(s); \
                         traffic is still forwarded, no longer recorded",
                        reason.as_str()
                    );
                }
                Ok(())
            }
        }
    }

    fn publish(&self, file_bytes: &std::sync::atomic::AtomicU64) {
        let stats = &self.stats;
        stats
            .file_bytes
            .store(file_bytes.load(Ordering::Relaxed), Ordering::Relaxed);
        stats
            .segments
            .store(self.writer.segments() as u64, Ordering::Relaxed);
    }

    fn write_one(&mut self, record: Record) -> Result<Written, CaptureError> {
        let metadata = self.client_metadata(&record);
        let record = self.redact(record);
        let mut written = self.writer.write(&record)?;
        Stats::add(&self.stats.records_written, 1);
        Stats::add(&self.stats.capture_bytes, record.encoded_len() as u64);
        match record.kind {
            RecordKind::Request | RecordKind::Reply => Stats::add(&self.stats.recorded_messages, 1),
            RecordKind::Gap => Stats::add(&self.stats.gap_records, 1),
            RecordKind::Close => {
                self.handshakes.remove(&record.conn_id);
                self.redacting.remove(&record.conn_id);
            }
            _ => {}
        }
        if let (Some(meta), Written::Recorded) = (metadata, written) {
            written = self.writer.write(&meta)?;
            Stats::add(&self.stats.records_written, 1);
        }
        Ok(written)
    }

    /// The driver's handshake metadata, looked for among a connection's first requests only.
    fn client_metadata(&mut self, record: &Record) -> Option<Record> {
        if record.kind != RecordKind::Request {
            return None;
        }
        let seen = self.handshakes.entry(record.conn_id).or_insert(0);
        if *seen >= HANDSHAKE_SEARCH {
            return None;
        }
        *seen += 1;
        // A handshake is never compressed (the spec forbids it for hello): not inflating here
        // keeps the connection's first messages out of reach of a compression bomb.
        let header = MsgHeader::parse_whole(&record.payload, "message header").ok()?;
        if header.op_code == OpCode::Compressed {
            return None;
        }
        let meta = Message::parse(&record.payload)
            .ok()
            .as_ref()
            .and_then(info::client_metadata)?;
        *seen = HANDSHAKE_SEARCH;
        Some(Record::new(
            RecordKind::ClientMetadata,
            record.conn_id,
            record.ts_ns,
            meta.into_bytes(),
        ))
    }

    /// The record as the capture may keep it. A message that cannot be checked for what must be
    /// redacted (it may hold a credential and does not decode, nests too deep, or is compressed
    /// past what its connection may have inflated) is never written in clear: a `gap` record
    /// takes its place, it is counted, and the first one of a connection is logged.
    fn redact(&mut self, record: Record) -> Record {
        let direction = match record.kind {
            RecordKind::Request => Direction::Request,
            RecordKind::Reply => Direction::Reply,
            _ => return record,
        };
        let (budget, warned) = self.redacting.entry(record.conn_id).or_default();
        let e = match self.redactor.message_within_both(
            &record.payload,
            direction,
            budget,
            &mut self.inflate,
        ) {
            Ok(None) => return record,
            Ok(Some(payload)) => {
                Stats::add(&self.stats.redacted_messages, 1);
                return Record::new(record.kind, record.conn_id, record.ts_ns, payload);
            }
            Err(e) => e,
        };
        Stats::add(&self.stats.unredactable_messages, 1);
        if !std::mem::replace(warned, true) {
            tracing::warn!(
                "connection {}: a {} was left out of the capture: it cannot be checked for what \
                 must be redacted ({e}); further ones of this connection are counted, not logged",
                record.conn_id,
                record.kind.name()
            );
        }
        let gap = GapEvent {
            dropped_messages: 1,
            dropped_bytes: record.payload.len() as u64,
            reason: e.reason().into(),
        };
        Record::json(RecordKind::Gap, record.conn_id, record.ts_ns, &gap)
    }
}

fn report_drops(
    writer: &mut SegmentWriter,
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
        Stats::add(&stats.gap_records, 1);
        Stats::add(&stats.records_written, 1);
        *reported = now;
    }
    Ok(())
}
