//! The mirror's dispatcher: a task that takes the intake's records, understands each read once
//! (`replay::request::understand`: legacy opcodes and compression undone), names its query shape
//! (a getMore its cursor's), pairs it with production's reply, and offers the pair to every
//! candidate and the control. Handshakes, SASL and anything but the mirrored reads never go
//! further. Memory is bounded: requests awaiting their reply per connection, cursors known.

use super::early::Early;
use super::filter::{Filter, Read};
use super::lane::Candidate;
use super::shared::Pair;
use super::stats::ShapeKey;
use crate::capture::{Record, RecordKind};
use crate::replay::measure::observed::asks_order;
use crate::replay::measure::outcome;
use crate::replay::request::{understand, Request};
use crate::shape::Shaper;
use crate::wire::MsgHeader;
use bson::RawDocument;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use tokio::sync::mpsc;

/// Requests awaiting their reply per connection; past it the oldest are forgotten.
const PENDING_PER_CONN: usize = 256;
/// How long the dispatcher sleeps when the intake is empty, at first and at most: a read waits
/// at most this long to be mirrored (its candidate's time starts when it is sent).
const POLL: std::time::Duration = std::time::Duration::from_millis(1);
const MAX_POLL: std::time::Duration = std::time::Duration::from_millis(8);
/// Cursors whose shape is remembered; past it the map starts again.
const MAX_CURSOR_SHAPES: usize = 100_000;

/// Whether a request understood is a mirrored read: find, aggregate without `$out`/`$merge`,
/// count, distinct, getMore.
pub fn is_mirrored_read(req: &Request) -> bool {
    match &*req.command {
        "find" | "count" | "distinct" | "getMore" => req.transaction.is_none(),
        "aggregate" => req.transaction.is_none() && !aggregate_writes(&req.msg),
        _ => false,
    }
}

/// Whether a request understood is a write mirrored with `--mirror all`: insert, update,
/// delete, findAndModify, bulkWrite, the commands that create, change or drop collections and
/// indexes, an aggregate with `$out`/`$merge`. In a multi-statement transaction also the
/// statement that starts it (whatever it is), its commit and its abort (`super::txn`).
pub fn is_mirrored_write(req: &Request) -> bool {
    let command = &*req.command;
    let writes = super::config::WRITE_COMMANDS.contains(&command)
        || (command == "aggregate" && aggregate_writes(&req.msg));
    match req.transaction {
        None => writes,
        Some(_) => writes || super::txn::starts_transaction(&req.msg),
    }
}

/// The `operationTime` of a reply, as `(t, i)`.
fn operation_time(frame: &[u8]) -> Option<(u32, u32)> {
    let body = super::compare::body(frame)?;
    let ts = RawDocument::from_bytes(&body)
        .ok()?
        .get_timestamp("operationTime")
        .ok()?;
    Some((ts.time, ts.increment))
}

/// An aggregate whose pipeline ends in `$out` or `$merge` (unreadable: taken as writing).
fn aggregate_writes(msg: &[u8]) -> bool {
    let Ok(view) = crate::wire::OpMsgView::new(msg) else {
        return true;
    };
    let Some(body) = view
        .body()
        .ok()
        .and_then(|b| RawDocument::from_bytes(b).ok())
    else {
        return true;
    };
    let Ok(pipeline) = body.get_array("pipeline") else {
        return true;
    };
    pipeline
        .into_iter()
        .flatten()
        .filter_map(|s| s.as_document())
        .any(|s| s.get("$out").ok().flatten().is_some() || s.get("$merge").ok().flatten().is_some())
}

struct Waiting {
    req: Request,
    key: ShapeKey,
    ts_ns: u64,
    /// A write (`--mirror all`): mirrored once production acknowledged it.
    write: bool,
}

pub struct Dispatcher {
    pub candidates: Vec<Arc<Candidate>>,
    pending: HashMap<u64, HashMap<i32, Waiting>>,
    cursor_shapes: HashMap<i64, ShapeKey>,
    shaper: Shaper,
    filter: Filter,
    /// Reads the filters left out.
    filtered: Arc<AtomicU64>,
    /// The application each open connection named in its handshake (with `--app` only).
    apps: HashMap<u64, String>,
    /// `--mirror all`: writes are mirrored too.
    writes: bool,
    /// The intake's dropped records, and how many were seen: with writes, a drop may have been
    /// a write (or its acknowledgement), so the targets go on with reads only.
    intake_dropped: Arc<AtomicU64>,
    seen_dropped: u64,
    /// Writes offered to the targets so far (`--mirror all`): a read answered after them is
    /// sent to a target once it applied them ([`Pair::after_writes`]).
    writes_offered: u64,
    /// Replies that came before their request.
    early: Early,
}

impl Dispatcher {
    pub fn new(
        candidates: Vec<Arc<Candidate>>,
        filter: Filter,
        filtered: Arc<AtomicU64>,
        writes: bool,
        intake_dropped: Arc<AtomicU64>,
    ) -> Dispatcher {
        Dispatcher {
            candidates,
            pending: HashMap::new(),
            cursor_shapes: HashMap::new(),
            shaper: Shaper::new(),
            filter,
            filtered,
            apps: HashMap::new(),
            writes,
            intake_dropped,
            seen_dropped: 0,
            writes_offered: 0,
            early: Early::default(),
        }
    }

    /// Forgets a connection's requests awaiting their reply past [`PENDING_PER_CONN`] (a write
    /// among them is lost: reads only from now).
    fn make_room(&mut self, conn_id: u64) {
        let Some(pending) = self.pending.get_mut(&conn_id) else {
            return;
        };
        if pending.len() >= PENDING_PER_CONN {
            let had_write = pending.values().any(|w| w.write);
            pending.clear();
            if had_write {
                self.writes_lost("too many requests awaiting their reply on one connection");
            }
        }
    }

    /// With writes mirrored, every target goes on with reads only.
    fn writes_lost(&self, why: &str) {
        for w in self.candidates.iter().filter_map(|c| c.writes.as_ref()) {
            w.give_up(why);
        }
    }

    /// Runs until the intake closes. It takes records as they are, and when there are none it
    /// sleeps ([`POLL`], longer while nothing comes) instead of waiting on the queue: a waiting
    /// receiver would be woken by every record, a system call on the forwarding thread that
    /// sends it. Each record spends from the task's cooperative budget: a backlog never keeps
    /// the lanes, which share the mirror's thread, from their replies and timers.
    pub async fn run(mut self, mut rx: mpsc::Receiver<Record>, queued: Arc<AtomicUsize>) {
        let mut idle = POLL;
        loop {
            let record = match rx.try_recv() {
                Ok(record) => record,
                Err(mpsc::error::TryRecvError::Empty) => {
                    tokio::time::sleep(idle).await;
                    idle = (idle * 2).min(MAX_POLL);
                    continue;
                }
                Err(mpsc::error::TryRecvError::Disconnected) => break,
            };
            idle = POLL;
            tokio::task::coop::consume_budget().await;
            queued.fetch_sub(record.payload.len(), Ordering::Relaxed);
            let dropped = self.intake_dropped.load(Ordering::Relaxed);
            if self.writes && dropped > self.seen_dropped {
                self.seen_dropped = dropped;
                self.writes_lost("the mirror's intake was full: a write may be lost");
            }
            match record.kind {
                RecordKind::Request => self.request(record),
                RecordKind::Reply => self.reply(record),
                RecordKind::Close => {
                    self.pending.remove(&record.conn_id);
                    self.apps.remove(&record.conn_id);
                    for c in &self.candidates {
                        c.close(record.conn_id);
                    }
                }
                _ => {}
            }
        }
    }

    fn request(&mut self, record: Record) {
        let Ok(Some(header)) = MsgHeader::parse(&record.payload) else {
            return;
        };
        if self.filter.wants_handshakes() {
            if let Some(app) = application(&record.payload) {
                self.apps.insert(record.conn_id, app);
                return;
            }
        }
        let Ok(req) = understand(record.conn_id, record.ts_ns, &record.payload) else {
            return;
        };
        if self.writes && is_mirrored_write(&req) {
            return self.write(record, req, header.request_id);
        }
        if !req.expects_reply || !is_mirrored_read(&req) {
            return;
        }
        if !self.passes(&req, header.request_id) {
            self.filtered.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let key = self.shape(&req);
        self.make_room(record.conn_id);
        let pending = self.pending.entry(record.conn_id).or_default();
        let ts_ns = record.ts_ns;
        let write = false;
        pending.insert(
            header.request_id,
            Waiting {
                req,
                key,
                ts_ns,
                write,
            },
        );
        self.claim_early(record.conn_id, header.request_id);
    }

    /// Pairs a request just noted with its reply, if the reply came first ([`Early`]).
    fn claim_early(&mut self, conn_id: u64, request_id: i32) {
        if let Some(reply) = self.early.claim(conn_id, request_id) {
            tracing::trace!(conn = conn_id, "a reply came before its request");
            self.reply(reply);
        }
    }

    /// A write: offered at once when sent without acknowledgement (w:0), else once production
    /// acknowledged it. Filters and sampling never leave a write out: the target's state
    /// follows production's.
    fn write(&mut self, record: Record, req: Request, request_id: i32) {
        let key = self.shape(&req);
        if !req.expects_reply {
            let pair = Arc::new(Pair {
                conn_id: record.conn_id,
                unordered: false,
                req,
                key,
                production: bytes::Bytes::new(),
                production_ns: 0,
                answered_ns: record.ts_ns,
                opens_cursor: None,
                after_writes: 0,
            });
            self.writes_offered += 1;
            for c in &self.candidates {
                c.offer_write(&pair, None);
            }
            return;
        }
        self.make_room(record.conn_id);
        let (ts_ns, write) = (record.ts_ns, true);
        let waiting = Waiting {
            req,
            key,
            ts_ns,
            write,
        };
        self.pending
            .entry(record.conn_id)
            .or_default()
            .insert(request_id, waiting);
        self.claim_early(record.conn_id, request_id);
    }

    /// Whether the filters let `req` through; a getMore follows its cursor's opening read (a
    /// cursor is known only when that read was mirrored).
    fn passes(&self, req: &Request, request_id: i32) -> bool {
        if req
            .cursor_refs
            .first()
            .is_some_and(|c| self.cursor_shapes.contains_key(c))
        {
            return true;
        }
        let namespace = req.namespace();
        self.filter.passes(&Read {
            conn_id: req.conn_id,
            request_id,
            command: &req.command,
            namespace: &namespace,
            app: self.apps.get(&req.conn_id).map(String::as_str),
        })
    }

    /// The request's shape; a getMore's is its cursor's when that cursor's opening was seen.
    fn shape(&mut self, req: &Request) -> ShapeKey {
        if let Some(known) = req
            .cursor_refs
            .first()
            .and_then(|c| self.cursor_shapes.get(c))
        {
            return known.clone();
        }
        match self.shaper.request_wire(&req.msg) {
            Some(shaped) => {
                let v = shaped.view();
                ShapeKey {
                    text: v.text.to_owned(),
                    command: v.command.to_owned(),
                    namespace: v.namespace.to_owned(),
                }
            }
            None => ShapeKey {
                text: format!("{} {}", req.command, req.namespace()),
                command: req.command.to_string(),
                namespace: req.namespace(),
            },
        }
    }

    fn reply(&mut self, record: Record) {
        let Ok(Some(header)) = MsgHeader::parse(&record.payload) else {
            return;
        };
        let Some(waiting) = self
            .pending
            .get_mut(&record.conn_id)
            .and_then(|p| p.remove(&header.response_to))
        else {
            // Its request may still be on its way (or was never to be mirrored).
            return self.early.keep(record.conn_id, header.response_to, &record);
        };
        let Waiting {
            req,
            key,
            ts_ns,
            write,
        } = waiting;
        if write {
            let acknowledged = outcome::scan(&record.payload).is_ok_and(|o| o.ok);
            if acknowledged {
                let op_time = operation_time(&record.payload);
                let pair = Arc::new(Pair {
                    conn_id: record.conn_id,
                    unordered: false,
                    req,
                    key,
                    answered_ns: record.ts_ns,
                    production: record.payload,
                    production_ns: record.ts_ns.saturating_sub(ts_ns),
                    opens_cursor: None,
                    after_writes: 0,
                });
                self.writes_offered += 1;
                for c in &self.candidates {
                    c.offer_write(&pair, op_time);
                }
            }
            return;
        }
        let cursor = outcome::scan(&record.payload)
            .ok()
            .and_then(|o| o.cursor_id)
            .filter(|&c| c != 0);
        let opens_cursor = cursor.filter(|_| &*req.command != "getMore");
        if let Some(c) = opens_cursor {
            if self.cursor_shapes.len() >= MAX_CURSOR_SHAPES {
                self.cursor_shapes.clear();
            }
            self.cursor_shapes.insert(c, key.clone());
        }
        let pair = Arc::new(Pair {
            conn_id: record.conn_id,
            unordered: !asks_order(&req.command, &req.msg),
            req,
            key,
            answered_ns: record.ts_ns,
            production: record.payload,
            production_ns: record.ts_ns.saturating_sub(ts_ns),
            opens_cursor,
            // Replies of one connection reach the mirror in order: a write this connection saw
            // acknowledged before the read was offered before it.
            after_writes: self.writes_offered,
        });
        for c in &self.candidates {
            c.offer(&pair);
        }
    }
}

/// The application name of a handshake (`client.application.name` of a hello or isMaster).
fn application(payload: &[u8]) -> Option<String> {
    let msg = crate::wire::Message::parse(payload).ok()?;
    let client = crate::wire::info::client_metadata(&msg)?;
    let app = client.get_document("application").ok()?;
    app.get_str("name").ok().map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::op_msg::{MsgFlags, OpMsg};
    use bson::rawdoc;

    fn read(body: bson::RawDocumentBuf) -> bool {
        let wire = bytes::Bytes::from(OpMsg::with_body(body, MsgFlags::empty()).encode(7, 0));
        // A handshake or SASL step is not even understood as a request to replay.
        understand(1, 0, &wire).is_ok_and(|r| is_mirrored_read(&r))
    }

    #[test]
    fn reads_are_mirrored_and_writes_are_not() {
        assert!(read(rawdoc! {"find": "c", "filter": {}, "$db": "d"}));
        assert!(read(
            rawdoc! {"aggregate": "c", "pipeline": [{"$match": {}}], "cursor": {}, "$db": "d"}
        ));
        assert!(!read(
            rawdoc! {"aggregate": "c", "pipeline": [{"$out": "x"}], "cursor": {}, "$db": "d"}
        ));
        assert!(!read(
            rawdoc! {"aggregate": "c", "pipeline": [{"$merge": {"into": "x"}}], "cursor": {}, "$db": "d"}
        ));
        assert!(!read(
            rawdoc! {"insert": "c", "documents": [{"a": 1}], "$db": "d"}
        ));
        assert!(!read(rawdoc! {"saslStart": 1, "$db": "admin"}));
    }

    fn write(body: bson::RawDocumentBuf) -> bool {
        let wire = bytes::Bytes::from(OpMsg::with_body(body, MsgFlags::empty()).encode(7, 0));
        understand(1, 0, &wire).is_ok_and(|r| is_mirrored_write(&r))
    }

    #[test]
    fn writes_outside_transactions_are_mirrored_with_mirror_all() {
        assert!(write(
            rawdoc! {"insert": "c", "documents": [{"a": 1}], "$db": "d"}
        ));
        assert!(write(
            rawdoc! {"update": "c", "updates": [{"q": {}, "u": {"$set": {"a": 2}}}], "$db": "d"}
        ));
        assert!(write(
            rawdoc! {"findAndModify": "c", "query": {}, "remove": true, "$db": "d"}
        ));
        assert!(write(
            rawdoc! {"aggregate": "c", "pipeline": [{"$out": "x"}], "cursor": {}, "$db": "d"}
        ));
        assert!(write(rawdoc! {"drop": "c", "$db": "d"}));
        assert!(!write(rawdoc! {"find": "c", "filter": {}, "$db": "d"}));
        assert!(!write(rawdoc! {"hello": 1, "$db": "admin"}));
        let lsid = rawdoc! {"id": bson::Binary { subtype: bson::spec::BinarySubtype::Uuid, bytes: vec![7; 16] }};
        // In a transaction: its writes, the statement that starts it, its commit and abort.
        assert!(write(rawdoc! {
            "insert": "c", "documents": [{"a": 1}], "lsid": lsid.clone(), "txnNumber": 1_i64,
            "autocommit": false, "startTransaction": true, "$db": "d"
        }));
        assert!(write(rawdoc! {
            "find": "c", "filter": {}, "lsid": lsid.clone(), "txnNumber": 1_i64,
            "autocommit": false, "startTransaction": true, "$db": "d"
        }));
        assert!(!write(rawdoc! {
            "find": "c", "filter": {}, "lsid": lsid.clone(), "txnNumber": 1_i64,
            "autocommit": false, "$db": "d"
        }));
        assert!(write(rawdoc! {
            "abortTransaction": 1, "lsid": lsid.clone(), "txnNumber": 1_i64, "autocommit": false, "$db": "admin"
        }));
        // A retryable write (txnNumber, no autocommit) is mirrored; a commit is seen.
        assert!(write(rawdoc! {
            "insert": "c", "documents": [{"a": 1}], "lsid": lsid.clone(), "txnNumber": 2_i64, "$db": "d"
        }));
        assert!(write(rawdoc! {
            "commitTransaction": 1, "lsid": lsid, "txnNumber": 1_i64, "autocommit": false, "$db": "admin"
        }));
    }
}
