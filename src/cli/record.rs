use anyhow::Context;
use clap::Args;
use mongotape::proxy::{Proxy, ProxyConfig, StatusMode};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Args)]
pub struct RecordArgs {
    /// Address to accept clients on.
    #[arg(long, default_value = "127.0.0.1:27018")]
    listen: String,
    /// The MongoDB server to forward to.
    #[arg(long, default_value = "127.0.0.1:27017")]
    upstream: String,
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

pub fn run(args: RecordArgs) -> anyhow::Result<ExitCode> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(args.threads.max(1))
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(async move {
        let config = ProxyConfig {
            listen: args.listen,
            upstream: args.upstream.clone(),
            out: args.out.clone(),
            status: if args.quiet {
                StatusMode::Never
            } else {
                StatusMode::Auto
            },
            zstd_level: args.zstd_level,
            max_queue_bytes: args.max_queue_mb.saturating_mul(1024 * 1024),
        };
        let proxy = Proxy::bind(config).await?;
        let addr = proxy.local_addr()?;
        eprintln!("mongotape: listening on {addr}");
        match &args.out {
            Some(out) => eprintln!(
                "mongotape: forwarding to {}, recording to {}",
                args.upstream,
                out.display()
            ),
            None => eprintln!("mongotape: forwarding to {}, not recording", args.upstream),
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
