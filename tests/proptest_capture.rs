//! Property tests of `capture/`: any sequence of records written reads back the same, whatever the
//! flush points; a recording rotated into segments (`SegmentWriter`) reads back as one
//! (`CaptureSet`) with the records written, in order, each segment a whole capture alone.

use mongotape::capture::{
    CaptureReader, CaptureSet, CaptureWriter, CloseEvent, Metadata, OpenEvent, Record, RecordKind,
    SegmentPlan, SegmentWriter, Side, FORMAT_VERSION,
};
use proptest::collection::vec;
use proptest::prelude::*;
use std::io::Cursor;

fn meta() -> Metadata {
    Metadata {
        format_version: FORMAT_VERSION,
        mongotape_version: "proptest".into(),
        start_unix_ns: 1,
        start_time: "1970-01-01T00:00:00Z".into(),
        upstream: "127.0.0.1:27017".into(),
        ..Metadata::default()
    }
}

fn record() -> impl Strategy<Value = Record> {
    (
        prop_oneof![3 => 3u8..5, 1 => any::<u8>()],
        any::<u64>(),
        any::<u64>(),
        vec(any::<u8>(), 0..300),
    )
        .prop_map(|(kind, conn, ts, payload)| {
            Record::new(RecordKind::from_u8(kind), conn, ts, payload)
        })
}

/// Bytes that zstd cannot shrink, so that segments fill: `n` of them from `seed`.
fn noise(seed: u64, n: usize) -> Vec<u8> {
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

#[derive(Debug, Clone)]
enum Step {
    Open(u64),
    Message {
        conn: u64,
        request: bool,
        len: usize,
    },
    Close(u64),
}

fn steps() -> impl Strategy<Value = Vec<Step>> {
    vec(
        prop_oneof![
            1 => (1u64..5).prop_map(Step::Open),
            8 => (1u64..5, any::<bool>(), 0usize..16_000)
                .prop_map(|(conn, request, len)| Step::Message { conn, request, len }),
            1 => (1u64..5).prop_map(Step::Close),
        ],
        20..120,
    )
}

/// The records a recording of `steps` holds: messages only on open connections, as the proxy does.
fn recording(steps: &[Step]) -> Vec<Record> {
    let mut open = std::collections::BTreeSet::new();
    let mut out = Vec::new();
    // Two connections open from the start, so that most steps record something.
    let first = [Step::Open(1), Step::Open(2)];
    for (i, step) in first.iter().chain(steps).enumerate() {
        let ts = 1_000 + i as u64;
        match *step {
            Step::Open(conn) if open.insert(conn) => {
                let event = OpenEvent {
                    client: format!("127.0.0.1:{conn}"),
                    upstream: "u".into(),
                    continued: false,
                };
                out.push(Record::json(RecordKind::Open, conn, ts, &event));
                out.push(Record::new(
                    RecordKind::ClientMetadata,
                    conn,
                    ts,
                    &b"{}"[..],
                ));
            }
            Step::Message { conn, request, len } if open.contains(&conn) => {
                let kind = if request {
                    RecordKind::Request
                } else {
                    RecordKind::Reply
                };
                out.push(Record::new(kind, conn, ts, noise(ts, len)));
            }
            Step::Close(conn) if open.remove(&conn) => {
                let event = CloseEvent {
                    side: Side::Client,
                    reason: "eof".into(),
                };
                out.push(Record::json(RecordKind::Close, conn, ts, &event));
            }
            _ => {}
        }
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn any_records_read_back_as_written(
        records in vec(record(), 0..40),
        flushes in vec(any::<bool>(), 40),
    ) {
        let mut w = CaptureWriter::new(Vec::new(), &meta(), 1).expect("writer");
        for (r, flush) in records.iter().zip(&flushes) {
            w.write(r).expect("write");
            if *flush {
                w.flush().expect("flush");
            }
        }
        prop_assert_eq!(w.records(), records.len() as u64);
        let bytes = w.finish().expect("finish");
        let mut reader = CaptureReader::new(Cursor::new(bytes)).expect("reader");
        prop_assert_eq!(reader.metadata(), &meta());
        let mut got = Vec::new();
        while let Some(r) = reader.next_record() {
            got.push(r.expect("record"));
        }
        prop_assert_eq!(got, records);
    }
}

proptest! {
    // Each case writes up to a megabyte to disk: fewer cases.
    #![proptest_config(ProptestConfig::with_cases(12))]

    #[test]
    fn rotated_segments_read_back_as_one_capture(
        steps in steps(), rotate_kb in 8u64..64,
    ) {
        let sent = recording(&steps);
        let dir = tempfile::tempdir().expect("tempdir");
        let plan = SegmentPlan {
            path: dir.path().join("trace.mtape"),
            rotate_bytes: Some(rotate_kb * 1024),
            ..SegmentPlan::default()
        };
        let mut w = SegmentWriter::create(plan, meta(), 1).expect("segments");
        for r in &sent {
            w.write(r).expect("write");
        }
        w.finish(None).expect("finish");
        let segments = w.segments();

        let files = mongotape::capture::set::resolve(&[dir.path().to_owned()]).expect("resolve");
        prop_assert_eq!(files.len() as u32, segments);
        for file in &files {
            let mut r = CaptureReader::open(file).expect("a segment opens alone");
            while let Some(rec) = r.next_record() {
                rec.expect("a segment reads alone");
            }
            prop_assert!(r.saw_end(), "{} has no end", file.display());
        }
        let mut set = CaptureSet::open(&[dir.path().to_owned()]).expect("set");
        let mut got: Vec<Record> = set.by_ref().map(|r| r.expect("record")).collect();
        prop_assert!(set.saw_end());
        prop_assert_eq!(got.pop().map(|r| r.kind), Some(RecordKind::End));
        let key = |r: &Record| (r.kind, r.conn_id, r.ts_ns, r.payload.clone());
        let got: Vec<_> = got.iter().map(key).collect();
        let want: Vec<_> = sent.iter().map(key).collect();
        prop_assert_eq!(got, want);
    }
}
