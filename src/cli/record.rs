use super::faults::FaultArgs;
use super::output::note;
use super::redact::RedactArg;
use anyhow::Context;
use clap::Args;
use mongotape::capture::{CaptureError, SegmentPlan};
use mongotape::figures::units::parse_duration;
use mongotape::metrics::MetricsServer;
use mongotape::net::{ConnString, ServerTls};
use mongotape::proxy::limits::Limits;
use mongotape::proxy::shutdown::Signals;
use mongotape::proxy::{Proxy, ProxyConfig, ProxyError, StatusMode};
use mongotape::state::{Manifest, NsPattern, SnapshotOptions, StateError};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

#[derive(Args)]
pub struct RecordArgs {
    /// Where to accept clients. One address is a base: each member of a replica set gets the
    /// next port (port 0: an ephemeral port each). Several addresses (comma-separated or the
    /// option repeated): one per member, in the order the set lists them. MEMBER=LISTEN pairs: each
    /// member its own address.
    /// Examples: `127.0.0.1:27018`; `0.0.0.0:27018,0.0.0.0:27019,0.0.0.0:27020`;
    /// `db0.internal:27017=0.0.0.0:27018,db1.internal:27017=0.0.0.0:27019`.
    #[arg(short, long, default_value = "127.0.0.1:27018", value_delimiter = ',', num_args = 1..)]
    listen: Vec<String>,
    /// The deployment to forward to: `host:port`, a MongoDB connection string (several hosts,
    /// replicaSet, directConnection, tls, tlsCAFile, tlsCertificateKeyFile,
    /// tlsAllowInvalidHostnames, tlsAllowInvalidCertificates, ...) or `mongodb+srv://`.
    /// A replica set is discovered and every member served (directConnection=true: one server,
    /// hello replies untouched). Examples: `127.0.0.1:27017`;
    /// `mongodb://db0:27017,db1:27017/?replicaSet=rs0&tls=true&tlsCAFile=/etc/ssl/ca.pem`;
    /// `mongodb+srv://cluster0.example.net/`.
    #[arg(short, long, default_value = "127.0.0.1:27017")]
    pub(super) upstream: String,
    /// Host name clients are told in rewritten hello replies (default: each listener's own
    /// address; the machine's name for 0.0.0.0). Example: `--advertise-host proxy.internal`.
    #[arg(long)]
    advertise_host: Option<String>,
    /// Accept clients over TLS with this PEM certificate (chain). Needs --tls-key.
    /// Example: `--tls-cert /etc/mongotape/proxy.pem --tls-key /etc/mongotape/proxy-key.pem`.
    #[arg(long, requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// The PEM private key of --tls-cert.
    #[arg(long, requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// Require client certificates signed by this PEM CA (needs --tls-cert).
    /// Example: `--tls-ca /etc/mongotape/clients-ca.pem`.
    #[arg(long, requires = "tls_cert")]
    tls_ca: Option<PathBuf>,
    /// Seconds between two looks at the upstream's topology (new members get a listener).
    #[arg(long, default_value = "10", value_parser = parse_duration, value_name = "SECS")]
    topology_interval_secs: Duration,
    /// Capture file to write (created readable by its owner only; an existing file is refused
    /// unless --force). With rotation, segments are numbered after it: trace-000001.mtape, ...
    #[arg(short, long)]
    pub(super) out: Option<PathBuf>,
    /// Replace an existing capture (or segments) of the same name.
    #[arg(long, requires = "out")]
    pub(super) force: bool,
    #[command(flatten)]
    pub(super) redact: RedactArg,
    /// End the recording after this long (e.g. 90s, 10m, 1h; a number is seconds). The capture
    /// is closed; the proxy keeps forwarding until it is stopped.
    #[arg(short, long, requires = "out", value_parser = parse_duration, value_name = "DURATION")]
    duration: Option<Duration>,
    /// End the recording once the capture holds this many MB on disk (all segments). The proxy
    /// keeps forwarding.
    #[arg(long, requires = "out", value_name = "MB")]
    max_size: Option<f64>,
    /// Start a new numbered segment once the current one holds this many MB on disk.
    #[arg(long, requires = "out", value_name = "MB")]
    rotate_size: Option<f64>,
    /// Start a new numbered segment this often (e.g. 15m).
    #[arg(long, requires = "out", value_parser = parse_duration, value_name = "DURATION")]
    rotate_every: Option<Duration>,
    /// Relay only, record nothing (to measure the proxy itself).
    #[arg(long, conflicts_with = "out")]
    pub(super) no_record: bool,
    /// zstd level for the capture (1 is fast and ~10x on wire traffic).
    #[arg(long, default_value_t = 1)]
    pub(super) zstd_level: i32,
    /// Memory the recorder queue may hold before messages are dropped (and marked in the capture).
    #[arg(long, default_value_t = 256)]
    max_queue_mb: usize,
    #[command(flatten)]
    limits: Box<LimitArgs>,
    /// No periodic status line on stderr (the global -q).
    #[arg(skip)]
    pub quiet: bool,
    /// Serve live metrics in the Prometheus text format on http://ADDR/metrics: connections,
    /// messages and bytes per direction, requests and latency per command, error replies, the
    /// recorder's queue and drops, capture bytes and segments. Example: `--metrics 127.0.0.1:9216`
    /// (`0.0.0.0:9216` for a scraper on another machine). See docs/production.md, "Metrics".
    #[arg(long, value_name = "ADDR")]
    pub(super) metrics: Option<String>,
    #[command(flatten)]
    pub(super) faults: FaultArgs,
    /// Record by sniffing the packets that cross this network interface (`lo`, `eth0`, `any`)
    /// instead of proxying: no change to the application, no hop. Runs tcpdump (libpcap), so it
    /// needs root or CAP_NET_RAW; TLS traffic cannot be read this way (use the proxy, or the
    /// server's own traffic recording). Rotation, limits and redaction as when proxying.
    /// Example: `--interface eth0 --server-port 27017`. See docs/import.md, "Live sniffing".
    #[arg(long, value_name = "IFACE", requires = "out",
          conflicts_with_all = ["no_record", "tls_cert", "advertise_host", "listen", "upstream",
                                "threads", "max_queue_mb", "topology_interval_secs", "snapshot"])]
    pub(super) interface: Option<String>,
    /// With --interface: a server's port (repeatable; default 27017). Its side of each
    /// connection is the server's.
    #[arg(long, value_name = "PORT", requires = "interface")]
    pub(super) server_port: Vec<u16>,
    /// With --interface: the kernel's capture buffer in KiB (tcpdump -B); a larger one drops
    /// fewer packets in bursts.
    #[arg(
        long,
        value_name = "KIB",
        default_value_t = 32768,
        requires = "interface"
    )]
    pub(super) sniff_buffer: usize,
    /// Snapshot the namespaces matching PATTERN (`DB.*` or `DB.COLLECTION`; repeatable) on the
    /// upstream as recording starts, at one cluster time T0, into OUT.snapshot/ in mongodump's
    /// layout; T0 goes into the capture (`inspect` shows it). Recording does not wait for it.
    /// Example: `--snapshot 'shop.*'`. See docs/state.md.
    #[arg(long, value_name = "PATTERN", requires = "out")]
    pub(super) snapshot: Vec<String>,
    /// Threads forwarding traffic (the recorder has its own thread besides).
    #[arg(long, default_value_t = 1)]
    threads: usize,
}

/// The proxy's bounds on memory and time (docs/reliability.md).
#[derive(Args)]
struct LimitArgs {
    /// Memory all connections together may hold in unfinished messages. Beyond it, connections
    /// in the middle of a message stop being read (back-pressure); one that holds more than its
    /// share for --buffer-wait is closed, with a log line naming the client.
    #[arg(long, default_value_t = 256, value_name = "MB")]
    max_buffer_mb: usize,
    /// How long a connection holding more than its share of --max-buffer-mb may wait.
    #[arg(long, default_value = "10s", value_parser = parse_duration, value_name = "DURATION")]
    buffer_wait: Duration,
    /// How long connecting to the upstream may take [default: the connection string's
    /// connectTimeoutMS, else 10s].
    #[arg(long, value_parser = parse_duration, value_name = "DURATION")]
    connect_timeout: Option<Duration>,
    /// Cut a connection whose upstream owes a reply and sends nothing for this long (off by
    /// default: some commands legitimately run long; drivers' monitoring waits up to 10s).
    #[arg(long, value_parser = parse_duration, value_name = "DURATION")]
    reply_timeout: Option<Duration>,
    /// Close a client connection with no request pending and no traffic for this long (off by
    /// default).
    #[arg(long, value_parser = parse_duration, value_name = "DURATION")]
    idle_timeout: Option<Duration>,
    /// On SIGTERM / Ctrl-C: stop accepting, let requests already sent be answered for up to this
    /// long, then cut what is left (a second signal stops at once).
    #[arg(long, default_value = "5s", value_parser = parse_duration, value_name = "DURATION")]
    drain_timeout: Duration,
}

fn megabytes(mb: Option<f64>, option: &str) -> anyhow::Result<Option<u64>> {
    match mb {
        None => Ok(None),
        Some(mb) if mb.is_finite() && mb > 0.0 => Ok(Some((mb * 1024.0 * 1024.0) as u64)),
        Some(mb) => Err(super::exit::usage(format!(
            "{option} {mb}: must be a positive number of MB"
        ))),
    }
}

pub(super) fn segment_plan(args: &RecordArgs) -> anyhow::Result<Option<SegmentPlan>> {
    let Some(path) = args.out.clone() else {
        return Ok(None);
    };
    Ok(Some(SegmentPlan {
        path,
        force: args.force,
        rotate_bytes: megabytes(args.rotate_size, "--rotate-size")?,
        rotate_every: args.rotate_every,
        max_bytes: megabytes(args.max_size, "--max-size")?,
        duration: args.duration,
    }))
}

/// `--snapshot`: what to take beside the recording, checked before the upstream is contacted.
fn snapshot_options(args: &RecordArgs) -> anyhow::Result<Option<SnapshotOptions>> {
    let (Some(out), false) = (&args.out, args.snapshot.is_empty()) else {
        return Ok(None);
    };
    let patterns = args
        .snapshot
        .iter()
        .map(|t| NsPattern::parse(t).map_err(|e| super::exit::usage(format!("--snapshot {e}"))))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let dir = mongotape::proxy::snapshot::dir_beside(out);
    mongotape::state::writer::SnapshotWriter::check_free(&dir)?;
    Ok(Some(SnapshotOptions {
        uri: match args.upstream.contains("://") {
            true => args.upstream.clone(),
            false => format!("mongodb://{}/", args.upstream),
        },
        patterns,
        out: dir,
        gzip: false,
        batch_size: mongotape::state::source::DEFAULT_BATCH,
        // The proxy gives it the capture's own key under --redact values.
        redact: None,
    }))
}

pub fn run(args: RecordArgs) -> anyhow::Result<ExitCode> {
    if args.out.is_none() && !args.no_record {
        return Err(super::exit::usage(
            "the following required arguments were not provided: --out <OUT> (or --no-record)",
        ));
    }
    run_with(args, |_| Ok(()))
}

/// Runs the proxy of `record`; `attach` is called once it listens, before it serves (`shadow`
/// attaches its mirror there), inside the runtime.
pub(super) fn run_with(
    args: RecordArgs,
    attach: impl FnOnce(&mut Proxy) -> anyhow::Result<()>,
) -> anyhow::Result<ExitCode> {
    let plan = segment_plan(&args)?;
    if let Some(plan) = &plan {
        // A wrong --out is said before the upstream is contacted (the proxy checks again).
        plan.check_free()?;
    }
    let snapshot = snapshot_options(&args)?;
    let faults = args.faults.control()?;
    let fault_token = args.faults.fault_token.clone();
    let metrics = args
        .metrics
        .as_deref()
        .map(MetricsServer::bind)
        .transpose()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(args.threads.max(1))
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(async move {
        let mut upstream = ConnString::parse(&args.upstream)
            .await
            .with_context(|| format!("--upstream {}", args.upstream))?;
        if let Some(timeout) = args.limits.connect_timeout {
            upstream.connect_timeout = Some(timeout);
        }
        if let Some(line) = mongotape::proxy::unused_options(&upstream) {
            note!("mongotape: {line}");
        }
        let display = upstream.display.clone();
        let limits = limits(&args.limits);
        let out = args.out.clone();
        let quiet = args.quiet;
        if !quiet {
            // Discovery waits for the upstream's hello: a server that never answers is not silence.
            note!("mongotape: connecting to {display} ...");
        }
        let mut proxy = Proxy::bind(proxy_config(args, upstream, plan))
            .await?
            .with_limits(limits);
        proxy = super::faults::apply(proxy, faults, fault_token);
        if let Some(server) = metrics {
            note!(
                "mongotape: metrics on http://{}/metrics",
                server.local_addr()
            );
            proxy.serve_metrics(server);
        }
        attach(&mut proxy)?;
        let signals = Signals::new().context("installing the signal handlers")?;
        for line in proxy.announcement(&display, out.as_deref()) {
            note!("mongotape: {line}");
        }
        let snapshot = snapshot.map(|opts| proxy.start_snapshot(opts));
        let snap = proxy
            .run_until(signals.shutdown(limits.drain_timeout))
            .await
            .map_err(|e| capture_named(e, out.as_deref()))?;
        if !quiet {
            note!("mongotape: {}", snap.status_line());
        }
        if let Some(snapshot) = snapshot {
            await_snapshot(snapshot, quiet).await?;
        }
        Ok(ExitCode::SUCCESS)
    })
}

/// Waits for `record --snapshot`'s task once recording has stopped, and says what it took.
async fn await_snapshot(
    snapshot: tokio::task::JoinHandle<Result<Manifest, StateError>>,
    quiet: bool,
) -> anyhow::Result<()> {
    if !snapshot.is_finished() && !quiet {
        note!("mongotape: recording stopped; waiting for the snapshot to finish ...");
    }
    let manifest = snapshot.await.context("the snapshot task")??;
    if !quiet {
        note!(
            "mongotape: snapshot: {} collections, {} documents at {}",
            manifest.collections.len(),
            manifest.documents,
            manifest.point
        );
    }
    Ok(())
}

fn proxy_config(args: RecordArgs, upstream: ConnString, plan: Option<SegmentPlan>) -> ProxyConfig {
    let client_tls = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => Some(ServerTls {
            cert_file: cert.clone(),
            key_file: key.clone(),
            client_ca_file: args.tls_ca.clone(),
        }),
        _ => None,
    };
    let redaction = args.redact.redaction();
    ProxyConfig {
        listen: args.listen,
        advertise_host: args.advertise_host,
        upstream,
        client_tls,
        out: plan,
        redaction,
        status: match (args.quiet, super::output::styled(&std::io::stderr())) {
            (true, _) => StatusMode::Never,
            (false, true) => StatusMode::Live,
            (false, false) => StatusMode::Lines,
        },
        zstd_level: args.zstd_level,
        max_queue_bytes: args.max_queue_mb.saturating_mul(1024 * 1024),
        topology_interval: args.topology_interval_secs,
    }
}

fn limits(args: &LimitArgs) -> Limits {
    Limits {
        max_buffer_bytes: args.max_buffer_mb.max(1).saturating_mul(1024 * 1024),
        buffer_wait: args.buffer_wait,
        reply_timeout: args.reply_timeout,
        idle_timeout: args.idle_timeout,
        drain_timeout: args.drain_timeout,
    }
}

/// A failure writing the capture names the file (the writer itself only sees a stream).
fn capture_named(e: ProxyError, out: Option<&std::path::Path>) -> anyhow::Error {
    match (&e, out) {
        (ProxyError::Capture(CaptureError::Write(_)), Some(path)) => {
            anyhow::Error::new(e).context(format!("capture {}", path.display()))
        }
        _ => e.into(),
    }
}
