//! What `mongotape import --json` prints: the import's figures, the ones its text gives, with
//! the section of the input's kind filled in and the others null
//! (`docs/schemas/import.schema.json`).

use super::mongod::RecordingRead;
use super::mongoreplay::OpsRead;
use super::tcp::TcpStats;
use super::{ImportSummary, PacketsRead, Skipped, SourceRead, Written};
use serde::Serialize;

/// The summary of one import as JSON.
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct ImportReport<'a> {
    #[schemars(extend("const" = crate::figures::SCHEMA_VERSION))]
    pub schema_version: u32,
    /// `packets` (pcap and pcapng), `mongoreplay` or `mongod_recording`.
    #[schemars(extend("enum" = ["packets", "mongoreplay", "mongod_recording"]))]
    pub format: &'static str,
    /// The inputs, in the order read.
    pub files: &'a [String],
    /// The capture written.
    pub out: String,
    pub written: &'a Written,
    /// Inputs damaged part-way (what came before the damage was imported), one sentence each; the
    /// exit status is then 3.
    pub damaged: &'a [String],
    pub packets: Option<Packets<'a>>,
    pub mongoreplay: Option<&'a OpsRead>,
    pub mongod: Option<Recording<'a>>,
}

/// Packet captures: packets read and left out, and what TCP reassembly met.
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Packets<'a> {
    pub packets: u64,
    pub tcp_segments: u64,
    pub skipped: &'a Skipped,
    /// Link types met that mongotape does not read.
    pub unknown_linktypes: &'a [String],
    pub tcp: &'a TcpStats,
}

/// mongod/mongos traffic recordings: the layout of each file and the checksums.
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Recording<'a> {
    pub packets: u64,
    pub messages: u64,
    pub session_events: u64,
    /// Sessions shown to be a member's, left out unless `--keep-internal`.
    pub internal_sessions: u64,
    pub internal_messages: u64,
    /// Each file read and the layout it was read with (`none fits` when none was).
    pub layouts: Vec<FileLayout<'a>>,
    /// Files whose CRC-32C matched `checksum.txt`.
    pub checksums_verified: u64,
    /// One sentence per file whose CRC-32C is not the one `checksum.txt` gives.
    pub checksum_mismatches: &'a [String],
    /// Files no `checksum.txt` line covers.
    pub unverified: &'a [String],
}

/// One recording file and the layout it was read with (`none fits` when none was).
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct FileLayout<'a> {
    pub file: &'a str,
    pub layout: &'a str,
}

impl ImportSummary {
    /// This summary as JSON, the capture written at `out`.
    pub fn report(&self, out: &std::path::Path) -> ImportReport<'_> {
        let (format, packets, mongoreplay, mongod) = match &self.read {
            SourceRead::Packets(p) => ("packets", Some(packets(p)), None, None),
            SourceRead::MongoReplay(ops) => ("mongoreplay", None, Some(ops), None),
            SourceRead::MongodRecording(r) => ("mongod_recording", None, None, Some(recording(r))),
        };
        ImportReport {
            schema_version: crate::figures::SCHEMA_VERSION,
            format,
            files: &self.files,
            out: out.display().to_string(),
            written: &self.written,
            damaged: &self.damaged,
            packets,
            mongoreplay,
            mongod,
        }
    }
}

fn packets(p: &PacketsRead) -> Packets<'_> {
    Packets {
        packets: p.packets,
        tcp_segments: p.tcp_segments,
        skipped: &p.skipped,
        unknown_linktypes: &p.unknown_linktypes,
        tcp: &p.tcp,
    }
}

fn recording(r: &RecordingRead) -> Recording<'_> {
    Recording {
        packets: r.packets,
        messages: r.messages,
        session_events: r.session_events,
        internal_sessions: r.internal_sessions,
        internal_messages: r.internal_messages,
        layouts: r
            .layouts
            .iter()
            .map(|entry| {
                let (file, layout) = entry.split_once(": ").unwrap_or(("", entry));
                FileLayout { file, layout }
            })
            .collect(),
        checksums_verified: r.checksums_verified,
        checksum_mismatches: &r.checksum_mismatches,
        unverified: &r.unverified,
    }
}
