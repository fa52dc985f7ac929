//! The mirror's dispatcher: a task that takes the intake's records, understands each read once
//! (`replay::request::understand`: legacy opcodes and compression undone), names its query shape
//! (a getMore its cursor's), pairs it with production's reply, and offers the pair to every
//! candidate and the control. Handshakes, SASL and anything but the mirrored reads never go
//! further. Memory is bounded: requests awaiting their reply per connection, cursors known.

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
}

impl Dispatcher {
    pub fn new(
        candidates: Vec<Arc<Candidate>>,
        filter: Filter,
        filtered: Arc<AtomicU64>,
    ) -> Dispatcher {
        Dispatcher {
            candidates,
            pending: HashMap::new(),
            cursor_shapes: HashMap::new(),
            shaper: Shaper::new(),
            filter,
            filtered,
            apps: HashMap::new(),
        }
    }

    /// Runs until the intake closes.
    pub async fn run(mut self, mut rx: mpsc::Receiver<Record>, queued: Arc<AtomicUsize>) {
        while let Some(record) = rx.recv().await {
            queued.fetch_sub(record.payload.len(), Ordering::Relaxed);
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
        if !req.expects_reply || !is_mirrored_read(&req) {
            return;
        }
        if !self.passes(&req, header.request_id) {
            self.filtered.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let key = self.shape(&req);
        let pending = self.pending.entry(record.conn_id).or_default();
        if pending.len() >= PENDING_PER_CONN {
            pending.clear();
        }
        let ts_ns = record.ts_ns;
        pending.insert(header.request_id, Waiting { req, key, ts_ns });
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
            return;
        };
        let Waiting { req, key, ts_ns } = waiting;
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
            production: record.payload,
            production_ns: record.ts_ns.saturating_sub(ts_ns),
            opens_cursor,
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
}
