//! `mongotape import`: other recordings in, one capture out. Everything else is in
//! `mongotape::import`.

use super::exit::{usage, Exit};
use clap::{Args, ValueEnum};
use mongotape::import::mongod::RecordingRead;
use mongotape::import::mongoreplay::OpsRead;
use mongotape::import::tcp::Bounds;
use mongotape::import::{
    self, ImportOptions, ImportSummary, OutputSpec, PacketsRead, ServerSpec, SourceRead,
};
use mongotape::redact::Redaction;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Args)]
pub struct ImportArgs {
    /// The recordings, read in this order as one capture: pcap or pcapng files (tcpdump,
    /// dumpcap, Wireshark), mongoreplay playback files (gzipped or not), or mongod/mongos
    /// traffic recordings (a recording directory, or one file of the older single-file layout).
    #[arg(required = true, num_args = 1.., value_name = "FILE")]
    files: Vec<PathBuf>,
    /// Write the capture here (refused if it exists, unless --force).
    #[arg(short, long, value_name = "OUT.mtape")]
    out: PathBuf,
    /// Replace an existing capture of the same name.
    #[arg(long)]
    force: bool,
    /// A server's port (repeatable): connections to it are imported, its side is the server.
    /// Without --server-port or --server: the side a SYN went to, else port 27017, else the
    /// side whose first message is a reply.
    #[arg(long, value_name = "PORT")]
    server_port: Vec<u16>,
    /// A server's address (repeatable), as --server-port but for one host.
    #[arg(long, value_name = "HOST:PORT")]
    server: Vec<SocketAddr>,
    /// Bytes held per direction of a connection while a segment is missing (reordered packets
    /// within it are put back in order; past it, the missing bytes are a gap), in KiB.
    #[arg(long, value_name = "KIB", default_value_t = 4096)]
    window: usize,
    /// Connections followed at once; past it the one silent the longest is let go (what it
    /// held is a gap, the connection counted as evicted).
    #[arg(long, value_name = "N", default_value_t = 65_536)]
    max_connections: usize,
    /// Bytes all connections hold between them while reassembling (segments held, messages
    /// being cut, 1 KiB per connection), in MiB; past it the one silent the longest is let go.
    #[arg(long, value_name = "MIB", default_value_t = 256)]
    reassembly_mb: usize,
    /// A connection silent this long, in capture time, is let go (seconds); a later segment of
    /// it starts a connection joined part-way.
    #[arg(long, value_name = "SECONDS", default_value_t = 1800)]
    flow_idle_timeout: u64,
    /// What the capture keeps: `credentials` removes authentication payloads and passwords
    /// (always, the default); `values` also replaces every string and binary value by a keyed
    /// hash of the same length.
    #[arg(long, value_enum, default_value = "credentials", value_name = "WHAT")]
    redact: RedactArg,
    /// mongod/mongos recordings: keep the deployment's internal traffic (members' sessions,
    /// replication's heartbeats and votes, oplog reads), which is left out and counted by default.
    #[arg(long)]
    keep_internal: bool,
    /// Print the summary as JSON instead of text (docs/schemas/import.schema.json); printed
    /// even with -q.
    #[arg(short, long)]
    json: bool,
    /// No summary on stdout (the global -q).
    #[arg(skip)]
    pub quiet: bool,
}

#[derive(Clone, Copy, ValueEnum)]
enum RedactArg {
    Credentials,
    Values,
}

pub fn run(args: ImportArgs) -> anyhow::Result<ExitCode> {
    mongotape::capture::output::guard(&args.files, &[Some(&args.out)])?;
    let reassembly = reassembly_bounds(&args)?;
    let opts = ImportOptions {
        servers: ServerSpec {
            ports: args.server_port,
            addrs: args.server.clone(),
        },
        reassembly,
        output: OutputSpec {
            path: args.out.clone(),
            force: args.force,
            zstd_level: mongotape::capture::writer::DEFAULT_LEVEL,
            redaction: match args.redact {
                RedactArg::Credentials => Redaction::Credentials,
                RedactArg::Values => Redaction::Values,
            },
            upstream: args
                .server
                .first()
                .map(|a| a.to_string())
                .unwrap_or_default(),
            source: String::new(),
        },
        files: args.files,
        keep_internal: args.keep_internal,
    };
    let summary = import::import(&opts)?;
    if args.json {
        super::output::json(&summary.report(&args.out))?;
    } else if !args.quiet {
        super::output::text(&render(&summary, &args.out))?;
    }
    Ok(if summary.damaged.is_empty() {
        Exit::Ok
    } else {
        Exit::DamagedCapture
    }
    .into())
}

fn render(s: &ImportSummary, out: &std::path::Path) -> String {
    let mut text = match &s.read {
        SourceRead::Packets(p) => render_packets(s, p, out),
        SourceRead::MongoReplay(m) => render_playback(s, m, out),
        SourceRead::MongodRecording(r) => render_recording(s, r, out),
    };
    for d in &s.damaged {
        text.push_str(&format!("damaged: {d}\n"));
    }
    text
}

fn render_playback(s: &ImportSummary, m: &OpsRead, out: &std::path::Path) -> String {
    let w = &s.written;
    format!(
        "imported {} mongoreplay operations from {} file(s) into {}\n\
         connections: {}; messages: {} ({} bytes), {} credentials redacted\n\
         replies mongoreplay shortened to their first document: {}; not whole messages (gaps): {}\n",
        m.ops,
        s.files.len(),
        out.display(),
        w.connections,
        w.messages,
        w.wire_bytes,
        w.redacted_messages,
        m.shortened_replies,
        m.not_messages,
    )
}

fn render_packets(s: &ImportSummary, p: &PacketsRead, out: &std::path::Path) -> String {
    let (w, t) = (&s.written, &p.tcp);
    let mut text = format!(
        "imported {} packets ({} TCP segments) from {} file(s) into {}\n\
         connections: {} ({} left out: no server named at either end)\n\
         messages: {} ({} bytes), {} credentials redacted\n\
         gaps: {} ({} messages, {} bytes lost); {} sequence holes, {} segments cut by the snaplen\n\
         TCP: {} retransmitted, {} overlapping, {} out of order\n",
        p.packets,
        p.tcp_segments,
        s.files.len(),
        out.display(),
        w.connections,
        t.ignored_connections,
        w.messages,
        w.wire_bytes,
        w.redacted_messages,
        w.gap_records,
        w.dropped_messages,
        w.dropped_bytes,
        t.holes,
        t.truncated,
        t.retransmitted,
        t.overlapping,
        t.out_of_order,
    );
    text.push_str(&reassembly_lines(t));
    let k = &p.skipped;
    if k.not_tcp + k.ip_fragments + k.malformed + k.unknown_linktype > 0 {
        text.push_str(&format!(
            "skipped packets: {} not TCP, {} IP fragments, {} malformed, {} of an unknown link type{}\n",
            k.not_tcp,
            k.ip_fragments,
            k.malformed,
            k.unknown_linktype,
            if p.unknown_linktypes.is_empty() {
                String::new()
            } else {
                format!(" ({})", p.unknown_linktypes.join(", "))
            }
        ));
    }
    text
}

fn render_recording(s: &ImportSummary, r: &RecordingRead, out: &std::path::Path) -> String {
    let w = &s.written;
    let mut text = format!(
        "imported {} packets of mongod traffic recordings from {} input(s) into {}\n",
        r.packets,
        s.files.len(),
        out.display()
    );
    // One line per layout met, with the files that have it (a directory has many).
    let mut layouts: Vec<(&str, Vec<&str>)> = Vec::new();
    for entry in &r.layouts {
        let (file, layout) = entry.split_once(": ").unwrap_or(("", entry));
        match layouts.iter_mut().find(|(l, _)| *l == layout) {
            Some((_, files)) => files.push(file),
            None => layouts.push((layout, vec![file])),
        }
    }
    for (layout, files) in &layouts {
        let which = match files.as_slice() {
            [one] => one.to_string(),
            [first, .., last] => format!("{} files, {first} to {last}", files.len()),
            [] => String::new(),
        };
        text.push_str(&format!("layout: {layout}: {which}\n"));
    }
    text.push_str(&format!(
        "checksums: {} verified, {} mismatched, {} not verified\n",
        r.checksums_verified,
        r.checksum_mismatches.len(),
        r.unverified.len()
    ));
    for u in &r.unverified {
        text.push_str(&format!("not verified: {u}\n"));
    }
    text.push_str(&format!(
        "connections: {}; messages: {} ({} bytes), {} credentials redacted; session events: {}\n\
         internal traffic left out: {} sessions, {} messages (--keep-internal keeps it)\n",
        w.connections,
        w.messages,
        w.wire_bytes,
        w.redacted_messages,
        r.session_events,
        r.internal_sessions,
        r.internal_messages,
    ));
    text
}

/// The reassembly's bounds from the options, each checked against its range.
fn reassembly_bounds(args: &ImportArgs) -> anyhow::Result<Bounds> {
    if args.window == 0 || args.window > 1024 * 1024 {
        return Err(usage("--window must be between 1 and 1048576 KiB"));
    }
    if args.max_connections == 0 || args.max_connections > 100_000_000 {
        return Err(usage("--max-connections must be between 1 and 100000000"));
    }
    if args.reassembly_mb == 0 || args.reassembly_mb > 1 << 20 {
        return Err(usage("--reassembly-mb must be between 1 and 1048576 MiB"));
    }
    if args.flow_idle_timeout == 0 || args.flow_idle_timeout > 365 * 86_400 {
        return Err(usage(
            "--flow-idle-timeout must be between 1 and 31536000 seconds",
        ));
    }
    Ok(Bounds {
        window: args.window * 1024,
        max_flows: args.max_connections,
        max_bytes: args.reassembly_mb << 20,
        idle_ns: args.flow_idle_timeout * 1_000_000_000,
    })
}

/// What the reassembly's bounds let go and the TLS connections it left out, when any.
fn reassembly_lines(t: &mongotape::import::tcp::TcpStats) -> String {
    let mut out = String::new();
    if t.expired + t.evicted + t.out_of_window > 0 {
        out.push_str(&format!(
            "reassembly bounds: {} connections let go idle, {} evicted (--max-connections, \
             --reassembly-mb); {} segments too far ahead dropped\n",
            t.expired, t.evicted, t.out_of_window
        ));
    }
    if t.tls_connections > 0 {
        out.push_str(&format!(
            "TLS: {} connections left out (encrypted, nothing of them written): {}{}\n",
            t.tls_connections,
            t.tls.join(", "),
            if t.tls_connections > t.tls.len() as u64 {
                ", ..."
            } else {
                ""
            }
        ));
    }
    out
}
