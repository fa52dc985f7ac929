//! `mongotape import`: captures made from other recordings of MongoDB traffic, written as
//! ordinary captures (every other subcommand reads them unchanged).
//!
//! `pcap` reads pcap and pcapng files and each packet's layers (and `live` the stream tcpdump
//! writes for `record --interface`, which stops as the proxy does and feeds the proxy's metrics
//! through `meter`); `tcp` puts connections back together (mongotape's own
//! reassembly) and cuts them into whole messages; `output` writes the capture in the recorder's
//! vocabulary. `mongoreplay` reads playback files and `mongod` the server's own traffic
//! recordings. See `docs/import.md`.
//!
//! Layers, bottom up: counts error < input < pcap < tcp < output < meter mongod mongoreplay < mod.rs < live report < text

mod counts;
pub mod error;
pub mod input;
pub mod live;
pub mod meter;
pub mod mongod;
pub mod mongoreplay;
pub mod output;
pub mod pcap;
pub mod report;
pub mod tcp;
pub mod text;

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
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Skipped {
    pub not_tcp: u64,
    pub ip_fragments: u64,
    pub malformed: u64,
    pub unknown_linktype: u64,
}

/// What an import read and wrote.
#[derive(Debug, Clone)]
pub struct ImportSummary {
    pub files: Vec<String>,
    pub written: Written,
    /// Input files damaged part-way: what was before the damage was imported.
    pub damaged: Vec<String>,
    /// What the inputs of their kind held.
    pub read: SourceRead,
}

/// What was read, one variant per kind of input.
#[derive(Debug, Clone)]
pub enum SourceRead {
    /// pcap and pcapng files (and `record --interface`).
    Packets(PacketsRead),
    /// mongoreplay playback files: what their `RecordedOp`s held.
    MongoReplay(mongoreplay::OpsRead),
    /// mongod/mongos traffic recordings: layouts, checksums, internal traffic left out.
    MongodRecording(mongod::RecordingRead),
}

/// Packet captures: packets read and left out, and what TCP reassembly met.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PacketsRead {
    pub packets: u64,
    pub tcp_segments: u64,
    pub skipped: Skipped,
    /// Link types met that mongotape does not read.
    pub unknown_linktypes: Vec<String>,
    pub tcp: TcpStats,
}

/// The input formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Pcap,
    PcapNg,
    MongoReplay,
    /// A mongod/mongos traffic recording: a directory of `*.bin` files or one file.
    MongodRecording,
    /// Standard input: a pcap or pcapng piped in (which of the two, its first block says).
    Piped,
}

impl Format {
    pub fn name(self) -> &'static str {
        match self {
            Format::Pcap => "pcap",
            Format::PcapNg => "pcapng",
            Format::MongoReplay => "mongoreplay",
            Format::MongodRecording => "mongod recording",
            Format::Piped => "packets from standard input",
        }
    }

    fn is_packets(self) -> bool {
        matches!(self, Format::Pcap | Format::PcapNg | Format::Piped)
    }
}

/// The format of a file by its first bytes (a directory is a server's traffic recording).
pub fn detect(path: &Path) -> Result<Format, ImportError> {
    if input::is_stdin(path) {
        return Ok(Format::Piped);
    }
    if path.is_dir() {
        return Ok(Format::MongodRecording);
    }
    let mut head = [0u8; 64];
    let mut file = input::open(path)?;
    let n = file.read(&mut head).map_err(|source| ImportError::Open {
        path: path.to_owned(),
        source,
    })?;
    format_of(path, &head[..n])
}

/// Whether `path` opens as a mongotape capture (zstd holding the capture's file header).
fn is_capture(path: &Path) -> bool {
    std::fs::File::open(path)
        .ok()
        .is_some_and(|f| crate::capture::CaptureReader::new(std::io::BufReader::new(f)).is_ok())
}

/// The format of a file by its first bytes.
fn format_of(path: &Path, head: &[u8]) -> Result<Format, ImportError> {
    match head.get(..4) {
        Some([0x0a, 0x0d, 0x0d, 0x0a]) => Ok(Format::PcapNg),
        Some([0xd4, 0xc3, 0xb2, 0xa1] | [0xa1, 0xb2, 0xc3, 0xd4]) => Ok(Format::Pcap),
        Some([0x4d, 0x3c, 0xb2, 0xa1] | [0xa1, 0xb2, 0x3c, 0x4d]) => Ok(Format::Pcap),
        _ if mongoreplay::looks_like(head) => Ok(Format::MongoReplay),
        _ if mongod::looks_like(head) => Ok(Format::MongodRecording),
        Some([0x28, 0xb5, 0x2f, 0xfd]) if is_capture(path) => Err(ImportError::UnknownFormat {
            path: path.to_owned(),
            what: "it is a mongotape capture already: read it with `mongotape inspect` or \
                   `mongotape cat`, cut it with `mongotape slice`"
                .into(),
        }),
        _ => Err(ImportError::UnknownFormat {
            path: path.to_owned(),
            what: format!(
                "it starts with bytes {}; pcap, pcapng, mongoreplay playback files and mongod \
                 traffic recordings are read",
                head.iter()
                    .take(8)
                    .map(|b| format!("{b:02x}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            ),
        }),
    }
}

/// Packets into connections into a capture: the packet side of an import.
pub struct PacketImport {
    tcp: Reassembler,
    pub output: output::Output,
    pub read: PacketsRead,
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
            read: PacketsRead::default(),
            first_ts: None,
            last_ts: 0,
        }
    }

    /// One packet of a file.
    pub fn packet(&mut self, p: &pcap::Packet<'_>) -> Result<(), ImportError> {
        self.read.packets += 1;
        if self.first_ts.is_none() {
            self.first_ts = Some(p.ts_ns);
            if self.output.starts_at_first_packet() {
                self.output.begin(p.ts_ns)?;
            }
        }
        self.last_ts = self.last_ts.max(p.ts_ns);
        let seg = match link::segment(p.linktype, p.data, p.orig_len) {
            Ok(seg) => seg,
            Err(skip) => {
                self.skip(skip, p.linktype);
                return Ok(());
            }
        };
        self.read.tcp_segments += 1;
        self.tcp.segment(&seg, p.ts_ns, &mut self.output)
    }

    fn skip(&mut self, skip: Skip, linktype: i32) {
        let s = &mut self.read.skipped;
        match skip {
            Skip::NotTcp => s.not_tcp += 1,
            Skip::Fragment => s.ip_fragments += 1,
            Skip::Malformed => s.malformed += 1,
            Skip::Linktype => {
                s.unknown_linktype += 1;
                let name = pcap::linktype_name(linktype);
                if !self.read.unknown_linktypes.contains(&name) {
                    self.read.unknown_linktypes.push(name);
                }
            }
        }
    }

    /// The latest packet time seen.
    pub fn last_ts(&self) -> u64 {
        self.last_ts
    }

    /// Every connection still open ends; the capture gets its `end` record.
    pub fn finish(mut self) -> Result<(PacketsRead, Written), ImportError> {
        let ts = self.last_ts;
        self.tcp.finish(ts, &mut self.output)?;
        let start = self.first_ts.unwrap_or(0);
        self.read.tcp = self.tcp.stats().clone();
        let written = self.output.finish(start)?;
        Ok((self.read, written))
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
        Format::Pcap | Format::PcapNg | Format::Piped => import_packets(opts, output),
        Format::MongoReplay => import_playback(opts, output),
        Format::MongodRecording => import_recordings(opts, output),
    }
}

fn import_packets(opts: &ImportOptions, output: OutputSpec) -> Result<ImportSummary, ImportError> {
    let mut run = PacketImport::new(opts.servers.clone(), opts.reassembly, output);
    let (mut files, mut damaged) = (Vec::new(), Vec::new());
    for path in &opts.files {
        files.push(path.display().to_string());
        match pcap::read_file(path, &mut |p| run.packet(p)) {
            Ok(_) => {}
            Err(e) if e.is_damage() => {
                tracing::warn!("{e}; the packets before it were imported");
                damaged.push(e.to_string());
            }
            Err(e) => return Err(e),
        }
    }
    let (read, written) = run.finish()?;
    Ok(ImportSummary {
        files,
        written,
        damaged,
        read: SourceRead::Packets(read),
    })
}

fn import_playback(opts: &ImportOptions, output: OutputSpec) -> Result<ImportSummary, ImportError> {
    let mut out = output::Output::new(output);
    let mut read = mongoreplay::OpsRead::default();
    let (mut files, mut damaged) = (Vec::new(), Vec::new());
    for (i, path) in opts.files.iter().enumerate() {
        files.push(path.display().to_string());
        match mongoreplay::read_file(path, &mut out, (i as u64) << 40, &mut read) {
            Ok(()) => {}
            Err(e) if e.is_damage() => {
                tracing::warn!("{e}; the operations before it were imported");
                damaged.push(e.to_string());
            }
            Err(e) => return Err(e),
        }
    }
    Ok(ImportSummary {
        files,
        written: out.finish(0)?,
        damaged,
        read: SourceRead::MongoReplay(read),
    })
}

fn import_recordings(
    opts: &ImportOptions,
    output: OutputSpec,
) -> Result<ImportSummary, ImportError> {
    let mut out = output::Output::new(output);
    let mut read = mongod::RecordingRead::default();
    let (mut files, mut damaged) = (Vec::new(), Vec::new());
    for (i, path) in opts.files.iter().enumerate() {
        files.push(path.display().to_string());
        let base = (i as u64) << 48;
        mongod::read_input(
            path,
            &mut out,
            base,
            opts.keep_internal,
            &mut read,
            &mut damaged,
        )?;
    }
    Ok(ImportSummary {
        files,
        written: out.finish(0)?,
        damaged,
        read: SourceRead::MongodRecording(read),
    })
}
