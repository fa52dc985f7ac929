//! How many recorded connections a capture holds open at once at most: read before the replay
//! starts, to say whether `--max-open-connections` will make some of them wait; and the faults
//! injected while recording (`fault` records), which the replay's report names. Only the records'
//! kinds and connection ids are looked at (and fault records); memory is one id per connection
//! open at a time.

use crate::capture::{CaptureError, CaptureSet, RecordKind, FAULT};
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
