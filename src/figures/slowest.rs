//! The K slowest requests of a report (`slowest`): a bounded min-heap, so a capture of any length
//! keeps K entries. A caller asks [`Slowest::admits`] before it builds an entry (the request's
//! body as JSON and its shape are built only for the few that enter).

use super::table::{Column, Field, Table};
use super::text::{cut, cut_bytes};
use super::units;
use crate::wire::extjson::{self, ExtJson};
use crate::wire::{Body, Message, Section};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

/// Slowest requests kept by default (`--slowest K`).
pub const DEFAULT_SLOWEST: usize = 20;
/// A body's JSON text is cut past this many bytes.
pub const MAX_BODY: usize = 2_000;
/// Documents of an OP_MSG document sequence (an insert's `documents`) written out; the others
/// are counted.
const MAX_SEQUENCE_DOCS: usize = 3;

/// One slow request.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[schemars(deny_unknown_fields)]
#[serde(default)]
pub struct SlowRequest {
    /// When it was sent, seconds from the capture's first record.
    #[schemars(range(min = 0))]
    pub at_s: f64,
    /// The recorded connection it was sent on.
    pub connection: u64,
    /// Its request id on that connection.
    pub request_id: i32,
    /// The application name of its connection's handshake; null when unknown.
    pub application: Option<String>,
    pub command: String,
    pub namespace: String,
    #[schemars(pattern(r"^[0-9a-f]{16}$"))]
    pub shape_hash: Option<String>,
    pub shape: Option<String>,
    /// Latency in the capture (request to reply), microseconds; null when the recorded reply was
    /// not seen.
    #[schemars(range(min = 0))]
    pub recorded_us: Option<f64>,
    /// Latency of the replay, microseconds (replay and A/B reports); null in analyze.
    #[schemars(range(min = 0))]
    pub replayed_us: Option<f64>,
    /// The request as relaxed extended JSON text (OP_MSG document sequences as fields of the body,
    /// their first 3 documents), values hashed when the capture was recorded with `--redact
    /// values`; cut past [`MAX_BODY`] (2,000) bytes with `…`.
    pub body: String,
    pub body_cut: bool,
}

impl SlowRequest {
    /// The latency it is ranked by: the replay's when there is one, else the recorded one (µs).
    pub fn latency_us(&self) -> f64 {
        self.replayed_us.or(self.recorded_us).unwrap_or(0.0)
    }
}

struct Ranked {
    latency_ns: u64,
    seq: u64,
    request: SlowRequest,
}

impl PartialEq for Ranked {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Ranked {}
impl PartialOrd for Ranked {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Ranked {
    /// Slower first; of equal latencies the earlier one ranks higher (stays in the heap).
    fn cmp(&self, other: &Self) -> Ordering {
        self.latency_ns
            .cmp(&other.latency_ns)
            .then_with(|| other.seq.cmp(&self.seq))
    }
}

/// The K slowest requests seen so far.
pub struct Slowest {
    k: usize,
    seq: u64,
    heap: BinaryHeap<Reverse<Ranked>>,
}

impl std::fmt::Debug for Slowest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Slowest({} of {})", self.heap.len(), self.k)
    }
}

impl Default for Slowest {
    fn default() -> Self {
        Slowest::new(DEFAULT_SLOWEST)
    }
}

impl Slowest {
    pub fn new(k: usize) -> Slowest {
        Slowest {
            k,
            seq: 0,
            heap: BinaryHeap::with_capacity(k.min(10_000) + 1),
        }
    }

    /// Whether a request this slow would be kept.
    pub fn admits(&self, latency_ns: u64) -> bool {
        if self.k == 0 {
            return false;
        }
        self.heap.len() < self.k
            || self
                .heap
                .peek()
                .is_some_and(|m| latency_ns > m.0.latency_ns)
    }

    /// Keeps `request` if it is among the K slowest.
    pub fn push(&mut self, latency_ns: u64, request: SlowRequest) {
        if !self.admits(latency_ns) {
            return;
        }
        self.seq += 1;
        self.heap.push(Reverse(Ranked {
            latency_ns,
            seq: self.seq,
            request,
        }));
        if self.heap.len() > self.k {
            self.heap.pop();
        }
    }

    /// The requests kept, in no order.
    pub fn requests(&self) -> impl Iterator<Item = &SlowRequest> {
        self.heap.iter().map(|r| &r.0.request)
    }

    /// The requests kept, slowest first.
    pub fn sorted(&self) -> Vec<SlowRequest> {
        let mut v: Vec<&Ranked> = self.heap.iter().map(|r| &r.0).collect();
        v.sort_by(|a, b| b.cmp(a));
        v.into_iter().map(|r| r.request.clone()).collect()
    }
}

/// Rows of the text reports' list; `--json` has every request kept, with its body.
pub const TEXT_ROWS: usize = 5;

/// The slowest requests as text, one line each (at most `rows`), fitting 100 columns:
/// latency (replayed, then recorded when both), when, connection, application and shape.
pub fn render_text(list: &[SlowRequest], rows: usize) -> String {
    if list.is_empty() {
        return String::new();
    }
    let mut s = format!(
        "\nThe {} slowest requests (of {} kept, `slowest` in the JSON has their bodies)\n",
        list.len().min(rows),
        list.len()
    );
    for r in list.iter().take(rows) {
        let latency = match (r.replayed_us, r.recorded_us) {
            (Some(p), Some(c)) => format!(
                "{} (recorded {})",
                units::duration_us(p),
                units::duration_us(c)
            ),
            _ => units::duration_us(r.latency_us()),
        };
        let app = r
            .application
            .as_deref()
            .map(|a| format!(" {a}"))
            .unwrap_or_default();
        let what = r
            .shape
            .clone()
            .unwrap_or_else(|| format!("{} {}", r.command, r.namespace));
        let head = format!(
            "  {latency:>9} at {} conn {}{app}  ",
            units::duration_s(r.at_s),
            r.connection
        );
        let room = 100usize.saturating_sub(head.chars().count()).max(20);
        s.push_str(&head);
        s.push_str(&cut(&what, room));
        s.push('\n');
    }
    s
}

/// The table of the slowest requests (the page's), each with its whole body.
pub fn table(slow: &[SlowRequest]) -> Table {
    fn us(v: Option<f64>) -> String {
        v.map_or("-".into(), units::duration_us)
    }
    let fields: [Field<SlowRequest>; 7] = [
        (Column::new("at"), |s| format!("{:.3} s", s.at_s)),
        (Column::new("connection"), |s| s.connection.to_string()),
        (Column::new("application"), |s| {
            s.application.clone().unwrap_or_default()
        }),
        (Column::new("shape"), |s| {
            s.shape.clone().unwrap_or_else(|| s.command.clone())
        }),
        (Column::new("recorded"), |s| us(s.recorded_us)),
        (Column::new("replayed"), |s| us(s.replayed_us)),
        (Column::new("request").folded(), |s| {
            body_for_people(&s.body)
        }),
    ];
    Table::of(&fields, slow)
}

/// Members of a request's body that say nothing about the request: the session's id and the
/// cluster's clock with its signature (the JSON keeps them).
pub const BODY_NOISE: [&str; 2] = ["lsid", "$clusterTime"];

/// A request's body for a reader: without the [`BODY_NOISE`] members of its outermost document,
/// indented when it is whole JSON; a body cut at [`MAX_BODY`] is not, and loses its noise as
/// the text stands.
pub fn body_for_people(body: &str) -> String {
    if let Ok(Value::Object(mut doc)) = serde_json::from_str::<Value>(body) {
        for key in BODY_NOISE {
            doc.shift_remove(key);
        }
        return serde_json::to_string_pretty(&doc).unwrap_or_default();
    }
    without_members(body, &BODY_NOISE)
}

/// `text`, JSON perhaps cut short, without the members named `keys` of its outermost object.
fn without_members(text: &str, keys: &[&str]) -> String {
    let Some(open) = text.find('{') else {
        return text.to_owned();
    };
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    let (mut members, mut start, mut end) = (Vec::new(), open + 1, text.len());
    for (i, c) in text.char_indices().skip_while(|(i, _)| *i < open) {
        if in_string {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_string = true,
            '{' | '[' => depth += 1,
            '}' | ']' if depth == 1 => {
                end = i;
                break;
            }
            '}' | ']' => depth = depth.saturating_sub(1),
            ',' if depth == 1 => {
                members.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    members.push(&text[start..end]);
    let noise = |m: &str| {
        let m = m.trim_start();
        keys.iter().any(|k| {
            m.strip_prefix('"')
                .and_then(|m| m.strip_prefix(k))
                .is_some_and(|m| m.starts_with('"'))
        })
    };
    let kept: Vec<&str> = members.into_iter().filter(|m| !noise(m)).collect();
    format!("{}{}{}", &text[..=open], kept.join(","), &text[end..])
}

/// Adds `more` to `list` and keeps the `k` slowest (by [`SlowRequest::latency_us`]), slowest first.
pub fn merge(list: &mut Vec<SlowRequest>, more: &[SlowRequest], k: usize) {
    list.extend(more.iter().cloned());
    list.sort_by(|a, b| b.latency_us().total_cmp(&a.latency_us()));
    list.truncate(k);
}

/// A request's body as relaxed extended JSON text, cut past [`MAX_BODY`] bytes: the OP_MSG body
/// with its document sequences as fields (the first few documents, then a count), a legacy
/// query's or write's document. (text, cut)
pub fn body_text(msg: &Message) -> (String, bool) {
    let value = match &msg.body {
        Body::Msg(m) => {
            let mut body = doc(m.body());
            for s in &m.sections {
                if let (
                    Section::Sequence {
                        identifier,
                        documents,
                    },
                    Value::Object(obj),
                ) = (s, &mut body)
                {
                    let mut docs: Vec<Value> = documents
                        .iter()
                        .take(MAX_SEQUENCE_DOCS)
                        .map(|d| doc(d))
                        .collect();
                    if documents.len() > MAX_SEQUENCE_DOCS {
                        let more = documents.len() - MAX_SEQUENCE_DOCS;
                        docs.push(Value::String(format!("… {more} more")));
                    }
                    obj.insert(identifier.clone(), Value::Array(docs));
                }
            }
            body
        }
        Body::Query(q) => doc(&q.query),
        Body::Insert(i) => Value::Array(
            i.documents
                .iter()
                .take(MAX_SEQUENCE_DOCS)
                .map(|d| doc(d))
                .collect(),
        ),
        Body::Update(u) => serde_json::json!({"q": doc(&u.selector), "u": doc(&u.update)}),
        Body::Delete(d) => serde_json::json!({"q": doc(&d.selector)}),
        _ => Value::Null,
    };
    let text = value.to_string();
    let cut = text.len() > MAX_BODY;
    (cut_bytes(&text, MAX_BODY), cut)
}

fn doc(d: &bson::RawDocument) -> Value {
    extjson::to_json(d, ExtJson::Relaxed)
        .unwrap_or_else(|e| serde_json::json!({ "$undecodable": e.to_string() }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(n: u64) -> SlowRequest {
        SlowRequest {
            request_id: n as i32,
            recorded_us: Some(n as f64),
            ..Default::default()
        }
    }

    #[test]
    fn keeps_the_k_slowest_of_any_number_slowest_first() {
        let mut s = Slowest::new(3);
        for n in [5u64, 1, 9, 7, 3, 9, 2, 8] {
            if s.admits(n) {
                s.push(n, req(n));
            }
        }
        let ids: Vec<i32> = s.sorted().iter().map(|r| r.request_id).collect();
        assert_eq!(ids, vec![9, 9, 8]);
        assert!(!s.admits(8) && s.admits(10));
        assert!(!Slowest::new(0).admits(u64::MAX));
        let mut list = s.sorted();
        merge(&mut list, &[req(100), req(1)], 2);
        assert_eq!(
            list.iter().map(|r| r.request_id).collect::<Vec<_>>(),
            vec![100, 9]
        );
    }

    #[test]
    fn a_body_for_people_leaves_the_session_and_the_clock_out_whole_or_cut() {
        let body = r#"{"find":"customers","filter":{"city":"Lyon, \"centre\"}"},"lsid":{"id":{"$binary":{"base64":"AAAA","subType":"04"}}},"$clusterTime":{"clusterTime":{"$timestamp":{"t":1,"i":1}},"signature":{"hash":"x","keyId":0}},"$db":"shop"}"#;
        let shown = body_for_people(body);
        assert!(
            !shown.contains("lsid") && !shown.contains("signature"),
            "{shown}"
        );
        assert!(
            shown.contains("\"city\": \"Lyon, \\\"centre\\\"}\"")
                && shown.contains("\"$db\": \"shop\""),
            "{shown}"
        );
        assert!(shown.contains('\n'), "indented: {shown}");
        // Cut short (not JSON any more): the noise goes all the same, the rest stays as it is.
        let cut = &body[..body.len() - 4];
        let shown = body_for_people(cut);
        assert_eq!(
            shown,
            r#"{"find":"customers","filter":{"city":"Lyon, \"centre\"}"},"$db":"sh"#
        );
        assert_eq!(body_for_people("[1, 2]"), "[1, 2]");
        assert_eq!(body_for_people("null"), "null");
        assert_eq!(body_for_people(r#"{"lsid":{"id":1"#), "{");
    }

    #[test]
    fn a_body_is_relaxed_json_with_its_sequences_and_is_cut() {
        use crate::wire::{MsgFlags, OpMsg};
        let docs: Vec<bson::RawDocumentBuf> = (0..5)
            .map(|i| bson::rawdoc! {"_id": i, "s": "x".repeat(1_000)})
            .collect();
        let bytes = OpMsg {
            flags: MsgFlags::empty(),
            sections: vec![
                Section::Body(bson::rawdoc! {"insert": "c", "$db": "d"}),
                Section::Sequence {
                    identifier: "documents".into(),
                    documents: docs,
                },
            ],
            checksum: None,
        }
        .encode(1, 0);
        let (text, cut) = body_text(&Message::parse(&bytes).unwrap());
        assert!(cut && text.len() <= MAX_BODY + 3, "{}", text.len());
        assert!(text.starts_with("{\"insert\":\"c\""), "{text}");
        assert!(text.contains("\"documents\":[{\"_id\":0"), "{text}");
    }
}
