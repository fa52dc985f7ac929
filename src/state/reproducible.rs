//! Which recorded writes a replay cannot reproduce exactly, because the server decides their
//! values: `$currentDate`, `$rand`, `$$NOW` and `$$CLUSTER_TIME`, `$sample` feeding `$out` or
//! `$merge`, an upsert whose filter names no `_id` and an insert without `_id` (the server makes
//! the ObjectId). Counted per request, streaming the capture, by looking for the operator as a
//! BSON key or string in the (decompressed) request of a write command.

use crate::capture::{CaptureSet, RecordKind};
use crate::wire::info::RequestInfo;
use crate::wire::message::Message;
use memchr::memmem;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Markers in a write's bytes: the key or string as BSON writes it (NUL-terminated), and the
/// cause it is counted under.
const MARKERS: &[(&[u8], &str)] = &[
    (b"$currentDate\0", "$currentDate"),
    (b"$rand\0", "$rand"),
    (b"$$NOW\0", "$$NOW"),
    (b"$$CLUSTER_TIME\0", "$$CLUSTER_TIME"),
];

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    memmem::find(haystack, needle).is_some()
}

/// The causes one request counts under (none for a read).
pub fn causes(command: &str, bytes: &[u8]) -> Vec<&'static str> {
    let pipeline_writes =
        command == "aggregate" && (contains(bytes, b"$out\0") || contains(bytes, b"$merge\0"));
    let is_write = pipeline_writes
        || matches!(
            command.to_ascii_lowercase().as_str(),
            "insert" | "update" | "delete" | "findandmodify" | "bulkwrite"
        );
    if !is_write {
        return Vec::new();
    }
    let mut out: Vec<&'static str> = MARKERS
        .iter()
        .filter(|(m, _)| contains(bytes, m))
        .map(|(_, cause)| *cause)
        .collect();
    if pipeline_writes && contains(bytes, b"$sample\0") {
        out.push("$sample");
    }
    let has_id = contains(bytes, b"_id\0");
    let lower = command.to_ascii_lowercase();
    if matches!(lower.as_str(), "update" | "findandmodify")
        && contains(bytes, b"\x08upsert\0\x01")
        && !has_id
    {
        out.push("upsert without _id");
    }
    if lower == "insert" && !has_id {
        out.push("insert without _id");
    }
    out
}

/// Every recorded request's causes, added up; a capture that cannot be read counts what it
/// read.
pub fn count(inputs: &[PathBuf]) -> BTreeMap<String, u64> {
    let mut counts = BTreeMap::new();
    let Ok(mut set) = CaptureSet::open(inputs) else {
        return counts;
    };
    while let Some(Ok(record)) = set.next_record() {
        if record.kind != RecordKind::Request {
            continue;
        }
        let Ok(msg) = Message::parse(&record.payload) else {
            continue;
        };
        let info = RequestInfo::of(&msg);
        let plain = match msg.compressor {
            Some(_) => match crate::wire::compressed::decompress(&record.payload) {
                Ok((_, inner)) => inner,
                Err(_) => continue,
            },
            None => record.payload.to_vec(),
        };
        for cause in causes(&info.command, &plain) {
            *counts.entry(cause.to_owned()).or_insert(0) += 1;
        }
    }
    counts
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::rawdoc;

    #[test]
    fn server_generated_values_are_found_in_writes_only() {
        let update = rawdoc! {"update": "orders", "updates": [
            {"q": {"status": "new"}, "u": {"$currentDate": {"ts": true}}, "upsert": true}
        ]};
        assert_eq!(
            causes("update", update.as_bytes()),
            vec!["$currentDate", "upsert without _id"]
        );
        let find = rawdoc! {"find": "orders", "filter": {"$expr": {"$lt": ["$ts", "$$NOW"]}}};
        assert!(causes("find", find.as_bytes()).is_empty());
        let agg =
            rawdoc! {"aggregate": "orders", "pipeline": [{"$sample": {"size": 3}}, {"$out": "x"}]};
        assert_eq!(causes("aggregate", agg.as_bytes()), vec!["$sample"]);
        let insert = rawdoc! {"insert": "orders", "documents": [{"_id": 1}]};
        assert!(causes("insert", insert.as_bytes()).is_empty());
        let insert = rawdoc! {"insert": "orders", "documents": [{"n": 1}]};
        assert_eq!(
            causes("insert", insert.as_bytes()),
            vec!["insert without _id"]
        );
    }
}
