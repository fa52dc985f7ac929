//! What makes two requests "the same" for [`super::follow`]: a fingerprint of the command and its
//! body without what a resend changes anyway (`lsid`, `txnNumber`, `$clusterTime`, and an
//! inserted document's `_id` when it is an ObjectId, which a driver generates afresh), and which
//! commands are writes.

use crate::wire::bson_raw::{self, ARRAY, DOCUMENT, OBJECT_ID};
use crate::wire::{Body, Message, Section, HEADER_LEN};
use std::collections::hash_map::DefaultHasher;
use std::hash::Hasher;

/// Fields a resend changes by itself, left out of the fingerprint.
const PER_SEND: &[&str] = &["lsid", "txnNumber", "$clusterTime"];

/// Commands that change data: a resend of one may apply it twice.
pub fn is_write(command: &str) -> bool {
    matches!(
        command,
        "insert" | "update" | "delete" | "findAndModify" | "findandmodify" | "bulkWrite"
    )
}

/// `hello`, `isMaster`: the handshake and the monitors' heartbeat.
pub fn is_hello(command: &[u8]) -> bool {
    command == b"hello" || command.eq_ignore_ascii_case(b"ismaster")
}

/// The request's fingerprint (two requests with the same one carry the same command, namespace,
/// options and documents); `None` when `msg` has no body to read.
pub fn fingerprint(frame: &[u8], msg: &Message) -> Option<u64> {
    let mut h = DefaultHasher::new();
    match &msg.body {
        Body::Msg(m) => {
            for section in &m.sections {
                match section {
                    Section::Body(doc) => hash_doc(&mut h, doc.as_bytes(), false)?,
                    Section::Sequence {
                        identifier,
                        documents,
                    } => {
                        h.write(identifier.as_bytes());
                        for d in documents {
                            hash_doc(&mut h, d.as_bytes(), true)?;
                        }
                    }
                }
            }
        }
        _ => h.write(frame.get(HEADER_LEN..)?),
    }
    Some(h.finish())
}

/// Hashes a document's elements but the per-send ones (at the top) and, in inserted documents
/// (`nested`), an ObjectId `_id`.
fn hash_doc(h: &mut DefaultHasher, doc: &[u8], nested: bool) -> Option<()> {
    for e in bson_raw::iter(doc).ok()? {
        let e = e.ok()?;
        if (!nested && PER_SEND.contains(&e.key))
            || (nested && e.key == "_id" && e.kind == OBJECT_ID)
        {
            continue;
        }
        if !nested && e.key == "documents" && e.kind == ARRAY {
            h.write(b"documents");
            for d in bson_raw::iter(e.value).ok()? {
                let d = d.ok()?;
                if d.kind == DOCUMENT {
                    hash_doc(h, d.value, true)?;
                } else {
                    h.write(d.raw);
                }
            }
            continue;
        }
        h.write(e.raw);
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{MsgFlags, OpMsg};
    use bson::{oid::ObjectId, rawdoc};

    fn print(body: bson::RawDocumentBuf, docs: Vec<bson::RawDocumentBuf>) -> u64 {
        let mut m = OpMsg::with_body(body, MsgFlags::empty());
        m.sections.push(Section::Sequence {
            identifier: "documents".into(),
            documents: docs,
        });
        let frame = m.encode(3, 0);
        fingerprint(&frame, &Message::parse(&frame).unwrap()).unwrap()
    }

    #[test]
    fn a_resend_without_the_session_and_with_a_new_object_id_is_the_same() {
        let first = print(
            rawdoc! {"insert": "c", "lsid": {"id": 1}, "txnNumber": 4_i64, "$db": "d"},
            vec![rawdoc! {"_id": ObjectId::new(), "x": 1}],
        );
        let again = print(
            rawdoc! {"insert": "c", "$db": "d"},
            vec![rawdoc! {"_id": ObjectId::new(), "x": 1}],
        );
        let other = print(
            rawdoc! {"insert": "c", "$db": "d"},
            vec![rawdoc! {"_id": ObjectId::new(), "x": 2}],
        );
        let own_id = |id: i32| {
            print(
                rawdoc! {"insert": "c", "$db": "d"},
                vec![rawdoc! {"_id": id}],
            )
        };
        assert_eq!(first, again);
        assert_ne!(first, other);
        assert_ne!(own_id(1), own_id(2));
    }
}
