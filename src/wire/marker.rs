//! Step markers: `{ping: 1, comment: "mongotape:step:<name>"}`, sent by a workload (or any
//! application) on its connection just before a step begins, and `mongotape:step:end` after the
//! last one. `analyze` and `replay` cut their figures into phases at these markers
//! (`docs/analyze.md`, `docs/replay.md`). A ping costs one round trip and changes nothing on the
//! server; `comment` is accepted on every command since MongoDB 4.4.

use super::message::{Body, Message};
use bson::{RawBsonRef, RawDocument};

/// What a marker's `comment` starts with.
pub const STEP_MARKER_PREFIX: &str = "mongotape:step:";

/// The marker name that ends the current phase without starting another.
pub const END_STEP: &str = "end";

/// The step a request marks: `Some(name)` for an OP_MSG or OP_QUERY command `ping` whose string
/// `comment` starts with [`STEP_MARKER_PREFIX`] followed by a non-empty name.
pub fn step_marker(msg: &Message) -> Option<&str> {
    let doc: &RawDocument = match &msg.body {
        Body::Msg(m) => m.body(),
        Body::Query(q) if q.full_collection_name.ends_with(".$cmd") => {
            match q.query.get_document("$query") {
                Ok(inner) => inner,
                Err(_) => &q.query,
            }
        }
        _ => return None,
    };
    step_marker_in(doc)
}

/// [`step_marker`] on a command document.
pub fn step_marker_in(command: &RawDocument) -> Option<&str> {
    let mut elements = command.iter();
    let (first, _) = elements.next()?.ok()?;
    if first.as_str() != "ping" {
        return None;
    }
    for element in elements {
        let (key, value) = element.ok()?;
        if key.as_str() == "comment" {
            return match value {
                RawBsonRef::String(s) => s
                    .strip_prefix(STEP_MARKER_PREFIX)
                    .filter(|name| !name.is_empty()),
                _ => None,
            };
        }
    }
    None
}

/// [`step_marker`] on a whole message as it was on the wire (OP_COMPRESSED undone); `None` for
/// anything that does not decode.
pub fn step_marker_of_bytes(bytes: &[u8]) -> Option<String> {
    let msg = Message::parse(bytes).ok()?;
    step_marker(&msg).map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::compressed::{compress, Compressor};
    use crate::wire::legacy::OpQuery;
    use crate::wire::op_msg::{MsgFlags, OpMsg};
    use bson::{rawdoc, RawDocumentBuf};

    fn op_msg(body: RawDocumentBuf) -> Vec<u8> {
        OpMsg::with_body(body, MsgFlags::empty()).encode(7, 0)
    }

    fn op_query(query: RawDocumentBuf) -> Vec<u8> {
        OpQuery {
            flags: 0,
            full_collection_name: "bench.$cmd".into(),
            number_to_skip: 0,
            number_to_return: -1,
            query,
            return_fields_selector: None,
        }
        .encode(8)
    }

    #[test]
    fn recognises_markers_in_op_msg_op_query_and_compressed() {
        let marker = rawdoc! { "ping": 1, "comment": "mongotape:step:insert_w1", "$db": "bench" };
        let bytes = op_msg(marker.clone());
        assert_eq!(step_marker_of_bytes(&bytes).as_deref(), Some("insert_w1"));
        let zipped = compress(&bytes, Compressor::Zlib).unwrap();
        assert_eq!(step_marker_of_bytes(&zipped).as_deref(), Some("insert_w1"));
        let q = op_query(rawdoc! { "ping": 1.0, "comment": "mongotape:step:end" });
        assert_eq!(step_marker_of_bytes(&q).as_deref(), Some(END_STEP));
        let wrapped = op_query(rawdoc! {
            "$query": { "ping": 1, "comment": "mongotape:step:a b" }, "$readPreference": {}
        });
        assert_eq!(step_marker_of_bytes(&wrapped).as_deref(), Some("a b"));
    }

    #[test]
    fn other_pings_and_commands_are_not_markers() {
        for doc in [
            rawdoc! { "ping": 1, "$db": "admin" },
            rawdoc! { "ping": 1, "comment": "mongotape:step:" },
            rawdoc! { "ping": 1, "comment": "step:x" },
            rawdoc! { "ping": 1, "comment": { "x": "mongotape:step:x" } },
            rawdoc! { "find": "c", "comment": "mongotape:step:x" },
            rawdoc! { "hello": 1, "ping": 1, "comment": "mongotape:step:x" },
        ] {
            assert_eq!(step_marker_of_bytes(&op_msg(doc.clone())), None, "{doc:?}");
        }
        assert_eq!(step_marker_of_bytes(b"\x10\0\0\0garbage!"), None);
    }
}
