//! `mongotape cat`: each record of a capture as one JSON line, filtered by connection, command and
//! namespace. Replies are paired with their requests, so a reply is filtered (and labelled) by the
//! command it answers. The JSON of one record is built in `json`.
//!
//! Layers, bottom up: json < mod.rs < slowest

mod json;
mod slowest;

pub use json::{
    body_json, body_json_in, doc_json, doc_json_in, event_json, message_json, too_deep_json,
    ExtJson, JsonWriter,
};
pub use slowest::{slowest, SlowestFormat};

use super::pair::{Answer, Pairer};
use crate::capture::{CaptureError, Record, RecordKind, RecordSource};
use crate::slice::filter::ns_matches;
use crate::wire::{Message, ReplyInfo, RequestInfo};
use serde_json::Value;
use std::collections::HashSet;
use std::io::Write;

/// What `cat` prints.
#[derive(Debug, Clone, Default)]
pub struct CatOptions {
    /// Only these connections; all when empty.
    pub conns: Vec<u64>,
    /// Only requests of these commands and their replies; all when empty.
    pub commands: Vec<String>,
    /// Only these namespaces, `db`, `db.collection` or a prefix ending in `*`; all when empty.
    pub namespaces: Vec<String>,
    /// Leave out message bodies.
    pub no_body: bool,
    /// Also print connection events (only when no command or namespace filter is given).
    pub events: bool,
    /// Stop after this many lines.
    pub limit: Option<u64>,
    /// Bodies in canonical extended JSON (every BSON type kept) instead of relaxed.
    pub canonical: bool,
    /// Each record indented over several lines instead of one line each.
    pub pretty: bool,
}

/// How a `cat` ended: the lines written, the reading errors (each cut one file short: what came
/// before it was written, and the next segment was read), whether the capture's end record was
/// there, and the documents printed as [`too_deep_json`].
#[derive(Debug)]
pub struct CatEnd {
    pub lines: u64,
    pub capture_errors: Vec<CaptureError>,
    pub complete: bool,
    pub too_deep_documents: u64,
    /// Requests not kept for pairing (over `report::pair`'s bound on unanswered requests): a
    /// reply to one is printed without its command.
    pub unanswered_untracked: u64,
}

/// Writes the records of `reader` that `options` select to `out`, one JSON object per line. Only
/// writing can fail; reading errors are returned in [`CatEnd`].
pub fn cat(
    reader: &mut impl RecordSource,
    options: &CatOptions,
    out: &mut impl Write,
) -> std::io::Result<CatEnd> {
    // `t` counts from the capture's first record, the origin of inspect's duration (the proxy
    // may have waited long for its first client).
    let mut origin: Option<u64> = None;
    let mut selector = Selector::new(options);
    let mut end = CatEnd {
        lines: 0,
        capture_errors: Vec::new(),
        complete: false,
        too_deep_documents: 0,
        unanswered_untracked: 0,
    };
    while let Some(record) = reader.next_record() {
        let record = match record {
            Ok(r) => r,
            Err(e) => {
                end.capture_errors.push(e);
                continue;
            }
        };
        let start = *origin.get_or_insert(record.ts_ns);
        let Some(line) = selector.line(&record, start) else {
            continue;
        };
        if options.pretty {
            let text = serde_json::to_string_pretty(&line).map_err(std::io::Error::other)?;
            writeln!(out, "{text}")?;
        } else {
            writeln!(out, "{line}")?;
        }
        end.lines += 1;
        if options.limit.is_some_and(|l| end.lines >= l) {
            break;
        }
    }
    end.complete = reader.saw_end();
    end.too_deep_documents = selector.json.too_deep;
    end.unanswered_untracked = selector.pairer.untracked;
    Ok(end)
}

/// The filters, and the pairing of replies with requests they need.
struct Selector<'a> {
    options: &'a CatOptions,
    conns: HashSet<u64>,
    pairer: Pairer,
    json: JsonWriter,
}

impl<'a> Selector<'a> {
    fn new(options: &'a CatOptions) -> Self {
        Selector {
            options,
            conns: options.conns.iter().copied().collect(),
            pairer: Pairer::default(),
            json: JsonWriter::new(match options.canonical {
                true => ExtJson::Canonical,
                false => ExtJson::Relaxed,
            }),
        }
    }

    /// The line to print for `record`, or `None` when the filters leave it out.
    fn line(&mut self, record: &Record, start_ns: u64) -> Option<Value> {
        if record.kind == RecordKind::Close {
            // Requests a closed connection left unanswered are never paired: forget them, so
            // memory follows the connections open at once, not the length of the capture.
            self.pairer.close(record.conn_id);
        }
        if !self.conns.is_empty() && !self.conns.contains(&record.conn_id) {
            return None;
        }
        let o = self.options;
        match record.kind {
            RecordKind::Request | RecordKind::Reply => {
                let msg = Message::parse(&record.payload);
                let paired = msg.as_ref().ok().and_then(|m| self.pair(record, m));
                let (info, latency_ns) = paired.map_or((None, None), |(i, l)| (Some(i), l));
                if !self.matches(info.as_ref()) {
                    return None;
                }
                let mut line = message_json(
                    record,
                    start_ns,
                    &msg,
                    info.as_ref(),
                    (!o.no_body).then_some(&mut self.json),
                );
                if let (Value::Object(obj), Some(ns)) = (&mut line, latency_ns) {
                    obj.insert("latency_us".into(), serde_json::json!(ns as f64 / 1e3));
                }
                Some(line)
            }
            _ if o.events && o.commands.is_empty() && o.namespaces.is_empty() => {
                Some(event_json(record, &mut self.json))
            }
            _ => None,
        }
    }

    /// The request a message is (or answers, for a reply), when known; for a reply, the time
    /// from its request to it in the capture (ns).
    fn pair(&mut self, record: &Record, m: &Message) -> Option<(RequestInfo, Option<u64>)> {
        if record.kind == RecordKind::Request {
            let info = RequestInfo::of(m);
            self.pairer
                .request(record.conn_id, m, info.clone(), record.ts_ns, 0);
            return Some((info, None));
        }
        match self
            .pairer
            .reply(record.conn_id, m, ReplyInfo::of(m).more_to_come)
        {
            Answer::Request(p) => Some((p.info, Some(record.ts_ns.saturating_sub(p.ts_ns)))),
            Answer::Unsolicited => None,
        }
    }

    fn matches(&self, info: Option<&RequestInfo>) -> bool {
        let o = self.options;
        if o.commands.is_empty() && o.namespaces.is_empty() {
            return true;
        }
        let Some(info) = info else { return false };
        if !o.commands.is_empty() && !o.commands.iter().any(|c| c == &info.command) {
            return false;
        }
        if !o.namespaces.is_empty() {
            let (db, ns) = (info.db.as_deref().unwrap_or(""), info.namespace());
            return o.namespaces.iter().any(|n| ns_matches(n, db, &ns));
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::Body;
    use std::path::Path;

    fn cat_lines(path: &str, options: &CatOptions) -> (Vec<Value>, CatEnd) {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
        let mut reader = crate::capture::CaptureReader::open(&path).unwrap();
        let mut out = Vec::new();
        let end = cat(&mut reader, options, &mut out).unwrap();
        let lines = String::from_utf8(out)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        (lines, end)
    }

    /// Requests: a ping, an insert whose document nests `levels` deep, a ping; with the client
    /// metadata of a hello nested as deep too.
    fn nested_capture(levels: usize) -> Vec<u8> {
        use crate::capture::{CaptureWriter, Metadata};
        use crate::wire::{MsgFlags, OpMsg, Section};
        let deep = bson::RawDocumentBuf::from_bytes(crate::wire::depth::nested(levels)).unwrap();
        let op = |body: bson::RawDocumentBuf, id: i32| {
            OpMsg {
                flags: MsgFlags::empty(),
                sections: vec![Section::Body(body)],
                checksum: None,
            }
            .encode(id, 0)
        };
        let mut w = CaptureWriter::new(Vec::new(), &Metadata::default(), 1).unwrap();
        let records = [
            (RecordKind::Open, b"{}".to_vec()),
            (RecordKind::ClientMetadata, deep.as_bytes().to_vec()),
            (
                RecordKind::Request,
                op(bson::rawdoc! {"ping": 1, "$db": "a"}, 1),
            ),
            (
                RecordKind::Request,
                op(
                    bson::rawdoc! {"insert": "c", "documents": [deep], "$db": "a"},
                    2,
                ),
            ),
            (
                RecordKind::Request,
                op(bson::rawdoc! {"ping": 2, "$db": "a"}, 3),
            ),
        ];
        for (i, (kind, payload)) in records.into_iter().enumerate() {
            w.write(&Record::new(kind, 1, i as u64, payload)).unwrap();
        }
        w.finish().unwrap()
    }

    #[test]
    fn a_document_nested_past_the_limit_is_an_error_value_between_the_others() {
        for (canonical, pretty) in [(false, false), (true, false), (false, true), (true, true)] {
            let options = CatOptions {
                events: true,
                canonical,
                pretty,
                ..Default::default()
            };
            let bytes = nested_capture(10_000);
            let mut reader = crate::capture::CaptureReader::new(&bytes[..]).unwrap();
            let mut out = Vec::new();
            let end = cat(&mut reader, &options, &mut out).unwrap();
            assert_eq!(
                end.too_deep_documents, 2,
                "the metadata and the insert's document"
            );
            assert_eq!(end.lines, 5);
            let text = String::from_utf8(out).unwrap();
            let lines: Vec<Value> = serde_json::Deserializer::from_str(&text)
                .into_iter()
                .map(Result::unwrap)
                .collect();
            let error = serde_json::json!({"$error": "BSON document nests deeper than 200 levels"});
            assert_eq!(lines[1]["data"], error, "client metadata");
            assert_eq!(
                lines[3]["body"], error,
                "the insert's body holds the deep document"
            );
            assert_eq!(
                (&lines[3]["op"], &lines[3]["dir"]),
                (&"OP_MSG".into(), &"request".into())
            );
            let ping = |l: &Value| l["body"]["ping"].to_string();
            assert!(ping(&lines[2]).contains('1'), "{}", lines[2]);
            assert!(ping(&lines[4]).contains('2'), "{}", lines[4]);
        }
        // At the limit, the document is printed whole.
        let bytes = nested_capture(crate::wire::depth::MAX_DEPTH - 2);
        let mut reader = crate::capture::CaptureReader::new(&bytes[..]).unwrap();
        let end = cat(&mut reader, &CatOptions::default(), &mut Vec::new()).unwrap();
        assert_eq!(end.too_deep_documents, 0);
    }

    #[test]
    fn the_iterative_conversion_writes_what_the_bson_crate_writes() {
        use bson::{Bson, Document};
        let mut compared = 0;
        for name in ["pymongo", "mongosh-zlib", "php"] {
            let path = format!("{}/captures/{name}.mtape", env!("CARGO_MANIFEST_DIR"));
            let reader = crate::capture::CaptureReader::open(Path::new(&path)).unwrap();
            for record in reader {
                let Ok(m) = Message::parse(&record.unwrap().payload) else {
                    continue;
                };
                let Body::Msg(op) = &m.body else { continue };
                let doc = Document::try_from(op.body()).unwrap();
                let relaxed = Bson::Document(doc.clone()).into_relaxed_extjson();
                let canonical = Bson::Document(doc).into_canonical_extjson();
                assert_eq!(doc_json_in(op.body(), ExtJson::Relaxed), relaxed);
                assert_eq!(doc_json_in(op.body(), ExtJson::Canonical), canonical);
                compared += 1;
            }
        }
        assert!(compared > 100, "{compared}");
    }

    #[test]
    fn a_real_capture_lists_every_message_and_the_filters_select() {
        let all = CatOptions::default();
        let (lines, end) = cat_lines("captures/pymongo.mtape", &all);
        assert!(end.capture_errors.is_empty() && end.complete);
        assert_eq!(end.lines, lines.len() as u64);
        assert!(lines
            .iter()
            .all(|l| l["dir"] == "request" || l["dir"] == "reply"));
        assert!(lines
            .iter()
            .any(|l| l["command"] == "insert" && l["dir"] == "reply"));
        assert!(lines.iter().all(|l| l.get("body").is_some()));

        let inserts = CatOptions {
            commands: vec!["insert".into()],
            no_body: true,
            ..Default::default()
        };
        let (ins, _) = cat_lines("captures/pymongo.mtape", &inserts);
        assert!(!ins.is_empty() && ins.len() < lines.len());
        assert!(ins
            .iter()
            .all(|l| l["command"] == "insert" && l.get("body").is_none()));
        let requests = ins.iter().filter(|l| l["dir"] == "request").count();
        let replies = ins.len() - requests;
        assert!(
            replies > 0 && replies <= requests,
            "replies follow their insert"
        );

        let conn = lines[0]["conn"].as_u64().unwrap();
        let one = CatOptions {
            conns: vec![conn],
            events: true,
            limit: Some(3),
            ..Default::default()
        };
        let (first, end) = cat_lines("captures/pymongo.mtape", &one);
        assert_eq!((first.len(), end.lines), (3, 3));
        assert!(first.iter().all(|l| l["conn"] == conn));
        assert_eq!(first[0]["event"], "open", "events come with --events");
    }
}
