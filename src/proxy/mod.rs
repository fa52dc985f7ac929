//! `mongotape record`: a TCP proxy between MongoDB clients and a deployment. Bytes are forwarded
//! unchanged in both directions; whole messages are handed on the side to a recorder thread that
//! writes the capture. The recorder can never stall forwarding: when it falls behind, messages are
//! counted as dropped and a `gap` record marks the loss.
//!
//! In front of a replica set every member gets a listener (`monitor`, `listen`, `topology`), and
//! the replies to hello name those listeners instead of the members: the one rewrite the proxy
//! makes (`conn`, `wire::hello`). Either leg may be TLS (`streams`).
//!
//! Memory and time are bounded (`limits`): a budget for bytes held in unfinished messages over
//! all connections (`budget`), reply and idle timeouts, and a drain at shutdown that lets requests
//! already sent be answered (`shutdown`: the signals; `supervise`: each connection's drain). See
//! docs/reliability.md.
//!
//! Layers, bottom up: budget clock gear listen shares stats streams tap < error limits metrics recorder topology < hello_watch monitor snapshot supervise upstream < pump < faulted < conn shutdown

pub mod budget;
pub mod clock;
pub mod conn;
mod error;
mod faulted;
pub mod gear;
mod hello_watch;
pub mod limits;
pub mod listen;
pub mod metrics;
pub mod monitor;
mod pump;
pub mod recorder;
mod shares;
pub mod shutdown;
pub mod snapshot;
pub mod stats;
pub mod streams;
pub mod supervise;
pub mod tap;
pub mod topology;
mod upstream;

use crate::capture::{CaptureError, Metadata, SegmentPlan, FORMAT_VERSION};
use crate::fault::{http::FaultEndpoint, FaultControl};
use crate::metrics::MetricsServer;
use crate::net::{ConnString, ServerTls};
use crate::redact::{Redaction, ValueKey};
use budget::Budget;
use clock::Clock;
use conn::ConnContext;
pub use error::ProxyError;
use limits::Limits;
use listen::{hostname, ListenPlan};
use monitor::Monitor;
use recorder::{Recorder, RecorderOptions};
use stats::{Snapshot, Stats};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use streams::{Acceptor, Connector};
use supervise::Shutdown;
use tokio::sync::{mpsc, watch, Notify};
use tokio::task::JoinSet;
use topology::{Member, Topology};
pub use upstream::{unused_options, CLIENT_ONLY_OPTIONS, UPSTREAM_OPTIONS};

#[derive(Debug, Clone)]
pub struct ProxyConfig {
    /// `--listen`: a base address, a list, or `MEMBER=LISTEN` mappings (see [`listen`]).
    pub listen: Vec<String>,
    /// The host clients are told in rewritten hello replies, instead of each listener's own.
    pub advertise_host: Option<String>,
    pub upstream: ConnString,
    /// TLS for clients: certificate, key, and the CA that client certificates must chain to.
    pub client_tls: Option<ServerTls>,
    /// Where to write the capture, when to rotate and when to stop recording; `None` relays
    /// without recording.
    pub out: Option<SegmentPlan>,
    pub status: StatusMode,
    pub zstd_level: i32,
    pub max_queue_bytes: usize,
    /// How often the upstream's topology is asked again.
    pub topology_interval: Duration,
    pub redaction: Redaction,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatusMode {
    /// A line redrawn every second (stderr is a terminal that takes escape codes).
    Live,
    /// A plain log line every 10 s.
    Lines,
    Never,
}

/// A proxy that is listening; `run` serves until `shutdown` turns true.
pub struct Proxy {
    monitor: Monitor,
    config: ProxyConfig,
    stats: Arc<Stats>,
    clock: Clock,
    recorder: Option<Recorder>,
    connector: Connector,
    topology: Arc<Topology>,
    /// `--metrics`: the endpoint and the per-message figures it shows.
    metrics: Option<(MetricsServer, Arc<metrics::ProxyMetrics>)>,
    limits: Limits,
    /// The `--redact values` key of the capture, for the snapshot beside it.
    value_key: Option<ValueKey>,
    /// `record --snapshot`: the end state to take once the connections have drained.
    at_stop: Option<snapshot::AtStop>,
    /// `--fault` (docs/faults.md): the rules when any were given, and `--fault-token`.
    faults: Option<Arc<FaultControl>>,
    fault_token: Option<String>,
    /// `mongotape shadow`: what sees every record beside the recorder.
    tap: Option<Arc<dyn tap::Tap>>,
    /// Series of others (`shadow`'s) served beside the proxy's on `--metrics`.
    collectors: Vec<Box<dyn prometheus_client::collector::Collector>>,
}

impl Proxy {
    /// Checks the upstream's options, asks it for its topology, and binds one listener per member
    /// (per seed when the upstream cannot be reached yet: it is asked again while serving).
    pub async fn bind(config: ProxyConfig) -> Result<Proxy, ProxyError> {
        let upstream = &config.upstream;
        upstream::check(upstream)?;
        let plan = ListenPlan::parse(&config.listen)?;
        let timeout = upstream
            .connect_timeout
            .filter(|t| !t.is_zero())
            .unwrap_or(conn::UPSTREAM_CONNECT_TIMEOUT);
        let connector = Connector::new(upstream.tls.as_ref(), timeout)?;
        let acceptor = Acceptor::new(config.client_tls.as_ref()).map_err(ProxyError::ClientTls)?;
        if let Some(plan) = &config.out {
            plan.check_free()?;
        }
        let direct = upstream.direct_connection == Some(true);
        let topology = Arc::new(Topology::new(!direct));
        let mut monitor = Monitor::new(
            plan,
            config.advertise_host.clone(),
            acceptor,
            connector.clone(),
            topology.clone(),
            upstream.hosts.clone(),
        );
        monitor
            .start(upstream.replica_set.as_deref(), direct)
            .await?;
        let stats = Arc::new(Stats::default());
        let clock = Clock::start();
        let value_key = (config.redaction == Redaction::Values).then(ValueKey::random);
        let recorder = match &config.out {
            Some(plan) => {
                let meta = Metadata {
                    format_version: FORMAT_VERSION,
                    mongotape_version: env!("CARGO_PKG_VERSION").into(),
                    start_unix_ns: clock.start_unix_ns(),
                    start_time: crate::capture::rfc3339(clock.start_unix_ns()),
                    upstream: upstream.display.clone(),
                    listen: monitor.local_addrs().join(","),
                    host: hostname(),
                    ..Metadata::default()
                };
                let opts = RecorderOptions {
                    max_queued_bytes: config.max_queue_bytes,
                    zstd_level: config.zstd_level,
                    redaction: config.redaction,
                    key: value_key.clone(),
                    ..RecorderOptions::default()
                };
                Some(Recorder::start(plan.clone(), &meta, opts, stats.clone())?)
            }
            None => None,
        };
        Ok(Proxy {
            monitor,
            config,
            stats,
            clock,
            recorder,
            connector,
            topology,
            metrics: None,
            limits: Limits::default(),
            value_key,
            at_stop: None,
            faults: None,
            fault_token: None,
            tap: None,
            collectors: Vec::new(),
        })
    }

    /// Serves the Prometheus exposition on `server` while running (`record --metrics`); every
    /// connection then counts its messages per command and times its requests.
    pub fn serve_metrics(&mut self, server: MetricsServer) {
        self.metrics = Some((server, Arc::default()));
    }

    /// Applies fault rules to every connection (`record --fault`; `PUT /faults` replaces them).
    pub fn with_faults(mut self, faults: Arc<FaultControl>, token: Option<String>) -> Proxy {
        self.faults = Some(faults);
        self.fault_token = token;
        self
    }

    /// Shows every record to `tap` too (`mongotape shadow`), recording or not.
    pub fn set_tap(&mut self, tap: Arc<dyn tap::Tap>) {
        self.tap = Some(tap);
    }

    /// Serves `collector`'s series beside the proxy's own when `--metrics` is on.
    pub fn add_collector(&mut self, collector: Box<dyn prometheus_client::collector::Collector>) {
        self.collectors.push(collector);
    }

    /// Sets the bounds on memory and time (the defaults otherwise).
    pub fn with_limits(mut self, limits: Limits) -> Proxy {
        self.limits = limits;
        self
    }

    /// The first listener's address (the first member's, or the only one).
    pub fn local_addr(&self) -> std::io::Result<std::net::SocketAddr> {
        self.monitor
            .first_local_addr()
            .ok_or_else(|| std::io::Error::other("no listener"))
    }

    /// Each served member and the address it is served on, in order.
    pub fn members(&self) -> Vec<Member> {
        self.topology.members()
    }

    /// The served members and the rewrite map, which keep following the upstream while running.
    pub fn topology(&self) -> Arc<Topology> {
        self.topology.clone()
    }

    /// The listeners' own addresses, in the members' order.
    pub fn local_addrs(&self) -> Vec<String> {
        self.monitor.local_addrs()
    }

    pub fn stats(&self) -> Arc<Stats> {
        self.stats.clone()
    }

    /// Starts `record --snapshot` beside the proxy (see [`snapshot`]): its T0 goes into the
    /// capture as a `snapshot` record, and once the connections have drained at the end, the end
    /// state as a `state_end` record. Await the handle once recording has stopped.
    pub fn start_snapshot(
        &mut self,
        mut opts: crate::state::SnapshotOptions,
    ) -> tokio::task::JoinHandle<Result<crate::state::Manifest, crate::state::StateError>> {
        // The capture's key: equal values in the capture and the snapshot stay equal.
        opts.redact = self.value_key.clone();
        let (handle, at_stop) = snapshot::start(
            opts,
            self.recorder.as_ref().map(Recorder::handle),
            self.clock,
        );
        self.at_stop = Some(at_stop);
        handle
    }

    /// Serves until `shutdown` turns true, then drains (see [`Proxy::run_until`]) and finishes the
    /// capture.
    pub async fn run(self, shutdown: watch::Receiver<bool>) -> Result<Snapshot, ProxyError> {
        let (_never, now) = watch::channel(false);
        self.run_until(Shutdown {
            drain: shutdown,
            now,
        })
        .await
    }

    /// Serves until `shutdown.drain` turns true, then stops accepting and lets each connection
    /// finish the requests it has sent for up to the drain timeout: a connection closes between
    /// two requests, or is cut at the timeout with a close record saying "drain timeout".
    /// `shutdown.now` cuts every connection at once. Then the capture is finished.
    pub async fn run_until(self, shutdown: Shutdown) -> Result<Snapshot, ProxyError> {
        let mut drain = shutdown.drain.clone();
        let changed = Arc::new(Notify::new());
        let ctx = ConnContext {
            connector: self.connector.clone(),
            topology: self.topology.clone(),
            topology_changed: changed.clone(),
            recorder: self.recorder.as_ref().map(Recorder::handle),
            tap: self.tap.clone(),
            stats: self.stats.clone(),
            metrics: self.metrics.as_ref().map(|(_, m)| m.clone()),
            clock: self.clock,
            shutdown: shutdown.clone(),
            budget: Arc::new(Budget::new(self.limits.max_buffer_bytes)),
            limits: self.limits,
            faults: self.faults.clone(),
        };
        let status = tokio::spawn(status_loop(self.stats.clone(), self.config.status));
        let endpoint = match self.metrics {
            Some((server, figures)) => {
                let queued = self.recorder.as_ref().and_then(Recorder::queued_bytes);
                let mut registry =
                    metrics::registry(self.stats.clone(), figures, queued, self.faults.clone());
                for collector in self.collectors {
                    registry.register_collector(collector);
                }
                let control = self
                    .faults
                    .clone()
                    .map(|f| FaultEndpoint::controlled(f, self.fault_token.clone()));
                Some(server.serve_with(registry, control)?)
            }
            None => None,
        };
        let (tx, mut accepted) = mpsc::channel(1024);
        let monitor = tokio::spawn(self.monitor.run(tx, changed, self.config.topology_interval));
        let mut conns = JoinSet::new();
        let mut next_id = 1u64;
        loop {
            tokio::select! {
                Some(conn) = accepted.recv() => {
                    let monitor::Accepted { stream, peer, member, acceptor } = conn;
                    conns.spawn(conn::serve(stream, peer, next_id, member, acceptor, ctx.clone()));
                    next_id += 1;
                }
                Some(_) = conns.join_next(), if !conns.is_empty() => {}
                _ = drain.wait_for(|stop| *stop) => break,
            }
        }
        // Stops accepting: the listeners close with the monitor.
        monitor.abort();
        drop(accepted);
        drain_connections(conns, self.limits.drain_timeout).await;
        drop(ctx);
        status.abort();
        if let Some(endpoint) = endpoint {
            endpoint.abort();
        }
        if let (Some(at_stop), Some(recorder)) = (self.at_stop, &self.recorder) {
            snapshot::record_end(at_stop, recorder.handle(), self.clock, shutdown.now.clone())
                .await;
        }
        if let Some(recorder) = self.recorder {
            finish_capture(recorder, shutdown.now.clone()).await?;
        }
        Ok(self.stats.snapshot())
    }

    /// What `record` says once listening: each listener and the member it serves, then where
    /// the traffic goes (`display`, the upstream as shown) and the capture, if any.
    pub fn announcement(&self, display: &str, out: Option<&std::path::Path>) -> Vec<String> {
        let mut lines = Vec::new();
        for (local, member) in self.local_addrs().iter().zip(self.members()) {
            if *local == member.advertised {
                lines.push(format!("listening on {local} for {}", member.upstream));
            } else {
                lines.push(format!(
                    "listening on {local} for {} (advertised as {})",
                    member.upstream, member.advertised
                ));
            }
        }
        lines.push(match out {
            Some(out) => format!("forwarding to {display}, recording to {}", out.display()),
            None => format!("forwarding to {display}, not recording"),
        });
        lines
    }
}

/// Waits for the connections to close themselves after the drain signal (each writes its close
/// record), for up to the drain timeout and a margin; says how many were cut with requests
/// unanswered.
async fn drain_connections(mut conns: JoinSet<bool>, drain_timeout: Duration) {
    let open = conns.len();
    if open > 0 {
        tracing::info!(
            "draining {open} connections for up to {:?} (--drain-timeout; a second signal \
             stops at once)",
            drain_timeout
        );
    }
    // Connections see the same signal and close themselves, writing their close records;
    // the margin lets the last ones write theirs.
    let cut = Arc::new(AtomicU64::new(0));
    let ending = async {
        while let Some(joined) = conns.join_next().await {
            if let Ok(true) = joined {
                cut.fetch_add(1, Ordering::Relaxed);
            }
        }
    };
    let margin = drain_timeout + Duration::from_secs(2);
    if tokio::time::timeout(margin, ending).await.is_err() {
        conns.abort_all();
    }
    let cut = cut.load(Ordering::Relaxed);
    if cut > 0 {
        tracing::warn!(
            "{cut} of {open} connections were cut with requests unanswered (see their close \
             records)"
        );
    }
}

/// Queued records above this are worth a line saying the capture is still being written.
const BACKLOG_NOTICE_BYTES: usize = 8 * 1024 * 1024;

/// Writes what the recorder still holds and ends the capture. A large backlog (a recorder that
/// fell behind, e.g. at a high zstd level) is announced; `now` turning true (a second signal)
/// stops writing it: the rest is counted as dropped and the capture still ends whole.
async fn finish_capture(
    recorder: Recorder,
    mut now: watch::Receiver<bool>,
) -> Result<(), ProxyError> {
    let queued = recorder
        .queued_bytes()
        .map_or(0, |q| q.load(Ordering::Relaxed));
    if queued >= BACKLOG_NOTICE_BYTES {
        tracing::warn!(
            "writing {} MiB of queued messages to the capture (a second signal stops at once: \
             what is not written yet is counted as dropped)",
            queued / (1024 * 1024)
        );
    }
    let abort = recorder.abort_handle();
    let watcher = tokio::spawn(async move {
        if now.wait_for(|stop| *stop).await.is_ok() {
            abort.store(true, Ordering::Relaxed);
        }
    });
    let finished = tokio::task::spawn_blocking(move || recorder.finish()).await;
    watcher.abort();
    finished.map_err(|e| CaptureError::Write(std::io::Error::other(e)))??;
    Ok(())
}

async fn status_loop(stats: Arc<Stats>, mode: StatusMode) {
    if mode == StatusMode::Never {
        return;
    }
    let live = mode == StatusMode::Live;
    let period = if live {
        Duration::from_secs(1)
    } else {
        Duration::from_secs(10)
    };
    let mut tick = tokio::time::interval(period);
    tick.tick().await;
    let mut prev = (stats.snapshot(), std::time::Instant::now());
    loop {
        tick.tick().await;
        let now = (stats.snapshot(), std::time::Instant::now());
        let line = now
            .0
            .status_line_since(&prev.0, (now.1 - prev.1).as_secs_f64());
        prev = now;
        // A stderr whose reader is gone must not stop the proxy: the line is dropped.
        use std::io::Write;
        let _ = if live {
            write!(std::io::stderr(), "\r\x1b[2K{line}")
        } else {
            writeln!(std::io::stderr(), "mongotape: {line}")
        };
    }
}
