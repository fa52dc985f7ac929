//! `mongotape import`: other recordings in, one capture out. Everything else is in
//! `mongotape::import`.

use super::exit::{usage, Exit};
use super::redact::RedactArg;
use clap::Args;
use mongotape::import::tcp::Bounds;
use mongotape::import::{self, ImportOptions, OutputSpec, ServerSpec};
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
    #[command(flatten)]
    redact: RedactArg,
    /// mongod/mongos recordings: keep the deployment's internal traffic (members' sessions,
    /// replication's heartbeats and votes, oplog reads), which is left out and counted by default.
    #[arg(long)]
    keep_internal: bool,
    /// Packet captures: leave out the proxy's own topology probes (the `hello`s it sends the
    /// upstream on connections of its own, seen in a capture taken on its host), which are
    /// kept by default under the application name `mongotape topology probe`; the capture then
    /// starts with the first connection kept.
    #[arg(long)]
    skip_probes: bool,
    /// Print the summary as JSON instead of text (docs/schemas/import.schema.json); printed
    /// even with -q.
    #[arg(short, long)]
    json: bool,
    /// No summary on stdout (the global -q).
    #[arg(skip)]
    pub quiet: bool,
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
            redaction: args.redact.redaction(),
            upstream: args
                .server
                .first()
                .map(|a| a.to_string())
                .unwrap_or_default(),
            source: String::new(),
            skip_probes: args.skip_probes,
        },
        files: args.files,
        keep_internal: args.keep_internal,
    };
    let summary = import::import(&opts)?;
    if args.json {
        super::output::json(&summary.report(&args.out))?;
    } else if !args.quiet {
        super::output::text(&summary.text(&args.out, args.skip_probes))?;
    }
    Ok(if summary.damaged.is_empty() {
        Exit::Ok
    } else {
        Exit::DamagedCapture
    }
    .into())
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
