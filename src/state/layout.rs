//! The snapshot's files, as mongodump lays them out, and what they hold, without I/O:
//! `DB/COLL.bson` (documents one after another), `DB/COLL.metadata.json` (mongodump's keys:
//! `options`, `indexes`, `uuid`, `collectionName`, `type`, the values in canonical extended
//! JSON), both with `.gz` after them under `--gzip`, and mongotape's own
//! `mongotape-snapshot.json`: the point in time, the source, the patterns and the counts.

use serde::{Deserialize, Serialize};

/// mongotape's description of a snapshot, at the top of its folder.
pub const MANIFEST: &str = "mongotape-snapshot.json";
/// What `mongodump --oplog` writes beside the databases.
pub const OPLOG: &str = "oplog.bson";
/// Suffix of a snapshot folder still being written.
pub const PARTIAL: &str = ".partial";
/// What the manifest's `format` says.
pub const FORMAT: &str = "mongotape-snapshot";
pub const FORMAT_VERSION: u32 = 1;

/// The point in time a snapshot holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SnapshotPoint {
    /// `cluster_time`: every document was read at the cluster time `t`/`i` (a snapshot read);
    /// `wall_clock`: the server has no snapshot reads (a standalone), the documents were read one
    /// collection after another from `wall_time` on, and writes during the read may or may not be
    /// in it; `oplog`: a mongodump `--oplog` folder, `t`/`i` its oplog's last entry.
    pub kind: String,
    /// Seconds of the cluster time (BSON Timestamp `t`); 0 without one.
    pub t: u32,
    /// Increment of the cluster time (BSON Timestamp `i`).
    pub i: u32,
    /// When the read started, RFC 3339 (UTC), as this machine's clock said.
    pub wall_time: String,
}

impl SnapshotPoint {
    pub fn cluster_time(&self) -> Option<(u32, u32)> {
        (self.kind != "wall_clock" && self.t != 0).then_some((self.t, self.i))
    }
}

impl std::fmt::Display for SnapshotPoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.cluster_time() {
            Some((t, i)) => write!(f, "Timestamp({t}, {i}) ({}, {})", self.kind, self.wall_time),
            None => write!(
                f,
                "{} (wall clock: the server has no snapshot reads)",
                self.wall_time
            ),
        }
    }
}

/// What one collection holds in a snapshot.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CollectionCount {
    /// `db.collection`.
    pub ns: String,
    /// `collection`, `view`, `timeseries`.
    #[serde(rename = "type")]
    pub kind: String,
    pub documents: u64,
    /// BSON bytes of the documents (before compression).
    pub bytes: u64,
    /// The cluster time this collection was actually read at, when the server says (the
    /// `operationTime` of its snapshot read); it differs from the point's T0 when the server did
    /// not keep `atClusterTime` for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_at: Option<ClusterTime>,
    /// When its read was sent (Unix ns, this machine's clock): a write acknowledged before it is
    /// in the collection's documents whatever the server reports as `read_at`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_sent_ns: Option<u64>,
}

/// A cluster time (BSON Timestamp): seconds, then increment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ClusterTime {
    pub t: u32,
    pub i: u32,
}

/// When the snapshot was read, Unix nanoseconds by this machine's clock: what places a write
/// without an `operationTime` against the snapshot.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReadClock {
    /// The first read was sent.
    pub started_ns: u64,
    /// The point was fixed (the first read answered).
    pub fixed_ns: u64,
    /// The last read ended.
    pub finished_ns: u64,
}

/// `mongotape-snapshot.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    pub format: String,
    pub version: u32,
    pub point: SnapshotPoint,
    /// The source's connection string without user name or password.
    pub source: String,
    pub patterns: Vec<String>,
    /// `.bson.gz` and `.metadata.json.gz`, as `mongodump --gzip`.
    pub gzip: bool,
    pub collections: Vec<CollectionCount>,
    pub documents: u64,
    pub bytes: u64,
    /// RFC 3339 (UTC): when the last document was written.
    pub finished: String,
    /// When it was read, to the nanosecond (absent in snapshots made before it was written).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_clock: Option<ReadClock>,
    /// `values`: every string and binary value of the documents was replaced by the keyed hash
    /// the capture's `--redact values` used (docs/state.md, "Redacted snapshots").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redaction: Option<String>,
}

/// A collection's name as a file name: mongodump's escaping of `%` and `/` (and of a NUL, which no
/// collection holds), so a name cannot leave its database's folder.
pub fn escape_name(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        match c {
            '%' => out.push_str("%25"),
            '/' => out.push_str("%2F"),
            '\0' => out.push_str("%00"),
            c => out.push(c),
        }
    }
    out
}

/// The inverse of [`escape_name`] (any `%XX`); `None` for a malformed escape.
pub fn unescape_name(name: &str) -> Option<String> {
    let bytes = name.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        if bytes[at] == b'%' {
            let hex = name.get(at + 1..at + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            at += 3;
        } else {
            out.push(bytes[at]);
            at += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// `COLL.bson` or `COLL.bson.gz`.
pub fn data_file(coll: &str, gzip: bool) -> String {
    format!(
        "{}.bson{}",
        escape_name(coll),
        if gzip { ".gz" } else { "" }
    )
}

/// `COLL.metadata.json` or `COLL.metadata.json.gz`.
pub fn metadata_file(coll: &str, gzip: bool) -> String {
    format!(
        "{}.metadata.json{}",
        escape_name(coll),
        if gzip { ".gz" } else { "" }
    )
}

/// The collection a file of a database folder is the data or metadata of, and which; `None` for
/// any other file.
pub fn collection_of(file: &str) -> Option<(String, FileKind, bool)> {
    let (stem, gzip) = match file.strip_suffix(".gz") {
        Some(s) => (s, true),
        None => (file, false),
    };
    let (name, kind) = if let Some(n) = stem.strip_suffix(".metadata.json") {
        (n, FileKind::Metadata)
    } else if let Some(n) = stem.strip_suffix(".bson") {
        (n, FileKind::Data)
    } else {
        return None;
    };
    Some((unescape_name(name)?, kind, gzip))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    Data,
    Metadata,
}

/// A connection string without its user name and password (`mongodb://u:p@h/` -> `mongodb://h/`).
pub fn without_credentials(uri: &str) -> String {
    let Some((scheme, rest)) = uri.split_once("://") else {
        return uri.to_owned();
    };
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    match rest[..authority_end].rfind('@') {
        Some(at) => format!("{scheme}://{}", &rest[at + 1..]),
        None => uri.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_never_leave_their_folder() {
        for name in ["orders", "a/b", "100%", "x.y.z"] {
            let data = data_file(name, true);
            assert!(!data.contains('/'));
            assert_eq!(
                collection_of(&data),
                Some((name.to_owned(), FileKind::Data, true))
            );
            let meta = metadata_file(name, false);
            assert_eq!(
                collection_of(&meta),
                Some((name.to_owned(), FileKind::Metadata, false))
            );
        }
        assert_eq!(collection_of("notes.txt"), None);
        assert_eq!(unescape_name("bad%zz"), None);
    }

    #[test]
    fn credentials_are_left_out_of_the_source() {
        assert_eq!(
            without_credentials("mongodb://u:secret@h1,h2/db?replicaSet=rs"),
            "mongodb://h1,h2/db?replicaSet=rs"
        );
        assert_eq!(without_credentials("mongodb://h/"), "mongodb://h/");
    }
}
