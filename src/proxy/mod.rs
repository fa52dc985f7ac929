//! `mongotape record`: a TCP proxy between MongoDB clients and a server. Bytes are forwarded
//! unchanged in both directions; whole messages are handed on the side to a recorder thread that
//! writes the capture. The recorder can never stall forwarding: when it falls behind, messages are
//! counted as dropped and a `gap` record marks the loss.

pub mod clock;
pub mod conn;
pub mod recorder;
pub mod stats;

use crate::capture::{CaptureError, Metadata, SegmentPlan, FORMAT_VERSION};
use crate::redact::Redaction;
use clock::Clock;
use conn::ConnContext;
use recorder::{Recorder, RecorderOptions};
use stats::{Snapshot, Stats};
use std::io::IsTerminal;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use thiserror::Error;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinSet;

#[derive(Debug, Error)]
pub enum ProxyError {
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        addr: String,
        source: std::io::Error,
    },
    #[error(transparent)]
    Capture(#[from] CaptureError),
}

#[derive(Debug, Clone)]
pub struct ProxyConfig {
    pub listen: String,
    pub upstream: String,
    /// Where to write the capture, when to rotate and when to stop recording; `None` relays
    /// without recording.
    pub out: Option<SegmentPlan>,
    pub status: StatusMode,
    pub zstd_level: i32,
    pub max_queue_bytes: usize,
    pub redaction: Redaction,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatusMode {
    /// A live line when stderr is a terminal, a log line every 10 s otherwise.
    Auto,
    Never,
}

/// A proxy that is listening; `run` serves until `shutdown` turns true.
pub struct Proxy {
    listener: TcpListener,
    config: ProxyConfig,
    stats: Arc<Stats>,
    clock: Clock,
    recorder: Option<Recorder>,
}

impl Proxy {
    pub async fn bind(config: ProxyConfig) -> Result<Proxy, ProxyError> {
        let listener =
            TcpListener::bind(&config.listen)
                .await
                .map_err(|source| ProxyError::Listen {
                    addr: config.listen.clone(),
                    source,
                })?;
        let stats = Arc::new(Stats::default());
        let clock = Clock::start();
        let recorder = match &config.out {
            Some(plan) => {
                let local = listener
                    .local_addr()
                    .map(|a| a.to_string())
                    .unwrap_or_default();
                let meta = Metadata {
                    format_version: FORMAT_VERSION,
                    mongotape_version: env!("CARGO_PKG_VERSION").into(),
                    start_unix_ns: clock.start_unix_ns(),
                    start_time: clock::rfc3339(clock.start_unix_ns()),
                    upstream: config.upstream.clone(),
                    listen: local,
                    host: hostname(),
                    ..Metadata::default()
                };
                let opts = RecorderOptions {
                    max_queued_bytes: config.max_queue_bytes,
                    zstd_level: config.zstd_level,
                    redaction: config.redaction,
                    ..RecorderOptions::default()
                };
                Some(Recorder::start(plan.clone(), &meta, opts, stats.clone())?)
            }
            None => None,
        };
        Ok(Proxy {
            listener,
            config,
            stats,
            clock,
            recorder,
        })
    }

    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    pub fn stats(&self) -> Arc<Stats> {
        self.stats.clone()
    }

    /// Serves until `shutdown` turns true, then closes every connection and finishes the capture.
    pub async fn run(self, mut shutdown: watch::Receiver<bool>) -> Result<Snapshot, ProxyError> {
        let ctx = ConnContext {
            upstream: self.config.upstream.clone(),
            recorder: self.recorder.as_ref().map(Recorder::handle),
            stats: self.stats.clone(),
            clock: self.clock,
            shutdown: shutdown.clone(),
        };
        let status = tokio::spawn(status_loop(self.stats.clone(), self.config.status));
        let mut conns = JoinSet::new();
        let mut next_id = 1u64;
        loop {
            tokio::select! {
                accepted = self.listener.accept() => match accepted {
                    Ok((client, peer)) => {
                        conns.spawn(conn::serve(client, peer, next_id, ctx.clone()));
                        next_id += 1;
                    }
                    // Out of file descriptors and the like: back off, keep serving the others.
                    Err(e) => {
                        tracing::warn!("accept failed: {e}");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                },
                Some(_) = conns.join_next(), if !conns.is_empty() => {}
                _ = shutdown.wait_for(|stop| *stop) => break,
            }
        }
        drop(self.listener);
        // Connections see the same signal and close themselves, writing their close records.
        let drain = async { while conns.join_next().await.is_some() {} };
        if tokio::time::timeout(Duration::from_secs(5), drain)
            .await
            .is_err()
        {
            conns.abort_all();
        }
        drop(ctx);
        status.abort();
        if let Some(recorder) = self.recorder {
            tokio::task::spawn_blocking(move || recorder.finish())
                .await
                .map_err(|e| CaptureError::Write(std::io::Error::other(e)))??;
        }
        Ok(self.stats.snapshot())
    }
}

async fn status_loop(stats: Arc<Stats>, mode: StatusMode) {
    if mode == StatusMode::Never {
        return;
    }
    let live = std::io::stderr().is_terminal();
    let period = if live {
        Duration::from_secs(1)
    } else {
        Duration::from_secs(10)
    };
    let mut tick = tokio::time::interval(period);
    tick.tick().await;
    loop {
        tick.tick().await;
        let line = stats.snapshot().status_line();
        if live {
            eprint!("\r\x1b[2K{line}");
        } else {
            eprintln!("mongotape: {line}");
        }
    }
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_owned())
        .unwrap_or_default()
}
