//! `mongotape cat`: each record of a capture as one JSON line, filtered by connection, command and
//! namespace. Replies are paired with their requests, so a reply is filtered (and labelled) by the
//! command it answers. The JSON of one record is built in `json`.

mod json;

pub use json::{body_json, body_json_in, doc_json, doc_json_in, event_json, message_json, ExtJson};

use super::pair::{Answer, Pairer};
use crate::capture::{CaptureError, Record, RecordKind, RecordSource};
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
    /// Only these namespaces, `db` or `db.collection`; all when empty.
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

/// How a `cat` ended: the lines written, and the reading error that cut the capture short, if any
/// (what came before it was written).
#[derive(Debug)]
pub struct CatEnd {
    pub lines: u64,
    pub capture_error: Option<CaptureError>,
}

/// Writes the records of `reader` that `options` select to `out`, one JSON object per line. Only
/// writing can fail; a reading error ends the listing and is returned in [`CatEnd`].
pub fn cat(
    reader: &mut impl RecordSource,
    options: &CatOptions,
    out: &mut impl Write,
) -> std::io::Result<CatEnd> {
    let start = reader.metadata().start_unix_ns;
    let mut selector = Selector::new(options);
    let mut end = CatEnd {
        lines: 0,
        capture_error: None,
    };
    while let Some(record) = reader.next_record() {
        let record = match record {
            Ok(r) => r,
            Err(e) => {
                end.capture_error = Some(e);
                break;
            }
        };
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
    Ok(end)
}

/// The filters, and the pairing of replies with requests they need.
struct Selector<'a> {
    options: &'a CatOptions,
    conns: HashSet<u64>,
    pairer: Pairer,
}

impl<'a> Selector<'a> {
    fn new(options: &'a CatOptions) -> Self {
        Selector {
            options,
            conns: options.conns.iter().copied().collect(),
            pairer: Pairer::default(),
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
                let info = msg.as_ref().ok().and_then(|m| self.pair(record, m));
                if !self.matches(info.as_ref()) {
                    return None;
                }
                Some(message_json(
                    record,
                    start_ns,
                    &msg,
                    info.as_ref(),
                    (!o.no_body).then_some(self.mode()),
                ))
            }
            _ if o.events && o.commands.is_empty() && o.namespaces.is_empty() => {
                Some(event_json(record, self.mode()))
            }
            _ => None,
        }
    }

    fn mode(&self) -> ExtJson {
        match self.options.canonical {
            true => ExtJson::Canonical,
            false => ExtJson::Relaxed,
        }
    }

    /// The request a message is (or answers, for a reply), when known.
    fn pair(&mut self, record: &Record, m: &Message) -> Option<RequestInfo> {
        if record.kind == RecordKind::Request {
            let info = RequestInfo::of(m);
            self.pairer
                .request(record.conn_id, m, info.clone(), record.ts_ns, 0);
            return Some(info);
        }
        match self
            .pairer
            .reply(record.conn_id, m, ReplyInfo::of(m).more_to_come)
        {
            Answer::Request(p) => Some(p.info),
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
            let ns = info.namespace();
            return o
                .namespaces
                .iter()
                .any(|n| &ns == n || ns.starts_with(&format!("{n}.")));
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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

    #[test]
    fn a_real_capture_lists_every_message_and_the_filters_select() {
        let all = CatOptions::default();
        let (lines, end) = cat_lines("captures/pymongo.mtape", &all);
        assert!(end.capture_error.is_none());
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
