//! One candidate (or the control): a lane per client connection, each with its own connection to
//! the candidate, fed by a bounded queue. A lane rewrites each request as the replayer does (its
//! session id, the candidate's own cursor ids in a getMore), sends it, reads the reply, and
//! compares it with production's. A candidate that stalls, refuses, dies or answers garbage only
//! ever costs its own lanes: a request finds the queue full (shed), or the candidate down and
//! waiting out its backoff (a gap); the connection is opened again after the backoff.

use super::compare::{self, Verdict};
use super::config::{MAX_BACKOFF, MIN_BACKOFF};
use super::plans;
use super::recheck::{self, SameDb, Side};
use super::shared::{Pair, Shared};
use super::stats::{Answered, Event, ExplainedFor};
use super::writes::{ReadTicket, WriteItem, Writes};
use crate::replay::client::Conn;
use crate::replay::measure::outcome;
use crate::replay::request::rewrite::rewrite;
use crate::replay::request::sessions::Sessions;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// Cursors mapped per candidate; past it the map starts again (their getMores become orphans).
const MAX_CURSORS: usize = 100_000;

/// Why a read was not mirrored on a lane.
enum Down {
    /// The candidate failed before and waits out its backoff.
    Waiting,
    /// This connection failed now: closed, timed out, or garbage on it.
    Failed(String),
}

/// A read on its lane; with writes mirrored, its ticket holds back the writes production
/// acknowledged after answering it until the read is done (the ticket dropped).
struct Queued {
    pair: Arc<Pair>,
    _ticket: Option<ReadTicket>,
}

/// When a candidate may be tried again.
#[derive(Default)]
struct Health {
    retry_at: Option<Instant>,
    backoff: Duration,
}

/// A candidate and its lanes.
pub struct Candidate {
    pub side: Arc<Side>,
    pub role: &'static str,
    shared: Arc<Shared>,
    lanes: Mutex<HashMap<u64, mpsc::Sender<Queued>>>,
    queued: Arc<AtomicUsize>,
    cursors: Mutex<HashMap<i64, i64>>,
    health: Mutex<Health>,
    sessions: Sessions,
    /// Its mirrored writes (`--mirror all`).
    pub writes: Option<Arc<Writes>>,
}

impl Candidate {
    pub fn new(side: Side, role: &'static str, shared: Arc<Shared>) -> Arc<Candidate> {
        let side = Arc::new(side);
        let writes = shared.config.writes.as_ref().map(|w| {
            let restoring = w.snapshot.is_some();
            Arc::new(Writes::new(
                side.clone(),
                shared.clone(),
                w.queue_bytes,
                restoring,
            ))
        });
        Arc::new(Candidate {
            writes,
            side,
            role,
            shared,
            lanes: Mutex::default(),
            queued: Arc::default(),
            cursors: Mutex::default(),
            health: Mutex::default(),
            sessions: Sessions::default(),
        })
    }

    /// Queues `pair` on its connection's lane, or sheds it (counted by shape) when the candidate's
    /// queue is full or the lane has `--max-outstanding` requests waiting. Never waits.
    pub fn offer(self: &Arc<Self>, pair: &Arc<Pair>) {
        if self.writes.as_ref().is_some_and(|w| !w.ready_for(pair)) {
            return self.side.stats.count(&pair.key, Event::NotReady);
        }
        let size = pair.size();
        let bound = self.shared.config.queue_bytes;
        if self.queued.load(Ordering::Relaxed) + size > bound {
            return self.side.stats.count(&pair.key, Event::Shed);
        }
        let mut lanes = self.lanes.lock().unwrap_or_else(|e| e.into_inner());
        let lane = lanes.entry(pair.conn_id).or_insert_with(|| {
            let (tx, rx) = mpsc::channel(self.shared.config.max_outstanding.max(1));
            tokio::spawn(self.clone().lane(rx));
            tx
        });
        self.queued.fetch_add(size, Ordering::Relaxed);
        // With writes mirrored, the writes after this read wait until it was answered.
        let read = Queued {
            pair: pair.clone(),
            _ticket: self
                .writes
                .as_ref()
                .map(|w| w.read_ticket(pair.after_writes)),
        };
        if lane.try_send(read).is_err() {
            self.queued.fetch_sub(size, Ordering::Relaxed);
            self.side.stats.count(&pair.key, Event::Shed);
        }
    }

    /// A write production acknowledged, for the target's writes (`--mirror all`).
    pub fn offer_write(&self, pair: &Arc<Pair>, op_time: Option<(u32, u32)>) {
        if let Some(writes) = &self.writes {
            writes.offer(WriteItem {
                pair: pair.clone(),
                op_time,
                seen: Instant::now(),
                txn: Vec::new(),
                seq: 0,
            });
        }
    }

    /// The client connection closed: its lane ends once its queue is empty.
    pub fn close(&self, conn_id: u64) {
        self.lanes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&conn_id);
    }

    async fn lane(self: Arc<Self>, mut rx: mpsc::Receiver<Queued>) {
        let mut conn = None;
        while let Some(Queued { pair, _ticket }) = rx.recv().await {
            self.queued.fetch_sub(pair.size(), Ordering::Relaxed);
            match self.mirror(&mut conn, &pair).await {
                Ok(()) => {}
                Err(Down::Waiting) => self.side.stats.count(&pair.key, Event::Gap),
                Err(Down::Failed(why)) => {
                    tracing::debug!(candidate = %self.side.label, "{why}");
                    conn = None;
                    self.failed();
                    self.side.stats.count(&pair.key, Event::Gap);
                }
            }
        }
    }

    /// The lane's connection, opened unless the candidate is waiting out its backoff.
    async fn connect<'c>(&self, conn: &'c mut Option<Conn>) -> Result<&'c mut Conn, Down> {
        if conn.is_none() {
            let waiting = {
                let health = self.health.lock().unwrap_or_else(|e| e.into_inner());
                health.retry_at.is_some_and(|t| Instant::now() < t)
            };
            if waiting {
                return Err(Down::Waiting);
            }
            let target = &self.side.target;
            let host = target.seeds.first().ok_or(Down::Failed("no host".into()))?;
            let timeout = self.shared.config.reply_timeout;
            let opened = tokio::time::timeout(timeout, Conn::connect(target, host, timeout)).await;
            let mut opened = match opened {
                Ok(Ok(c)) => c,
                Ok(Err(e)) => return Err(Down::Failed(format!("connecting: {e}"))),
                Err(_) => return Err(Down::Failed("connecting: timed out".into())),
            };
            // Reads say how late the mirror was to read each reply (plain TCP).
            opened.stamp_replies();
            self.side.stats.connections.fetch_add(1, Ordering::Relaxed);
            *self.health.lock().unwrap_or_else(|e| e.into_inner()) = Health::default();
            *conn = Some(opened);
        }
        conn.as_mut().ok_or(Down::Waiting)
    }

    fn failed(&self) {
        self.side.stats.connection_failed();
        let mut health = self.health.lock().unwrap_or_else(|e| e.into_inner());
        health.backoff = (health.backoff * 2).clamp(MIN_BACKOFF, MAX_BACKOFF);
        health.retry_at = Some(Instant::now() + health.backoff);
    }

    /// Sends one request to the candidate and compares its reply. An error means the connection
    /// is no longer usable (closed, timed out, or garbage on it).
    async fn mirror(&self, conn: &mut Option<Conn>, pair: &Arc<Pair>) -> Result<(), Down> {
        let stats = &self.side.stats;
        if let Some(writes) = self.writes.as_ref().filter(|_| pair.after_writes > 0) {
            // The target first applies what production had acknowledged when it answered, and
            // the writes after wait for this read (its ticket): the read sees what production's
            // saw. Past the wait it goes anyway, and a difference is rechecked.
            let limit = self.shared.config.reply_timeout;
            if !writes.wait_applied(pair.after_writes, limit).await {
                tracing::debug!(candidate = %self.side.label, "a read went before the writes it follows");
            }
        }
        let lsid = pair.req.lsid.as_ref().map(|l| self.sessions.live(0, 0, l));
        let Ok(mut request) = rewrite(&pair.req, &SameDb, lsid.as_ref()) else {
            return Ok(());
        };
        for (at, recorded) in &request.cursor_patches {
            let live = self.cursors().get(recorded).copied();
            let Some(live) = live else {
                stats.count(&pair.key, Event::Orphan);
                return Ok(());
            };
            request.bytes[*at..*at + 8].copy_from_slice(&live.to_le_bytes());
        }
        let c = self.connect(conn).await?;
        let started = Instant::now();
        let failed = |e: crate::replay::client::ConnError| Down::Failed(e.to_string());
        let id = c.send(&mut request.bytes).await.map_err(failed)?;
        let reply = c.recv(id).await.map_err(failed)?;
        let stamped = self.shared.production.tls.is_none();
        let candidate_ns = timing(c, started, allowance(stamped, pair.production_ns));
        let live =
            outcome::scan(&reply).map_err(|e| Down::Failed(format!("an unreadable reply: {e}")))?;
        let recorded = outcome::scan(&pair.production).unwrap_or_default();
        self.follow_cursor(pair, &request.cursor_patches, live.cursor_id);
        let (Some(pb), Some(cb)) = (compare::body(&pair.production), compare::body(&reply)) else {
            return Err(Down::Failed("a reply without a document".into()));
        };
        let verdict = compare::compare(&self.shared.opts, &pb, &cb, pair.unordered);
        let shifted = stats.answered(
            &pair.key,
            Answered {
                production_ns: pair.production_ns,
                candidate_ns,
                production_error: (!recorded.ok).then_some(recorded.code.unwrap_or(0)),
                candidate_error: (!live.ok).then_some(live.code.unwrap_or(0)),
                matched: verdict == Verdict::Same,
            },
        );
        if shifted && !pair.is_get_more() {
            self.explain(pair, request.bytes);
        }
        if let Verdict::Differ(fields) = verdict {
            if pair.is_get_more() {
                stats.count(&pair.key, Event::Unconfirmed);
            } else {
                recheck::spawn(self.shared.clone(), self.side.clone(), pair.clone(), fields);
            }
        }
        Ok(())
    }

    /// Explains a read of a shape whose latency shifted, on both sides, beside the lane
    /// (rate-limited per shape and target by [`plans::explain_both`]).
    fn explain(&self, pair: &Pair, request: Vec<u8>) {
        let (shared, side, key) = (self.shared.clone(), self.side.clone(), pair.key.clone());
        tokio::spawn(async move {
            let timeout = shared.config.reply_timeout;
            let reason = (timeout, ExplainedFor::Latency);
            let (prod, target) = (&shared.production, &side.target);
            plans::explain_both(prod, target, &side.stats, &key, &request, reason).await;
        });
    }

    fn cursors(&self) -> std::sync::MutexGuard<'_, HashMap<i64, i64>> {
        self.cursors.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Maps production's new cursor to the candidate's, and forgets one that ended.
    fn follow_cursor(&self, pair: &Pair, patches: &[(usize, i64)], live: Option<i64>) {
        let mut cursors = self.cursors();
        if let (Some(prod), Some(live)) = (pair.opens_cursor, live.filter(|&c| c != 0)) {
            if cursors.len() >= MAX_CURSORS {
                cursors.clear();
            }
            cursors.insert(prod, live);
        }
        if pair.is_get_more() && live == Some(0) {
            for (_, recorded) in patches {
                cursors.remove(recorded);
            }
        }
    }
}

/// The most of the mirror's wait to read a reply that counts as the candidate's time when
/// production's replies are not stamped (TLS upstream): this, or a tenth of production's time
/// for the request if longer. Production's time then ends when a thread woken at once read the
/// reply; a mirror woken at once is timed the same, a mirror kept off the CPU (it runs at the
/// lowest priority) adds at most this.
const WAKE: Duration = Duration::from_micros(50);

/// How much of the mirror's wait to read a reply still counts as the candidate's time: none
/// when production's replies are timed from their arrival too (the proxy stamps its plain TCP
/// upstream when it shadows), [`WAKE`] when production's end at the proxy's read.
fn allowance(production_stamped: bool, production_ns: u64) -> Duration {
    match production_stamped {
        true => Duration::ZERO,
        false => WAKE.max(Duration::from_nanos(production_ns / 10)),
    }
}

/// The candidate's time for a request sent at `started`: until the mirror read its reply, less
/// whatever of the wait between the reply's arrival (the kernel's stamp of the read that
/// completed it) and that read is beyond `allowance`. Unstamped reads (TLS) end when the
/// mirror read them.
fn timing(c: &Conn, started: Instant, allowance: Duration) -> u64 {
    let done = match c.last_read().filter(|r| r.at.into_std() >= started) {
        Some(r) => {
            let read = r.at.into_std();
            let beyond = r.late.unwrap_or_default().saturating_sub(allowance);
            read.checked_sub(beyond).unwrap_or(read).max(started)
        }
        None => Instant::now(),
    };
    done.saturating_duration_since(started).as_nanos() as u64
}
