//! The capture an import writes, in the recorder's vocabulary (`proxy/recorder.rs`): a
//! connection's `open` before its first message, `request`/`reply` records of the whole messages,
//! the handshake's `client_metadata` after the request that carried it, `gap` records where bytes
//! were lost, `close`, and the `end` record. Credentials are removed as the proxy removes them
//! (and every value hashed with `--redact values`); a message that cannot be checked is a gap.

pub use super::counts::Written;
use super::error::ImportError;
use super::tcp::frames::{Lost, Out};
use super::tcp::{Conn, Ender, Events};
use crate::capture::{
    CloseEvent, EndEvent, EndReason, GapEvent, Metadata, OpenEvent, Record, RecordKind,
    SegmentPlan, SegmentWriter, Side, Written as Kept, FORMAT_VERSION,
};
use crate::redact::{Direction, InflateBudget, Redaction, Redactor};
use crate::wire::{info, Message, MsgHeader, OpCode};
use bytes::Bytes;
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::time::Duration;

/// Requests per connection searched for handshake metadata (as the recorder does).
const HANDSHAKE_SEARCH: u32 = 4;

/// How to create the capture.
#[derive(Debug, Clone)]
pub struct OutputSpec {
    pub path: PathBuf,
    pub force: bool,
    pub zstd_level: i32,
    pub redaction: Redaction,
    /// The metadata's `upstream`.
    pub upstream: String,
    /// The metadata's `source`.
    pub source: String,
    /// Leave out the proxy's own topology probes; the capture then starts with the first
    /// connection kept, not the first packet.
    pub skip_probes: bool,
}

/// When a capture written live rotates and ends (`record --interface`); an import has none.
#[derive(Debug, Clone, Default)]
pub struct Limits {
    pub rotate_bytes: Option<u64>,
    pub rotate_every: Option<Duration>,
    pub max_bytes: Option<u64>,
    pub duration: Option<Duration>,
}

/// What a live recording shows as it goes (`record --interface --metrics`): every connection
/// opened and closed, every whole message (as it crossed the wire, before redaction) and what
/// the capture holds. The default methods do nothing.
pub trait Meter: Send {
    fn opened(&mut self, _conn: u64) {}
    fn closed(&mut self, _conn: u64) {}
    fn message(&mut self, _conn: u64, _request: bool, _frame: &[u8], _ts_ns: u64) {}
    /// A message written (`redacted`: with something replaced).
    fn recorded(&mut self, _redacted: bool) {}
    fn gap(&mut self, _messages: u64, _bytes: u64, _unredactable: bool) {}
    /// A record written; the capture's bytes on disk so far.
    fn written(&mut self, _file_bytes: u64) {}
}

struct ConnOut {
    id: u64,
    handshakes: u32,
    budget: InflateBudget,
}

pub struct Output {
    spec: OutputSpec,
    limits: Limits,
    writer: Option<SegmentWriter>,
    /// A limit ended the capture: later records are not written.
    ended: Option<EndReason>,
    meter: Option<Box<dyn Meter>>,
    file_bytes: Option<std::sync::Arc<std::sync::atomic::AtomicU64>>,
    redactor: Redactor,
    conns: HashMap<u64, ConnOut>,
    /// Connections left out (topology probes, with `skip_probes`), by the source's number.
    left_out: HashSet<u64>,
    next_conn: u64,
    last_ts: u64,
    pub written: Written,
}

impl Output {
    pub fn new(spec: OutputSpec) -> Output {
        Output::with_limits(spec, Limits::default())
    }

    /// An output that rotates and ends as `limits` say.
    pub fn with_limits(spec: OutputSpec, limits: Limits) -> Output {
        let redactor = Redactor::new(spec.redaction);
        Output {
            spec,
            limits,
            writer: None,
            ended: None,
            meter: None,
            file_bytes: None,
            redactor,
            conns: HashMap::new(),
            left_out: HashSet::new(),
            next_conn: 1,
            last_ts: 0,
            written: Written::default(),
        }
    }

    /// Creates the file, its start being the first packet's time. Later calls do nothing.
    pub fn begin(&mut self, start_unix_ns: u64) -> Result<(), ImportError> {
        if self.writer.is_some() {
            return Ok(());
        }
        let meta = Metadata {
            format_version: FORMAT_VERSION,
            mongotape_version: env!("CARGO_PKG_VERSION").into(),
            start_unix_ns,
            start_time: crate::capture::rfc3339(start_unix_ns),
            upstream: self.spec.upstream.clone(),
            listen: String::new(),
            host: String::new(),
            segment: None,
            redaction: Some(self.spec.redaction.name().into()),
            source: Some(self.spec.source.clone()),
            slice: None,
        };
        let plan = SegmentPlan {
            path: self.spec.path.clone(),
            force: self.spec.force,
            rotate_bytes: self.limits.rotate_bytes,
            rotate_every: self.limits.rotate_every,
            max_bytes: self.limits.max_bytes,
            duration: self.limits.duration,
        };
        let writer = SegmentWriter::create(plan, meta, self.spec.zstd_level)?;
        self.last_ts = start_unix_ns;
        self.file_bytes = Some(writer.bytes_counter());
        self.writer = Some(writer);
        Ok(())
    }

    /// Ends the capture with its `end` record. Without a single packet, an empty capture
    /// starting at `empty_start_ns`.
    pub fn finish(mut self, empty_start_ns: u64) -> Result<Written, ImportError> {
        self.begin(empty_start_ns)?;
        let w = &self.written;
        let end = EndEvent {
            connections: w.connections,
            messages: w.messages,
            wire_bytes: w.wire_bytes,
            dropped_messages: w.dropped_messages,
        };
        if let Some(mut writer) = self.writer.take() {
            writer.finish(Some(end))?;
        }
        Ok(self.written)
    }

    /// Whether the capture starts with its first packet; else with the first record written
    /// (the packets of the probes left out before it are not the capture's).
    pub fn starts_at_first_packet(&self) -> bool {
        !self.spec.skip_probes
    }

    /// Tells `meter` what happens from now on.
    pub fn set_meter(&mut self, meter: Box<dyn Meter>) {
        self.meter = Some(meter);
    }

    /// The limit that ended the capture, if one did.
    pub fn ended(&self) -> Option<EndReason> {
        self.ended
    }

    /// Segments started so far.
    pub fn segments(&self) -> u32 {
        self.writer.as_ref().map_or(0, SegmentWriter::segments)
    }

    /// Ends the capture when its `--duration` passed with nothing written.
    pub fn tick(&mut self) -> Result<(), ImportError> {
        if self.ended.is_none() {
            if let Some(Kept::Ended(reason)) = self.writer.as_mut().map(|w| w.tick()).transpose()? {
                self.ended = Some(reason);
            }
        }
        Ok(())
    }

    fn write(&mut self, record: Record) -> Result<(), ImportError> {
        if self.ended.is_some() {
            return Ok(());
        }
        let writer = self.writer.as_mut().ok_or(ImportError::NotBegun)?;
        if let Kept::Ended(reason) = writer.write(&record)? {
            self.ended = Some(reason);
        }
        if let (Some(meter), Some(bytes)) = (self.meter.as_mut(), &self.file_bytes) {
            meter.written(bytes.load(std::sync::atomic::Ordering::Relaxed));
        }
        Ok(())
    }

    /// A loss of the whole capture (`conn_id` 0), such as packets the kernel dropped.
    pub fn capture_gap(&mut self, reason: String, ts_ns: u64) -> Result<(), ImportError> {
        self.begin(ts_ns)?;
        let ts = self.ts(ts_ns);
        if let Some(meter) = self.meter.as_mut() {
            meter.gap(0, 0, false);
        }
        self.written.gap_records += 1;
        let gap = GapEvent {
            dropped_messages: 0,
            dropped_bytes: 0,
            reason,
        };
        self.write(Record::json(RecordKind::Gap, 0, ts, &gap))
    }

    /// Never backwards: a capture's times only go forward.
    fn ts(&mut self, ts_ns: u64) -> u64 {
        self.last_ts = self.last_ts.max(ts_ns);
        self.last_ts
    }

    /// The connection's capture number, its `open` written the first time.
    fn conn_id(&mut self, conn: &Conn, ts: u64) -> Result<u64, ImportError> {
        if let Some(c) = self.conns.get(&conn.id) {
            return Ok(c.id);
        }
        self.open(
            conn.id,
            &conn.client.to_string(),
            &conn.server.to_string(),
            ts,
        )
    }

    /// Opens connection `key` (the source's own number) unless it is open: its `open` record
    /// names `client` and `server`. Returns its capture number.
    pub fn open(
        &mut self,
        key: u64,
        client: &str,
        server: &str,
        ts_ns: u64,
    ) -> Result<u64, ImportError> {
        if let Some(c) = self.conns.get(&key) {
            return Ok(c.id);
        }
        // A source that is not packets starts with its first connection.
        self.begin(ts_ns)?;
        let ts = self.ts(ts_ns);
        let id = self.next_conn;
        self.next_conn += 1;
        self.conns.insert(
            key,
            ConnOut {
                id,
                handshakes: 0,
                budget: InflateBudget::default(),
            },
        );
        self.written.connections += 1;
        if let Some(meter) = self.meter.as_mut() {
            meter.opened(id);
        }
        let open = OpenEvent {
            client: client.into(),
            upstream: server.into(),
            continued: false,
        };
        self.write(Record::json(RecordKind::Open, id, ts, &open))?;
        Ok(id)
    }

    fn gap(&mut self, id: u64, lost: Lost, ts: u64) -> Result<(), ImportError> {
        if let Some(meter) = self.meter.as_mut() {
            meter.gap(
                lost.messages,
                lost.bytes,
                lost.reason.starts_with("unredactable"),
            );
        }
        self.written.gap_records += 1;
        self.written.dropped_messages += lost.messages;
        self.written.dropped_bytes += lost.bytes;
        let gap = GapEvent {
            dropped_messages: lost.messages,
            dropped_bytes: lost.bytes,
            reason: lost.reason.into(),
        };
        self.write(Record::json(RecordKind::Gap, id, ts, &gap))
    }

    fn message(
        &mut self,
        conn: u64,
        request: bool,
        bytes: Bytes,
        ts: u64,
    ) -> Result<(), ImportError> {
        let (kind, direction) = if request {
            (RecordKind::Request, Direction::Request)
        } else {
            (RecordKind::Reply, Direction::Reply)
        };
        let state = self
            .conns
            .get_mut(&conn)
            .expect("opened before its messages");
        let id = state.id;
        if let Some(meter) = self.meter.as_mut() {
            meter.message(id, request, &bytes, ts);
        }
        let metadata = if request && state.handshakes < HANDSHAKE_SEARCH {
            state.handshakes += 1;
            let found = client_metadata(&bytes);
            if found.is_some() {
                state.handshakes = HANDSHAKE_SEARCH;
            }
            found
        } else {
            None
        };
        let len = bytes.len() as u64;
        let mut redacted = false;
        let payload = match self
            .redactor
            .message_within(&bytes, direction, &mut state.budget)
        {
            Ok(None) => bytes,
            Ok(Some(changed)) => {
                self.written.redacted_messages += 1;
                redacted = true;
                Bytes::from(changed)
            }
            Err(e) => {
                self.written.unredactable_messages += 1;
                let lost = Lost {
                    messages: 1,
                    bytes: len,
                    reason: e.reason(),
                };
                return self.gap(id, lost, ts);
            }
        };
        self.written.messages += 1;
        self.written.wire_bytes += len;
        if let Some(meter) = self.meter.as_mut() {
            meter.recorded(redacted);
        }
        self.write(Record::new(kind, id, ts, payload))?;
        if let Some(meta) = metadata {
            self.write(Record::new(RecordKind::ClientMetadata, id, ts, meta))?;
        }
        Ok(())
    }
}

/// The same for sources that are not packets (their connections opened with [`Output::open`]).
impl Output {
    /// A whole message of connection `key`, a request or a reply.
    pub fn message_of(
        &mut self,
        key: u64,
        request: bool,
        bytes: Bytes,
        ts_ns: u64,
    ) -> Result<(), ImportError> {
        let ts = self.ts(ts_ns);
        Output::message(self, key, request, bytes, ts)
    }

    /// A loss on connection `key`.
    pub fn gap_of(&mut self, key: u64, lost: Lost, ts_ns: u64) -> Result<(), ImportError> {
        let ts = self.ts(ts_ns);
        let id = self.conns.get(&key).ok_or(ImportError::NotBegun)?.id;
        self.gap(id, lost, ts)
    }

    /// Closes connection `key` if it is open.
    pub fn close_conn(
        &mut self,
        key: u64,
        side: Side,
        reason: &str,
        ts_ns: u64,
    ) -> Result<(), ImportError> {
        let Some(state) = self.conns.remove(&key) else {
            return Ok(());
        };
        if let Some(meter) = self.meter.as_mut() {
            meter.closed(state.id);
        }
        let ts = self.ts(ts_ns);
        let close = CloseEvent {
            side,
            reason: reason.into(),
        };
        self.write(Record::json(RecordKind::Close, state.id, ts, &close))
    }

    /// Closes every connection still open (the source ended), in the order they opened.
    pub fn close_all(&mut self, reason: &str, ts_ns: u64) -> Result<(), ImportError> {
        let mut open: Vec<(u64, u64)> = self.conns.iter().map(|(k, c)| (c.id, *k)).collect();
        open.sort();
        for (_, key) in open {
            self.close_conn(key, Side::Proxy, reason, ts_ns)?;
        }
        Ok(())
    }
}

impl Events for Output {
    type Error = ImportError;

    fn message(&mut self, conn: &Conn, from_client: bool, out: Out) -> Result<(), ImportError> {
        if self.left_out.contains(&conn.id) {
            return Ok(());
        }
        match out {
            Out::Message { bytes, ts_ns } => {
                let first = from_client && !self.conns.contains_key(&conn.id);
                let probe = first && is_probe(&bytes);
                if probe {
                    self.written.topology_probes += 1;
                    if self.spec.skip_probes {
                        self.left_out.insert(conn.id);
                        return Ok(());
                    }
                }
                let ts = self.ts(ts_ns);
                let id = self.conn_id(conn, ts)?;
                let named = client_metadata(&bytes).is_some();
                Output::message(self, conn.id, from_client, bytes, ts)?;
                if probe && !named {
                    let name =
                        bson::rawdoc! { "application": { "name": info::TOPOLOGY_PROBE_APP } };
                    let meta = name.into_bytes();
                    self.write(Record::new(RecordKind::ClientMetadata, id, ts, meta))?;
                }
                Ok(())
            }
            Out::Gap { lost, ts_ns } => {
                let ts = self.ts(ts_ns);
                let id = self.conn_id(conn, ts)?;
                self.gap(id, lost, ts)
            }
        }
    }

    fn close(
        &mut self,
        conn: &Conn,
        by: Ender,
        reset: bool,
        ts_ns: u64,
    ) -> Result<(), ImportError> {
        if self.left_out.remove(&conn.id) {
            return Ok(());
        }
        let (side, reason) = match (by, reset) {
            (Ender::Client, false) => (Side::Client, "closed"),
            (Ender::Client, true) => (Side::Client, "reset (RST)"),
            (Ender::Server, false) => (Side::Upstream, "closed"),
            (Ender::Server, true) => (Side::Upstream, "reset (RST)"),
            (Ender::Capture, _) => (Side::Proxy, "still open when the packet capture ended"),
        };
        self.close_conn(conn.id, side, reason, ts_ns)
    }
}

/// The handshake's `client` document, from an uncompressed request (a handshake never is).
fn client_metadata(message: &[u8]) -> Option<Vec<u8>> {
    let header = MsgHeader::parse_whole(message, "message header").ok()?;
    if header.op_code == OpCode::Compressed {
        return None;
    }
    let parsed = Message::parse(message).ok()?;
    info::client_metadata(&parsed).map(|doc| doc.into_bytes())
}

/// Whether a connection's first request is one of the proxy's topology probes.
fn is_probe(message: &[u8]) -> bool {
    Message::parse(message).is_ok_and(|m| info::is_topology_probe(&m))
}
