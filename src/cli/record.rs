use anyhow::Context;
use clap::Args;
use mongotape::capture::SegmentPlan;
use mongotape::proxy::{Proxy, ProxyConfig, StatusMode};
use mongotape::redact::Redaction;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

#[derive(Args)]
pub struct RecordArgs {
    /// Address to accept clients on.
    #[arg(long, default_value = "127.0.0.1:27018")]
    listen: String,
    /// The MongoDB server to forward to.
    #[arg(long, default_value = "127.0.0.1:27017")]
    upstream: String,
    /// Capture file to write (created readable by its owner only; an existing file is refused
    /// unless --force). With rotation, segments are numbered after it: trace-000001.mtape, ...
    #[arg(long, required_unless_present = "no_record")]
    out: Option<PathBuf>,
    /// Replace an existing capture (or segments) of the same name.
    #[arg(long, requires = "out")]
    force: bool,
    /// What the capture keeps: `credentials` removes authentication payloads and passwords
    /// (always, the default); `values` also replaces every string and binary value by a keyed hash
    /// of the same length (equal values stay equal; the key is never written).
    #[arg(long, value_enum, default_value = "credentials", value_name = "WHAT")]
    redact: RedactArg,
    /// End the recording after this long (e.g. 90s, 10m, 1h; a number is seconds). The capture
    /// is closed; the proxy keeps forwarding until it is stopped.
    #[arg(long, requires = "out", value_parser = parse_duration, value_name = "DURATION")]
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

#[derive(Clone, Copy, clap::ValueEnum)]
enum RedactArg {
    Credentials,
    Values,
}

/// `90s`, `10m`, `1h30m`, or a number of seconds.
fn parse_duration(s: &str) -> Result<Duration, String> {
    let d = match s.parse::<f64>() {
        Ok(secs) if secs.is_finite() && secs > 0.0 => Duration::from_secs_f64(secs),
        Ok(_) => return Err(format!("{s} is not a positive duration")),
        Err(_) => humantime::parse_duration(s).map_err(|e| format!("{s}: {e}"))?,
    };
    if d.is_zero() {
        return Err(format!("{s} is not a positive duration"));
    }
    Ok(d)
}

fn megabytes(mb: Option<f64>, option: &str) -> anyhow::Result<Option<u64>> {
    match mb {
        None => Ok(None),
        Some(mb) if mb.is_finite() && mb > 0.0 => Ok(Some((mb * 1024.0 * 1024.0) as u64)),
        Some(mb) => anyhow::bail!("{option} {mb}: must be a positive number of MB"),
    }
}

fn segment_plan(args: &RecordArgs) -> anyhow::Result<Option<SegmentPlan>> {
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

pub fn run(args: RecordArgs) -> anyhow::Result<ExitCode> {
    let plan = segment_plan(&args)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(args.threads.max(1))
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(async move {
        let config = ProxyConfig {
            listen: args.listen,
            upstream: args.upstream.clone(),
            out: plan,
            redaction: match args.redact {
                RedactArg::Credentials => Redaction::Credentials,
                RedactArg::Values => Redaction::Values,
            },
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
