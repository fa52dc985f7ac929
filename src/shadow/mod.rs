//! `mongotape shadow`: the proxy of `record` with a live mirror beside it. The proxy forwards
//! as it always does (listeners, TLS, hello rewrite, redaction, metrics, an optional capture);
//! its side channel ([`crate::proxy::tap`]) hands each record to the mirror, which sends copies
//! of the reads to every `--candidate` (and `--control`) on connections of their own, compares
//! each reply with production's, and reports per query shape. The application never waits for
//! the mirror: every queue is bounded and what does not fit is shed and counted.
//!
//! The path of one read: [`intake`] (on the forwarding path: a look at the command, a bounded
//! queue) -> [`pairs`] (understood, shaped, paired with production's reply; a reply queued
//! before its request waits in [`early`]) -> [`lane`] (per
//! candidate and client connection: rewritten as the replayer rewrites, sent, compared by
//! [`compare`]) -> [`recheck`] (a read that differed, sent again to both sides) -> [`stats`]
//! and [`discrepancies`] -> [`report`]. `docs/shadow.md`.
//!
//! With `--mirror all`, [`pairs`] hands each write production acknowledged to [`writes`] (per
//! target, in production's order, applied on a connection of its own; [`txn`] holds a
//! transaction's statements until its commit), and with `--snapshot`,
//! [`restore`] takes production's snapshot at T0 and restores it into each target first.
//!
//! Layers, bottom up: compare early filter < config stats < discrepancies metrics plans report < shared < recheck txn < writes < lane < intake pairs restore

pub mod compare;
pub mod config;
pub mod discrepancies;
pub mod early;
pub mod filter;
pub mod intake;
pub mod lane;
pub mod metrics;
pub mod pairs;
pub mod plans;
pub mod recheck;
pub mod report;
pub mod restore;
pub mod shared;
pub mod stats;
pub mod txn;
pub mod writes;

pub use config::{MirrorPriority, ShadowConfig, ShadowError};
use discrepancies::DiscrepancyLog;
use lane::Candidate;
use recheck::Side;
use report::ShadowReport;
use shared::Shared;
use stats::CandidateStats;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use crate::replay::client::Target;

/// The connection strings of a shadow, read (SRV looked up) before the proxy starts.
pub struct Targets {
    pub production: Target,
    pub candidates: Vec<Target>,
    pub control: Option<Target>,
}

impl Targets {
    /// Reads `config`'s strings, each on a runtime of its own (call it outside one).
    pub fn parse_blocking(config: &ShadowConfig) -> Result<Targets, ShadowError> {
        if config.candidates.is_empty() {
            return Err(ShadowError::Option("at least one --candidate".into()));
        }
        let no_write_queue = config.writes.as_ref().is_some_and(|w| w.queue_bytes == 0);
        if config.max_outstanding == 0 || config.queue_bytes == 0 || no_write_queue {
            return Err(ShadowError::Option(
                "--max-outstanding, --queue-mb and --write-queue-mb must be at least 1".into(),
            ));
        }
        let parse = |option, uri: &str| {
            Target::parse_blocking(uri).map_err(|source| ShadowError::Target { option, source })
        };
        let candidates = config
            .candidates
            .iter()
            .map(|uri| parse("--candidate", uri))
            .collect::<Result<_, _>>()?;
        let production = match config.production.contains("://") {
            true => config.production.clone(),
            false => format!("mongodb://{}/", config.production),
        };
        Ok(Targets {
            production: parse("--production", &production)?,
            candidates,
            control: match &config.control {
                Some(uri) => Some(parse("--control", uri)?),
                None => None,
            },
        })
    }
}

/// A running mirror: its tap goes into the proxy, its report can be read at any time.
pub struct Shadow {
    /// The mirror's own thread: its work never takes the forwarding threads' time.
    runtime: std::sync::Mutex<Option<tokio::runtime::Runtime>>,
    intake: Arc<intake::Intake>,
    /// Reads the filters left out (`--sample`, `--namespace`, `--command`, `--app`).
    filtered: Arc<AtomicU64>,
    candidates: Vec<Arc<Candidate>>,
    started: Instant,
    started_text: String,
    production: String,
}

impl Shadow {
    /// Starts the mirror, on a thread of its own, for `targets`, read from `config` before.
    pub fn start(config: ShadowConfig, targets: Targets) -> Result<Shadow, ShadowError> {
        let priority = config.priority;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("mongotape-mirror")
            .on_thread_start(move || priority.apply())
            .enable_all()
            .build()
            .map_err(|e| ShadowError::Option(format!("cannot start the mirror's thread: {e}")))?;
        let log = match &config.discrepancies {
            Some(path) => Some(DiscrepancyLog::create(path)?),
            None => None,
        };
        let Targets {
            production,
            candidates,
            control,
        } = targets;
        let mut sides: Vec<_> = candidates.into_iter().map(|t| (t, "candidate")).collect();
        if let Some(c) = &control {
            sides.push((c.clone(), "control"));
        }
        let display = production.display.clone();
        let writes_on = config.writes.is_some();
        let snapshot = config.writes.as_ref().is_some_and(|w| w.snapshot.is_some());
        let uris: Vec<String> = config
            .candidates
            .iter()
            .chain(&config.control)
            .cloned()
            .collect();
        let snapshot_source = direct(&config.production);
        let max_shapes = config.max_shapes;
        let queue = config.queue_bytes;
        let filter = config.filter.clone();
        let shared = Arc::new(Shared::new(config, production, control, log));
        let candidates: Vec<Arc<Candidate>> = sides
            .into_iter()
            .map(|(target, role)| {
                let side = Side {
                    label: target.display.clone(),
                    target,
                    stats: Arc::new(CandidateStats::new(max_shapes)),
                };
                Candidate::new(side, role, shared.clone())
            })
            .collect();
        let (intake, rx, queued) = intake::Intake::new(queue, filter.wants_handshakes(), writes_on);
        let filtered = Arc::new(AtomicU64::new(0));
        let dropped = intake.dropped.clone();
        let dispatcher = pairs::Dispatcher::new(
            candidates.clone(),
            filter,
            filtered.clone(),
            writes_on,
            dropped,
        );
        runtime.spawn(dispatcher.run(rx, queued));
        start_writes(
            &runtime,
            &candidates,
            snapshot.then_some((uris, snapshot_source)),
            shared,
        );
        let now_ns = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        Ok(Shadow {
            runtime: std::sync::Mutex::new(Some(runtime)),
            intake,
            filtered,
            candidates,
            started: Instant::now(),
            started_text: crate::capture::rfc3339(now_ns),
            production: display,
        })
    }

    /// Waits, at most `limit`, for the writes production acknowledged to be applied to every
    /// target that is mirroring them (at stop, so that its state is production's).
    pub fn drain_writes(&self, limit: std::time::Duration) -> bool {
        let until = Instant::now() + limit;
        let mut idle = 0;
        while idle < 2 {
            let pending = !self.intake.is_empty()
                || self
                    .candidates
                    .iter()
                    .filter_map(|c| c.writes.as_ref())
                    .any(|w| w.pending());
            idle = if pending { 0 } else { idle + 1 };
            if Instant::now() >= until {
                return false;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        true
    }

    /// Stops the mirror: what it still holds is dropped (the report keeps what was counted).
    pub fn stop(&self) {
        let runtime = self
            .runtime
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(runtime) = runtime {
            runtime.shutdown_background();
        }
    }

    /// Whether [`Shadow::stop`] was called.
    pub fn is_stopped(&self) -> bool {
        self.runtime
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_none()
    }

    /// The series served on `--metrics` (per target and shape, bounded).
    pub fn collector(&self) -> Box<dyn prometheus_client::collector::Collector> {
        Box::new(metrics::ShadowCollector {
            targets: self
                .candidates
                .iter()
                .map(|c| (c.side.label.clone(), c.role, c.side.stats.clone()))
                .collect(),
        })
    }

    /// What the proxy shows every record to.
    pub fn tap(&self) -> Arc<dyn crate::proxy::tap::Tap> {
        self.intake.clone()
    }

    /// The report as of now; `complete` at stop.
    pub fn report(&self, complete: bool) -> ShadowReport {
        let targets: Vec<_> = self
            .candidates
            .iter()
            .map(|c| (c.side.label.clone(), c.role, &*c.side.stats))
            .collect();
        report::build(
            (
                &self.production,
                self.started.elapsed().as_secs_f64(),
                complete,
                self.intake.dropped.load(Ordering::Relaxed),
                self.filtered.load(Ordering::Relaxed),
            ),
            &targets,
            &self.started_text,
        )
    }
}

/// Starts each target's writes (`--mirror all`) on the mirror's runtime, and with `--snapshot`
/// (`Some((the targets' strings, production's))`) the snapshot and the restores.
fn start_writes(
    runtime: &tokio::runtime::Runtime,
    candidates: &[Arc<Candidate>],
    snapshot: Option<(Vec<String>, String)>,
    shared: Arc<Shared>,
) {
    for w in candidates.iter().filter_map(|c| c.writes.clone()) {
        runtime.spawn(w.run());
    }
    if let Some((uris, production)) = snapshot {
        let targets = uris
            .into_iter()
            .zip(candidates.iter().filter_map(|c| c.writes.clone()))
            .collect();
        restore::start(
            restore::Restore {
                production,
                targets,
            },
            shared,
        );
    }
}

/// Production's string for the snapshot: a bare `host:port` (the `--upstream`) reached directly,
/// as the proxy reaches it.
fn direct(production: &str) -> String {
    match production.contains("://") {
        true => production.to_owned(),
        false => format!("mongodb://{production}/?directConnection=true"),
    }
}

impl Drop for Shadow {
    fn drop(&mut self) {
        self.stop();
    }
}
