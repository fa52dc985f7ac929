//! `mongotape import`: captures made from other recordings of MongoDB traffic, written as
//! ordinary captures (every other subcommand reads them unchanged).
//!
//! `pcap` reads pcap and pcapng files and each packet's layers (and `live` the stream tcpdump
//! writes for `record --interface`); `tcp` puts connections back together (mongotape's own
//! reassembly) and cuts them into whole messages; `output` writes the capture in the recorder's
//! vocabulary. `mongoreplay` reads playback files and `mongod` the server's own traffic
//! recordings. See `docs/import.md`.

pub mod error;
pub mod live;
pub mod mongod;
pub mod mongoreplay;
pub mod output;
pub mod pcap;
pub mod report;
pub mod tcp;

pub use error::ImportError;
pub use output::{OutputSpec, Written};
pub use tcp::role::ServerSpec;

use pcap::link::{self, Skip};
use serde::Serialize;
use std::io::Read;
use std::path::{Path, PathBuf};
use tcp::{Reassembler, TcpStats};

/// What to import and how.
#[derive(Debug, Clone)]
pub struct ImportOptions {
    pub files: Vec<PathBuf>,
    pub servers: ServerSpec,
    /// The reassembly's bounds (per direction and over all connections).
    pub reassembly: tcp::Bounds,
    pub output: OutputSpec,
    /// Keep a server recording's internal traffic (replication, heartbeats, members' sessions).
    pub keep_internal: bool,
}

/// Packets left out, by why.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Skipped {
    pub not_tcp: u64,
    pub ip_fragments: u64,
    pub malformed: u64,
    pub unknown_linktype: u64,
}

/// What an import read and wrote.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ImportSummary {
    /// What was read: `packets`, `mongoreplay` or `mongod_recording`.
    pub format: &'static str,
    pub files: Vec<String>,
    pub packets: u64,
    pub tcp_segments: u64,
    pub skipped: Skipped,
    pub tcp: TcpStats,
    pub written: Written,
    /// Input files damaged part-way: what was before the damage was imported.
    pub damaged: Vec<String>,
    /// Link types met that mongotape does not read.
    pub unknown_linktypes: Vec<String>,
    /// mongoreplay playback files: what their `RecordedOp`s held.
    pub mongoreplay: mongoreplay::OpsRead,
    /// mongod/mongos traffic recordings: layouts, checksums, internal traffic left out.
    pub mongod: mongod::RecordingRead,
}

/// The input formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Pcap,
    PcapNg,
    MongoReplay,
    /// A mongod/mongos traffic recording: a directory of `*.bin` files or one file.
    MongodRecording,
}

impl Format {
    pub fn name(self) -> &'static str {
        match self {
            Format::Pcap => "pcap",
            Format::PcapNg => "pcapng",
            Format::MongoReplay => "mongoreplay",
            Format::MongodRecording => "mongod recording",
        }
    }

    fn is_packets(self) -> bool {
        matches!(self, Format::Pcap | Format::PcapNg)
    }
}

/// The format of a file by its first bytes (a directory is a server's traffic recording).
pub fn detect(path: &Path) -> Result<Format, ImportError> {
    if path.is_dir() {
        return Ok(Format::MongodRecording);
    }
    let mut head = [0u8; 64];
    let mut file = std::fs::File::open(path).map_err(|source| ImportError::Open {
        path: path.to_owned(),
        source,
    })?;
    let n = file.read(&mut head).map_err(|source| ImportError::Open {
        path: path.to_owned(),
        source,
    })?;
    let head = &head[..n];
    match head.get(..4) {
        Some([0x0a, 0x0d, 0x0d, 0x0a]) => Ok(Format::PcapNg),
        Some([0xd4, 0xc3, 0xb2, 0xa1] | [0xa1, 0xb2, 0xc3, 0xd4]) => Ok(Format::Pcap),
        Some([0x4d, 0x3c, 0xb2, 0xa1] | [0xa1, 0xb2, 0x3c, 0x4d]) => Ok(Format::Pcap),
        _ if mongoreplay::looks_like(head) => Ok(Format::MongoReplay),
        _ if mongod::looks_like(head) => Ok(Format::MongodRecording),
        _ => Err(ImportError::UnknownFormat {
            path: path.to_owned(),
            what: format!(
                "it starts with {:02x?}; pcap, pcapng, mongoreplay playback files and mongod \
                 traffic recordings are read",
                &head[..head.len().min(8)]
            ),
        }),
    }
}

/// Packets into connections into a capture: the packet side of an import.
pub struct PacketImport {
    tcp: Reassembler,
    pub output: output::Output,
    pub summary: ImportSummary,
    first_ts: Option<u64>,
    last_ts: u64,
}

impl PacketImport {
    pub fn new(servers: ServerSpec, bounds: tcp::Bounds, output: OutputSpec) -> PacketImport {
        PacketImport::with_output(servers, bounds, output::Output::new(output))
    }

    /// Packets into an output made by the caller (one that rotates and ends: `live`).
    pub fn with_output(
        servers: ServerSpec,
        bounds: tcp::Bounds,
        output: output::Output,
    ) -> PacketImport {
        PacketImport {
            tcp: Reassembler::new(servers, bounds),
            output,
            summary: ImportSummary {
                format: "packets",
                ..ImportSummary::default()
            },
            first_ts: None,
            last_ts: 0,
        }
    }

    /// One packet of a file.
    pub fn packet(&mut self, p: &pcap::Packet<'_>) -> Result<(), ImportError> {
        self.summary.packets += 1;
        if self.first_ts.is_none() {
            self.first_ts = Some(p.ts_ns);
            self.output.begin(p.ts_ns)?;
        }
        self.last_ts = self.last_ts.max(p.ts_ns);
        let seg = match link::segment(p.linktype, p.data, p.orig_len) {
            Ok(seg) => seg,
            Err(skip) => {
                self.skip(skip, p.linktype);
                return Ok(());
            }
        };
        self.summary.tcp_segments += 1;
        self.tcp.segment(&seg, p.ts_ns, &mut self.output)
    }

    fn skip(&mut self, skip: Skip, linktype: i32) {
        let s = &mut self.summary.skipped;
        match skip {
            Skip::NotTcp => s.not_tcp += 1,
            Skip::Fragment => s.ip_fragments += 1,
            Skip::Malformed => s.malformed += 1,
            Skip::Linktype => {
                s.unknown_linktype += 1;
                let name = pcap::linktype_name(linktype);
                if !self.summary.unknown_linktypes.contains(&name) {
                    self.summary.unknown_linktypes.push(name);
                }
            }
        }
    }

    /// The latest packet time seen.
    pub fn last_ts(&self) -> u64 {
        self.last_ts
    }

    /// Every connection still open ends; the capture gets its `end` record.
    pub fn finish(mut self) -> Result<ImportSummary, ImportError> {
        let ts = self.last_ts;
        self.tcp.finish(ts, &mut self.output)?;
        let start = self.first_ts.unwrap_or(0);
        self.summary.tcp = self.tcp.stats().clone();
        self.summary.written = self.output.finish(start)?;
        Ok(self.summary)
    }
}

/// Imports `opts.files`, in order, as one capture: packet captures (one stream of packets,
/// a connection going on from one file into the next), or mongoreplay playback files. A file
/// damaged part-way is imported up to the damage and named in the summary; any other error ends
/// the import.
pub fn import(opts: &ImportOptions) -> Result<ImportSummary, ImportError> {
    let mut formats = Vec::new();
    for path in &opts.files {
        formats.push(detect(path)?);
    }
    let packets = formats.iter().all(|f| f.is_packets());
    if formats.iter().any(|f| *f != formats[0]) && !packets {
        return Err(ImportError::UnknownFormat {
            path: opts.files[0].clone(),
            what: "packet captures, mongoreplay files and mongod recordings cannot be imported \
                   together"
                .into(),
        });
    }
    let mut output = opts.output.clone();
    if output.source.is_empty() {
        let names: Vec<String> = opts.files.iter().map(|p| p.display().to_string()).collect();
        output.source = format!("{}: {}", formats[0].name(), names.join(", "));
    }
    match formats[0] {
        _ if packets => import_packets(opts, output),
        Format::MongodRecording => import_recordings(opts, output),
        _ => import_playback(opts, output),
    }
}

fn import_packets(opts: &ImportOptions, output: OutputSpec) -> Result<ImportSummary, ImportError> {
    let mut run = PacketImport::new(opts.servers.clone(), opts.reassembly, output);
    for path in &opts.files {
        run.summary.files.push(path.display().to_string());
        match pcap::read_file(path, &mut |p| run.packet(p)) {
            Ok(_) => {}
            Err(e) if e.is_damage() => {
                tracing::warn!("{e}; the packets before it were imported");
                run.summary.damaged.push(e.to_string());
            }
            Err(e) => return Err(e),
        }
    }
    run.finish()
}

fn import_playback(opts: &ImportOptions, output: OutputSpec) -> Result<ImportSummary, ImportError> {
    let mut out = output::Output::new(output);
    let mut summary = ImportSummary {
        format: "mongoreplay",
        ..ImportSummary::default()
    };
    for (i, path) in opts.files.iter().enumerate() {
        summary.files.push(path.display().to_string());
        let read = &mut summary.mongoreplay;
        match mongoreplay::read_file(path, &mut out, (i as u64) << 40, read) {
            Ok(()) => {}
            Err(e) if e.is_damage() => {
                tracing::warn!("{e}; the operations before it were imported");
                summary.damaged.push(e.to_string());
            }
            Err(e) => return Err(e),
        }
    }
    summary.written = out.finish(0)?;
    Ok(summary)
}

fn import_recordings(
    opts: &ImportOptions,
    output: OutputSpec,
) -> Result<ImportSummary, ImportError> {
    let mut out = output::Output::new(output);
    let mut summary = ImportSummary {
        format: "mongod_recording",
        ..ImportSummary::default()
    };
    for (i, path) in opts.files.iter().enumerate() {
        summary.files.push(path.display().to_string());
        let base = (i as u64) << 48;
        let (read, damaged) = (&mut summary.mongod, &mut summary.damaged);
        mongod::read_input(path, &mut out, base, opts.keep_internal, read, damaged)?;
    }
    summary.written = out.finish(0)?;
    Ok(summary)
}
