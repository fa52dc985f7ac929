use anyhow::Context;
use clap::Args;
use mongotape::net::{ConnString, ServerTls};
use mongotape::proxy::{Proxy, ProxyConfig, StatusMode, CLIENT_ONLY_OPTIONS};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

#[derive(Args)]
#[command(after_long_help = EXAMPLES)]
pub struct RecordArgs {
    /// Where to accept clients. One address is a base: each member of a replica set gets the
    /// next port (port 0: an ephemeral port each). Several addresses (comma-separated or the
    /// option repeated): one per member, in the order the set lists them. MEMBER=LISTEN pairs: each
    /// member its own address.
    /// Examples: `127.0.0.1:27018`; `0.0.0.0:27018,0.0.0.0:27019,0.0.0.0:27020`;
    /// `db0.internal:27017=0.0.0.0:27018,db1.internal:27017=0.0.0.0:27019`.
    #[arg(long, default_value = "127.0.0.1:27018", value_delimiter = ',', num_args = 1..)]
    listen: Vec<String>,
    /// The deployment to forward to: `host:port`, a MongoDB connection string (several hosts,
    /// replicaSet, directConnection, tls, tlsCAFile, tlsCertificateKeyFile,
    /// tlsAllowInvalidHostnames, tlsAllowInvalidCertificates, ...) or `mongodb+srv://`.
    /// A replica set is discovered and every member served (directConnection=true: one server,
    /// hello replies untouched). Examples: `127.0.0.1:27017`;
    /// `mongodb://db0:27017,db1:27017/?replicaSet=rs0&tls=true&tlsCAFile=/etc/ssl/ca.pem`;
    /// `mongodb+srv://cluster0.example.net/`.
    #[arg(long, default_value = "127.0.0.1:27017")]
    upstream: String,
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
    #[arg(long, default_value_t = 10)]
    topology_interval_secs: u64,
    /// Capture file to write (created readable by its owner only).
    #[arg(long, required_unless_present = "no_record")]
    out: Option<PathBuf>,
    /// Relay only, record nothing (to measure the proxy itself).
    #[arg(long, conflicts_with = "out")]
    no_record: bool,
    /// zstd level for the capture (1 is fast and ~10x on wire traffic).
    #[arg(long, default_value_t = 1)]
    zstd_level: i32,
    /// Memory the recorder queue may hold before messages are dropped (and marked in the capture).
    #[arg(long, default_value_t = 256)]
    max_queue_mb: usize,
    /// No periodic status line on stderr.
    #[arg(long)]
    quiet: bool,
    /// Threads forwarding traffic (the recorder has its own thread besides).
    #[arg(long, default_value_t = 1)]
    threads: usize,
}

const EXAMPLES: &str = "Examples:
  # A replica set: each member gets a listener from port 27018 on; applications use
  # mongodb://PROXYHOST:27018,PROXYHOST:27019,PROXYHOST:27020/?replicaSet=rs0
  mongotape record --upstream 'mongodb://db0:27017,db1:27017,db2:27017/?replicaSet=rs0' \\
      --listen 0.0.0.0:27018 --advertise-host proxy.internal --out run.mtape

  # TLS on both legs (clients must present a certificate signed by clients-ca.pem)
  mongotape record --upstream 'mongodb+srv://cluster0.example.net/?tlsCAFile=/etc/ssl/ca.pem' \\
      --tls-cert proxy.pem --tls-key proxy-key.pem --tls-ca clients-ca.pem --out run.mtape

See docs/production.md.";

pub fn run(args: RecordArgs) -> anyhow::Result<ExitCode> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(args.threads.max(1))
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(async move {
        let upstream = ConnString::parse(&args.upstream)
            .await
            .context("--upstream")?;
        let unused = upstream.options_among(CLIENT_ONLY_OPTIONS);
        if !unused.is_empty() || upstream.credential.is_some() {
            let mut what = unused;
            if upstream
                .credential
                .as_ref()
                .is_some_and(|c| c.username.is_some())
            {
                what.insert(0, "credentials".into());
            }
            eprintln!(
                "mongotape: --upstream {} are for the application's driver; the proxy does not \
                 use them (clients authenticate and choose through it)",
                what.join(", ")
            );
        }
        let client_tls = match (&args.tls_cert, &args.tls_key) {
            (Some(cert), Some(key)) => Some(ServerTls {
                cert_file: cert.clone(),
                key_file: key.clone(),
                client_ca_file: args.tls_ca.clone(),
            }),
            _ => None,
        };
        let display = upstream.display.clone();
        let config = ProxyConfig {
            listen: args.listen,
            advertise_host: args.advertise_host,
            upstream,
            client_tls,
            out: args.out.clone(),
            status: if args.quiet {
                StatusMode::Never
            } else {
                StatusMode::Auto
            },
            zstd_level: args.zstd_level,
            max_queue_bytes: args.max_queue_mb.saturating_mul(1024 * 1024),
            topology_interval: Duration::from_secs(args.topology_interval_secs.max(1)),
        };
        let proxy = Proxy::bind(config).await?;
        for (local, member) in proxy.local_addrs().iter().zip(proxy.members()) {
            if *local == member.advertised {
                eprintln!("mongotape: listening on {local} for {}", member.upstream);
            } else {
                eprintln!(
                    "mongotape: listening on {local} for {} (advertised as {})",
                    member.upstream, member.advertised
                );
            }
        }
        match &args.out {
            Some(out) => eprintln!(
                "mongotape: forwarding to {display}, recording to {}",
                out.display()
            ),
            None => eprintln!("mongotape: forwarding to {display}, not recording"),
        }
        let (tx, rx) = tokio::sync::watch::channel(false);
        tokio::spawn(async move {
            wait_for_signal().await;
            eprintln!("\nmongotape: stopping");
            let _ = tx.send(true);
        });
        let snap = proxy.run(rx).await?;
        eprintln!("mongotape: {}", snap.status_line());
        Ok(ExitCode::SUCCESS)
    })
}

async fn wait_for_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate()).expect("SIGTERM handler");
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
}
