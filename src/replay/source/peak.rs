//! How many recorded connections a capture holds open at once at most: read before the replay
//! starts, to say whether `--max-open-connections` will make some of them wait; and the faults
//! injected while recording (`fault` records), which the replay's report names. Only the records'
//! kinds and connection ids are looked at (and fault records); memory is one id per connection
//! open at a time. A finished capture says both in its summary (`capture::summary`), read from
//! the file's end: then nothing is decompressed before the replay starts.

use crate::capture::{summary, CaptureError, CaptureSet, RecordKind, FAULT};
use crate::fault::FaultsInjected;
use std::collections::HashSet;
use std::path::PathBuf;

/// The most recorded connections open at once in `inputs` (only those of `only`, when not empty).
/// A connection is open from its open record (or first message) to its close record; one without a
/// close record is open to the end. A capture damaged part-way counts what is readable. With the
/// faults of the whole capture (`None` without any).
pub fn peak_open(
    inputs: &[PathBuf],
    only: &[u64],
) -> Result<(u64, Option<FaultsInjected>), CaptureError> {
    if only.is_empty() {
        if let Some(found) = from_summaries(inputs)? {
            return Ok(found);
        }
    }
    read_through(inputs, only)
}

/// The same from the files' summaries, when every file has one. A segment starts with an `open`
/// record for each connection still open from the one before, so the most open at once in the
/// capture is the most in any of its files.
fn from_summaries(
    inputs: &[PathBuf],
) -> Result<Option<(u64, Option<FaultsInjected>)>, CaptureError> {
    let mut peak = 0;
    let mut total = 0;
    let mut rows: Vec<summary::FaultRow> = Vec::new();
    for path in crate::capture::set::resolve(inputs)? {
        let read = summary::read(&path).map_err(|source| CaptureError::Io {
            action: "read the summary of",
            path: path.clone(),
            source,
        })?;
        let Some(s) = read else {
            tracing::debug!("{} has no summary: reading it through", path.display());
            return Ok(None);
        };
        peak = peak.max(s.peak_open);
        total += s.faults;
        for row in s.fault_rows {
            let same = |r: &&mut summary::FaultRow| {
                (r.rule, &r.name, &r.action) == (row.rule, &row.name, &row.action)
            };
            let at = match rows.iter_mut().position(|r| same(&r)) {
                Some(at) => at,
                None if rows.len() < summary::MAX_FAULT_ROWS => {
                    rows.push(summary::FaultRow {
                        count: 0,
                        forwarded: 0,
                        ..row.clone()
                    });
                    rows.len() - 1
                }
                // More are counted in the last, as one read through would.
                None => rows.len() - 1,
            };
            rows[at].count += row.count;
            rows[at].forwarded += row.forwarded;
        }
    }
    let faults = (total > 0).then(|| FaultsInjected::from_summary(total, &rows));
    Ok(Some((peak, faults)))
}

/// The same by reading the capture through.
fn read_through(
    inputs: &[PathBuf],
    only: &[u64],
) -> Result<(u64, Option<FaultsInjected>), CaptureError> {
    let mut set = CaptureSet::open(inputs)?;
    let mut open = HashSet::new();
    let mut peak = 0u64;
    let mut faults: Option<FaultsInjected> = None;
    while let Some(record) = set.next_record() {
        let Ok(record) = record else { break };
        if record.kind == FAULT {
            faults.get_or_insert_default().add(&record);
        }
        if !only.is_empty() && !only.contains(&record.conn_id) {
            continue;
        }
        match record.kind {
            RecordKind::Open | RecordKind::Request | RecordKind::Reply
                if open.insert(record.conn_id) =>
            {
                peak = peak.max(open.len() as u64);
            }
            RecordKind::Close => {
                open.remove(&record.conn_id);
            }
            _ => {}
        }
    }
    Ok((peak, faults))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::{CaptureWriter, FaultEvent, Metadata, Record};

    fn fault(rule: usize, action: &str) -> Record {
        let e = FaultEvent {
            rule,
            name: format!("rule {rule}"),
            action: action.into(),
            conn_id: 2,
            request_id: 1,
            command: "insert".into(),
            ns: "db.c".into(),
            forwarded: rule == 1,
            lsid: None,
            txn_number: None,
        };
        Record::json(FAULT, 2, 5, &e)
    }

    /// Connections 1-3 open at once, then 4 after 1 closed; faults of two rules.
    fn write(path: &std::path::Path) -> u64 {
        let mut w = CaptureWriter::create(path, &Metadata::default(), 1).unwrap();
        let recs = [
            Record::new(RecordKind::Open, 1, 1, &b"{}"[..]),
            Record::new(RecordKind::Request, 2, 2, &b"m"[..]),
            Record::new(RecordKind::Reply, 3, 3, &b"m"[..]),
            fault(0, "error"),
            fault(1, "stall"),
            fault(0, "error"),
            Record::new(RecordKind::Close, 1, 6, &b"{}"[..]),
            Record::new(RecordKind::Open, 4, 7, &b"{}"[..]),
        ];
        for r in &recs {
            w.write(r).unwrap();
        }
        w.finish().unwrap().metadata().unwrap().len()
    }

    #[test]
    fn the_summary_says_what_reading_the_capture_through_says() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.mtape");
        let size = write(&path);
        let inputs = [path.clone()];
        let (peak, faults) = from_summaries(&inputs)
            .unwrap()
            .expect("a finished file's summary");
        assert_eq!(peak, 3);
        assert_eq!((peak, faults.clone()), read_through(&inputs, &[]).unwrap());
        let f = faults.expect("faults");
        assert_eq!(f.total, 3);
        let rows: Vec<_> = f
            .rules
            .iter()
            .map(|r| (r.rule, r.count, r.forwarded))
            .collect();
        assert_eq!(rows, [(0, 2, 0), (1, 1, 1)]);
        assert_eq!(peak_open(&inputs, &[]).unwrap(), (3, Some(f.clone())));
        // Only some connections: read through (the summary counts them all).
        assert_eq!(peak_open(&inputs, &[1, 4]).unwrap().0, 1);
        // Without its summary (a writer that did not finish): read through, same answer.
        let frame = summary::read(&path).unwrap().is_some();
        assert!(frame);
        let bytes = std::fs::read(&path).unwrap();
        let tail = &bytes[bytes.len() - 12..];
        let len = summary::trailer_len(tail).expect("a summary's trailer");
        let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        file.set_len(size - len).unwrap();
        assert_eq!(summary::read(&path).unwrap(), None);
        assert_eq!(from_summaries(&inputs).unwrap(), None);
        assert_eq!(peak_open(&inputs, &[]).unwrap(), (3, Some(f)));
    }
}
