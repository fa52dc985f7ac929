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

#[test]
fn every_cut_reads_back_what_was_flushed_then_says_truncated() {
    let recs = records(60);
    let file = write_all(&recs, 10);
    let mut last_count = 0;
    for cut in 0..file.len() {
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
