//! The capture reader thread: streams the capture (once per repeat), decides what is replayed, pairs
//! each request with its recorded reply, rewrites it for every clone, and hands it to a replay
//! connection. It runs ahead of the connections by at most the read-ahead budget.

use super::cursors::Scope;
use super::ids::IdRemap;
use super::outcome;
use super::phases::{self, Marker, MarkerSeq};
use super::rewrite::{self, DbMap, Request, Skip};
use super::schedule::{Op, Shared};
use crate::capture::{CaptureReader, RecordKind};
use crate::wire::header::MsgHeader;
use rand::RngCore;
use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tokio::runtime::Handle;
use tokio::sync::mpsc::{unbounded_channel, UnboundedSender};
use tokio::task::JoinHandle;

/// Requests held per recorded connection while their recorded replies are read.
const MAX_HELD: usize = 10_000;

/// Commands that change what later requests see (collections, indexes). With `--connections N` the
/// requests before one finish before it is sent, and it finishes before anything after it is sent.
const BARRIERS: &[&str] = &[
    "create",
    "drop",
    "dropDatabase",
    "createIndexes",
    "dropIndexes",
    "renameCollection",
    "collMod",
    "convertToCapped",
    "cloneCollectionAsCapped",
];

/// Which recorded requests are replayed. Empty lists accept everything.
#[derive(Debug, Clone, Default)]
pub struct Filters {
    pub commands: Vec<String>,
    pub exclude_commands: Vec<String>,
    /// `db`, `db.collection`, or a pattern ending in `*`.
    pub namespaces: Vec<String>,
    pub exclude_namespaces: Vec<String>,
    pub connections: Vec<u64>,
}

fn ns_matches(pattern: &str, db: &str, ns: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => ns.starts_with(prefix),
        None => pattern == ns || pattern == db,
    }
}

impl Filters {
    pub fn accepts(&self, req: &Request) -> bool {
        let cmd = &*req.command;
        let by_command = (self.commands.is_empty() || self.commands.iter().any(|c| c == cmd))
            && !self.exclude_commands.iter().any(|c| c == cmd)
            && (self.connections.is_empty() || self.connections.contains(&req.conn_id));
        if !by_command || (self.namespaces.is_empty() && self.exclude_namespaces.is_empty()) {
            return by_command;
        }
        let ns = req.namespace();
        (self.namespaces.is_empty() || self.namespaces.iter().any(|p| ns_matches(p, &req.db, &ns)))
            && !self
                .exclude_namespaces
                .iter()
                .any(|p| ns_matches(p, &req.db, &ns))
    }
}

/// How replay connections are laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lanes {
    /// One replay connection per recorded connection.
    PerRecorded,
    /// N replay connections per clone, the recorded requests spread over them.
    Fixed(usize),
}

pub struct SourceConfig {
    pub capture: PathBuf,
    /// None: repeat until the deadline (with `--duration`).
    pub repeat: Option<u64>,
    pub clones: u32,
    pub lanes: Lanes,
    pub filters: Filters,
    pub db_map: Vec<(String, String)>,
    /// Each pass starts once the previous one is answered (false for open-loop `--rate`).
    pub pass_barrier: bool,
}

/// What the reader saw, for the report.
#[derive(Debug, Default)]
pub struct SourceResult {
    /// Where and why reading stopped early (truncated or corrupt capture).
    pub capture_error: Option<String>,
    pub requests_read: u64,
    pub skipped: BTreeMap<&'static str, u64>,
    pub filtered: u64,
    pub iterations: u64,
    /// Recorded time from the first to the last replayed request of one pass.
    pub recorded_span_ns: u64,
    pub lanes: Vec<JoinHandle<()>>,
}

/// The database mapping of one copy: `--db-map`, then `_K` for clone K when there are clones.
pub struct CopyDb<'a> {
    pub map: &'a [(String, String)],
    pub clone: Option<u32>,
}

impl DbMap for CopyDb<'_> {
    fn map_db<'a>(&'a self, db: &'a str) -> Cow<'a, str> {
        if matches!(db, "admin" | "config" | "local") || db.is_empty() {
            return Cow::Borrowed(db);
        }
        let base = self
            .map
            .iter()
            .find(|(from, _)| from == db)
            .map_or(db, |(_, to)| to.as_str());
        match self.clone {
            Some(k) => Cow::Owned(format!("{base}_{k}")),
            None => Cow::Borrowed(base),
        }
    }
}

struct Router {
    lanes_mode: Lanes,
    handle: Handle,
    shared: Arc<Shared>,
    lanes: Vec<Option<UnboundedSender<Op>>>,
    by_conn: HashMap<(Scope, u64), usize>,
    by_cursor: HashMap<(Scope, i64), usize>,
    by_txn: HashMap<(Scope, Vec<u8>, i64), usize>,
    next: Vec<usize>,
    joins: Vec<JoinHandle<()>>,
}

impl Router {
    fn new(lanes_mode: Lanes, clones: u32, handle: Handle, shared: Arc<Shared>) -> Router {
        let mut r = Router {
            lanes_mode,
            handle,
            shared,
            lanes: Vec::new(),
            by_conn: HashMap::new(),
            by_cursor: HashMap::new(),
            by_txn: HashMap::new(),
            next: vec![0; clones as usize],
            joins: Vec::new(),
        };
        if let Lanes::Fixed(n) = lanes_mode {
            for _ in 0..n * clones as usize {
                r.spawn();
            }
        }
        r
    }

    fn spawn(&mut self) -> usize {
        let (tx, rx) = unbounded_channel();
        let shared = self.shared.clone();
        self.joins
            .push(self.handle.spawn(super::lane::run(shared, rx)));
        self.lanes.push(Some(tx));
        self.lanes.len() - 1
    }

    /// The lane for one copy of `req`, and the key its sessions are mapped under.
    fn route(&mut self, scope: Scope, clone: u32, req: &Request) -> (usize, u32) {
        match self.lanes_mode {
            Lanes::PerRecorded => {
                let lane = match self.by_conn.get(&(scope, req.conn_id)) {
                    Some(&l) => l,
                    None => {
                        let l = self.spawn();
                        self.by_conn.insert((scope, req.conn_id), l);
                        l
                    }
                };
                (lane, 0)
            }
            Lanes::Fixed(n) => {
                let base = clone as usize * n;
                let cursor_lane = req
                    .cursor_refs
                    .iter()
                    .find_map(|c| self.by_cursor.get(&(scope, *c)).copied());
                let txn_key = match (&req.lsid, req.transaction) {
                    (Some(l), Some(t)) => Some((scope, l.clone(), t)),
                    _ => None,
                };
                let lane = if let Some(l) = cursor_lane {
                    l
                } else if let Some(l) = txn_key.as_ref().and_then(|k| self.by_txn.get(k)) {
                    *l
                } else {
                    let slot = &mut self.next[clone as usize];
                    let l = base + *slot % n;
                    *slot = slot.wrapping_add(1);
                    if let Some(k) = txn_key.clone() {
                        self.by_txn.insert(k, l);
                    }
                    l
                };
                if let Some(k) = txn_key {
                    if matches!(&*req.command, "commitTransaction" | "abortTransaction") {
                        self.by_txn.remove(&k);
                    }
                }
                if &*req.command == "killCursors" {
                    for c in &req.cursor_refs {
                        self.by_cursor.remove(&(scope, *c));
                    }
                }
                if let Some(c) = req.produces_cursor() {
                    self.by_cursor.insert((scope, c), lane);
                }
                if &*req.command == "getMore"
                    && req.recorded.as_ref().and_then(|o| o.cursor_id) == Some(0)
                {
                    for c in &req.cursor_refs {
                        self.by_cursor.remove(&(scope, *c));
                    }
                }
                (lane, lane as u32)
            }
        }
    }

    fn send(&mut self, lane: usize, op: Op) {
        let len = op.bytes.len();
        let delivered = match self.lanes.get(lane).and_then(|l| l.as_ref()) {
            Some(tx) => tx.send(op).is_ok(),
            None => false,
        };
        if !delivered {
            self.shared.budget.release(len);
        }
    }

    /// A recorded connection closed: its replay connection finishes its queue and closes too.
    fn close_conn(&mut self, scope: Scope, conn: u64) {
        if let Some(l) = self.by_conn.remove(&(scope, conn)) {
            self.lanes[l] = None;
        }
    }

    fn close_all(&mut self) {
        self.by_conn.clear();
        for l in &mut self.lanes {
            *l = None;
        }
    }
}

struct Reader<'a> {
    cfg: &'a SourceConfig,
    shared: Arc<Shared>,
    router: Router,
    result: SourceResult,
    /// Live session ids per copy and lane, by recorded `lsid.id`.
    sessions: HashMap<(Scope, u32), HashMap<Vec<u8>, [u8; 16]>>,
    seq: u64,
    first_ts: Option<u64>,
    last_ts: u64,
    iteration: u64,
    /// Offset of this pass's first request from the replay's start.
    pass_base_ns: u64,
    /// Compressed bytes read so far, over every pass (for the progress bar).
    progress: Arc<AtomicU64>,
    commands: HashMap<String, Arc<str>>,
    namespaces: HashMap<String, Arc<str>>,
    /// Scratch for the namespace of each copy (interned without allocating).
    ns_buf: String,
    /// New ObjectId `_id`s for passes after the first; `None` when there is only one pass.
    ids: Option<IdRemap>,
    /// Where recorded cursors were opened, for legacy OP_KILL_CURSORS.
    cursor_ns: CursorNamespaces,
    /// Step markers of this pass, and those waiting in `held` (by connection and request id).
    markers: MarkerSeq,
    held_markers: HashMap<(u64, i32), Marker>,
}

/// Recorded cursor id -> `(db, collection)` it was opened on, from the recorded replies; forgotten
/// when the recording shows the cursor exhausted or killed. Bounded: past the limit it starts over.
#[derive(Default)]
struct CursorNamespaces(HashMap<i64, (String, String)>);

impl CursorNamespaces {
    const LIMIT: usize = 100_000;

    fn learn(&mut self, req: &Request) {
        if let Some(c) = req.produces_cursor() {
            if self.0.len() >= Self::LIMIT {
                self.0.clear();
            }
            let collection = req.collection.clone().unwrap_or_default();
            self.0.insert(c, (req.db.clone(), collection));
        }
        let exhausted = req.recorded.as_ref().and_then(|o| o.cursor_id) == Some(0);
        if (&*req.command == "getMore" && exhausted) || &*req.command == "killCursors" {
            for c in &req.cursor_refs {
                self.0.remove(c);
            }
        }
    }

    fn get(&self, cursor: i64) -> Option<(String, String)> {
        self.0.get(&cursor).cloned()
    }
}

fn intern(map: &mut HashMap<String, Arc<str>>, s: &str) -> Arc<str> {
    match map.get(s) {
        Some(a) => a.clone(),
        None => {
            let a: Arc<str> = Arc::from(s);
            map.insert(s.to_owned(), a.clone());
            a
        }
    }
}

impl Reader<'_> {
    /// The live session id standing for a recorded one in this copy and lane (fresh on first use).
    fn session(&mut self, scope: Scope, lane_key: u32, recorded: &[u8]) -> [u8; 16] {
        // Looked up by reference: the owned key is built only for a new session.
        let sessions = self.sessions.entry((scope, lane_key)).or_default();
        if let Some(id) = sessions.get(recorded) {
            return *id;
        }
        let mut id = [0u8; 16];
        rand::rng().fill_bytes(&mut id);
        id[6] = (id[6] & 0x0f) | 0x40; // a version-4 UUID
        id[8] = (id[8] & 0x3f) | 0x80;
        sessions.insert(recorded.to_vec(), id);
        id
    }

    fn span(&self) -> u64 {
        self.last_ts
            .saturating_sub(self.first_ts.unwrap_or(self.last_ts))
    }

    /// Writes `req` out for every clone and queues it on its lanes. False when the replay stopped.
    fn emit(&mut self, req: Request) -> bool {
        if self.shared.abort.is_set() {
            return false;
        }
        let clones = self.cfg.clones.max(1);
        if req.msg.is_empty() {
            if let Some(marker) = self.held_markers.remove(&(req.conn_id, req.request_id)) {
                return self.emit_marker(req, marker);
            }
        }
        if self.iteration == 0 {
            self.last_ts = self.last_ts.max(req.ts_ns);
        }
        let first = *self.first_ts.get_or_insert(req.ts_ns);
        let offset_ns = req.ts_ns.saturating_sub(first) + self.pass_base_ns;
        let command = req.command.clone();
        let barrier = matches!(self.cfg.lanes, Lanes::Fixed(_)) && BARRIERS.contains(&&*command);
        let insert = &*command == "insert";
        if let Some(ids) = self.ids.as_mut().filter(|_| insert && self.iteration == 0) {
            ids.learn(&req.msg);
        }
        if barrier && !self.shared.budget.wait_empty(&self.shared.abort) {
            return false;
        }
        for clone in 0..clones {
            let scope = (self.iteration as u32)
                .wrapping_mul(clones)
                .wrapping_add(clone);
            let (lane, session_key) = self.router.route(scope, clone, &req);
            let lsid = req
                .lsid
                .as_ref()
                .map(|l| self.session(scope, session_key, l));
            let map = CopyDb {
                map: &self.cfg.db_map,
                clone: (clones > 1).then_some(clone + 1),
            };
            let out = match rewrite::rewrite(&req, &map, lsid.as_ref()) {
                Ok(mut o) => {
                    if let Some(ids) = &self.ids {
                        ids.apply(&mut o.bytes, insert);
                    }
                    o
                }
                Err(_) => {
                    *self
                        .result
                        .skipped
                        .entry(Skip::Malformed.name())
                        .or_default() += 1;
                    continue;
                }
            };
            // Built in a reused buffer: interning finds it without allocating.
            let mut ns = std::mem::take(&mut self.ns_buf);
            ns.clear();
            ns.push_str(&map.map_db(&req.db));
            if let Some(c) = &req.collection {
                ns.push('.');
                ns.push_str(c);
            }
            let produces_cursor = req.produces_cursor();
            if let Some(c) = produces_cursor {
                self.shared.cursors.expect(scope, c);
            }
            let op = Op {
                cursor_patches: out.cursor_patches,
                expects_reply: req.expects_reply,
                command: intern(&mut self.commands, &command),
                namespace: intern(&mut self.namespaces, &ns),
                offset_ns,
                seq: self.seq,
                scope,
                produces_cursor,
                recorded: req.recorded.clone(),
                origin_conn: req.conn_id,
                origin_request: req.request_id,
                bytes: out.bytes,
                marker: None,
                compressor: req.compressor,
            };
            self.ns_buf = ns;
            self.seq += 1;
            if !self
                .shared
                .budget
                .acquire(op.bytes.len(), &self.shared.abort)
            {
                return false;
            }
            self.router.send(lane, op);
        }
        !barrier || self.shared.budget.wait_empty(&self.shared.abort)
    }

    /// Queues a step marker on its connection's lane in every clone. It takes no part in the
    /// replay's span or `--rate` sequence.
    fn emit_marker(&mut self, req: Request, marker: Marker) -> bool {
        let clones = self.cfg.clones.max(1);
        let first = self.first_ts.unwrap_or(req.ts_ns);
        let offset_ns = req.ts_ns.saturating_sub(first) + self.pass_base_ns;
        for clone in 0..clones {
            let scope = (self.iteration as u32)
                .wrapping_mul(clones)
                .wrapping_add(clone);
            let (lane, _) = self.router.route(scope, clone, &req);
            let op = phases::marker_op(marker.clone(), &req, offset_ns, self.seq, scope);
            self.router.send(lane, op);
        }
        true
    }

    /// A recorded request skipped as a handshake that is a step marker: a placeholder for its
    /// connection's queue (markers are kept whatever the filters).
    fn marker_request(
        &mut self,
        skip: Skip,
        conn_id: u64,
        ts_ns: u64,
        wire: &[u8],
    ) -> Option<Request> {
        if skip != Skip::Handshake {
            return None;
        }
        let step = crate::wire::marker::step_marker_of_bytes(wire)?;
        let request_id = MsgHeader::parse(wire).ok().flatten()?.request_id;
        let marker = self.markers.next(self.iteration, &step);
        self.held_markers.insert((conn_id, request_id), marker);
        Some(phases::marker_request(conn_id, ts_ns, request_id))
    }

    /// A legacy OP_KILL_CURSORS becomes `killCursors` on the namespace its cursors were opened in.
    fn legacy_kill_cursors(
        &self,
        skip: Skip,
        record: &crate::capture::Record,
    ) -> Result<Request, Skip> {
        if skip != Skip::Unsupported {
            return Err(skip);
        }
        rewrite::understand_kill_cursors(record.conn_id, record.ts_ns, &record.payload, |c| {
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
            .deadline
            .is_some_and(|d| tokio::time::Instant::now() >= d)
    }

    /// One pass over the capture. False when the replay should stop.
    fn pass(&mut self) -> bool {
        let mut reader = match CaptureReader::open(&self.cfg.capture) {
            Ok(r) => r,
            Err(e) => {
                self.result.capture_error = Some(e.to_string());
                return false;
            }
        };
        let base = self.progress.load(Ordering::Relaxed);
        let mut held: HashMap<u64, VecDeque<Request>> = HashMap::new();
        self.markers.new_pass();
        self.held_markers.clear();
        if let Some(ids) = &mut self.ids {
            ids.new_pass(self.iteration == 0);
        }
        let mut n = 0u64;
        let mut go_on = true;
        while let Some(record) = reader.next_record() {
            n += 1;
            if n % 256 == 0 {
                self.progress
                    .store(base + reader.compressed_offset(), Ordering::Relaxed);
                if self.shared.abort.is_set() || self.deadline_passed() {
                    go_on = false;
                    break;
                }
            }
            let record = match record {
                Ok(r) => r,
                Err(e) => {
                    if self.result.capture_error.is_none() {
                        self.result.capture_error = Some(e.to_string());
                    }
                    break;
                }
            };
            match record.kind {
                RecordKind::Request => {
                    if self.iteration == 0 {
                        self.result.requests_read += 1;
                    }
                    let understood =
                        rewrite::understand(record.conn_id, record.ts_ns, &record.payload)
                            .or_else(|skip| self.legacy_kill_cursors(skip, &record));
                    let req = match understood {
                        Err(skip) => {
                            if self.iteration == 0 {
                                *self.result.skipped.entry(skip.name()).or_default() += 1;
                            }
                            self.marker_request(skip, record.conn_id, record.ts_ns, &record.payload)
                        }
                        Ok(req) if !self.cfg.filters.accepts(&req) => {
                            if self.iteration == 0 {
                                self.result.filtered += 1;
                            }
                            None
                        }
                        Ok(req) => Some(req),
                    };
                    if let Some(req) = req {
                        let q = held.entry(record.conn_id).or_default();
                        q.push_back(req);
                        let mut q = std::mem::take(q);
                        let ok = self.flush(&mut q, false);
                        held.insert(record.conn_id, q);
                        if !ok {
                            go_on = false;
                            break;
                        }
                    }
                }
                RecordKind::Reply => {
                    let Some(mut q) = held.remove(&record.conn_id) else {
                        continue;
                    };
                    let response_to = MsgHeader::parse(&record.payload)
                        .ok()
                        .flatten()
                        .map(|h| h.response_to);
                    if let Some(req) = q.iter_mut().find(|r| {
                        Some(r.request_id) == response_to && r.expects_reply && r.recorded.is_none()
                    }) {
                        req.recorded = Some(outcome::scan(&record.payload).unwrap_or_default());
                        self.cursor_ns.learn(req);
                    }
                    let ok = self.flush(&mut q, false);
                    held.insert(record.conn_id, q);
                    if !ok {
                        go_on = false;
                        break;
                    }
                }
                RecordKind::Close => {
                    if let Some(mut q) = held.remove(&record.conn_id) {
                        if !self.flush(&mut q, true) {
                            go_on = false;
                            break;
                        }
                    }
                    let clones = self.cfg.clones.max(1);
                    for clone in 0..clones {
                        let scope = (self.iteration as u32)
                            .wrapping_mul(clones)
                            .wrapping_add(clone);
                        self.router.close_conn(scope, record.conn_id);
                    }
                }
                _ => {}
            }
        }
        if go_on {
            let mut conns: Vec<u64> = held.keys().copied().collect();
            conns.sort_unstable();
            for c in conns {
                let mut q = held.remove(&c).unwrap_or_default();
                if !self.flush(&mut q, true) {
                    go_on = false;
                    break;
                }
            }
        }
        self.progress
            .store(base + reader.compressed_offset(), Ordering::Relaxed);
        if self.iteration == 0 {
            self.result.recorded_span_ns = self.span();
        }
        if self.cfg.lanes == Lanes::PerRecorded {
            self.router.close_all();
        }
        // Sessions and cursors of this pass are never used again.
        self.sessions.clear();
        go_on && self.result.capture_error.is_none()
    }
}

/// Runs the reader to the end of the last pass; returns what it saw and the lanes to wait for.
pub fn run(
    cfg: SourceConfig,
    shared: Arc<Shared>,
    handle: Handle,
    progress: Arc<AtomicU64>,
) -> SourceResult {
    let router = Router::new(cfg.lanes, cfg.clones.max(1), handle, shared.clone());
    let mut reader = Reader {
        cfg: &cfg,
        shared,
        router,
        result: SourceResult::default(),
        sessions: HashMap::new(),
        seq: 0,
        first_ts: None,
        last_ts: 0,
        iteration: 0,
        pass_base_ns: 0,
        progress,
        commands: HashMap::new(),
        namespaces: HashMap::new(),
        ns_buf: String::new(),
        ids: (cfg.repeat != Some(1)).then(IdRemap::default),
        cursor_ns: CursorNamespaces::default(),
        markers: MarkerSeq::default(),
        held_markers: HashMap::new(),
    };
    loop {
        if cfg.repeat.is_some_and(|r| reader.iteration >= r) {
            break;
        }
        if reader.iteration > 0 {
            // A pass starts where the previous one ended on schedule, or later if it ran late.
            let scheduled = reader.iteration * (reader.result.recorded_span_ns + 1_000_000);
            reader.pass_base_ns = if cfg.pass_barrier {
                if !reader.shared.budget.wait_empty(&reader.shared.abort) {
                    break;
                }
                scheduled.max(reader.shared.start.elapsed().as_nanos() as u64)
            } else {
                scheduled
            };
        }
        let go_on = reader.pass();
        reader.iteration += 1;
        if !go_on || reader.deadline_passed() || reader.shared.abort.is_set() {
            break;
        }
        if reader.first_ts.is_none() {
            // Nothing replayable: repeating would spin.
            break;
        }
    }
    reader.router.close_all();
    let mut result = reader.result;
    result.iterations = reader.iteration;
    result.lanes = std::mem::take(&mut reader.router.joins);
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copy_db_maps_then_suffixes_and_spares_system_databases() {
        let map = vec![("bench".to_string(), "other".to_string())];
        let c = CopyDb {
            map: &map,
            clone: Some(2),
        };
        assert_eq!(c.map_db("bench"), "other_2");
        assert_eq!(c.map_db("x"), "x_2");
        assert_eq!(c.map_db("admin"), "admin");
        assert_eq!(c.map_ns("bench.c"), "other_2.c");
        let c = CopyDb {
            map: &map,
            clone: None,
        };
        assert_eq!(c.map_db("bench"), "other");
    }

    #[test]
    fn namespace_patterns() {
        assert!(ns_matches("bench", "bench", "bench.c"));
        assert!(ns_matches("bench.c", "bench", "bench.c"));
        assert!(!ns_matches("bench.d", "bench", "bench.c"));
        assert!(ns_matches("ben*", "bench", "bench.c"));
    }
}
