//! Reply differences between targets, field by field (Diffy's method): each reply body is
//! flattened to its leaf fields (`cursor.firstBatch[].name`, with the array's `length` as a field
//! of its own), the candidate's reply compared with the control's, and, with a second baseline,
//! the baseline's with the control's too. A field that differs between the control and its copy
//! is noise: at that request its difference is not counted, and over the run its noise rate is
//! reported; a field noisier than the threshold is left out of the real differences altogether.
//! Memory is bounded: counters per field (at most [`MAX_FIELDS`]) and a few examples each.

use super::order::in_order;
use crate::wire::bson_raw::{self, DocWriter, Element};
use crate::wire::extjson;
use serde::Serialize;
use std::collections::{BTreeMap, HashMap, HashSet};

/// Fields tracked; others are counted under `(other fields)`.
pub const MAX_FIELDS: usize = 500;
const OTHER: &str = "(other fields)";
/// Levels flattened into fields; a document deeper than that is one leaf, compared by its bytes.
const FLATTEN_DEPTH: usize = 8;

/// Fields that differ between any two servers by construction (not compared).
pub const DEFAULT_IGNORED: &[&str] = &["cursor.id", "$clusterTime.signature.keyId"];

/// A server's clock in a reply (`$clusterTime.*`, `operationTime`, a hello's `localTime`): it
/// differs between any two servers, noise by nature; a page counts such fields without naming them.
pub fn is_clock_field(name: &str) -> bool {
    const FIRST: [&str; 4] = [
        "$clusterTime",
        "$configTime",
        "$topologyTime",
        "operationTime",
    ];
    const ANY: [&str; 5] = [
        "opTime",
        "majorityOpTime",
        "lastWriteDate",
        "majorityWriteDate",
        "localTime",
    ];
    let mut parts = name.split('.').map(|p| p.trim_end_matches("[]"));
    parts
        .next()
        .is_some_and(|first| FIRST.contains(&first) || ANY.contains(&first))
        || parts.any(|p| ANY.contains(&p))
}

#[derive(Debug, Clone)]
pub struct DiffOptions {
    /// Numbers within this relative difference are equal (0.05 = 5%).
    pub relative: f64,
    /// Numbers within this absolute difference are equal.
    pub absolute: f64,
    /// A field whose control/baseline differences exceed this share of its comparisons is noise.
    pub noise_threshold: f64,
    /// Examples kept per field.
    pub examples: usize,
    /// Fields not compared (exact names, `[]` for array positions).
    pub ignored: Vec<String>,
    /// `--strict-order`: documents of a reply compared position by position even when the
    /// request asked for no order.
    pub strict_order: bool,
}

impl Default for DiffOptions {
    fn default() -> Self {
        DiffOptions {
            relative: 0.0,
            absolute: 0.0,
            noise_threshold: 0.0,
            examples: 3,
            ignored: DEFAULT_IGNORED.iter().map(|s| s.to_string()).collect(),
            strict_order: false,
        }
    }
}

/// One leaf of a reply: its name (array positions as `[]`), its position-exact path, its value.
struct Leaf<'a> {
    name: String,
    value: Value<'a>,
}

#[derive(Clone, Copy)]
enum Value<'a> {
    Number(f64),
    Raw(u8, &'a [u8]),
}

/// A reply's leaves by exact path (with array indices).
pub struct Flat<'a>(HashMap<String, Leaf<'a>>);

pub fn flatten(body: &[u8]) -> Flat<'_> {
    let mut out = HashMap::new();
    walk(body, "", "", false, 0, &mut out);
    Flat(out)
}

fn walk<'a>(
    doc: &'a [u8],
    path: &str,
    name: &str,
    array: bool,
    depth: usize,
    out: &mut HashMap<String, Leaf<'a>>,
) {
    let Ok(elements) = bson_raw::iter(doc) else {
        return;
    };
    let mut len = 0i64;
    for e in elements.flatten() {
        len += 1;
        let (p, n) = if path.is_empty() {
            (e.key.to_owned(), e.key.to_owned())
        } else if array {
            (format!("{path}.{}", e.key), format!("{name}[]"))
        } else {
            (format!("{path}.{}", e.key), format!("{name}.{}", e.key))
        };
        match e.kind {
            bson_raw::DOCUMENT | bson_raw::ARRAY if depth < FLATTEN_DEPTH => {
                walk(e.value, &p, &n, e.kind == bson_raw::ARRAY, depth + 1, out);
            }
            _ => {
                out.insert(
                    p,
                    Leaf {
                        name: n,
                        value: value_of(&e),
                    },
                );
            }
        }
    }
    if array {
        out.insert(
            format!("{path}.length"),
            Leaf {
                name: format!("{name}.length"),
                value: Value::Number(len as f64),
            },
        );
    }
}

fn value_of<'a>(e: &Element<'a>) -> Value<'a> {
    e.as_f64()
        .map_or(Value::Raw(e.kind, e.value), Value::Number)
}

impl DiffOptions {
    fn same(&self, a: Option<&Leaf<'_>>, b: Option<&Leaf<'_>>) -> bool {
        match (a.map(|l| l.value), b.map(|l| l.value)) {
            (None, None) => true,
            (Some(Value::Number(x)), Some(Value::Number(y))) => {
                let d = (x - y).abs();
                d == 0.0 || d <= self.absolute || d <= self.relative * x.abs().max(y.abs())
            }
            (Some(Value::Raw(k1, v1)), Some(Value::Raw(k2, v2))) => k1 == k2 && v1 == v2,
            _ => false,
        }
    }
}

/// The fields on which two replies differ: exact path, field name.
pub fn differing<'a>(
    opts: &DiffOptions,
    a: &'a Flat<'_>,
    b: &'a Flat<'_>,
) -> Vec<(&'a str, &'a str)> {
    let mut d = Vec::new();
    for (path, leaf) in a.0.iter() {
        if !opts.same(Some(leaf), b.0.get(path)) {
            d.push((path.as_str(), leaf.name.as_str()));
        }
    }
    for (path, leaf) in b.0.iter() {
        if !a.0.contains_key(path) {
            d.push((path.as_str(), leaf.name.as_str()));
        }
    }
    d.retain(|(_, n)| !opts.ignored.iter().any(|i| i == n));
    d
}

/// What an example shows for a field one reply does not have.
pub const ABSENT: &str = "(absent)";

/// The value at `path` as relaxed extended JSON (for examples: strings, dates and ObjectIds as
/// their values), [`ABSENT`] when the reply has no such field.
pub fn value_json(flat: &Flat<'_>, path: &str) -> serde_json::Value {
    let Some(leaf) = flat.0.get(path) else {
        return serde_json::Value::String(ABSENT.into());
    };
    match leaf.value {
        Value::Number(v) => serde_json::json!(v),
        Value::Raw(kind, value) => raw_json(kind, value),
    }
}

fn raw_json(kind: u8, value: &[u8]) -> serde_json::Value {
    // A one-element document around the value, converted without recursing; one nested past
    // the limit is the error value `cat` prints for it.
    let mut doc = Vec::with_capacity(value.len() + 8);
    let mut w = DocWriter::new(&mut doc);
    w.value(kind, "v", value);
    w.finish();
    let Ok(doc) = bson::RawDocument::from_bytes(&doc) else {
        return serde_json::Value::Null;
    };
    match extjson::to_json(doc, extjson::ExtJson::Relaxed) {
        Ok(mut v) => v["v"].take(),
        Err(e) => serde_json::json!({ "$error": e.to_string() }),
    }
}

/// Per field: how often compared, how often the control and the candidate differed, how often
/// the control and its copy did (noise), and the differences left once noise is taken out.
#[derive(Debug, Clone, Default, Serialize, schemars::JsonSchema)]
pub struct FieldDiff {
    /// Requests whose replies (control and candidate) were compared and had this field.
    pub compared: u64,
    /// Control and candidate differed.
    pub differed: u64,
    /// Control and baseline copy differed (noise), with a baseline.
    pub noise: u64,
    /// Of `differed`, those where the baseline copy did not differ from the control.
    pub unexplained: u64,
    /// `noise / compared`.
    #[schemars(range(min = 0, max = 1))]
    pub noise_rate: f64,
    /// Real: unexplained differences on a field whose noise rate is within the threshold.
    pub real: bool,
    pub examples: Vec<serde_json::Value>,
    #[serde(skip)]
    pub(super) commands: BTreeMap<String, u64>,
    /// Commands whose replies had this field.
    #[serde(skip)]
    seen_in: std::collections::BTreeSet<String>,
}

/// Differences over the run, bounded.
#[derive(Debug, Default)]
pub struct Differences {
    pub fields: BTreeMap<String, FieldDiff>,
    /// Requests compared (every target answered with a body).
    pub compared: u64,
    /// Requests whose replies were identical byte for byte on every target, per command.
    pub identical: BTreeMap<String, u64>,
    /// Requests that asked for no order whose candidate reply held the control's documents in
    /// another order (not a difference unless `--strict-order`).
    pub reordered: u64,
}

/// One request's replies: the control's, the candidate's and maybe the baseline copy's.
pub struct Replies<'a> {
    pub command: &'a str,
    pub namespace: &'a str,
    pub control: &'a [u8],
    pub candidate: &'a [u8],
    pub baseline: Option<&'a [u8]>,
    /// The request asked for no order (`observed::asks_order`).
    pub unordered: bool,
}

impl Differences {
    /// Compares one request's replies. When the request asked for no order, each reply's cursor
    /// batch is put in one order first (its documents sorted by their bytes), so documents in
    /// another order are no difference; `--strict-order` keeps the positions.
    pub fn add(&mut self, opts: &DiffOptions, r: &Replies<'_>) {
        if r.unordered && !opts.strict_order && r.control != r.candidate {
            let baseline = r.baseline.map(in_order);
            if let (Some(a), Some(b), false) = (
                in_order(r.control),
                in_order(r.candidate),
                baseline == Some(None),
            ) {
                if a == b {
                    self.reordered += 1;
                }
                let c = baseline.flatten();
                return self.add_strict(
                    opts,
                    &Replies {
                        control: &a,
                        candidate: &b,
                        baseline: c.as_deref(),
                        unordered: false,
                        ..*r
                    },
                );
            }
        }
        self.add_strict(opts, r)
    }

    fn add_strict(&mut self, opts: &DiffOptions, r: &Replies<'_>) {
        self.compared += 1;
        if r.control == r.candidate && r.baseline.is_none_or(|c| c == r.control) {
            // Identical byte for byte: nothing to flatten; counted per command for the rates.
            *self.identical.entry(r.command.to_owned()).or_default() += 1;
            return;
        }
        let a = flatten(r.control);
        let b = flatten(r.candidate);
        let mut noise_paths = HashSet::new();
        let mut noise_names = HashSet::new();
        if let Some(c) = r.baseline {
            let c = flatten(c);
            for (p, n) in differing(opts, &a, &c) {
                noise_paths.insert(p.to_owned());
                noise_names.insert(n.to_owned());
            }
        }
        let names: HashSet<&str> =
            a.0.values()
                .chain(b.0.values())
                .map(|l| l.name.as_str())
                .collect();
        for n in names {
            let f = self.field(n);
            f.compared += 1;
            if !f.seen_in.contains(r.command) {
                f.seen_in.insert(r.command.to_owned());
            }
        }
        for n in &noise_names {
            self.field(n).noise += 1;
        }
        // Per field name: whether any position differed, and the first unexplained one.
        let mut hit: BTreeMap<&str, Option<&str>> = BTreeMap::new();
        for (p, n) in differing(opts, &a, &b) {
            let slot = hit.entry(n).or_default();
            if slot.is_none() && !noise_paths.contains(p) {
                *slot = Some(p);
            }
        }
        for (n, unexplained) in hit {
            let max = opts.examples;
            let f = self.field(n);
            f.differed += 1;
            *f.commands.entry(r.command.to_owned()).or_default() += 1;
            let Some(path) = unexplained else { continue };
            f.unexplained += 1;
            if f.examples.len() < max {
                f.examples.push(serde_json::json!({
                    "command": r.command,
                    "namespace": r.namespace,
                    "path": path,
                    "control": value_json(&a, path),
                    "candidate": value_json(&b, path),
                }));
            }
        }
    }

    fn field(&mut self, name: &str) -> &mut FieldDiff {
        let key = if self.fields.contains_key(name) || self.fields.len() < MAX_FIELDS {
            name
        } else {
            OTHER
        };
        self.fields.entry(key.to_owned()).or_default()
    }

    /// Noise rates, and which fields have real differences: never a server's clock field
    /// ([`is_clock_field`]), which A2 may happen to agree on where B does not.
    pub fn finish(&mut self, opts: &DiffOptions, with_baseline: bool) {
        for (name, f) in self.fields.iter_mut() {
            // Identical replies of a command count as compared for every field it showed.
            f.compared += f
                .seen_in
                .iter()
                .filter_map(|c| self.identical.get(c))
                .sum::<u64>();
            f.noise_rate = if f.compared > 0 {
                f.noise as f64 / f.compared as f64
            } else {
                0.0
            };
            f.real = f.unexplained > 0
                && !is_clock_field(name)
                && (!with_baseline || f.noise_rate <= opts.noise_threshold);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::depth;
    use bson::{oid::ObjectId, rawdoc};

    fn batch(docs: &[(ObjectId, i32)]) -> Vec<u8> {
        let mut arr = bson::RawArrayBuf::new();
        for (id, x) in docs {
            arr.push(rawdoc! { "_id": *id, "x": *x });
        }
        rawdoc! { "cursor": { "firstBatch": arr, "id": 0i64 }, "ok": 1.0 }.into_bytes()
    }

    #[test]
    fn a_missing_document_is_real_and_server_ids_are_noise() {
        let opts = DiffOptions::default();
        let ids = |n| (0..n).map(|_| ObjectId::new()).collect::<Vec<_>>();
        let mut d = Differences::default();
        for _ in 0..20 {
            let (a, b, c) = (ids(2), ids(2), ids(2));
            let control = batch(&[(a[0], 1), (a[1], 2)]);
            let candidate = batch(&[(b[0], 1)]);
            let baseline = batch(&[(c[0], 1), (c[1], 2)]);
            d.add(
                &opts,
                &Replies {
                    command: "find",
                    namespace: "t.c",
                    control: &control,
                    candidate: &candidate,
                    baseline: Some(&baseline),
                    unordered: false,
                },
            );
        }
        d.finish(&opts, true);
        let len = &d.fields["cursor.firstBatch.length"];
        assert!(len.real && len.unexplained == 20, "{len:?}");
        assert_eq!(len.examples[0]["control"], serde_json::json!(2.0));
        assert_eq!(len.examples[0]["candidate"], serde_json::json!(1.0));
        let id = &d.fields["cursor.firstBatch[]._id"];
        assert!(!id.real && id.noise_rate == 1.0, "{id:?}");
        assert!(d.fields["cursor.firstBatch[].x"].real);
        assert!(!d.fields["ok"].real && d.fields["ok"].differed == 0);
    }

    #[test]
    fn a_leaf_nested_past_the_limit_is_an_error_value_not_a_crash() {
        let deep = bson::RawDocumentBuf::from_bytes(depth::nested(10_000)).unwrap();
        let shallow = bson::RawDocumentBuf::from_bytes(depth::nested(3)).unwrap();
        let control = rawdoc! { "ok": 1.0, "v": deep }.into_bytes();
        let candidate = rawdoc! { "ok": 1.0, "v": shallow }.into_bytes();
        let opts = DiffOptions::default();
        let mut d = Differences::default();
        d.add(
            &opts,
            &Replies {
                command: "find",
                namespace: "t.c",
                control: &control,
                candidate: &candidate,
                baseline: None,
                unordered: false,
            },
        );
        let examples: Vec<_> = d.fields.values().flat_map(|f| &f.examples).collect();
        assert!(!examples.is_empty(), "{:?}", d.fields);
        let control = &examples[0]["control"];
        assert_eq!(
            control["$error"], "BSON document nests deeper than 200 levels",
            "{control}"
        );
        // Within the limit the value is converted, on a test thread's 2 MiB stack; a string
        // example too (a length off by one made every non-number example null).
        let at_limit = depth::nested(depth::MAX_DEPTH - 1);
        let v = raw_json(bson_raw::DOCUMENT, &at_limit);
        assert!(v.is_object(), "{v}");
        let s = rawdoc! { "s": "abc" }.into_bytes();
        assert_eq!(value_json(&flatten(&s), "s"), serde_json::json!("abc"));
    }

    #[test]
    fn numbers_within_the_thresholds_are_equal() {
        let a = rawdoc! { "n": 100, "ok": 1.0 }.into_bytes();
        let b = rawdoc! { "n": 104i64, "ok": 1.0 }.into_bytes();
        let (fa, fb) = (flatten(&a), flatten(&b));
        let exact = DiffOptions::default();
        assert_eq!(differing(&exact, &fa, &fb).len(), 1);
        let loose = DiffOptions {
            relative: 0.05,
            ..DiffOptions::default()
        };
        assert!(differing(&loose, &fa, &fb).is_empty());
        let abs = DiffOptions {
            absolute: 3.0,
            ..DiffOptions::default()
        };
        assert_eq!(differing(&abs, &fa, &fb).len(), 1);
    }
}
