//! The summary a finished capture file ends with, so that a replay learns what it needs before
//! it starts without reading the whole capture first: the most connections open at once and the
//! faults injected while recording. It is a zstd *skippable frame* after the records' frame:
//! every zstd decoder passes over it, and it is found from the file's end. A file whose writer
//! did not finish (a killed proxy) has none; a summary that does not check out is not used
//! (the caller reads the capture instead). Spec: `docs/capture-format.md`, "Summary".

use super::record::{FaultEvent, Record, RecordKind, FAULT};
use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

/// A skippable frame's magic (zstd reserves 0x184D2A50..=0x184D2A5F for them).
pub const SKIPPABLE_MAGIC: u32 = 0x184D_2A5E;
/// The summary frame's last 8 bytes.
pub const TAG: [u8; 8] = *b"MTSUMRY1";
/// Fault rows told apart (rule, name, action); more are counted in the last, as
/// `FaultsInjected` does.
pub const MAX_FAULT_ROWS: usize = 256;
/// The most a summary frame may hold; a larger length is not a summary.
const MAX_FRAME: u64 = 1 << 20;
/// Frame header (magic, size), then after the JSON: CRC-32C, frame length, tag.
const HEAD: usize = 8;
const TAIL: usize = 4 + 4 + 8;

/// What a capture file holds, counted by its writer as it wrote.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Records in the file (the header's metadata not counted).
    pub records: u64,
    /// The most connections open at once: a connection is open from its `open` record (or
    /// first message) to its `close` record; one never closed is open to the end.
    pub peak_open: u64,
    /// Every `fault` record.
    pub faults: u64,
    /// Fault records per rule and action, in the order they first fired (those whose payload
    /// does not read are in `faults` only).
    #[serde(default)]
    pub fault_rows: Vec<FaultRow>,
}

/// How often one rule fired with one action.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FaultRow {
    pub rule: usize,
    pub name: String,
    pub action: String,
    pub count: u64,
    /// Of them, the requests that reached the server.
    pub forwarded: u64,
}

/// Counts a file's records as they are written. Memory: one id per open connection, and at
/// most [`MAX_FAULT_ROWS`] rows.
#[derive(Debug, Default)]
pub struct Tally {
    summary: Summary,
    open: HashSet<u64, foldhash::fast::RandomState>,
}

impl Tally {
    pub fn see(&mut self, record: &Record) {
        let s = &mut self.summary;
        s.records += 1;
        match record.kind {
            RecordKind::Open | RecordKind::Request | RecordKind::Reply
                if self.open.insert(record.conn_id) =>
            {
                s.peak_open = s.peak_open.max(self.open.len() as u64);
            }
            RecordKind::Close => {
                self.open.remove(&record.conn_id);
            }
            FAULT => add_fault(s, record),
            _ => {}
        }
    }

    pub fn summary(&self) -> &Summary {
        &self.summary
    }

    /// The summary as a skippable frame, to follow the records' zstd frame.
    pub fn frame(&self) -> Vec<u8> {
        let json = serde_json::to_vec(&self.summary).expect("a summary serializes");
        let len = HEAD + json.len() + TAIL;
        let mut out = Vec::with_capacity(len);
        out.extend_from_slice(&SKIPPABLE_MAGIC.to_le_bytes());
        out.extend_from_slice(&((len - HEAD) as u32).to_le_bytes());
        out.extend_from_slice(&json);
        out.extend_from_slice(&crc32c::crc32c(&json).to_le_bytes());
        out.extend_from_slice(&(len as u32).to_le_bytes());
        out.extend_from_slice(&TAG);
        out
    }
}

fn add_fault(s: &mut Summary, record: &Record) {
    s.faults += 1;
    let Ok(e) = record.event::<FaultEvent>() else {
        return;
    };
    let rows = &mut s.fault_rows;
    let found = rows
        .iter()
        .position(|r| r.rule == e.rule && r.name == e.name && r.action == e.action);
    let at = match found {
        Some(at) => at,
        None if rows.len() < MAX_FAULT_ROWS => {
            rows.push(FaultRow {
                rule: e.rule,
                name: e.name,
                action: e.action,
                ..FaultRow::default()
            });
            rows.len() - 1
        }
        None => rows.len() - 1,
    };
    rows[at].count += 1;
    rows[at].forwarded += u64::from(e.forwarded);
}

/// The summary at the end of the capture file `path`: `None` when the file has none (its
/// writer did not finish, or wrote it before summaries existed) or when it does not check out.
/// Only an error opening or reading the file is an error.
pub fn read(path: &Path) -> std::io::Result<Option<Summary>> {
    // Only a regular file: a FIFO would block in open(2).
    if !std::fs::metadata(path)?.is_file() {
        return Ok(None);
    }
    let mut file = std::fs::File::open(path)?;
    let size = file.metadata()?.len();
    if size < (HEAD + TAIL) as u64 {
        return Ok(None);
    }
    let mut tail = [0u8; 12];
    file.seek(SeekFrom::End(-12))?;
    file.read_exact(&mut tail)?;
    let Some(len) = trailer_len(&tail) else {
        return Ok(None);
    };
    if len < (HEAD + TAIL) as u64 || len > size.min(MAX_FRAME) {
        return Ok(None);
    }
    let mut frame = vec![0u8; len as usize];
    file.seek(SeekFrom::End(-(len as i64)))?;
    file.read_exact(&mut frame)?;
    Ok(parse(&frame))
}

/// The frame length a file's last 12 bytes give, when they are a summary's trailer (its length,
/// then [`TAG`]).
pub fn trailer_len(tail: &[u8]) -> Option<u64> {
    let (len, tag) = tail.split_first_chunk::<4>()?;
    (tag == TAG).then(|| u64::from(u32::from_le_bytes(*len)))
}

/// A whole summary frame (as [`Tally::frame`] writes it), or `None` when it does not check out.
pub fn parse(frame: &[u8]) -> Option<Summary> {
    let word = |at: usize| -> Option<u32> {
        Some(u32::from_le_bytes(frame.get(at..at + 4)?.try_into().ok()?))
    };
    let len = frame.len();
    if len < HEAD + TAIL
        || word(0)? != SKIPPABLE_MAGIC
        || word(4)? as usize != len - HEAD
        || word(len - 12)? as usize != len
        || frame[len - 8..] != TAG
    {
        return None;
    }
    let json = &frame[HEAD..len - TAIL];
    if word(len - 16)? != crc32c::crc32c(json) {
        return None;
    }
    serde_json::from_slice(json).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(kind: RecordKind, conn: u64) -> Record {
        Record {
            kind,
            conn_id: conn,
            ts_ns: 1,
            payload: bytes::Bytes::from_static(b"x"),
        }
    }

    fn fault(rule: usize, action: &str, forwarded: bool) -> Record {
        let e = FaultEvent {
            rule,
            name: format!("r{rule}"),
            action: action.into(),
            conn_id: 1,
            request_id: 7,
            command: "insert".into(),
            ns: "db.c".into(),
            forwarded,
            lsid: None,
            txn_number: None,
        };
        Record::json(FAULT, 1, 2, &e)
    }

    #[test]
    fn the_tally_counts_open_connections_and_faults_and_its_frame_reads_back() {
        let mut t = Tally::default();
        for r in [
            rec(RecordKind::Open, 1),
            rec(RecordKind::Request, 2), // open by its first message
            rec(RecordKind::Close, 1),
            rec(RecordKind::Open, 3),
            rec(RecordKind::Reply, 2),
            rec(RecordKind::Open, 4), // 2, 3, 4 open: the peak
            fault(0, "error", false),
            fault(0, "error", true),
            fault(1, "stall", true),
            rec(FAULT, 1), // a payload that does not read: counted, no row
        ] {
            t.see(&r);
        }
        let s = t.summary().clone();
        assert_eq!((s.records, s.peak_open, s.faults), (10, 3, 4));
        let rows: Vec<_> = s
            .fault_rows
            .iter()
            .map(|r| (r.rule, r.action.as_str(), r.count, r.forwarded))
            .collect();
        assert_eq!(rows, [(0, "error", 2, 1), (1, "stall", 1, 1)]);
        assert_eq!(parse(&t.frame()), Some(s));
    }

    #[test]
    fn a_frame_that_does_not_check_out_is_not_a_summary() {
        let mut t = Tally::default();
        t.see(&rec(RecordKind::Open, 1));
        let good = t.frame();
        for at in 0..good.len() {
            let mut bad = good.clone();
            bad[at] ^= 0x40;
            assert_eq!(parse(&bad), None, "byte {at} flipped");
        }
        for cut in 0..good.len() {
            assert_eq!(
                parse(&good[cut + 1..]),
                None,
                "{cut} bytes cut off the front"
            );
            assert_eq!(parse(&good[..cut]), None, "cut at {cut}");
        }
    }
}
