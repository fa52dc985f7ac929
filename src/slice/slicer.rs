//! The [`Slicer`]: judges each record as it is read, holds records back only behind an
//! undecided transaction, and passes on the kept ones with each connection's open record first.

use super::bounded::Bounded;
use super::conns::{Awaiting, Conn};
use super::filter::SliceOptions;
use super::summary::Fate;
use super::summary::{Reason, SliceSummary};
use super::txn::{Statement, Txns, Verdict};
use crate::capture::record::HELLO_REWRITE;
use crate::capture::{
    CaptureError, EndEvent, GapEvent, OpenEvent, Record, RecordKind, RecordSource,
};
use crate::wire::info::{client_metadata, is_handshake_command};
use crate::wire::{Message, MsgHeader, ReplyInfo, RequestInfo};
use std::collections::{HashMap, VecDeque};

/// Cursors whose opening reply was kept, remembered at most (the oldest are forgotten: a getMore
/// of one is then left out).
const MAX_CURSORS: usize = 100_000;
/// Records and bytes held back behind an undecided transaction at most; past either, that
/// transaction is left out.
const MAX_HELD_RECORDS: usize = 100_000;
const MAX_HELD_BYTES: usize = 64 << 20;

/// What a queued record is, for its fate and its counting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum What {
    Request,
    Reply,
    /// Goes out only when its connection's open did (gaps, hello rewrites, unknown kinds).
    ConnEvent,
    Metadata,
    Close,
    /// A capture-wide record (`conn_id` 0): a gap.
    Capture,
    End,
}

struct Entry {
    record: Record,
    fate: Fate,
    what: What,
}

pub struct Slicer<S> {
    pub(super) inner: S,
    options: SliceOptions,
    /// `--since` and `--until` in ns since the epoch, set at the first record.
    window: Option<(u64, u64)>,
    conns: HashMap<u64, Conn>,
    cursors: Bounded<i64, Fate>,
    txns: Txns,
    queue: VecDeque<Entry>,
    held_bytes: usize,
    out: VecDeque<Record>,
    last_ts: u64,
    /// Kept requests still awaiting their first reply.
    awaiting_kept: u64,
    pub(super) past_until: bool,
    finished: bool,
    end_written: bool,
    gap_messages: u64,
    pub(super) summary: SliceSummary,
}

impl<S: RecordSource> Slicer<S> {
    pub fn new(inner: S, options: SliceOptions) -> Self {
        Slicer {
            inner,
            options,
            window: None,
            conns: HashMap::new(),
            cursors: Bounded::new(MAX_CURSORS),
            txns: Txns::default(),
            queue: VecDeque::new(),
            held_bytes: 0,
            out: VecDeque::new(),
            last_ts: 0,
            awaiting_kept: 0,
            past_until: false,
            finished: false,
            end_written: false,
            gap_messages: 0,
            summary: SliceSummary::default(),
        }
    }

    /// What was kept and left out so far (all of it once reading returned `None`).
    pub fn summary(&self) -> SliceSummary {
        let mut s = self.summary.clone();
        s.schema_version = crate::figures::SCHEMA_VERSION;
        s.transactions_kept = self.txns.kept;
        s.transactions_dropped = self.txns.dropped;
        s.complete = self.end_written;
        s
    }

    pub fn into_inner(self) -> S {
        self.inner
    }

    pub fn inner(&self) -> &S {
        &self.inner
    }

    /// An end record went out: the capture's, or the window's when it ended first.
    pub fn complete(&self) -> bool {
        self.end_written
    }

    /// The next kept record, `None` at the end, or a reading error of the capture.
    pub fn next_record(&mut self) -> Option<Result<Record, CaptureError>> {
        loop {
            if let Some(r) = self.out.pop_front() {
                return Some(Ok(r));
            }
            if self.finished {
                return None;
            }
            // Past the window with nothing kept still waiting: the rest of the capture is not read.
            if self.past_until && self.awaiting_kept == 0 && self.txns.open_count() == 0 {
                self.finish(true);
                continue;
            }
            match self.inner.next_record() {
                None => self.finish(false),
                Some(Err(e)) => return Some(Err(e)),
                Some(Ok(record)) => {
                    self.process(record);
                    self.drain();
                }
            }
        }
    }

    /// The end of reading: undecided transactions are left out, everything held goes out, and
    /// an end record closes a slice whose window ended before the capture.
    fn finish(&mut self, window_ended: bool) {
        let reason = match window_ended {
            true => Reason::TransactionPartial,
            false => Reason::TransactionUnfinished,
        };
        self.txns.drop_open(reason);
        self.drain();
        if window_ended && !self.end_written {
            self.write_end(self.last_ts);
        }
        self.finished = true;
    }

    fn window(&mut self, ts: u64) -> (u64, u64) {
        let o = &self.options;
        *self.window.get_or_insert_with(|| {
            (
                o.since.map_or(0, |b| b.resolve(ts)),
                o.until.map_or(u64::MAX, |b| b.resolve(ts)),
            )
        })
    }

    fn push(&mut self, record: Record, fate: Fate, what: What) {
        self.held_bytes += record.payload.len();
        self.queue.push_back(Entry { record, fate, what });
    }

    fn process(&mut self, record: Record) {
        let (since, until) = self.window(record.ts_ns);
        let ts = record.ts_ns;
        if record.kind != RecordKind::End && ts > until && !self.past_until {
            self.past_until = true;
            // A transaction still open here ends after --until.
            self.txns.drop_open(Reason::TransactionPartial);
        }
        let place = if ts < since {
            Some(Reason::BeforeWindow)
        } else if ts > until {
            Some(Reason::AfterWindow)
        } else {
            None
        };
        let id = record.conn_id;
        match record.kind {
            RecordKind::Open => self.conns.entry(id).or_default().on_open(record),
            RecordKind::ClientMetadata => {
                let conn = self.conns.entry(id).or_default();
                if let Ok(doc) = bson::RawDocument::from_bytes(&record.payload) {
                    conn.learn_client(doc);
                }
                conn.metadata = Some(record.clone());
                self.push(record, Fate::Keep, What::Metadata);
            }
            RecordKind::Request => self.request(record, place),
            RecordKind::Reply => self.reply(record),
            RecordKind::Close => {
                if let Some(conn) = self.conns.get_mut(&id) {
                    for a in conn.awaiting.drain(..) {
                        if !a.answered {
                            self.awaiting_kept -= 1;
                        }
                    }
                }
                self.push(record, Fate::Keep, What::Close);
            }
            RecordKind::End => {
                self.txns.drop_open(Reason::TransactionUnfinished);
                self.push(record, Fate::Keep, What::End);
            }
            kind => {
                let fate = match kind {
                    HELLO_REWRITE => self
                        .conns
                        .get(&id)
                        .and_then(|c| c.last_reply)
                        .unwrap_or(Fate::Drop(Reason::Unpaired)),
                    _ => place.map_or(Fate::Keep, Fate::Drop),
                };
                let what = if id == 0 {
                    What::Capture
                } else {
                    What::ConnEvent
                };
                self.push(record, fate, what);
            }
        }
    }

    fn request(&mut self, record: Record, place: Option<Reason>) {
        self.summary.read.requests += 1;
        self.summary.read.bytes += record.payload.len() as u64;
        let msg = Message::parse(&record.payload).ok();
        let info = msg.as_ref().map(RequestInfo::of);
        let id = record.conn_id;
        let conn = self.conns.entry(id).or_default();
        if let Some(doc) = msg.as_ref().and_then(client_metadata) {
            conn.learn_client(&doc);
        }
        let conn_ok = self.options.conns.accepts(&conn.facts(id));
        let matched = match &info {
            Some(i) => self.message_matches(i),
            None => self.options.messages.is_empty(),
        };
        let outside = place.or((!conn_ok).then_some(Reason::Connection));
        let fate = match &info {
            Some(i)
                if i.autocommit == Some(false) && i.txn_number.is_some() && i.lsid.is_some() =>
            {
                let verdict = self.txns.statement(Statement {
                    lsid: i.lsid.as_ref().map_or(&[][..], |l| l.as_bytes()),
                    txn_number: i.txn_number.unwrap_or_default(),
                    start: i.start_transaction,
                    end: matches!(i.command.as_str(), "commitTransaction" | "abortTransaction"),
                    window: place,
                    conn_ok,
                    matched,
                });
                match verdict {
                    Verdict::Txn(t) => Fate::Txn(t),
                    Verdict::Drop(r) => Fate::Drop(r),
                }
            }
            _ => match (outside, matched) {
                (Some(r), _) => Fate::Drop(r),
                (None, false) => Fate::Drop(Reason::Message),
                (None, true) => info.as_ref().map_or(Fate::Keep, |i| self.cursor_rule(i)),
            },
        };
        if let (Some(i), Some(h)) = (&info, MsgHeader::parse(&record.payload).ok().flatten()) {
            if i.expects_reply {
                let get_more = (i.command == "getMore").then_some(i.cursor_id).flatten();
                // Past --until, reading goes on for the replies of kept requests, but not for a
                // monitoring hello's (an exhaust stream answers it for as long as it lives).
                let waited = !is_handshake_command(&i.command);
                self.await_reply(id, h.request_id, fate, get_more, waited);
            }
        }
        self.push(record, fate, What::Request);
    }

    fn message_matches(&self, i: &RequestInfo) -> bool {
        let m = &self.options.messages;
        if !m.accepts_command(&i.command) {
            return false;
        }
        !m.needs_namespace() || m.accepts_namespace(i.db.as_deref().unwrap_or(""), &i.namespace())
    }

    /// A getMore or killCursors goes only with the reply that opened its cursor.
    fn cursor_rule(&mut self, i: &RequestInfo) -> Fate {
        let origin = |c: i64| self.cursors.get(&c).copied();
        let resolved = |f: Option<Fate>, txns: &Txns| match f {
            Some(Fate::Keep) => Fate::Keep,
            Some(Fate::Txn(t)) => match txns.fate(t) {
                None => Fate::Txn(t),
                Some(Ok(())) => Fate::Keep,
                Some(Err(_)) => Fate::Drop(Reason::CursorOrigin),
            },
            _ => Fate::Drop(Reason::CursorOrigin),
        };
        if i.command == "getMore" {
            return match i.cursor_id {
                Some(c) => resolved(origin(c), &self.txns),
                None => Fate::Keep,
            };
        }
        if i.command == "killCursors" && !i.killed_cursors.is_empty() {
            let all = i
                .killed_cursors
                .iter()
                .all(|&c| resolved(origin(c), &self.txns) == Fate::Keep);
            if !all {
                return Fate::Drop(Reason::CursorOrigin);
            }
            for c in &i.killed_cursors {
                self.cursors.remove(c);
            }
        }
        Fate::Keep
    }

    fn await_reply(
        &mut self,
        id: u64,
        request_id: i32,
        fate: Fate,
        get_more: Option<i64>,
        waited: bool,
    ) {
        let waited = waited && !fate.is_drop();
        if waited {
            self.awaiting_kept += 1;
        }
        let conn = self.conns.entry(id).or_default();
        let evicted = conn.await_reply(Awaiting {
            request_id,
            fate,
            get_more,
            answered: !waited,
        });
        if let Some(a) = evicted {
            if !a.answered {
                self.awaiting_kept -= 1;
            }
        }
    }

    fn reply(&mut self, record: Record) {
        self.summary.read.replies += 1;
        self.summary.read.bytes += record.payload.len() as u64;
        let msg = Message::parse(&record.payload).ok();
        let info = msg.as_ref().map(ReplyInfo::of).unwrap_or_default();
        let header = MsgHeader::parse(&record.payload).ok().flatten();
        let conn = self.conns.entry(record.conn_id).or_default();
        let answered = header.and_then(|h| conn.answer(h.response_to, info.more_to_come));
        let fate = match &answered {
            None => Fate::Drop(Reason::Unpaired),
            Some(a) => a.fate,
        };
        conn.last_reply = Some(fate);
        if let Some(a) = &answered {
            if !a.answered {
                self.awaiting_kept -= 1;
            }
            if !fate.is_drop() {
                match (a.get_more, info.cursor_id) {
                    (Some(c), Some(0)) => {
                        self.cursors.remove(&c);
                    }
                    (None, Some(c)) if c != 0 => self.cursors.insert(c, fate),
                    _ => {}
                }
            }
        }
        self.push(record, fate, What::Reply);
    }
}

impl<S: RecordSource> Slicer<S> {
    /// Hands out the front of the queue while its fate is decided.
    fn drain(&mut self) {
        while let Some(front) = self.queue.front() {
            let fate = match front.fate {
                Fate::Txn(t) => match self.txns.fate(t) {
                    Some(Ok(())) => Fate::Keep,
                    Some(Err(r)) => Fate::Drop(r),
                    None if self.queue.len() > MAX_HELD_RECORDS
                        || self.held_bytes > MAX_HELD_BYTES =>
                    {
                        self.txns.drop_id(t, Reason::TransactionTooLong);
                        continue;
                    }
                    None => return,
                },
                f => f,
            };
            let entry = self.queue.pop_front().expect("front exists");
            self.held_bytes -= entry.record.payload.len();
            self.settle(entry, fate);
        }
    }

    fn settle(&mut self, entry: Entry, fate: Fate) {
        let id = entry.record.conn_id;
        let emitted = |s: &Self| s.conns.get(&id).is_some_and(|c| c.emitted);
        match (entry.what, fate) {
            (What::Request | What::Reply, Fate::Drop(r)) => {
                self.summary.drop(entry.what == What::Request, r)
            }
            (What::Request | What::Reply, _) => {
                self.open_conn(id);
                let kept = &mut self.summary.kept;
                match entry.what {
                    What::Request => kept.requests += 1,
                    _ => kept.replies += 1,
                }
                kept.bytes += entry.record.payload.len() as u64;
                self.emit(entry.record);
            }
            (What::Metadata, _) => {
                if let Some(c) = self.conns.get_mut(&id).filter(|c| c.emitted) {
                    if !c.metadata_emitted {
                        c.metadata_emitted = true;
                        self.emit(entry.record);
                    }
                }
            }
            (What::Close, _) => {
                // Its state goes with it, whether or not it went out.
                let emitted = self.conns.remove(&id).is_some_and(|c| c.emitted);
                if emitted {
                    self.emit(entry.record);
                }
            }
            (What::ConnEvent, Fate::Keep) if emitted(self) => self.emit(entry.record),
            (What::Capture, Fate::Keep) => {
                if entry.record.kind == RecordKind::Gap {
                    let g = entry.record.event::<GapEvent>();
                    self.gap_messages += g.map_or(0, |g| g.dropped_messages);
                }
                self.emit(entry.record);
            }
            (What::End, _) => self.write_end(entry.record.ts_ns),
            _ => {}
        }
    }

    /// A connection's open record and handshake metadata, before its first kept message. One
    /// opened before the window is marked `continued`; both are stamped no earlier than what
    /// went out before them, so times never go backwards.
    fn open_conn(&mut self, id: u64) {
        let since = self.window.map_or(0, |w| w.0);
        let floor = self.last_ts.max(since);
        let Some(conn) = self.conns.get_mut(&id).filter(|c| !c.emitted) else {
            return;
        };
        conn.emitted = true;
        self.summary.connections_kept += 1;
        let open = conn.open.clone();
        let metadata = match conn.metadata_emitted {
            false => conn.metadata.clone(),
            true => None,
        };
        conn.metadata_emitted |= metadata.is_some();
        if let Some(mut open) = open {
            if open.ts_ns < since {
                self.summary.connections_opened_before += 1;
                if let Ok(mut e) = open.event::<OpenEvent>() {
                    e.continued = true;
                    open = Record::json(RecordKind::Open, id, open.ts_ns, &e);
                }
            }
            open.ts_ns = open.ts_ns.max(floor);
            self.emit(open);
        }
        if let Some(mut m) = metadata {
            m.ts_ns = m.ts_ns.max(floor);
            self.emit(m);
        }
    }

    fn emit(&mut self, record: Record) {
        self.last_ts = self.last_ts.max(record.ts_ns);
        self.out.push_back(record);
    }

    /// The end record, with the slice's own counts.
    fn write_end(&mut self, ts_ns: u64) {
        let k = &self.summary.kept;
        let end = EndEvent {
            connections: self.summary.connections_kept,
            messages: k.requests + k.replies,
            wire_bytes: k.bytes,
            dropped_messages: self.gap_messages,
        };
        let ts = ts_ns.max(self.last_ts);
        self.emit(Record::json(RecordKind::End, 0, ts, &end));
        self.end_written = true;
    }
}
