//! `mongotape cat --slowest K`: the K slowest requests of a capture (handshakes and monitoring
//! hellos left out, as `analyze` does), each paired with its reply, slowest first: a table (the
//! shape says what each request is, without its session and cluster-time fields), or one JSON
//! object each. One pass, memory bounded: the requests waiting for their reply (as `cat` pairs
//! them, each a share of its record up to 64 KiB), the K kept and the application names of the
//! connections open.

use super::CatEnd;
use crate::capture::{Record, RecordKind, RecordSource};
use crate::figures::slowest::{body_text, SlowRequest, Slowest};
use crate::figures::table::Table;
use crate::figures::units;
use crate::report::pair::{Answer, Pairer};
use crate::shape::Shaper;
use crate::wire::info::is_handshake_command;
use crate::wire::{Message, ReplyInfo, RequestInfo};
use bytes::Bytes;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::io::Write;

/// A request is kept for pairing with its bytes only up to this size.
const MAX_KEPT_REQUEST: usize = 64 * 1024;

/// How `cat --slowest` prints its list.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum SlowestFormat {
    /// A table: latency, t, connection, application, shape.
    #[default]
    Table,
    /// One JSON object per request (indented when `pretty`), with the request's body unless
    /// `no_body`.
    Json { pretty: bool, no_body: bool },
}

/// Writes the `k` slowest requests of `reader` (request to reply in the capture) to `out`,
/// slowest first: when (`t`, seconds from the capture's first record as in every `cat` line),
/// connection, application, command, namespace, shape, `latency_us`, and in JSON the request's
/// body and what its reply said. Only writing can fail.
pub fn slowest(
    reader: &mut impl RecordSource,
    k: usize,
    format: SlowestFormat,
    out: &mut impl Write,
) -> std::io::Result<CatEnd> {
    let mut f = Finder {
        origin: None,
        k,
        pairer: Pairer::default(),
        kept: Slowest::new(k),
        replies: HashMap::new(),
        apps: HashMap::new(),
        shaper: Shaper::new(),
    };
    let mut capture_errors = Vec::new();
    while let Some(record) = reader.next_record() {
        match record {
            Ok(r) => f.record(&r),
            Err(e) => capture_errors.push(e),
        }
    }
    let sorted = f.kept.sorted();
    let lines = sorted.len() as u64;
    match format {
        SlowestFormat::Table if sorted.is_empty() => {}
        SlowestFormat::Table => write!(out, "{}", table(&sorted).render())?,
        SlowestFormat::Json { pretty, no_body } => {
            for r in &sorted {
                let reply = f
                    .replies
                    .remove(&(r.connection, r.request_id))
                    .unwrap_or(Value::Null);
                let line = line(r, reply, !no_body);
                if pretty {
                    let text =
                        serde_json::to_string_pretty(&line).map_err(std::io::Error::other)?;
                    writeln!(out, "{text}")?;
                } else {
                    writeln!(out, "{line}")?;
                }
            }
        }
    }
    Ok(CatEnd {
        lines,
        capture_errors,
        complete: reader.saw_end(),
        too_deep_documents: 0,
        unanswered_untracked: f.pairer.untracked,
    })
}

/// The pass's state: requests waiting, the K kept and their replies, application names.
struct Finder {
    /// The first record's time: `t` counts from it, as in `cat`, `analyze` and `slice`.
    origin: Option<u64>,
    k: usize,
    pairer: Pairer,
    kept: Slowest,
    replies: HashMap<(u64, i32), Value>,
    apps: HashMap<u64, String>,
    shaper: Shaper,
}

impl Finder {
    fn record(&mut self, record: &Record) {
        self.origin.get_or_insert(record.ts_ns);
        match record.kind {
            RecordKind::ClientMetadata => {
                if let Some(app) = application(&record.payload) {
                    self.apps.insert(record.conn_id, app);
                }
            }
            RecordKind::Close => {
                self.pairer.close(record.conn_id);
                self.apps.remove(&record.conn_id);
            }
            RecordKind::Request => {
                let Ok(msg) = Message::parse(&record.payload) else {
                    return;
                };
                let info = RequestInfo::of(&msg);
                let payload =
                    (record.payload.len() <= MAX_KEPT_REQUEST).then(|| record.payload.clone());
                let bytes = (record.ts_ns, record.payload.len());
                self.pairer
                    .request_kept(record.conn_id, &msg, info, bytes, None, payload);
            }
            RecordKind::Reply => self.reply(record),
            _ => {}
        }
    }

    fn reply(&mut self, record: &Record) {
        let Ok(msg) = Message::parse(&record.payload) else {
            return;
        };
        let reply = ReplyInfo::of(&msg);
        let conn = record.conn_id;
        let Answer::Request(p) = self.pairer.reply(conn, &msg, reply.more_to_come) else {
            return;
        };
        let latency = record.ts_ns.saturating_sub(p.ts_ns);
        // Handshakes and monitors' awaitable hellos wait by design.
        if is_handshake_command(&p.info.command) || !self.kept.admits(latency) {
            return;
        }
        let request = SlowRequest {
            at_s: p.ts_ns.saturating_sub(self.origin.unwrap_or(p.ts_ns)) as f64 / 1e9,
            connection: conn,
            request_id: p.request_id,
            application: self.apps.get(&conn).cloned(),
            command: p.info.command.clone(),
            namespace: p.info.namespace(),
            recorded_us: Some(latency as f64 / 1e3),
            ..SlowRequest::default()
        };
        let request = described(request, p.payload.as_ref(), &mut self.shaper);
        self.replies
            .insert((conn, p.request_id), reply_json(&reply));
        self.kept.push(latency, request);
        // What was pushed out of the list needs no reply kept.
        if self.replies.len() > 2 * self.k.max(1) {
            let keep: Vec<(u64, i32)> = self
                .kept
                .sorted()
                .iter()
                .map(|r| (r.connection, r.request_id))
                .collect();
            self.replies.retain(|key, _| keep.contains(key));
        }
    }
}

/// The request's shape and body, read from its bytes.
fn described(mut r: SlowRequest, payload: Option<&Bytes>, shaper: &mut Shaper) -> SlowRequest {
    let Some(msg) = payload.and_then(|p| Message::parse(p).ok()) else {
        r.body = "(not kept)".into();
        return r;
    };
    if let Some(shaped) = shaper.request(&msg) {
        let view = shaped.view();
        r.shape_hash = Some(crate::shape::hash(view.text));
        r.shape = Some(view.text.to_owned());
    }
    (r.body, r.body_cut) = body_text(&msg);
    r
}

/// `application.name` of a handshake's client metadata document.
fn application(doc: &[u8]) -> Option<String> {
    let doc = bson::RawDocument::from_bytes(doc).ok()?;
    let app = doc.get_document("application").ok()?;
    app.get_str("name").ok().map(str::to_owned)
}

fn reply_json(r: &ReplyInfo) -> Value {
    json!({
        "ok": r.ok, "code": r.code, "codeName": r.code_name, "errmsg": r.errmsg,
        "n": r.n, "docs": r.batch_len, "writeErrors": r.write_errors,
    })
}

/// A shape is cut past this many characters in the table, so that a line fits 100 columns
/// beside the latency, time, connection and a short application name.
const SHAPE_COLUMN: usize = 60;

/// The slowest requests as a table: what each request is told by its shape (or its command and
/// namespace when it has none), never by its body.
fn table(list: &[SlowRequest]) -> Table {
    let mut t = Table::new(["latency", "t", "conn", "app", "shape"]);
    for r in list {
        let what = r
            .shape
            .clone()
            .unwrap_or_else(|| format!("{} {}", r.command, r.namespace));
        t.row([
            r.recorded_us.map_or("-".into(), units::duration_us),
            format!("{:.3}s", r.at_s),
            r.connection.to_string(),
            r.application.clone().unwrap_or_else(|| "-".into()),
            cut_chars(what.trim_end(), SHAPE_COLUMN),
        ]);
    }
    t
}

fn cut_chars(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_owned();
    }
    let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// One slow request as printed: its body as JSON (text when it was cut; none unless `body`), its
/// reply's outcome.
fn line(r: &SlowRequest, reply: Value, body: bool) -> Value {
    let mut line = json!({
        "latency_us": r.recorded_us, "conn": r.connection, "request_id": r.request_id,
        "t": r.at_s, "application": r.application, "command": r.command, "ns": r.namespace,
        "shape_hash": r.shape_hash, "shape": r.shape, "reply": reply,
    });
    if body {
        let body = if r.body_cut {
            Value::String(r.body.clone())
        } else {
            serde_json::from_str(&r.body).unwrap_or_else(|_| Value::String(r.body.clone()))
        };
        line["body"] = body;
    }
    line
}
