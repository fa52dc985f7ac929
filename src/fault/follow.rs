//! What a client did after each fault, from the capture's records that follow it (`analyze`,
//! docs/faults.md#what-the-client-did-next): the write resent with its `lsid` and `txnNumber`, a
//! read sent again, the same documents written again without them (and whether that applied
//! them twice), a new connection with its handshake, a hello on a monitoring connection; or
//! nothing: the error was given up to the application. Bounded: at most [`MAX_WATCHED`] faults
//! are followed at once, each for [`WINDOW_NS`], and [`MAX_CONNS`] connections are known.

use super::facts::session_of;
use super::print::{fingerprint, is_hello, is_write};
use crate::capture::{FaultEvent, OpenEvent, Record};
use crate::wire::reply::{self, ReplyFields};
use crate::wire::{peek, Message, MsgHeader, RequestInfo};
use bson::RawDocumentBuf;
use std::collections::HashMap;

/// What follows a fault is looked for this long after it (capture time).
pub const WINDOW_NS: u64 = 30_000_000_000;
/// Faults followed at once; the oldest is concluded early beyond.
pub const MAX_WATCHED: usize = 1024;
/// Connections whose client and last request are known; more are not followed.
pub const MAX_CONNS: usize = 16_384;

/// Who sent a request: the peer's host (not its port), the driver's and the application's names.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Client {
    pub host: String,
    pub driver: String,
    pub app: String,
}

/// What followed one fault within the window.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Seen {
    /// The request had an `lsid` and a `txnNumber` and was sent again with both.
    pub write_retried: bool,
    /// The retry's delay, when `write_retried`.
    pub retry_after_ns: u64,
    /// A read (not a write) sent again, same command and body, by the same client.
    pub read_retried: bool,
    /// A write's documents sent again without the same `lsid` and `txnNumber`.
    pub resent: bool,
    /// `resent` after the server had applied the faulted write, and the resend succeeded.
    pub applied_twice: bool,
    /// A connection of the same client opened after the fault said hello.
    pub reconnected: bool,
    /// A monitoring connection of the same client said hello again.
    pub server_selection: bool,
    /// The faulted request had an `lsid` and a `txnNumber`.
    pub had_session: bool,
    /// The fault only delayed the request or its reply: the client got its answer, late.
    pub delay_only: bool,
}

impl Seen {
    /// A fault that failed the request (not a delay), neither retried nor resent: the error
    /// reached the application.
    pub fn given_up(&self) -> bool {
        !(self.delay_only || self.write_retried || self.read_retried || self.resent)
    }
}

/// A fault followed to its end: the row it was booked in, its connection and client.
#[derive(Debug, Clone, PartialEq)]
pub struct Followed {
    pub row: usize,
    pub conn_id: u64,
    pub client: Client,
    pub seen: Seen,
}

#[derive(Debug, Clone, Default, PartialEq)]
struct Conn {
    client: Client,
    opened_ns: u64,
    hellos: u32,
    only_hello: bool,
    /// The last request's id and fingerprint: the faulted one's, when a fault record follows.
    last: Option<(i32, Option<u64>)>,
}

#[derive(Debug, Clone, PartialEq)]
struct Watched {
    row: usize,
    conn_id: u64,
    ts_ns: u64,
    client: Client,
    session: Option<(String, i64)>,
    print: Option<u64>,
    write: bool,
    forwarded: bool,
    /// The resend whose reply says whether it applied the write again.
    pending: Option<(u64, i32)>,
    /// The driver's retry (same `lsid` and `txnNumber`) whose reply says whether it settled the
    /// write.
    retry: Option<(u64, i32)>,
    /// The driver's retry succeeded: the write is done, and the same write sent later (the next
    /// `$inc` of a counter, say) is a new one, not a resend.
    settled: bool,
    seen: Seen,
}

/// Follows faults through the records after them; [`Follower::take_done`] hands out those whose
/// window has passed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Follower {
    conns: HashMap<u64, Conn>,
    watched: Vec<Watched>,
    done: Vec<Followed>,
}

impl Follower {
    pub fn open(&mut self, record: &Record) {
        if self.conns.len() >= MAX_CONNS {
            return;
        }
        let peer = record
            .event::<OpenEvent>()
            .map(|e| e.client)
            .unwrap_or_default();
        let host = match peer.rsplit_once(':') {
            Some((host, _)) => host.to_owned(),
            None => peer,
        };
        let conn = self.conns.entry(record.conn_id).or_default();
        conn.client.host = host;
        conn.opened_ns = record.ts_ns;
        conn.only_hello = true;
    }

    pub fn close(&mut self, conn_id: u64) {
        self.conns.remove(&conn_id);
    }

    /// The handshake's names (a `client_metadata` record's document).
    pub fn metadata(&mut self, record: &Record) {
        let Some(conn) = self.conns.get_mut(&record.conn_id) else {
            return;
        };
        let Ok(doc) = RawDocumentBuf::from_bytes(record.payload.to_vec()) else {
            return;
        };
        let name = |part: &str| {
            doc.get_document(part)
                .ok()
                .and_then(|d| d.get_str("name").ok())
                .unwrap_or_default()
                .to_owned()
        };
        conn.client.driver = name("driver");
        conn.client.app = name("application");
        // The proxy writes this record after the hello it comes from: that hello was a new
        // connection's handshake.
        if conn.hellos > 0 {
            let (client, opened) = (&conn.client, conn.opened_ns);
            for w in self.watched.iter_mut().filter(|w| &w.client == client) {
                w.seen.reconnected |= opened >= w.ts_ns;
            }
        }
    }

    /// A fault record, booked in `row`: followed from now on.
    pub fn fault(&mut self, row: usize, record: &Record, event: &FaultEvent) {
        self.expire(record.ts_ns);
        if self.watched.len() >= MAX_WATCHED {
            let oldest = self.watched.remove(0);
            self.conclude(oldest);
        }
        let conn = self.conns.get(&event.conn_id);
        let print = conn
            .and_then(|c| c.last)
            .filter(|(id, _)| *id == event.request_id)
            .and_then(|(_, print)| print);
        let session = event.lsid.clone().zip(event.txn_number);
        self.watched.push(Watched {
            row,
            conn_id: event.conn_id,
            ts_ns: record.ts_ns,
            client: conn.map(|c| c.client.clone()).unwrap_or_default(),
            seen: Seen {
                had_session: session.is_some(),
                delay_only: matches!(&*event.action, "delay_request" | "delay_reply"),
                ..Seen::default()
            },
            session,
            print,
            write: is_write(&event.command),
            forwarded: event.forwarded,
            pending: None,
            retry: None,
            settled: false,
        });
    }

    pub fn request(&mut self, record: &Record) {
        self.expire(record.ts_ns);
        let Some(peeked) = peek::request(&record.payload) else {
            return;
        };
        let hello = peeked.command.is_some_and(is_hello);
        if self.conns.len() < MAX_CONNS {
            self.conns.entry(record.conn_id).or_default();
        }
        let Some(conn) = self.conns.get_mut(&record.conn_id) else {
            return;
        };
        if hello {
            conn.hellos += 1;
            let (first, monitor) = (conn.hellos == 1, conn.only_hello && conn.hellos > 1);
            let (client, opened) = (conn.client.clone(), conn.opened_ns);
            for w in self.watched.iter_mut().filter(|w| w.client == client) {
                w.seen.reconnected |= first && opened >= w.ts_ns;
                w.seen.server_selection |= monitor;
            }
            return;
        }
        conn.only_hello = false;
        let msg = Message::parse(&record.payload).ok();
        let print = msg.as_ref().and_then(|m| fingerprint(&record.payload, m));
        conn.last = Some((peeked.request_id, print));
        let (Some(msg), false) = (msg, self.watched.is_empty()) else {
            return;
        };
        let client = conn.client.clone();
        let session = session_of(&RequestInfo::of(&msg));
        for w in &mut self.watched {
            if w.session.is_some() && w.session == session {
                if !w.seen.write_retried {
                    w.seen.retry_after_ns = record.ts_ns.saturating_sub(w.ts_ns);
                }
                w.seen.write_retried = true;
                w.retry = Some((record.conn_id, peeked.request_id));
            } else if print.is_some() && w.print == print && w.client == client && !w.settled {
                if !w.write {
                    w.seen.read_retried = true;
                } else if !w.seen.resent {
                    w.seen.resent = true;
                    w.pending = w.forwarded.then_some((record.conn_id, peeked.request_id));
                }
            }
        }
    }

    /// A reply: the answer to a resend of an applied write says whether it applied it twice; the
    /// answer to the driver's retry, whether the write is settled.
    pub fn reply(&mut self, record: &Record) {
        self.expire(record.ts_ns);
        if !self
            .watched
            .iter()
            .any(|w| w.pending.is_some() || w.retry.is_some())
        {
            return;
        }
        let Some(to) = MsgHeader::parse(&record.payload).ok().flatten() else {
            return;
        };
        let key = Some((record.conn_id, to.response_to));
        let fields = || {
            reply::body(&record.payload)
                .ok()
                .and_then(|b| {
                    b.fields()
                        .ok()
                        .map(|f| (f.is_ok() && f.write_errors == 0, applied(&f)))
                })
                .unwrap_or((false, false))
        };
        for w in &mut self.watched {
            if w.retry == key {
                w.retry = None;
                w.settled |= fields().0;
            }
            if w.pending == key {
                w.pending = None;
                w.seen.applied_twice |= fields().1;
            }
        }
    }

    fn expire(&mut self, now_ns: u64) {
        while let Some(w) = self.watched.first() {
            if now_ns.saturating_sub(w.ts_ns) <= WINDOW_NS {
                break;
            }
            let w = self.watched.remove(0);
            self.conclude(w);
        }
    }

    fn conclude(&mut self, w: Watched) {
        self.done.push(Followed {
            row: w.row,
            conn_id: w.conn_id,
            client: w.client,
            seen: w.seen,
        });
    }

    /// At the capture's end: every fault still followed is concluded.
    pub fn finish(&mut self) {
        for w in std::mem::take(&mut self.watched) {
            self.conclude(w);
        }
    }

    /// The faults concluded since the last call.
    pub fn take_done(&mut self) -> Vec<Followed> {
        std::mem::take(&mut self.done)
    }
}

/// A write's reply that says it changed something: `ok: 1`, no write error, `n` above 0.
fn applied(f: &ReplyFields<'_>) -> bool {
    f.is_ok() && f.write_errors == 0 && f.n.unwrap_or(0) > 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::{RecordKind, FAULT};
    use crate::wire::{MsgFlags, OpMsg};
    use bson::{oid::ObjectId, rawdoc};

    fn msg(body: RawDocumentBuf, id: i32, to: i32) -> Vec<u8> {
        OpMsg::with_body(body, MsgFlags::empty()).encode(id, to)
    }

    fn open(conn: u64, ts: u64) -> [Record; 2] {
        let e = OpenEvent {
            client: format!("127.0.0.1:{}", 40000 + conn),
            upstream: "127.0.0.1:27017".into(),
            continued: false,
        };
        let meta = rawdoc! {"driver": {"name": "PyMongo"}}.into_bytes();
        [
            Record::json(RecordKind::Open, conn, ts, &e),
            Record::new(RecordKind::ClientMetadata, conn, ts, meta),
        ]
    }

    fn fault(conn: u64, id: i32, command: &str, action: &str, ts: u64) -> (Record, FaultEvent) {
        let e = FaultEvent {
            rule: 0,
            name: "0".into(),
            action: action.into(),
            conn_id: conn,
            request_id: id,
            command: command.into(),
            ns: "d.c".into(),
            forwarded: action != "error",
            lsid: None,
            txn_number: None,
        };
        (Record::json(FAULT, conn, ts, &e), e)
    }

    fn feed(f: &mut Follower, kind: RecordKind, conn: u64, ts: u64, payload: Vec<u8>) {
        let r = Record::new(kind, conn, ts, payload);
        match kind {
            RecordKind::Request => f.request(&r),
            _ => f.reply(&r),
        }
    }

    #[test]
    fn a_lost_reply_resent_by_the_application_on_a_new_connection_is_applied_twice() {
        const S: u64 = 1_000_000_000;
        let mut f = Follower::default();
        let insert = |x: i32| {
            rawdoc! {"insert": "c", "documents": [{"_id": ObjectId::new(), "x": x}], "$db": "d"}
        };
        let find = rawdoc! {"find": "c", "filter": {"x": 1}, "$db": "d"};
        let hello = rawdoc! {"hello": 1, "$db": "admin"};
        for r in open(1, S).iter().chain(&open(3, S)) {
            f.open(r);
            f.metadata(r);
        }
        feed(&mut f, RecordKind::Request, 3, S, msg(hello.clone(), 1, 0));
        feed(&mut f, RecordKind::Request, 1, 2 * S, msg(insert(1), 7, 0));
        let (rec, e) = fault(1, 7, "insert", "close_after", 2 * S);
        f.fault(0, &rec, &e);
        feed(
            &mut f,
            RecordKind::Request,
            1,
            2 * S,
            msg(find.clone(), 8, 0),
        );
        let (rec, e) = fault(1, 8, "find", "error", 2 * S);
        f.fault(1, &rec, &e);
        f.close(1);
        for r in open(2, 3 * S) {
            f.open(&r);
            f.metadata(&r);
        }
        feed(
            &mut f,
            RecordKind::Request,
            2,
            3 * S,
            msg(hello.clone(), 9, 0),
        );
        feed(&mut f, RecordKind::Request, 3, 3 * S, msg(hello, 2, 0));
        feed(&mut f, RecordKind::Request, 2, 4 * S, msg(insert(1), 10, 0));
        feed(
            &mut f,
            RecordKind::Reply,
            2,
            4 * S,
            msg(rawdoc! {"n": 1, "ok": 1.0}, 11, 10),
        );
        feed(&mut f, RecordKind::Request, 2, 4 * S, msg(find, 12, 0));
        feed(&mut f, RecordKind::Request, 2, 5 * S, msg(insert(2), 13, 0));
        f.finish();
        let done = f.take_done();
        let (write, read) = (done[0].seen, done[1].seen);
        assert!(write.resent && write.applied_twice && !write.given_up());
        assert!(write.reconnected && write.server_selection && !write.read_retried);
        assert!(read.read_retried && !read.resent && !read.applied_twice);
        assert_eq!(done[0].client.driver, "PyMongo");
    }

    /// A counter's `$inc` under retryable writes: the driver retries the faulted update with its
    /// `lsid` and `txnNumber`. When that retry succeeds, the next `$inc` (the same command and
    /// body, the next `txnNumber`) is a new write, not a resend; when it fails, the next one may
    /// be the application's own resend.
    #[test]
    fn the_same_write_after_a_successful_driver_retry_is_a_new_one() {
        const S: u64 = 1_000_000_000;
        let lsid = rawdoc! {"id": bson::Binary { subtype: bson::spec::BinarySubtype::Uuid, bytes: vec![7; 16] }};
        let inc = |txn: i64| {
            rawdoc! {"update": "c", "updates": [{"q": {"_id": "views"}, "u": {"$inc": {"n": 1}}, "upsert": true}],
            "lsid": lsid.clone(), "txnNumber": txn, "$db": "d"}
        };
        let session = |txn: i64| {
            let payload = msg(inc(txn), 0, 0);
            let m = Message::parse(&payload).unwrap();
            session_of(&RequestInfo::of(&m)).unwrap()
        };
        let ok = |n: i32| rawdoc! {"n": n, "ok": 1.0};
        let mut seen = Vec::new();
        for retry_reply in [ok(1), rawdoc! {"ok": 0.0, "code": 91}] {
            let mut f = Follower::default();
            for r in open(1, S) {
                f.open(&r);
                f.metadata(&r);
            }
            feed(&mut f, RecordKind::Request, 1, S, msg(inc(1), 5, 0));
            let (rec, mut e) = fault(1, 5, "update", "close_after", S);
            (e.lsid, e.txn_number) = (Some(session(1).0), Some(1));
            f.fault(0, &rec, &e);
            f.close(1);
            for r in open(2, 2 * S) {
                f.open(&r);
                f.metadata(&r);
            }
            feed(&mut f, RecordKind::Request, 2, 2 * S, msg(inc(1), 6, 0));
            feed(&mut f, RecordKind::Reply, 2, 2 * S, msg(retry_reply, 7, 6));
            feed(&mut f, RecordKind::Request, 2, 3 * S, msg(inc(2), 8, 0));
            feed(&mut f, RecordKind::Reply, 2, 3 * S, msg(ok(1), 9, 8));
            f.finish();
            seen.push(f.take_done()[0].seen);
        }
        assert!(seen[0].write_retried && !seen[0].resent && !seen[0].applied_twice);
        assert!(seen[1].write_retried && seen[1].resent && seen[1].applied_twice);
    }

    #[test]
    fn nothing_after_a_fault_is_an_error_given_up_and_the_window_closes() {
        let mut f = Follower::default();
        let (rec, e) = fault(1, 7, "insert", "error", 0);
        f.fault(0, &rec, &e);
        let find = msg(rawdoc! {"find": "c", "$db": "d"}, 8, 0);
        feed(&mut f, RecordKind::Request, 1, WINDOW_NS + 1, find);
        let done = f.take_done();
        assert_eq!(done.len(), 1);
        assert!(done[0].seen.given_up());
        // A delay followed by nothing was answered, late: not given up.
        let (rec, e) = fault(1, 9, "insert", "delay_reply", 0);
        f.fault(0, &rec, &e);
        f.finish();
        assert!(!f.take_done()[0].seen.given_up());
        for _ in 0..MAX_WATCHED + 5 {
            f.fault(0, &rec, &e);
        }
        assert_eq!(f.take_done().len(), 5);
    }
}
