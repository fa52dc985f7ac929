//! The slicer over the real captures in `captures/`, and a transaction's records made with the
//! wire encoder: what goes out is a valid capture whose cursors and transactions stay whole.

use super::*;
use crate::capture::{CaptureReader, OpenEvent, Record, RecordKind};
use crate::wire::{Message, MsgFlags, MsgHeader, OpMsg, ReplyInfo, RequestInfo, Section};
use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::time::Duration;

fn fixture(name: &str) -> CaptureReader<std::fs::File> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("captures/{name}.mtape"));
    CaptureReader::open(&path).unwrap()
}

fn all(source: impl RecordSource) -> Vec<Record> {
    let mut s = source;
    std::iter::from_fn(|| s.next_record().map(Result::unwrap)).collect()
}

fn sliced(records: Vec<Record>, options: SliceOptions) -> (Vec<Record>, SliceSummary) {
    let mut slicer = Slicer::new(Vec_(records.into()), options);
    let out = std::iter::from_fn(|| slicer.next_record().map(Result::unwrap)).collect();
    (out, slicer.summary())
}

/// Records in memory as a source.
#[allow(non_camel_case_types)]
struct Vec_(std::collections::VecDeque<Record>);

impl RecordSource for Vec_ {
    fn metadata(&self) -> &crate::capture::Metadata {
        static M: std::sync::OnceLock<crate::capture::Metadata> = std::sync::OnceLock::new();
        M.get_or_init(Default::default)
    }
    fn next_record(&mut self) -> Option<Result<Record, crate::capture::CaptureError>> {
        self.0.pop_front().map(Ok)
    }
    fn offset(&self) -> u64 {
        0
    }
    fn compressed_offset(&self) -> u64 {
        0
    }
    fn saw_end(&self) -> bool {
        false
    }
    fn records_read(&self) -> u64 {
        0
    }
}

/// What every slice must be: times never go backwards; each connection's open comes first;
/// each reply follows its request; each getMore and killCursors follows the reply that opened
/// its cursor.
fn assert_valid(records: &[Record]) {
    let mut last = 0;
    let mut opened = HashSet::new();
    let mut requests: HashSet<(u64, i32)> = HashSet::new();
    let mut cursors = HashSet::new();
    let mut pending_cursor: HashMap<(u64, i32), bool> = HashMap::new();
    for r in records {
        assert!(r.ts_ns >= last, "time goes back at {r:?}");
        last = r.ts_ns;
        match r.kind {
            RecordKind::Open => assert!(opened.insert(r.conn_id)),
            RecordKind::Request | RecordKind::Reply | RecordKind::ClientMetadata => {
                assert!(opened.contains(&r.conn_id), "conn {} not opened", r.conn_id)
            }
            _ => {}
        }
        let h = MsgHeader::parse(&r.payload).ok().flatten();
        let m = Message::parse(&r.payload);
        match (r.kind, h, m) {
            (RecordKind::Request, Some(h), Ok(m)) => {
                let i = RequestInfo::of(&m);
                requests.insert((r.conn_id, h.request_id));
                if i.command == "getMore" {
                    assert!(cursors.contains(&i.cursor_id.unwrap()), "orphan getMore");
                }
                for c in &i.killed_cursors {
                    assert!(cursors.contains(c), "orphan killCursors");
                }
                pending_cursor.insert((r.conn_id, h.request_id), i.command != "getMore");
            }
            (RecordKind::Reply, Some(h), Ok(m)) => {
                assert!(
                    requests.contains(&(r.conn_id, h.response_to)),
                    "orphan reply"
                );
                let opens = pending_cursor.get(&(r.conn_id, h.response_to)) == Some(&true);
                if let (true, Some(c)) = (opens, ReplyInfo::of(&m).cursor_id) {
                    cursors.insert(c);
                }
            }
            _ => {}
        }
    }
}

fn count(records: &[Record], command: &str) -> usize {
    records
        .iter()
        .filter(|r| r.kind == RecordKind::Request)
        .filter_map(|r| Message::parse(&r.payload).ok())
        .filter(|m| RequestInfo::of(m).command == command)
        .count()
}

#[test]
fn a_window_that_holds_everything_keeps_everything() {
    let whole = all(fixture("pymongo"));
    let options = SliceOptions {
        until: Some(Bound::Offset(Duration::from_secs(3600))),
        ..Default::default()
    };
    let (out, summary) = sliced(whole.clone(), options);
    assert_eq!(out.len(), whole.len());
    assert_eq!(out[..out.len() - 1], whole[..whole.len() - 1]);
    assert!(summary.complete && summary.dropped_requests.is_empty());
    assert_eq!(summary.kept, summary.read);
    assert_valid(&out);
}

#[test]
fn a_window_keeps_no_getmore_whose_find_came_before_it() {
    let whole = all(fixture("pymongo"));
    let start = whole[0].ts_ns;
    // From the first getMore on: its find is not in the slice, so neither are its getMores.
    let get_more_at = whole
        .iter()
        .find(|r| {
            r.kind == RecordKind::Request
                && Message::parse(&r.payload)
                    .is_ok_and(|m| RequestInfo::of(&m).command == "getMore")
        })
        .unwrap()
        .ts_ns;
    let options = SliceOptions {
        since: Some(Bound::Offset(Duration::from_nanos(get_more_at - start))),
        ..Default::default()
    };
    let (out, summary) = sliced(whole.clone(), options);
    assert_valid(&out);
    assert!(count(&whole, "getMore") > count(&out, "getMore"));
    assert!(
        summary.dropped_requests["cursor_opened_outside"] > 0,
        "{summary:?}"
    );
    assert!(summary.dropped_requests["before_since"] > 0);
    // The connections that were open go out first, marked continued.
    let opens: Vec<OpenEvent> = out
        .iter()
        .filter(|r| r.kind == RecordKind::Open)
        .map(|r| r.event().unwrap())
        .collect();
    assert!(!opens.is_empty() && opens.iter().all(|o| o.continued));
    assert_eq!(summary.connections_opened_before, opens.len() as u64);
    assert!(out.iter().any(|r| r.kind == RecordKind::ClientMetadata));
}

#[test]
fn by_application_driver_and_namespace() {
    let app = |name: &str| SliceOptions {
        conns: ConnFilter {
            apps: vec![name.into()],
            ..Default::default()
        },
        ..Default::default()
    };
    let (out, summary) = sliced(all(fixture("mongosh")), app("mongosh*"));
    assert_eq!(summary.kept, summary.read);
    assert_valid(&out);
    let (out, summary) = sliced(all(fixture("mongosh")), app("checkout"));
    assert!(summary.nothing_kept() && !out.iter().any(|r| r.kind == RecordKind::Open));
    assert_eq!(
        summary.dropped_requests["connection_filter"],
        summary.read.requests
    );
    // A driver filter: pymongo's capture has no Node.js connection.
    let driver = |name: &str| SliceOptions {
        conns: ConnFilter {
            drivers: vec![name.into()],
            ..Default::default()
        },
        ..Default::default()
    };
    assert!(sliced(all(fixture("pymongo")), driver("nodejs"))
        .1
        .nothing_kept());
    let (_, s) = sliced(all(fixture("pymongo")), driver("pymongo"));
    assert_eq!(s.kept, s.read);
    // Inserts alone: their replies with them, nothing else.
    let inserts = SliceOptions {
        messages: MessageFilter {
            commands: vec!["insert".into()],
            ..Default::default()
        },
        ..Default::default()
    };
    let whole = all(fixture("pymongo"));
    let (out, summary) = sliced(whole.clone(), inserts);
    assert_valid(&out);
    assert_eq!(count(&out, "insert"), count(&whole, "insert"));
    assert_eq!(summary.kept.requests as usize, count(&whole, "insert"));
}

/// An OP_MSG request or reply on connection 1.
fn op(kind: RecordKind, ts: u64, id: i32, to: i32, body: bson::RawDocumentBuf) -> Record {
    let bytes = OpMsg {
        flags: MsgFlags::empty(),
        sections: vec![Section::Body(body)],
        checksum: None,
    }
    .encode(id, to);
    Record::new(kind, 1, ts, bytes)
}

/// A transaction (insert, find, commit) between two plain inserts, at 1 s intervals from 10 s.
fn transaction() -> Vec<Record> {
    use bson::rawdoc;
    let lsid = rawdoc! {"id": bson::Binary { subtype: bson::spec::BinarySubtype::Uuid, bytes: vec![7; 16] }};
    let s = 1_000_000_000u64;
    let ok = || rawdoc! {"ok": 1.0};
    let first = rawdoc! {"insert": "c", "$db": "shop", "startTransaction": true,
    "lsid": lsid.clone(), "txnNumber": 4i64, "autocommit": false};
    let find = rawdoc! {"find": "c", "$db": "shop",
    "lsid": lsid.clone(), "txnNumber": 4i64, "autocommit": false};
    let commit = rawdoc! {"commitTransaction": 1, "$db": "admin",
    "lsid": lsid, "txnNumber": 4i64, "autocommit": false};
    let open = Record::json(
        RecordKind::Open,
        1,
        9 * s,
        &OpenEvent {
            client: "127.0.0.1:1".into(),
            upstream: "u".into(),
            continued: false,
        },
    );
    vec![
        open,
        op(
            RecordKind::Request,
            10 * s,
            1,
            0,
            rawdoc! {"insert": "c", "$db": "shop"},
        ),
        op(RecordKind::Reply, 10 * s + 1, 101, 1, ok()),
        op(RecordKind::Request, 11 * s, 2, 0, first),
        op(RecordKind::Reply, 11 * s + 1, 102, 2, ok()),
        op(RecordKind::Request, 12 * s, 3, 0, find),
        op(RecordKind::Reply, 12 * s + 1, 103, 3, ok()),
        op(RecordKind::Request, 13 * s, 4, 0, commit),
        op(RecordKind::Reply, 13 * s + 1, 104, 4, ok()),
        op(
            RecordKind::Request,
            14 * s,
            5,
            0,
            rawdoc! {"insert": "d", "$db": "shop"},
        ),
        op(RecordKind::Reply, 14 * s + 1, 105, 5, ok()),
    ]
}

#[test]
fn a_transaction_is_kept_whole_or_not_at_all() {
    let at = |secs: f64| Some(Bound::At((secs * 1e9) as u64));
    let window = |since, until| SliceOptions {
        since,
        until,
        ..Default::default()
    };
    // Wholly inside: kept, in order, with the requests around it.
    let (out, s) = sliced(transaction(), window(at(10.5), at(13.5)));
    assert_eq!((s.transactions_kept, s.transactions_dropped), (1, 0));
    assert_eq!(s.kept.requests, 3);
    assert_valid(&out);
    // Cut by --until between its find and its commit: none of it; cut by --since likewise.
    for (since, until) in [(at(9.0), at(12.5)), (at(11.5), at(20.0))] {
        let (out, s) = sliced(transaction(), window(since, until));
        assert_eq!((s.transactions_kept, s.transactions_dropped), (0, 1));
        assert_eq!(s.dropped_requests["transaction_outside_window"], 3, "{s:?}");
        assert_eq!(s.dropped_replies["transaction_outside_window"], 3, "{s:?}");
        assert_eq!(count(&out, "commitTransaction") + count(&out, "find"), 0);
        assert_valid(&out);
    }
    // One statement matches --namespace: the whole transaction comes, commit included.
    let ns = SliceOptions {
        messages: MessageFilter {
            namespaces: vec!["shop.c".into()],
            ..Default::default()
        },
        ..Default::default()
    };
    let (out, s) = sliced(transaction(), ns);
    assert_eq!(count(&out, "commitTransaction"), 1);
    assert_eq!(
        s.kept.requests, 4,
        "the plain insert into shop.c and the transaction"
    );
    assert_eq!(s.dropped_requests["message_filter"], 1);
}
