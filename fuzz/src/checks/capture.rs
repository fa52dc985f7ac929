//! The capture reader over any file.

use super::mode;
use mongotape::capture::{summary, CaptureReader, CaptureWriter, Record};
use std::io::Cursor;

/// More records than a fuzz input can hold: a bound on the loop, not a limit of the reader.
const MAX_RECORDS: usize = 100_000;

/// Reads a capture to its end or its first error. An even first byte: the input is the file as it
/// is (mostly not zstd at all); odd: the rest is the uncompressed stream, zstd-compressed here, so
/// the fuzzer works on the header, the metadata and the records. After an error the reader yields
/// nothing more; what was read writes back to a capture that reads the same, and whose summary
/// counts its records. Any input, or its tail, read as a summary frame is one or is not.
pub fn capture_reader(data: &[u8]) {
    let (m, rest) = mode(data);
    let file = if m & 1 == 0 {
        data.to_vec()
    } else {
        zstd::bulk::compress(rest, 1).expect("zstd compresses anything")
    };
    let _ = (summary::parse(data), summary_at_end(&file));
    let Ok(mut reader) = CaptureReader::new(Cursor::new(&file)) else {
        return;
    };
    let metadata = reader.metadata().clone();
    let mut records = Vec::new();
    let mut failed = false;
    let mut offset = reader.offset();
    while let Some(next) = reader.next_record() {
        match next {
            Ok(record) => records.push(record),
            Err(e) => {
                let _ = (e.to_string(), e.is_truncation());
                failed = true;
                break;
            }
        }
        assert!(reader.offset() >= offset, "the offset went back");
        offset = reader.offset();
        if records.len() >= MAX_RECORDS {
            return;
        }
    }
    if failed {
        assert!(reader.next_record().is_none(), "records after an error");
    }
    let _ = (reader.saw_end(), reader.compressed_offset());
    assert_eq!(reader.records_read(), records.len() as u64);

    let mut writer = CaptureWriter::new(Vec::new(), &metadata, 1).expect("writer");
    for record in &records {
        writer.write(record).expect("write to memory");
    }
    let bytes = writer.finish().expect("finish");
    let written = summary_at_end(&bytes).expect("our own summary");
    assert_eq!(written.records, records.len() as u64, "the summary's count");
    let mut again = CaptureReader::new(Cursor::new(&bytes)).expect("our own capture");
    assert_eq!(again.metadata(), &metadata, "metadata changed");
    let read: Vec<Record> = std::iter::from_fn(|| again.next_record())
        .map(|r| r.expect("our own record"))
        .collect();
    assert_eq!(read, records, "records changed");
}

/// The summary frame whose length the file's last 12 bytes give, as `summary::read` finds it.
fn summary_at_end(file: &[u8]) -> Option<summary::Summary> {
    let n = file.len();
    let word = file.get(n.checked_sub(12)?..n - 8)?;
    let len = u32::from_le_bytes(word.try_into().ok()?) as usize;
    summary::parse(file.get(n.checked_sub(len)?..)?)
}
