//! One record as JSON: a message with its header fields, flags, command and namespace, its body as
//! extended JSON (relaxed, or canonical as bsondump writes it); a connection event with its data.

use crate::capture::{Record, RecordKind};
pub use crate::wire::extjson::ExtJson;
use crate::wire::{depth, extjson, WireError};
use crate::wire::{Body, Message, MsgFlags, ReplyInfo, RequestInfo, Section};
use bson::RawDocument;
use serde_json::{json, Map, Value};

/// Relaxed extended JSON of a raw document; an undecodable one becomes an error note.
pub fn doc_json(doc: &RawDocument) -> Value {
    doc_json_in(doc, ExtJson::Relaxed)
}

/// A raw document as extended JSON of the given kind; an undecodable one becomes an error note,
/// and one nested deeper than [`depth::MAX_DEPTH`] the error value [`too_deep_json`].
pub fn doc_json_in(doc: &RawDocument, mode: ExtJson) -> Value {
    JsonWriter::new(mode).doc(doc)
}

/// The body of a decoded message as relaxed extended JSON.
pub fn body_json(msg: &Message) -> Value {
    body_json_in(msg, ExtJson::Relaxed)
}

/// The body of a decoded message as JSON: OP_MSG document sequences appear as fields of the body.
pub fn body_json_in(msg: &Message, mode: ExtJson) -> Value {
    JsonWriter::new(mode).body(msg)
}

/// What a document nested past [`depth::MAX_DEPTH`] is printed as, in place of its fields:
/// `{"$error": "BSON document nests deeper than 200 levels"}` (`wire::extjson` refuses it: what
/// it would build is a JSON value whose printing and freeing recurse once per level).
pub fn too_deep_json() -> Value {
    json!({ "$error": depth::TooDeep { limit: depth::MAX_DEPTH }.to_string() })
}

/// Writes documents as extended JSON of one kind and counts those refused for their depth.
#[derive(Debug, Clone, Copy, Default)]
pub struct JsonWriter {
    pub mode: ExtJson,
    /// Documents written as [`too_deep_json`] so far.
    pub too_deep: u64,
}

impl JsonWriter {
    pub fn new(mode: ExtJson) -> JsonWriter {
        JsonWriter { mode, too_deep: 0 }
    }

    /// One document; undecodable and too deep ones become error values.
    pub fn doc(&mut self, doc: &RawDocument) -> Value {
        match extjson::to_json(doc, self.mode) {
            Ok(v) => v,
            Err(extjson::ExtJsonError::TooDeep(_)) => {
                self.too_deep += 1;
                too_deep_json()
            }
            Err(e) => json!({ "$undecodable": e.to_string() }),
        }
    }

    fn docs(&mut self, docs: &[bson::RawDocumentBuf]) -> Value {
        Value::Array(docs.iter().map(|d| self.doc(d)).collect())
    }

    /// The body of a decoded message: OP_MSG document sequences appear as fields of the body.
    pub fn body(&mut self, msg: &Message) -> Value {
        match &msg.body {
            Body::Msg(m) => {
                let mut body = self.doc(m.body());
                for s in &m.sections {
                    if let Section::Sequence {
                        identifier,
                        documents,
                    } = s
                    {
                        let docs = self.docs(documents);
                        if let Value::Object(obj) = &mut body {
                            obj.insert(identifier.clone(), docs);
                        }
                    }
                }
                body
            }
            Body::Query(q) => json!({
                "ns": q.full_collection_name, "flags": q.flags, "skip": q.number_to_skip,
                "limit": q.number_to_return, "query": self.doc(&q.query),
                "fields": q.return_fields_selector.as_deref().map(|d| self.doc(d)),
            }),
            Body::Reply(r) => json!({
                "responseFlags": r.response_flags, "cursorId": r.cursor_id,
                "startingFrom": r.starting_from, "documents": self.docs(&r.documents),
            }),
            Body::Insert(i) => json!({
                "ns": i.full_collection_name, "flags": i.flags, "documents": self.docs(&i.documents),
            }),
            Body::Update(u) => json!({
                "ns": u.full_collection_name, "flags": u.flags,
                "selector": self.doc(&u.selector), "update": self.doc(&u.update),
            }),
            Body::Delete(d) => json!({
                "ns": d.full_collection_name, "flags": d.flags, "selector": self.doc(&d.selector),
            }),
            Body::GetMore(g) => json!({
                "ns": g.full_collection_name, "numberToReturn": g.number_to_return,
                "cursorId": g.cursor_id,
            }),
            Body::KillCursors(k) => json!({ "cursorIds": k.cursor_ids }),
            Body::Command(c) => json!({
                "database": c.database, "commandName": c.command_name,
                "documents": self.docs(&c.documents), "inputDocs": self.docs(&c.input_docs),
            }),
            Body::CommandReply(r) => json!({ "documents": self.docs(&r.documents) }),
            Body::Unknown(bytes) => json!({ "rawLength": bytes.len() }),
        }
    }
}

fn flag_names(flags: MsgFlags) -> Vec<&'static str> {
    let mut out = Vec::new();
    if flags.contains(MsgFlags::CHECKSUM_PRESENT) {
        out.push("checksumPresent");
    }
    if flags.contains(MsgFlags::MORE_TO_COME) {
        out.push("moreToCome");
    }
    if flags.contains(MsgFlags::EXHAUST_ALLOWED) {
        out.push("exhaustAllowed");
    }
    out
}

/// One message record as a JSON object. `command` and `ns` are those of the request (for a reply,
/// of the request it answers, when known). `body`: the writer of the body's extended JSON, or none.
pub fn message_json(
    record: &Record,
    start_ns: u64,
    msg: &Result<Message, WireError>,
    request: Option<&RequestInfo>,
    body: Option<&mut JsonWriter>,
) -> Value {
    let mut obj = Map::new();
    obj.insert("conn".into(), json!(record.conn_id));
    obj.insert("ts_ns".into(), json!(record.ts_ns));
    obj.insert(
        "t".into(),
        json!(record.ts_ns.saturating_sub(start_ns) as f64 / 1e9),
    );
    let dir = if record.kind == RecordKind::Request {
        "request"
    } else {
        "reply"
    };
    obj.insert("dir".into(), json!(dir));
    obj.insert("bytes".into(), json!(record.payload.len()));
    match msg {
        Ok(m) => {
            obj.insert("op".into(), json!(m.op_code().name()));
            obj.insert("request_id".into(), json!(m.header.request_id));
            obj.insert("response_to".into(), json!(m.header.response_to));
            if let Some(c) = m.compressor {
                obj.insert("compressor".into(), json!(c.name()));
            }
            if let Body::Msg(op) = &m.body {
                obj.insert("flags".into(), json!(flag_names(op.flags)));
            }
            if let Some(info) = request {
                obj.insert("command".into(), json!(info.command));
                let ns = info.namespace();
                if !ns.is_empty() {
                    obj.insert("ns".into(), json!(ns));
                }
            }
            if record.kind == RecordKind::Reply {
                let r = ReplyInfo::of(m);
                obj.insert("ok".into(), json!(r.ok));
                if let Some(code) = r.code {
                    obj.insert("code".into(), json!(code));
                }
            }
            if let Some(writer) = body {
                obj.insert("body".into(), writer.body(m));
            }
        }
        Err(e) => {
            obj.insert("error".into(), json!(e.to_string()));
        }
    }
    Value::Object(obj)
}

/// A connection event (open, close, client metadata, gap, end) as a JSON object; client metadata is
/// a BSON document, the other events' data is JSON already.
pub fn event_json(record: &Record, writer: &mut JsonWriter) -> Value {
    let data = if record.kind == RecordKind::ClientMetadata {
        bson::RawDocumentBuf::from_bytes(record.payload.to_vec())
            .map(|d| writer.doc(&d))
            .unwrap_or(Value::Null)
    } else {
        serde_json::from_slice(&record.payload).unwrap_or(Value::Null)
    };
    json!({
        "conn": record.conn_id, "ts_ns": record.ts_ns,
        "event": record.kind.name(), "data": data,
    })
}
