//! The record encoding of `docs/capture-format.md`, without I/O.

use bytes::Bytes;
use serde::{Deserialize, Serialize};

pub const MAGIC: [u8; 8] = *b"\x89MTAPE\r\n";
pub const FORMAT_VERSION: u16 = 1;
pub const MAX_METADATA_LEN: usize = 1024 * 1024;
/// Bytes of a record's fixed part counted by `len`: kind, conn_id, ts_ns.
pub const RECORD_FIXED_LEN: usize = 17;
pub const MAX_RECORD_LEN: usize = 64 * 1024 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RecordKind {
    Open,
    Close,
    Request,
    Reply,
    ClientMetadata,
    Gap,
    End,
    /// A kind written by a newer mongotape; readers pass it through.
    Unknown(u8),
}

impl RecordKind {
    pub fn from_u8(b: u8) -> RecordKind {
        match b {
            1 => RecordKind::Open,
            2 => RecordKind::Close,
            3 => RecordKind::Request,
            4 => RecordKind::Reply,
            5 => RecordKind::ClientMetadata,
            6 => RecordKind::Gap,
            7 => RecordKind::End,
            other => RecordKind::Unknown(other),
        }
    }

    pub fn as_u8(self) -> u8 {
        match self {
            RecordKind::Open => 1,
            RecordKind::Close => 2,
            RecordKind::Request => 3,
            RecordKind::Reply => 4,
            RecordKind::ClientMetadata => 5,
            RecordKind::Gap => 6,
            RecordKind::End => 7,
            RecordKind::Unknown(b) => b,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            RecordKind::Open => "open",
            RecordKind::Close => "close",
            RecordKind::Request => "request",
            RecordKind::Reply => "reply",
            RecordKind::ClientMetadata => "client_metadata",
            RecordKind::Gap => "gap",
            RecordKind::End => "end",
            HELLO_REWRITE => "hello_rewrite",
            SNAPSHOT => "snapshot",
            STATE_END => "state_end",
            FAULT => "fault",
            RecordKind::Unknown(_) => "unknown",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    pub kind: RecordKind,
    pub conn_id: u64,
    pub ts_ns: u64,
    pub payload: Bytes,
}

impl Record {
    pub fn new(kind: RecordKind, conn_id: u64, ts_ns: u64, payload: impl Into<Bytes>) -> Record {
        Record {
            kind,
            conn_id,
            ts_ns,
            payload: payload.into(),
        }
    }

    pub fn json<T: Serialize>(kind: RecordKind, conn_id: u64, ts_ns: u64, event: &T) -> Record {
        let payload = serde_json::to_vec(event).expect("event types serialize");
        Record::new(kind, conn_id, ts_ns, payload)
    }

    /// Decodes a JSON event payload (open, close, gap, end).
    pub fn event<T: for<'de> Deserialize<'de>>(&self) -> Result<T, serde_json::Error> {
        serde_json::from_slice(&self.payload)
    }

    /// Bytes this record takes in the uncompressed stream.
    pub fn encoded_len(&self) -> usize {
        4 + RECORD_FIXED_LEN + self.payload.len() + 4
    }

    pub fn encode_into(&self, out: &mut Vec<u8>) {
        let len = (RECORD_FIXED_LEN + self.payload.len()) as u32;
        out.extend_from_slice(&len.to_le_bytes());
        let start = out.len();
        out.push(self.kind.as_u8());
        out.extend_from_slice(&self.conn_id.to_le_bytes());
        out.extend_from_slice(&self.ts_ns.to_le_bytes());
        out.extend_from_slice(&self.payload);
        let crc = crc32c::crc32c(&out[start..]);
        out.extend_from_slice(&crc.to_le_bytes());
    }

    /// Decodes the record body (everything after `len`, CRC included) at stream offset `offset`.
    pub fn decode(body: &[u8], offset: u64) -> Result<Record, RecordError> {
        if body.len() < RECORD_FIXED_LEN + 4 {
            return Err(RecordError::TooShort { offset });
        }
        let (data, crc) = body.split_at(body.len() - 4);
        let stored = u32::from_le_bytes([crc[0], crc[1], crc[2], crc[3]]);
        let computed = crc32c::crc32c(data);
        if stored != computed {
            return Err(RecordError::Crc {
                offset,
                stored,
                computed,
            });
        }
        let mut id = [0u8; 8];
        id.copy_from_slice(&data[1..9]);
        let mut ts = [0u8; 8];
        ts.copy_from_slice(&data[9..17]);
        Ok(Record {
            kind: RecordKind::from_u8(data[0]),
            conn_id: u64::from_le_bytes(id),
            ts_ns: u64::from_le_bytes(ts),
            payload: Bytes::copy_from_slice(&data[RECORD_FIXED_LEN..]),
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecordError {
    #[error("record at offset {offset} is shorter than its fixed fields")]
    TooShort { offset: u64 },
    #[error("record at offset {offset} fails its CRC-32C (stored {stored:#010x}, computed {computed:#010x})")]
    Crc {
        offset: u64,
        stored: u32,
        computed: u32,
    },
}

/// Capture-wide facts written once at the start of the file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default, schemars::JsonSchema)]
pub struct Metadata {
    pub format_version: u16,
    pub mongotape_version: String,
    pub start_unix_ns: u64,
    pub start_time: String,
    #[serde(default)]
    pub upstream: String,
    #[serde(default)]
    pub listen: String,
    #[serde(default)]
    pub host: String,
    /// Segment number (from 1) of a rotated recording.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub segment: Option<u32>,
    /// What was redacted before writing: `credentials` or `values` (absent: nothing, a capture
    /// from before redaction existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redaction: Option<String>,
    /// Where an imported capture came from (`mongotape import`): the format and the files read,
    /// such as `pcap: run.pcap`. Absent for a capture the proxy recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// Only in a slice (`mongotape slice`): the capture it was cut from and the filters, such as
    /// `run.mtape: since=90s app=checkout`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slice: Option<String>,
}

impl Metadata {
    /// Moves the capture's start to `unix_ns` (a slice starts with its own first record).
    pub fn start_at(&mut self, unix_ns: u64) {
        self.start_unix_ns = unix_ns;
        self.start_time = rfc3339(unix_ns);
    }
}

/// RFC 3339 text (UTC, to the second) of a Unix time in nanoseconds: a capture's `start_time`,
/// and every wall-clock time mongotape writes.
pub fn rfc3339(unix_ns: u64) -> String {
    let t = std::time::UNIX_EPOCH + std::time::Duration::from_nanos(unix_ns);
    humantime::format_rfc3339_seconds(t).to_string()
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct OpenEvent {
    pub client: String,
    pub upstream: String,
    /// The connection was opened in an earlier segment and is still open.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub continued: bool,
}

/// Which side ended a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Side {
    Client,
    Upstream,
    Proxy,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CloseEvent {
    pub side: Side,
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct GapEvent {
    pub dropped_messages: u64,
    pub dropped_bytes: u64,
    pub reason: String,
}

/// Kind 8, `hello_rewrite`: the reply just before it on the same connection (a hello / isMaster
/// reply, stored as the server sent it) reached the client with its member addresses rewritten to
/// the proxy's listeners. A kind of its own rather than a [`RecordKind`] variant, so readers that
/// match every kind keep compiling; they see it as `Unknown(8)` and skip it.
pub const HELLO_REWRITE: RecordKind = RecordKind::Unknown(8);

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct HelloRewriteEvent {
    /// The rewritten reply's request id.
    pub request_id: i32,
    /// How many addresses were replaced.
    pub replaced: u64,
    /// Addresses the reply named that the proxy did not serve (left as they were).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unserved: Vec<String>,
}

/// Kind 9, `snapshot`: the recording's starting state was snapshotted (`record --snapshot`), and
/// this is the point in time the snapshot holds, written as soon as its first read fixed it. A
/// kind of its own, as [`HELLO_REWRITE`]: older readers skip it.
pub const SNAPSHOT: RecordKind = RecordKind::Unknown(9);

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SnapshotEvent {
    /// The snapshot's folder (mongodump's layout, `docs/state.md`); it holds a
    /// `mongotape-snapshot.json` once complete.
    pub dir: String,
    /// `cluster_time`: the documents were read at the cluster time `t`/`i` (T0); `wall_clock`:
    /// the upstream has no snapshot reads, and the point is only `wall_time`.
    pub kind: String,
    /// Seconds of T0 (BSON Timestamp); 0 without one.
    pub t: u32,
    /// Increment of T0.
    pub i: u32,
    /// When the snapshot's read started (RFC 3339, UTC).
    pub wall_time: String,
}

/// Kind 10, `state_end`: when a recording with a snapshot stopped, the point T1 and a fingerprint
/// of every snapshotted collection there (`docs/state.md`, "The end state"); a replay with
/// `--check-state` compares its target's end with it. A kind of its own, as [`SNAPSHOT`].
pub const STATE_END: RecordKind = RecordKind::Unknown(10);

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StateEndEvent {
    /// The snapshot's folder, which also holds `mongotape-end.json` and the per-`_id` digests.
    pub dir: String,
    /// `cluster_time`: T1 is the cluster time `t`/`i` the server answered the end's reads at;
    /// `wall_clock`: the server gave none, the point is only `wall_time`.
    pub kind: String,
    /// Seconds of T1 (BSON Timestamp); 0 without one.
    pub t: u32,
    /// Increment of T1.
    pub i: u32,
    /// When the end's read started (RFC 3339, UTC).
    pub wall_time: String,
    /// One fingerprint per snapshotted collection, by namespace.
    pub collections: Vec<CollectionFingerprint>,
}

/// What a collection held at a point, in a form two servers can be compared by.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CollectionFingerprint {
    /// `db.collection`.
    pub ns: String,
    /// Documents counted while reading them.
    pub documents: u64,
    /// mongotape's order-independent hash of the documents: the sum (mod 2^128) of each
    /// document's SHA-256 truncated to 16 bytes, in hex. The same documents give the same hash
    /// on any server.
    pub hash: String,
    /// The server's own `dbHash` of the collection, where it answers one; absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub db_hash: Option<String>,
}

/// Kind 11, `fault`: a fault rule (`record --fault`) fired on a request of this connection. A
/// kind of its own, as [`HELLO_REWRITE`]: older readers skip it. (Kind 10 is `state_end`.)
pub const FAULT: RecordKind = RecordKind::Unknown(11);

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FaultEvent {
    /// The rule's index in the proxy's list (from 0).
    pub rule: usize,
    /// The rule's name, or its index as text.
    pub name: String,
    /// `error`, `reply_error`, `close_after`, `close_before`, `delay_request`, `delay_reply`,
    /// `stall` or `write_concern_error`.
    pub action: String,
    pub conn_id: u64,
    /// The request the rule fired on.
    pub request_id: i32,
    pub command: String,
    /// `db.collection`, or `db`.
    pub ns: String,
    /// Whether the request reached the server.
    pub forwarded: bool,
    /// The request's `lsid` (its BSON bytes in hex) and `txnNumber`, when it had both (a
    /// retryable write, a transaction's statement): a driver's retry resends them unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lsid: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub txn_number: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default, schemars::JsonSchema)]
pub struct EndEvent {
    pub connections: u64,
    pub messages: u64,
    pub wire_bytes: u64,
    pub dropped_messages: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_round_trips_and_crc_catches_flips() {
        let r = Record::new(
            RecordKind::Request,
            7,
            1_700_000_000_000_000_000,
            &b"abc"[..],
        );
        let mut out = Vec::new();
        r.encode_into(&mut out);
        assert_eq!(out.len(), r.encoded_len());
        assert_eq!(Record::decode(&out[4..], 0).unwrap(), r);
        for i in 4..out.len() {
            let mut bad = out.clone();
            bad[i] ^= 1;
            assert!(Record::decode(&bad[4..], 0).is_err(), "flip at {i}");
        }
    }

    #[test]
    fn formats_known_dates() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(1_795_996_800_123_456_789), "2026-11-30T00:00:00Z");
    }
}
