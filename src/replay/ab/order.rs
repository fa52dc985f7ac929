//! Replies of a request that asked for no order (a `find` without sort, an `aggregate` without
//! `$sort`: `measure::observed::asks_order`) are compared with their cursor batch in one order,
//! so the same documents in another order are no difference (`--strict-order` keeps positions).

use crate::wire::bson_raw::{self, DocWriter};

/// A reply with its cursor batch (`cursor.firstBatch` or `cursor.nextBatch`) in one order: its
/// documents sorted by their bytes. `None` when the reply has no cursor batch or does not decode.
pub fn in_order(body: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(body.len());
    let mut found = false;
    let mut w = DocWriter::new(&mut out);
    for e in bson_raw::iter(body).ok()? {
        let e = e.ok()?;
        if e.key != "cursor" || e.kind != bson_raw::DOCUMENT {
            w.raw(e.raw);
            continue;
        }
        w.sub(bson_raw::DOCUMENT, "cursor", |c| -> Option<()> {
            for f in bson_raw::iter(e.value).ok()? {
                let f = f.ok()?;
                let batch =
                    matches!(f.key, "firstBatch" | "nextBatch") && f.kind == bson_raw::ARRAY;
                if !batch {
                    c.raw(f.raw);
                    continue;
                }
                let mut docs = bson_raw::iter(f.value)
                    .ok()?
                    .map(|d| d.map(|d| (d.kind, d.value)))
                    .collect::<Result<Vec<_>, _>>()
                    .ok()?;
                docs.sort_by(|x, y| x.1.cmp(y.1));
                c.sub(bson_raw::ARRAY, f.key, |a| {
                    for (i, (kind, value)) in docs.iter().enumerate() {
                        a.value(*kind, &i.to_string(), value);
                    }
                });
                found = true;
            }
            Some(())
        })?;
    }
    w.finish();
    found.then_some(out)
}

#[cfg(test)]
mod tests {
    use super::super::diff::{flatten, value_json, DiffOptions, Differences, Replies, ABSENT};
    use super::*;
    use bson::{oid::ObjectId, rawdoc, DateTime};

    fn batch(xs: &[i32]) -> Vec<u8> {
        let mut arr = bson::RawArrayBuf::new();
        for x in xs {
            arr.push(rawdoc! { "_id": *x, "s": format!("v{x}") });
        }
        rawdoc! { "cursor": { "firstBatch": arr, "id": 0i64, "ns": "t.c" }, "ok": 1.0 }.into_bytes()
    }

    fn compare(opts: &DiffOptions, a: &[u8], b: &[u8], unordered: bool) -> Differences {
        let mut d = Differences::default();
        let r = Replies {
            command: "find",
            namespace: "t.c",
            control: a,
            candidate: b,
            baseline: None,
            unordered,
        };
        d.add(opts, &r);
        d.finish(opts, false);
        d
    }

    #[test]
    fn the_same_documents_in_another_order_differ_only_when_order_was_asked() {
        let (a, b) = (batch(&[1, 2, 3]), batch(&[3, 1, 2]));
        assert_eq!(in_order(&a), in_order(&b));
        assert!(in_order(&rawdoc! {"ok": 1.0, "n": 3}.into_bytes()).is_none());
        let opts = DiffOptions::default();
        let d = compare(&opts, &a, &b, true);
        assert_eq!(d.reordered, 1);
        assert!(d.fields.values().all(|f| f.differed == 0), "{:?}", d.fields);
        // Asked for an order (a sort), or --strict-order: positions count.
        let d = compare(&opts, &a, &b, false);
        assert!(d.fields["cursor.firstBatch[]._id"].real);
        let strict = DiffOptions {
            strict_order: true,
            ..DiffOptions::default()
        };
        assert!(compare(&strict, &a, &b, true).fields["cursor.firstBatch[]._id"].real);
        // A document missing is a difference in any order.
        let d = compare(&opts, &a, &batch(&[3, 1]), true);
        assert_eq!(d.reordered, 0);
        assert!(d.fields["cursor.firstBatch.length"].real);
    }

    #[test]
    fn examples_print_strings_dates_and_object_ids_as_their_values() {
        let id = ObjectId::parse_str("65f0a1b2c3d4e5f601234567").unwrap();
        let when = DateTime::from_millis(1_700_000_000_000);
        let a = rawdoc! { "s": "abc", "d": when, "o": id, "only": "here" }.into_bytes();
        let flat = flatten(&a);
        assert_eq!(value_json(&flat, "s"), serde_json::json!("abc"));
        assert_eq!(
            value_json(&flat, "d"),
            serde_json::json!({"$date": "2023-11-14T22:13:20Z"})
        );
        assert_eq!(
            value_json(&flat, "o"),
            serde_json::json!({"$oid": "65f0a1b2c3d4e5f601234567"})
        );
        let b = rawdoc! { "s": "abd", "d": when, "o": id }.into_bytes();
        let d = compare(&DiffOptions::default(), &a, &b, false);
        let only = &d.fields["only"].examples[0];
        assert_eq!(
            (&only["control"], &only["candidate"]),
            (&serde_json::json!("here"), &serde_json::json!(ABSENT))
        );
        for f in d.fields.values() {
            for e in &f.examples {
                assert!(!e["control"].is_null() && !e["candidate"].is_null(), "{e}");
            }
        }
    }
}
