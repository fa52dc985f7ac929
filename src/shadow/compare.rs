//! One mirrored reply against production's, with the A/B normalization: the documents of a
//! cursor batch put in one order when the request asked for none (`replay::ab::order`), the
//! fields every server fills from its own clock and the cursor ids left out, `--ignore-field`,
//! then the replies flattened and compared field by field (`replay::ab::diff`).

use crate::replay::ab::diff::{self, DiffOptions};
use crate::replay::ab::order::in_order;
use crate::replay::ab::SERVER_CLOCK_FIELDS;
use crate::wire::reply;
use bson::RawDocument;
use std::collections::BTreeSet;

/// What one comparison found.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    Same,
    /// The names of the fields that differ (array positions as `[]`).
    Differ(BTreeSet<String>),
}

/// The comparison's options: the A/B defaults, the clock fields and `extra` ignored.
pub fn options(extra: &[String]) -> DiffOptions {
    let mut opts = DiffOptions::default();
    opts.ignored
        .extend(SERVER_CLOCK_FIELDS.iter().map(|s| s.to_string()));
    opts.ignored.extend(["cursor.ns".to_string()]);
    opts.ignored.extend(extra.iter().cloned());
    opts
}

/// The body document of a reply frame, owned; `None` for bytes that are no reply.
pub fn body(frame: &[u8]) -> Option<Vec<u8>> {
    let body = reply::body(frame).ok()?;
    body.doc.map(|d| d.into_owned())
}

/// Compares two reply bodies; `unordered`: the request asked for no order.
pub fn compare(opts: &DiffOptions, a: &[u8], b: &[u8], unordered: bool) -> Verdict {
    if a == b {
        return Verdict::Same;
    }
    let (a, b) = match unordered.then(|| (in_order(a), in_order(b))) {
        Some((Some(x), Some(y))) => (x, y),
        _ => (a.to_vec(), b.to_vec()),
    };
    let (fa, fb) = (diff::flatten(&a), diff::flatten(&b));
    let names: BTreeSet<String> = diff::differing(opts, &fa, &fb)
        .into_iter()
        .map(|(_, name)| name.to_owned())
        .collect();
    if names.is_empty() {
        Verdict::Same
    } else {
        Verdict::Differ(names)
    }
}

/// The `_id`s of the batch documents that differ between two reply bodies (or that only one
/// has), as relaxed extended JSON; at most `max`.
pub fn differing_ids(a: &[u8], b: &[u8], max: usize) -> Vec<serde_json::Value> {
    let (da, db) = (batch(a), batch(b));
    let mut out = Vec::new();
    for (id, doc) in da.iter().chain(db.iter()) {
        let other = if da.iter().any(|(i, d)| i == id && d == doc) {
            db.iter().find(|(i, _)| i == id)
        } else {
            da.iter().find(|(i, _)| i == id)
        };
        let same = other.is_some_and(|(_, d)| d == doc);
        if !same && !out.contains(id) && out.len() < max {
            out.push(id.clone());
        }
    }
    out
}

/// A reply's batch documents (`cursor.firstBatch` or `cursor.nextBatch`): each `_id` and bytes.
fn batch(body: &[u8]) -> Vec<(serde_json::Value, Vec<u8>)> {
    let Ok(doc) = RawDocument::from_bytes(body) else {
        return Vec::new();
    };
    let Ok(cursor) = doc.get_document("cursor") else {
        return Vec::new();
    };
    let docs = cursor
        .get_array("firstBatch")
        .or_else(|_| cursor.get_array("nextBatch"));
    let Ok(docs) = docs else {
        return Vec::new();
    };
    docs.into_iter()
        .flatten()
        .filter_map(|d| d.as_document())
        .filter_map(|d| {
            let id = d.get("_id").ok().flatten()?;
            let id = bson::Bson::try_from(id).ok()?.into_relaxed_extjson();
            Some((id, d.as_bytes().to_vec()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::rawdoc;

    fn reply(docs: Vec<bson::RawDocumentBuf>) -> Vec<u8> {
        let mut arr = bson::RawArrayBuf::new();
        for d in docs {
            arr.push(d);
        }
        rawdoc! { "cursor": { "firstBatch": arr, "id": 0_i64, "ns": "a.b" }, "ok": 1.0 }
            .into_bytes()
    }

    #[test]
    fn unordered_batches_in_another_order_are_the_same() {
        let a = reply(vec![rawdoc! {"_id": 1, "x": 1}, rawdoc! {"_id": 2, "x": 2}]);
        let b = reply(vec![rawdoc! {"_id": 2, "x": 2}, rawdoc! {"_id": 1, "x": 1}]);
        let opts = options(&[]);
        assert_eq!(compare(&opts, &a, &b, true), Verdict::Same);
        assert!(matches!(compare(&opts, &a, &b, false), Verdict::Differ(_)));
    }

    #[test]
    fn a_changed_document_names_its_field_and_id() {
        let a = reply(vec![rawdoc! {"_id": 1, "x": 1}, rawdoc! {"_id": 2, "x": 2}]);
        let b = reply(vec![rawdoc! {"_id": 1, "x": 1}, rawdoc! {"_id": 2, "x": 3}]);
        let Verdict::Differ(fields) = compare(&options(&[]), &a, &b, true) else {
            panic!("no difference found");
        };
        assert!(fields.iter().any(|f| f.ends_with(".x")), "{fields:?}");
        assert_eq!(differing_ids(&a, &b, 5), vec![serde_json::json!(2)]);
    }

    #[test]
    fn ignored_fields_are_not_compared() {
        let a = rawdoc! {"n": 1, "operationTime": 5}.into_bytes();
        let b = rawdoc! {"n": 1, "operationTime": 6}.into_bytes();
        assert_eq!(compare(&options(&[]), &a, &b, false), Verdict::Same);
        let c = rawdoc! {"n": 2, "operationTime": 6}.into_bytes();
        assert_eq!(
            compare(&options(&["n".into()]), &a, &c, false),
            Verdict::Same
        );
    }
}
