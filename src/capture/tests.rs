use super::*;
use std::io::Read;

fn meta() -> Metadata {
    Metadata {
        format_version: FORMAT_VERSION,
        mongotape_version: "test".into(),
        start_unix_ns: 1,
        start_time: "1970-01-01T00:00:00Z".into(),
        upstream: "127.0.0.1:27017".into(),
        listen: "127.0.0.1:27018".into(),
        host: "h".into(),
        ..Metadata::default()
    }
}

fn records(n: u64) -> Vec<Record> {
    (0..n)
        .map(|i| {
            let kind = match i % 5 {
                0 => RecordKind::Open,
                1 | 3 => RecordKind::Request,
                2 | 4 => RecordKind::Reply,
                _ => unreachable!(),
            };
            let payload: Vec<u8> = (0..(i * 37 % 300)).map(|b| (b ^ i) as u8).collect();
            Record::new(kind, i % 7 + 1, 1_000 + i, payload)
        })
        .collect()
}

fn write_all(recs: &[Record], flush_every: usize) -> Vec<u8> {
    let mut w = CaptureWriter::new(Vec::new(), &meta(), 1).unwrap();
    for (i, r) in recs.iter().enumerate() {
        w.write(r).unwrap();
        if flush_every > 0 && (i + 1) % flush_every == 0 {
            w.flush().unwrap();
        }
    }
    w.finish().unwrap()
}

fn read_all(bytes: &[u8]) -> (Vec<Record>, Option<CaptureError>) {
    let mut reader = match CaptureReader::new(bytes) {
        Ok(r) => r,
        Err(e) => return (Vec::new(), Some(e)),
    };
    let mut out = Vec::new();
    for r in &mut reader {
        match r {
            Ok(r) => out.push(r),
            Err(e) => return (out, Some(e)),
        }
    }
    (out, None)
}

#[test]
fn read_then_write_gives_the_same_records_and_bytes() {
    let recs = records(500);
    let file = write_all(&recs, 0);
    let (back, err) = read_all(&file);
    assert!(err.is_none());
    assert_eq!(back, recs);
    let again = write_all(&back, 0);
    let plain = |b: &[u8]| {
        let mut out = Vec::new();
        zstd::stream::read::Decoder::new(b)
            .unwrap()
            .read_to_end(&mut out)
            .unwrap();
        out
    };
    assert_eq!(plain(&again), plain(&file));
    let reader = CaptureReader::new(&file[..]).unwrap();
    assert_eq!(reader.metadata(), &meta());
}

/// Whether the whole capture decodes with a window of `window_log` bits at most.
fn decodes_within_window(bytes: &[u8], window_log: u32) -> bool {
    let mut decoder = zstd::stream::read::Decoder::new(bytes).unwrap();
    decoder.window_log_max(window_log).unwrap();
    decoder.read_to_end(&mut Vec::new()).is_ok()
}

#[test]
fn the_default_level_looks_back_128_kib_and_other_levels_as_zstd_chooses() {
    // 4 MB of records: beyond every window in question, so the frames declare their own.
    let recs = records(30_000);
    let capture = |level| {
        let mut w = CaptureWriter::new(Vec::new(), &meta(), level).unwrap();
        for r in &recs {
            w.write(r).unwrap();
        }
        w.finish().unwrap()
    };
    let fast = capture(writer::DEFAULT_LEVEL);
    assert!(decodes_within_window(&fast, 17));
    assert_eq!(read_all(&fast).0.len(), recs.len());
    assert!(decodes_within_window(&capture(-5), 17));
    // Level 3 keeps zstd's own window (1 MiB and more at this size): a 128 KiB reader refuses it.
    let default_zstd = capture(3);
    assert!(!decodes_within_window(&default_zstd, 17));
    assert!(decodes_within_window(&default_zstd, 27));
}

#[test]
fn every_cut_reads_back_what_was_flushed_then_says_truncated() {
    let recs = records(60);
    let file = write_all(&recs, 10);
    // The summary frame after the records: a cut in it loses no record.
    let tail = &file[file.len() - 12..];
    let summary_len = u32::from_le_bytes(tail[..4].try_into().unwrap()) as usize;
    assert_eq!(tail[4..], super::summary::TAG);
    let records_end = file.len() - summary_len;
    for cut in records_end..file.len() {
        let (back, err) = read_all(&file[..cut]);
        assert_eq!(back, recs, "cut at {cut}, in the summary");
        assert!(
            err.is_none() || matches!(err, Some(CaptureError::Truncated { .. })),
            "cut at {cut}, in the summary: {err:?}"
        );
    }
    let mut last_count = 0;
    for cut in 0..records_end {
        let (back, err) = read_all(&file[..cut]);
        assert_eq!(&recs[..back.len()], &back[..], "cut at {cut}");
        assert!(back.len() >= last_count, "cut at {cut} lost records");
        last_count = back.len();
        let err = err.expect("a cut file must report an error");
        assert!(
            matches!(
                err,
                CaptureError::Truncated { .. } | CaptureError::NotACapture { .. }
            ),
            "cut at {cut}: {err}"
        );
    }
    // A flush every 10 records means a cut just before the end still yields the flushed ones.
    assert!(last_count >= 50, "only {last_count} of 60 records readable");
}

#[test]
fn a_flipped_byte_is_corrupt_with_its_offset() {
    let recs = records(20);
    let file = write_all(&recs, 0);
    let mut plain = Vec::new();
    zstd::stream::read::Decoder::new(&file[..])
        .unwrap()
        .read_to_end(&mut plain)
        .unwrap();
    let at = plain.len() - 10;
    plain[at] ^= 0xff;
    let recompressed = zstd::bulk::compress(&plain, 1).unwrap();
    let (back, err) = read_all(&recompressed);
    assert_eq!(back.len(), 19);
    match err {
        Some(CaptureError::Corrupt { offset, .. }) => assert!(offset < at as u64),
        other => panic!("expected corrupt, got {other:?}"),
    }
}

#[test]
fn oversized_record_length_is_refused_without_allocating() {
    let mut w = CaptureWriter::new(Vec::new(), &meta(), 1).unwrap();
    w.flush().unwrap();
    let mut file = w.finish().unwrap();
    let mut tail = zstd::stream::write::Encoder::new(Vec::new(), 1).unwrap();
    std::io::Write::write_all(&mut tail, &u32::MAX.to_le_bytes()).unwrap();
    file.extend(tail.finish().unwrap());
    let (back, err) = read_all(&file);
    assert!(back.is_empty());
    assert!(matches!(err, Some(CaptureError::Corrupt { .. })), "{err:?}");
}

#[test]
fn garbage_is_not_a_capture() {
    let text = CaptureReader::new(&b"hello, this is not zstd"[..])
        .err()
        .unwrap()
        .to_string();
    assert_eq!(
        text,
        "not a mongotape capture: not zstd-compressed (first bytes 68 65 6c 6c 6f 2c 20 74 \"hello, t\")"
    );
    let empty = CaptureReader::new(&b""[..]).err().unwrap().to_string();
    assert!(empty.contains("the file is empty"), "{empty}");
    let short = zstd::bulk::compress(b"MTAPE", 1).unwrap();
    let short = CaptureReader::new(&short[..]).err().unwrap().to_string();
    assert!(
        short.contains("shorter than the 14-byte file header"),
        "{short}"
    );
    assert!(matches!(
        CaptureReader::new(&b"hello, this is not zstd"[..]).err(),
        Some(CaptureError::NotACapture { .. })
    ));
    let not_ours = zstd::bulk::compress(b"PK\x03\x04 some other file entirely", 1).unwrap();
    assert!(matches!(
        CaptureReader::new(&not_ours[..]).err(),
        Some(CaptureError::NotACapture { .. })
    ));
}

mod segments {
    use super::*;
    use crate::capture::{CaptureSet, SegmentPlan, SegmentWriter, Written};

    fn open(conn: u64) -> Record {
        Record::json(
            RecordKind::Open,
            conn,
            conn,
            &OpenEvent {
                client: format!("127.0.0.1:{conn}"),
                upstream: "u".into(),
                continued: false,
            },
        )
    }

    /// Writes connection 1 open throughout, connection 2 opened and closed in the middle, and
    /// `n` requests on connection 1, rotating every ~`rotate` bytes.
    fn write(dir: &std::path::Path, n: u64, rotate: u64) -> (SegmentPlan, Vec<Record>) {
        let plan = SegmentPlan {
            path: dir.join("trace.mtape"),
            rotate_bytes: Some(rotate),
            ..SegmentPlan::default()
        };
        let mut w = SegmentWriter::create(plan.clone(), meta(), 1).unwrap();
        let mut sent = vec![
            open(1),
            Record::new(RecordKind::ClientMetadata, 1, 1, &b"{}"[..]),
        ];
        for i in 0..n {
            if i == n / 2 {
                sent.push(open(2));
            }
            if i == n / 2 + 3 {
                sent.push(Record::json(
                    RecordKind::Close,
                    2,
                    i,
                    &CloseEvent {
                        side: Side::Client,
                        reason: "eof".into(),
                    },
                ));
            }
            // Incompressible payloads so the segments fill.
            let payload: Vec<u8> = (0..2000u64)
                .map(|b| (b.wrapping_mul(i + 7) >> 3) as u8 ^ i as u8)
                .collect();
            sent.push(Record::new(RecordKind::Request, 1, 100 + i, payload));
        }
        for r in &sent {
            assert_eq!(w.write(r).unwrap(), Written::Recorded);
        }
        w.finish(None).unwrap();
        (plan, sent)
    }

    #[test]
    fn rotated_segments_read_back_as_the_records_written() {
        let dir = tempfile::tempdir().unwrap();
        let (plan, sent) = write(dir.path(), 400, 64 * 1024);
        let files = crate::capture::set::resolve(&[dir.path().to_owned()]).unwrap();
        assert!(files.len() >= 3, "only {} segments", files.len());
        assert_eq!(files[0], plan.segment_path(1));
        assert!(
            files.iter().all(|f| f.extension().unwrap() == "mtape"),
            "{files:?}"
        );
        // Each segment alone is a whole capture: metadata, records, an end.
        for (i, file) in files.iter().enumerate() {
            let mut r = CaptureReader::open(file).unwrap();
            assert_eq!(r.metadata().segment, Some(i as u32 + 1));
            while let Some(rec) = r.next_record() {
                rec.unwrap();
            }
            assert!(r.saw_end(), "segment {i} has no end");
        }
        // Read as one: the same records in order, each connection opened once, one end.
        let mut set = CaptureSet::open(&[dir.path().to_owned()]).unwrap();
        let got: Vec<Record> = set.by_ref().map(|r| r.unwrap()).collect();
        assert_eq!(got.last().unwrap().kind, RecordKind::End);
        assert!(set.saw_end());
        let body: Vec<&Record> = got[..got.len() - 1].iter().collect();
        assert_eq!(body.len(), sent.len());
        for (a, b) in body.iter().zip(&sent) {
            assert_eq!(
                (a.kind, a.conn_id, &a.payload),
                (b.kind, b.conn_id, &b.payload)
            );
        }
        // The same set given as a list of files.
        let n = CaptureSet::open(&files).unwrap().count();
        assert_eq!(n, got.len());
    }

    #[test]
    fn an_existing_capture_is_refused_unless_forced() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.mtape");
        std::fs::write(&path, b"precious").unwrap();
        let plan = SegmentPlan {
            path: path.clone(),
            ..SegmentPlan::default()
        };
        let err = SegmentWriter::create(plan.clone(), meta(), 1)
            .err()
            .unwrap();
        assert!(err.to_string().contains("c.mtape exists"), "{err}");
        assert_eq!(std::fs::read(&path).unwrap(), b"precious");
        let forced = SegmentPlan {
            force: true,
            ..plan
        };
        SegmentWriter::create(forced, meta(), 1)
            .unwrap()
            .finish(None)
            .unwrap();
        assert!(CaptureReader::open(&path).is_ok());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }

    #[test]
    fn max_size_ends_the_recording() {
        let dir = tempfile::tempdir().unwrap();
        let plan = SegmentPlan {
            path: dir.path().join("m.mtape"),
            max_bytes: Some(20 * 1024),
            ..SegmentPlan::default()
        };
        let mut w = SegmentWriter::create(plan.clone(), meta(), 1).unwrap();
        let mut ended = None;
        for i in 0..1000u64 {
            let payload: Vec<u8> = (0..1000u64)
                .map(|b| (b * 31 + i * 17) as u8 ^ (b >> 2) as u8)
                .collect();
            if let Written::Ended(reason) = w
                .write(&Record::new(RecordKind::Request, 1, i, payload))
                .unwrap()
            {
                ended = Some((i, reason));
                break;
            }
        }
        let (at, reason) = ended.expect("the limit ended the recording");
        assert_eq!(reason, crate::capture::EndReason::MaxSize);
        assert!(at > 5 && at < 200, "ended after {at} records");
        w.finish(None).unwrap();
        let mut r = CaptureReader::open(&plan.path).unwrap();
        let n = r.by_ref().inspect(|x| assert!(x.is_ok())).count();
        assert!(r.saw_end());
        assert_eq!(n as u64, at + 2);
    }

    #[test]
    fn a_missing_or_empty_input_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let err = CaptureSet::open(&[dir.path().to_owned()]).err().unwrap();
        assert!(err.to_string().contains("holds no .mtape"), "{err}");
        let err = CaptureSet::open(&[dir.path().join("nope.mtape")])
            .err()
            .unwrap();
        assert!(err.to_string().contains("nope.mtape"), "{err}");
    }
}
