//! Step 1 of the pipeline: the capture feed, a thread that streams the capture (once per repeat),
//! decides what is replayed ([`filters`]), pairs each request with its recorded reply, writes it out
//! for every clone ([`copies`]) and hands it to a lane. It runs ahead of the lanes by at most the
//! read-ahead budget. Step markers travel the same way ([`markers`]). With `--shard I/N` only this
//! shard's part goes out ([`shard`]); under `--duration` no request due after the deadline is
//! queued, and a pass reuses the previous one's connections. With `--skip-snapshotted` the writes
//! the snapshot already holds stay out ([`cut`]).
//!
//! Layers, bottom up: apps markers peak result shapes shard cut < filters < mod.rs < copies passes

use crate::capture::{CaptureSet, Record, RecordKind, RecordSource};
use crate::figures::summary::new_ns_histogram;
use crate::replay::lane;
use crate::replay::measure::{outcome, step_phases::Marker};
use crate::replay::request::kill_cursors::{self, CursorNamespaces};
use crate::replay::request::{self, ids::IdRemap, sessions::Sessions, Request, Skip};
use crate::replay::route::{shared::Shared, Lanes, Router, SpawnLane};
use crate::wire::header::{MsgHeader, OpCode};
use filters::Filters;
use markers::MarkerSeq;
use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tokio::runtime::Handle;

mod apps;
mod copies;
mod passes;
mod result;
pub use result::SourceResult;
pub mod cut;
pub mod filters;
pub mod markers;
pub mod peak;
pub mod shapes;
pub mod shard;

/// Requests held per recorded connection while their recorded replies are read.
const MAX_HELD: usize = 10_000;

/// The requests of each recorded connection waiting for their recorded replies.
type Held = FastMap<u64, VecDeque<Request>>;
/// The feed's maps looked up per request: foldhash, not SipHash (the lanes wait on this thread).
pub(crate) type FastMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

pub struct SourceConfig {
    /// The capture: one file, or segments read as one.
    pub inputs: Vec<PathBuf>,
    /// None: repeat until the deadline (with `--duration`).
    pub repeat: Option<u64>,
    pub clones: u32,
    pub lanes: Lanes,
    pub filters: Filters,
    pub db_map: Vec<(String, String)>,
    /// Each pass starts once the previous one is answered (false for open-loop `--rate`).
    pub pass_barrier: bool,
    /// `--shard I/N`: only this part of the capture.
    pub shard: Option<shard::Shard>,
    /// `--order none`: requests on other connections do not wait for the writes before them.
    pub unordered: bool,
    /// Distinct query shapes kept; the rest are counted under `other` (`--max-shapes`).
    pub max_shapes: usize,
    /// Run before every pass after the first, once the one before is answered (`--restore`); an
    /// error ends the replay with it.
    pub before_pass: Option<BeforePass>,
    /// `--skip-snapshotted`: the writes this snapshot holds are not replayed.
    pub snapshot_cut: Option<Arc<cut::SnapshotCut>>,
}

/// What runs between two passes (`replay --restore`: the snapshot loaded again).
pub type BeforePass = Arc<dyn Fn() -> Result<(), String> + Send + Sync>;

/// The feed's state over all passes.
struct Feed<'a> {
    cfg: &'a SourceConfig,
    shared: Arc<Shared>,
    router: Router,
    result: SourceResult,
    /// Live session ids per copy and lane, by recorded `lsid.id`.
    sessions: Sessions,
    seq: u64,
    first_ts: Option<u64>,
    last_ts: u64,
    iteration: u64,
    /// Offset of this pass's first request from the replay's start.
    pass_base_ns: u64,
    /// Compressed bytes read so far, over every pass (for the progress bar).
    progress: Arc<AtomicU64>,
    /// Commands, databases and collections, each kept once for all the requests that name it.
    names: crate::replay::names::Names,
    /// Scratch for the namespace of each copy (interned without allocating).
    ns_buf: String,
    /// New ObjectId `_id`s for passes after the first; `None` when there is only one pass.
    ids: Option<IdRemap>,
    /// Where recorded cursors were opened, for legacy OP_KILL_CURSORS.
    cursor_ns: CursorNamespaces,
    /// Step markers of this pass, and those waiting in `held` (by connection and request id).
    markers: MarkerSeq,
    held_markers: FastMap<(u64, i32), Marker>,
    /// This shard's part of the capture (`--shard`).
    shard: Option<shard::ShardPlan>,
    /// The first request due after the `--duration` deadline was reached: no more passes.
    past_deadline: bool,
    /// `--connections N`: writes and what follows them ([`crate::replay::route::order`]).
    order: crate::replay::route::order::Order,
    /// One lane per recorded connection: each logical session's requests, one at a time
    /// ([`crate::replay::route::session_order`]).
    session_order: crate::replay::route::session_order::SessionOrder,
    /// One lane per recorded connection: the last collection or index change emitted, and when
    /// its recorded reply came ([`copies`]): what was sent after that waits for it.
    changed: Option<(crate::replay::route::order::After, u64)>,
    /// When each open recorded connection was opened (its open event, else its first message),
    /// until its first replayed request takes it as its connect lead (then `None`).
    opened: FastMap<u64, Option<u64>>,
    /// The query shape of each request, and the recorded figures per shape.
    shapes: shapes::FeedShapes,
    /// Recorded latency per command, of the first pass (the result's, once the feed ends).
    recorded_latency: FastMap<crate::replay::names::Name, hdrhistogram::Histogram<u64>>,
}

impl Feed<'_> {
    fn span(&self) -> u64 {
        self.last_ts
            .saturating_sub(self.first_ts.unwrap_or(self.last_ts))
    }
    /// A recorded request skipped as a ping that is a step marker: a placeholder for its
    /// connection's queue (markers are kept whatever the filters).
    fn marker_request(
        &mut self,
        skip: Skip,
        conn_id: u64,
        ts_ns: u64,
        wire: &[u8],
    ) -> Option<Request> {
        if skip != Skip::Ping {
            return None;
        }
        let step = crate::wire::marker::step_marker_of_bytes(wire)?;
        let request_id = MsgHeader::parse(wire).ok().flatten()?.request_id;
        let marker = self.markers.next(self.iteration, &step);
        self.held_markers.insert((conn_id, request_id), marker);
        Some(markers::marker_request(conn_id, ts_ns, request_id))
    }

    /// A legacy OP_KILL_CURSORS becomes `killCursors` on the namespace its cursors were opened in.
    fn legacy_kill_cursors(&self, skip: Skip, record: &Record) -> Result<Request, Skip> {
        if skip != Skip::Unsupported {
            return Err(skip);
        }
        kill_cursors::understand_kill_cursors(record.conn_id, record.ts_ns, &record.payload, |c| {
            self.cursor_ns.get(c)
        })
    }

    /// Emits the front of a connection's queue while it is complete.
    fn flush(&mut self, held: &mut VecDeque<Request>, all: bool) -> bool {
        while let Some(front) = held.front() {
            let complete = !front.expects_reply || front.recorded.is_some();
            if !(complete || all || held.len() > MAX_HELD) {
                break;
            }
            let req = held.pop_front().expect("front exists");
            if !self.emit(req) {
                return false;
            }
        }
        true
    }

    fn deadline_passed(&self) -> bool {
        self.shared
            .run
            .deadline
            .is_some_and(|d| tokio::time::Instant::now() >= d)
    }

    /// One pass over the capture. False when the replay should stop.
    fn pass(&mut self) -> bool {
        let mut reader = match CaptureSet::open(&self.cfg.inputs) {
            Ok(r) => self.cfg.filters.window.clone().apply(r),
            Err(e) => {
                self.result.capture_error = Some(e.to_string());
                return false;
            }
        };
        let base = self.progress.load(Ordering::Relaxed);
        let mut held = Held::default();
        self.markers.new_pass();
        self.shapes.new_pass(self.iteration == 0);
        self.held_markers.clear();
        if let Some(ids) = &mut self.ids {
            ids.new_pass(self.iteration == 0);
        }
        let mut n = 0u64;
        let mut go_on = true;
        let mut ended = false;
        while let Some(record) = reader.next_record() {
            n += 1;
            if n.is_multiple_of(256) {
                self.progress
                    .store(base + reader.compressed_offset(), Ordering::Relaxed);
                if self.shared.run.abort.is_set() || self.deadline_passed() {
                    go_on = false;
                    break;
                }
            }
            let record = match record {
                Ok(r) => r,
                Err(e) => {
                    // A damaged segment is named and read past: the segments after it replay.
                    self.result.capture_damage(e.to_string());
                    continue;
                }
            };
            ended |= record.kind == RecordKind::End;
            go_on = self.on_record(&mut held, &record);
            if !go_on {
                break;
            }
        }
        if go_on && !ended && self.iteration == 0 {
            // Read to its last byte without an end record: a recorder that did not shut down
            // cleanly, whose last messages may be missing. Replayed all the same.
            tracing::warn!(
                "the capture has no end record (the recorder did not shut down cleanly): its last \
                 messages may be missing; replayed what it holds"
            );
        }
        if go_on {
            go_on = self.flush_all(&mut held);
        }
        if go_on && self.iteration == 0 {
            // What lies after --until is counted, so that every request read is accounted for.
            if let Some(e) = reader.count_rest() {
                self.result.capture_damage(e.to_string());
            }
        }
        self.result.left_out(self.iteration, reader.summary());
        self.progress
            .store(base + reader.compressed_offset(), Ordering::Relaxed);
        if self.iteration == 0 {
            self.result.recorded_span_ns = self.span();
        }
        if self.cfg.lanes == Lanes::PerRecorded {
            self.router.end_pass(self.more_passes());
        }
        // What this pass waited on is never waited on again (the next pass's copies have their
        // own scopes, and so their own live sessions).
        self.order.clear();
        self.session_order.clear();
        self.changed = None;
        self.opened.clear();
        go_on && self.result.capture_error.is_none()
    }

    /// One record of the capture. False when the replay should stop.
    fn on_record(&mut self, held: &mut Held, record: &Record) -> bool {
        match record.kind {
            RecordKind::Open => {
                self.opened.insert(record.conn_id, Some(record.ts_ns));
                true
            }
            RecordKind::Request => {
                self.opened
                    .entry(record.conn_id)
                    .or_insert(Some(record.ts_ns));
                self.on_request(held, record)
            }
            RecordKind::Reply => self.on_reply(held, record),
            RecordKind::Close => self.on_close(held, record),
            RecordKind::ClientMetadata => {
                apps::remember(&mut self.result.applications, record);
                true
            }
            _ => true,
        }
    }

    /// What a recorded request is, or `None` when it is not replayed (counted in the first pass).
    /// A step marker, though not replayed, comes back as a placeholder.
    fn understood(&mut self, record: &Record) -> Option<Request> {
        // The bytes are opened once: the view read here is the one the shape is taken from.
        let opened = request::open(&record.payload);
        let understood = match &opened {
            Ok(o) => request::understand_opened(record.conn_id, record.ts_ns, o, &mut self.names),
            Err(skip) => Err(*skip),
        }
        .or_else(|skip| {
            self.legacy_kill_cursors(skip, record)
                .map(|req| (req, None))
        });
        match understood {
            Err(skip) => {
                if self.iteration == 0 {
                    *self.result.skipped.entry(skip.name()).or_default() += 1;
                }
                self.marker_request(skip, record.conn_id, record.ts_ns, &record.payload)
            }
            Ok((req, _)) if !self.cfg.filters.accepts(&req) => {
                if self.iteration == 0 {
                    self.result.request_filtered();
                }
                None
            }
            Ok((mut req, view)) => {
                let count = self.counts_recorded(record.conn_id);
                req.shape = self
                    .shapes
                    .request(&record.payload, view.as_ref(), &req, count);
                Some(req)
            }
        }
    }

    /// A recorded request joins its connection's queue. False when the replay should stop.
    fn on_request(&mut self, held: &mut Held, record: &Record) -> bool {
        if self.iteration == 0 {
            self.result.requests_read += 1;
        }
        let Some(req) = self.understood(record) else {
            return true;
        };
        let q = held.entry(record.conn_id).or_default();
        q.push_back(req);
        self.flush(q, false)
    }

    /// A recorded reply completes the request it answers. False when the replay should stop.
    fn on_reply(&mut self, held: &mut Held, record: &Record) -> bool {
        let Some(q) = held.get_mut(&record.conn_id) else {
            return true;
        };
        let header = MsgHeader::parse(&record.payload).ok().flatten();
        let response_to = header.map(|h| h.response_to);
        // An OP_REPLY answering request 0 (old shells' replies in mongoreplay files) answers the
        // oldest request still waiting: a reply by its opcode.
        let by_order = header.is_some_and(|h| h.response_to == 0 && h.op_code == OpCode::Reply);
        let waiting = |r: &Request| r.expects_reply && r.recorded.is_none();
        let found = q
            .iter()
            .position(|r| Some(r.request_id) == response_to && waiting(r))
            .or_else(|| q.iter().position(waiting).filter(|_| by_order));
        if let Some(req) = found.and_then(|at| q.get_mut(at)) {
            let mut recorded = outcome::scan(&record.payload).unwrap_or_default();
            recorded.latency_ns = Some(record.ts_ns.saturating_sub(req.ts_ns));
            req.recorded = Some(recorded);
            if self.iteration == 0 {
                self.recorded_latency
                    .entry(req.command.clone())
                    .or_insert_with(new_ns_histogram)
                    .saturating_record(record.ts_ns.saturating_sub(req.ts_ns).max(100));
            }
            self.cursor_ns.learn(req);
            if let (Some(id), Some(outcome)) = (req.shape, &req.recorded) {
                let figures = shapes::Recorded {
                    latency_ns: record.ts_ns.saturating_sub(req.ts_ns),
                    bytes: record.payload.len() as u64,
                    count: self.counts_recorded(record.conn_id),
                };
                self.shapes.reply(req, id, outcome, figures);
            }
        }
        self.flush(q, false)
    }

    /// A recorded connection closed: its queue goes out, and its lanes close after it.
    fn on_close(&mut self, held: &mut Held, record: &Record) -> bool {
        if let Some(mut q) = held.remove(&record.conn_id) {
            if !self.flush(&mut q, true) {
                return false;
            }
        }
        self.opened.remove(&record.conn_id);
        let clones = self.cfg.clones.max(1);
        for clone in 0..clones {
            let scope = (self.iteration as u32)
                .wrapping_mul(clones)
                .wrapping_add(clone);
            self.router
                .close_conn(scope, record.conn_id, self.more_passes());
        }
        true
    }

    /// Whether the recorded figures of a request on `conn_id` are this replay's to count: on the
    /// first pass, and with `--shard` in the shard that replays its first copy (so that the
    /// shards' reports add up to the capture's figures once).
    fn counts_recorded(&mut self, conn_id: u64) -> bool {
        self.iteration == 0 && self.shard.as_mut().is_none_or(|p| p.owns(conn_id, 0))
    }

    /// Whether another pass may follow this one (its lanes are then kept for it).
    fn more_passes(&self) -> bool {
        self.cfg.repeat.is_none_or(|r| self.iteration + 1 < r)
    }

    /// The end of the capture: every queue goes out, in connection order.
    fn flush_all(&mut self, held: &mut Held) -> bool {
        let mut conns: Vec<u64> = held.keys().copied().collect();
        conns.sort_unstable();
        for c in conns {
            let mut q = held.remove(&c).unwrap_or_default();
            if !self.flush(&mut q, true) {
                return false;
            }
        }
        true
    }
}

/// Runs the feed to the end of the last pass; returns what it saw and the lanes to wait for.
pub fn run(
    cfg: SourceConfig,
    shared: Arc<Shared>,
    handle: Handle,
    progress: Arc<AtomicU64>,
) -> SourceResult {
    let spawn_lane: SpawnLane = {
        let shared = shared.clone();
        Box::new(move |rx| handle.spawn(lane::run(shared.clone(), rx)))
    };
    let plan = match cfg
        .shard
        .map(|s| shard::ShardPlan::build(&cfg.inputs, s))
        .transpose()
    {
        Ok(p) => p,
        Err(e) => return SourceResult::failed(e.to_string()),
    };
    let router = Router::new(cfg.lanes, cfg.clones.max(1), spawn_lane, shared.run.clone());
    let mut feed = Feed {
        cfg: &cfg,
        shared,
        router,
        result: SourceResult {
            snapshot_cut: cfg.snapshot_cut.as_ref().map(|c| c.empty_report()),
            ..SourceResult::default()
        },
        sessions: Sessions::default(),
        seq: 0,
        first_ts: None,
        last_ts: 0,
        iteration: 0,
        pass_base_ns: 0,
        progress,
        names: crate::replay::names::Names::default(),
        ns_buf: String::new(),
        ids: (cfg.repeat != Some(1)).then(IdRemap::default),
        cursor_ns: CursorNamespaces::default(),
        markers: MarkerSeq::default(),
        held_markers: FastMap::default(),
        shard: plan,
        past_deadline: false,
        order: crate::replay::route::order::Order::new(cfg.unordered),
        session_order: crate::replay::route::session_order::SessionOrder::default(),
        changed: None,
        opened: FastMap::default(),
        shapes: shapes::FeedShapes::new(cfg.max_shapes, cfg.repeat != Some(1)),
        recorded_latency: FastMap::default(),
    };
    let cpu_before = result::thread_cpu_s();
    feed.passes();
    feed.router.close_all();
    let mut result = feed.result;
    result.reader_cpu_s = Some(result::thread_cpu_s() - cpu_before);
    result.iterations = feed.iteration;
    result.recorded_latency = std::mem::take(&mut feed.recorded_latency)
        .into_iter()
        .map(|(command, h)| (command.to_string(), h))
        .collect();
    result.shapes = std::mem::take(&mut feed.shapes.table);
    result.lanes = std::mem::take(&mut feed.router.joins);
    result
}
