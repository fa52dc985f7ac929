//! `mongotape inspect`: one streaming pass over a capture, summarised; `text` renders it.
//!
//! Layers, bottom up: mod.rs < text

mod text;

use super::pair::{Answer, PairLimits, Pairer};
use crate::capture::{
    CaptureError, CaptureSet, CloseEvent, GapEvent, Metadata, OpenEvent, Record, RecordKind,
    RecordSource, SnapshotEvent, StateEndEvent, FAULT, SNAPSHOT, STATE_END,
};
use crate::fault::FaultsInjected;
use crate::wire::{Message, ReplyInfo, RequestInfo};
use bson::RawDocumentBuf;
use serde::Serialize;
use std::collections::{BTreeMap, HashSet};

#[derive(Debug, Default, Serialize, Clone, schemars::JsonSchema)]
pub struct Count {
    pub messages: u64,
    pub bytes: u64,
}

impl Count {
    fn add(&mut self, bytes: usize) {
        self.messages += 1;
        self.bytes += bytes as u64;
    }
}

#[derive(Debug, Default, Serialize, Clone, schemars::JsonSchema)]
pub struct Driver {
    pub name: Option<String>,
    pub version: Option<String>,
    pub application: Option<String>,
    pub os: Option<String>,
    pub platform: Option<String>,
}

impl Driver {
    pub fn from_client_doc(doc: &RawDocumentBuf) -> Driver {
        let s = |d: &bson::RawDocument, k: &str| d.get_str(k).ok().map(str::to_owned);
        let driver = doc.get_document("driver").ok();
        let os = doc.get_document("os").ok();
        Driver {
            name: driver.and_then(|d| s(d, "name")),
            version: driver.and_then(|d| s(d, "version")),
            application: doc
                .get_document("application")
                .ok()
                .and_then(|a| s(a, "name")),
            os: os.and_then(|o| s(o, "type").or_else(|| s(o, "name"))),
            platform: s(doc, "platform"),
        }
    }

    /// `name version` for people (`mongosh 2.12.0 on Node.js driver 7.9.0`; the JSON keeps
    /// the raw strings).
    pub fn for_people(&self) -> String {
        match &self.name {
            Some(n) => {
                crate::figures::drivers::for_people(n, self.version.as_deref().unwrap_or(""))
            }
            None => "unknown".into(),
        }
    }

    /// `name version` as written, the key reports group by.
    pub fn label(&self) -> String {
        match (&self.name, &self.version) {
            (Some(n), Some(v)) => format!("{n} {v}"),
            (Some(n), None) => n.clone(),
            _ => "unknown".into(),
        }
    }
}

#[derive(Debug, Default, Serialize, Clone, schemars::JsonSchema)]
pub struct Connection {
    pub id: u64,
    pub client: String,
    pub opened_ns: u64,
    pub closed_ns: Option<u64>,
    pub closed_by: Option<String>,
    pub close_reason: Option<String>,
    pub driver: Option<Driver>,
    pub requests: u64,
    pub replies: u64,
    pub bytes: u64,
}

/// Connections listed one by one (the first seen, open or closed); the others are summed in
/// `other_connections`, so memory and the report stay bounded however many there are.
pub const MAX_LISTED_CONNECTIONS: usize = 10_000;

/// The first [`MAX_LISTED_CONNECTIONS`] connections seen, one row each; the others are only
/// summed in [`OtherConnections`], with their ids kept while open (8 bytes each) so each counts
/// once. Memory follows the listed rows, not the connections open at once.
#[derive(Default)]
struct Listing {
    listed: BTreeMap<u64, Connection>,
    unlisted: HashSet<u64>,
}

impl Listing {
    /// The connection's row, or `None` when it is only summed (counted on first sight).
    fn row<'a>(&'a mut self, id: u64, other: &mut OtherConnections) -> Option<&'a mut Connection> {
        if self.unlisted.contains(&id) {
            return None;
        }
        if !self.listed.contains_key(&id) && self.listed.len() >= MAX_LISTED_CONNECTIONS {
            self.unlisted.insert(id);
            other.connections += 1;
            return None;
        }
        Some(self.listed.entry(id).or_insert_with(|| Connection {
            id,
            ..Default::default()
        }))
    }
}

impl Connection {
    fn closed(&mut self, record: &Record) {
        self.closed_ns = Some(record.ts_ns);
        if let Ok(ev) = record.event::<CloseEvent>() {
            self.closed_by = serde_json::to_value(ev.side)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned));
            self.close_reason = Some(ev.reason);
        }
    }
}

/// The connections past [`MAX_LISTED_CONNECTIONS`], summed.
#[derive(Debug, Default, Serialize, Clone, schemars::JsonSchema)]
pub struct OtherConnections {
    pub connections: u64,
    pub requests: u64,
    pub replies: u64,
    pub bytes: u64,
}

#[derive(Debug, Default, Serialize, Clone, schemars::JsonSchema)]
pub struct CommandStats {
    pub requests: u64,
    pub request_bytes: u64,
    pub replies: u64,
    pub reply_bytes: u64,
    pub errors: u64,
    pub no_reply_expected: u64,
    /// Sum of request-to-reply times, for the mean.
    pub total_latency_ns: u64,
}

#[derive(Debug, Default, Serialize, schemars::JsonSchema)]
pub struct Inspection {
    /// [`crate::figures::SCHEMA_VERSION`]: the layout of this JSON (docs/schemas/).
    #[schemars(extend("const" = crate::figures::SCHEMA_VERSION))]
    pub schema_version: u32,
    pub metadata: Metadata,
    /// `record --snapshot`: the starting state's snapshot and its point in time T0 (the capture's
    /// `snapshot` record); absent without one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snapshot: Option<SnapshotEvent>,
    /// `record --snapshot`: the point T1 the recording stopped at and a fingerprint of every
    /// snapshotted collection there (the capture's `state_end` record); absent without one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state_end: Option<StateEndEvent>,
    /// `record --fault`: the faults the capture's `fault` records say were injected; absent
    /// when none were.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub faults: Option<FaultsInjected>,
    pub compressed_file_bytes: u64,
    pub records: u64,
    pub first_ns: Option<u64>,
    pub last_ns: Option<u64>,
    #[schemars(range(min = 0))]
    pub duration_s: f64,
    pub wire_bytes: u64,
    #[schemars(range(min = 0))]
    pub compression_ratio: f64,
    /// The capture ends with a clean end record.
    pub complete: bool,
    /// Set when reading stopped early: what and where (the first of `read_errors`).
    pub error: Option<String>,
    /// Every reading error, in order: in a set of segments each names its file, and reading went
    /// on with the next segment.
    pub read_errors: Vec<String>,
    pub dropped_messages: u64,
    pub undecodable_messages: u64,
    pub unanswered_requests: u64,
    /// Requests not kept for pairing once the bound on unanswered requests was reached
    /// (`report::pair`: 1,000 per connection, 10,000 in all); a reply to one counts as
    /// unsolicited, and one never answered is not in `unanswered_requests`.
    pub unanswered_untracked: u64,
    pub unanswered_by_command: BTreeMap<String, u64>,
    pub unsolicited_replies: u64,
    /// The first connections to close (at most 10,000); all count in the totals.
    pub connections: Vec<Connection>,
    /// Every connection, listed or not.
    pub connections_total: u64,
    pub other_connections: OtherConnections,
    pub requests_by_opcode: BTreeMap<String, Count>,
    pub replies_by_opcode: BTreeMap<String, Count>,
    pub compressed_by_compressor: BTreeMap<String, Count>,
    pub by_command: BTreeMap<String, CommandStats>,
    pub by_namespace: BTreeMap<String, Count>,
}

impl Inspection {
    pub fn of(reader: impl RecordSource, file_bytes: u64) -> Inspection {
        Inspection::with_limits(reader, file_bytes, PairLimits::default())
    }

    /// [`Inspection::of`] keeping at most `limits` unanswered requests for pairing.
    pub fn with_limits(
        mut reader: impl RecordSource,
        file_bytes: u64,
        limits: PairLimits,
    ) -> Inspection {
        let mut out = Inspection {
            schema_version: crate::figures::SCHEMA_VERSION,
            metadata: reader.metadata().clone(),
            compressed_file_bytes: file_bytes,
            ..Default::default()
        };
        let mut conns = Listing::default();
        let mut pairer = Pairer::new(limits);
        while let Some(record) = reader.next_record() {
            let record = match record {
                Ok(r) => r,
                Err(e) => {
                    out.error.get_or_insert_with(|| e.to_string());
                    out.read_errors.push(e.to_string());
                    continue;
                }
            };
            out.record(&record, &mut conns, &mut pairer);
        }
        for p in pairer.drain() {
            out.unanswered(&p.info.command);
        }
        out.unanswered_untracked = pairer.untracked;
        out.connections = conns.listed.into_values().collect();
        out.connections_total = out.connections.len() as u64 + out.other_connections.connections;
        if let (Some(a), Some(b)) = (out.first_ns, out.last_ns) {
            out.duration_s = b.saturating_sub(a) as f64 / 1e9;
        }
        if file_bytes > 0 {
            out.compression_ratio = out.wire_bytes as f64 / file_bytes as f64;
        }
        out
    }

    /// Books one record: its connection's row, pairing, and the capture's totals.
    fn record(&mut self, record: &Record, conns: &mut Listing, pairer: &mut Pairer) {
        self.records += 1;
        if record.kind != RecordKind::End {
            self.first_ns.get_or_insert(record.ts_ns);
            self.last_ns = Some(self.last_ns.unwrap_or(0).max(record.ts_ns));
        }
        // Only a connection's own records make it a row: the capture's metadata, gaps and
        // end carry no connection (id 0).
        let row = match record.kind {
            RecordKind::Open
            | RecordKind::Close
            | RecordKind::ClientMetadata
            | RecordKind::Request
            | RecordKind::Reply => conns.row(record.conn_id, &mut self.other_connections),
            _ => None,
        };
        match record.kind {
            RecordKind::Open => {
                if let Some(c) = row {
                    c.opened_ns = record.ts_ns;
                    if let Ok(ev) = record.event::<OpenEvent>() {
                        c.client = ev.client;
                    }
                }
            }
            RecordKind::Close => {
                if let Some(c) = row {
                    c.closed(record);
                }
                conns.unlisted.remove(&record.conn_id);
                for p in pairer.close(record.conn_id) {
                    self.unanswered(&p.info.command);
                }
            }
            RecordKind::ClientMetadata => {
                if let (Some(c), Ok(doc)) =
                    (row, RawDocumentBuf::from_bytes(record.payload.to_vec()))
                {
                    c.driver = Some(Driver::from_client_doc(&doc));
                }
            }
            RecordKind::Gap => {
                if let Ok(g) = record.event::<GapEvent>() {
                    self.dropped_messages += g.dropped_messages;
                }
            }
            RecordKind::End => self.complete = true,
            RecordKind::Request | RecordKind::Reply => self.message(record, row, pairer),
            SNAPSHOT => self.snapshot = record.event::<SnapshotEvent>().ok(),
            STATE_END => self.state_end = record.event::<StateEndEvent>().ok(),
            FAULT => self.faults.get_or_insert_default().add(record),
            RecordKind::Unknown(_) => {}
        }
    }

    /// Books one request or reply: bytes per opcode and compressor, per command and namespace.
    fn message(&mut self, record: &Record, c: Option<&mut Connection>, pairer: &mut Pairer) {
        let bytes = record.payload.len();
        self.wire_bytes += bytes as u64;
        let request = record.kind == RecordKind::Request;
        match c {
            Some(c) => {
                c.bytes += bytes as u64;
                c.requests += u64::from(request);
                c.replies += u64::from(!request);
            }
            None => {
                let o = &mut self.other_connections;
                o.bytes += bytes as u64;
                o.requests += u64::from(request);
                o.replies += u64::from(!request);
            }
        }
        let msg = match Message::parse(&record.payload) {
            Ok(m) => m,
            Err(_) => {
                self.undecodable_messages += 1;
                return;
            }
        };
        let opcode = match msg.compressor {
            Some(comp) => {
                self.compressed_by_compressor
                    .entry(comp.name().into())
                    .or_default()
                    .add(bytes);
                format!("OP_COMPRESSED({})", msg.op_code().name())
            }
            None => msg.op_code().name(),
        };
        if request {
            self.requests_by_opcode
                .entry(opcode)
                .or_default()
                .add(bytes);
            self.request(record, &msg, pairer);
        } else {
            self.replies_by_opcode.entry(opcode).or_default().add(bytes);
            self.reply(record, &msg, pairer);
        }
    }

    fn request(&mut self, record: &Record, msg: &Message, pairer: &mut Pairer) {
        let bytes = record.payload.len();
        let info = RequestInfo::of(msg);
        let cmd = self.by_command.entry(info.command.clone()).or_default();
        cmd.requests += 1;
        cmd.request_bytes += bytes as u64;
        if !info.expects_reply {
            cmd.no_reply_expected += 1;
        }
        let ns = info.namespace();
        if !ns.is_empty() {
            self.by_namespace.entry(ns).or_default().add(bytes);
        }
        pairer.request(record.conn_id, msg, info, record.ts_ns, bytes);
    }

    fn reply(&mut self, record: &Record, msg: &Message, pairer: &mut Pairer) {
        let reply = ReplyInfo::of(msg);
        match pairer.reply(record.conn_id, msg, reply.more_to_come) {
            Answer::Request(p) => {
                let cmd = self.by_command.entry(p.info.command).or_default();
                cmd.replies += 1;
                cmd.reply_bytes += record.payload.len() as u64;
                cmd.total_latency_ns += record.ts_ns.saturating_sub(p.ts_ns);
                if !reply.is_ok() || reply.write_errors > 0 {
                    cmd.errors += 1;
                }
            }
            Answer::Unsolicited => self.unsolicited_replies += 1,
        }
    }

    fn unanswered(&mut self, command: &str) {
        self.unanswered_requests += 1;
        *self
            .unanswered_by_command
            .entry(command.to_owned())
            .or_default() += 1;
    }
}

/// Opens `path` and inspects it; errors only if it cannot be opened or is not a capture.
pub fn inspect_file(path: &std::path::Path) -> Result<Inspection, CaptureError> {
    inspect_files(&[path.to_owned()])
}

/// Inspects captures read as one (a file, the segments of a rotated recording, or a folder).
pub fn inspect_files(inputs: &[std::path::PathBuf]) -> Result<Inspection, CaptureError> {
    let set = CaptureSet::open(inputs)?;
    let size = set
        .paths()
        .iter()
        .map(|p| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0))
        .sum();
    Ok(Inspection::of(set, size))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::{CaptureReader, CaptureWriter};

    #[test]
    fn connections_past_the_listed_ones_are_summed() {
        let mut w = CaptureWriter::new(Vec::new(), &Metadata::default(), 1).unwrap();
        let total = MAX_LISTED_CONNECTIONS as u64 + 25;
        let ping = crate::wire::OpMsg::with_body(
            bson::rawdoc! { "ping": 1, "$db": "admin" },
            crate::wire::MsgFlags::empty(),
        )
        .encode(1, 0);
        for id in 1..=total {
            w.write(&Record::new(RecordKind::Open, id, id * 10, &b"{}"[..]))
                .unwrap();
            w.write(&Record::new(
                RecordKind::Request,
                id,
                id * 10 + 1,
                ping.clone(),
            ))
            .unwrap();
            w.write(&Record::new(RecordKind::Close, id, id * 10 + 5, &b"{}"[..]))
                .unwrap();
        }
        let reader = CaptureReader::new(std::io::Cursor::new(w.finish().unwrap())).unwrap();
        let report = Inspection::of(reader, 0);
        assert_eq!(report.connections.len(), MAX_LISTED_CONNECTIONS);
        assert_eq!(report.other_connections.connections, 25);
        assert_eq!(report.undecodable_messages, 0);
        assert_eq!(
            report.other_connections.requests, 25,
            "{:?}",
            report.other_connections
        );
        assert_eq!(report.other_connections.bytes, 25 * ping.len() as u64);
        assert_eq!(report.connections_total, total);
        assert!(report
            .render_text()
            .contains("... and 25 more connections after the first 10000"));
    }
}
