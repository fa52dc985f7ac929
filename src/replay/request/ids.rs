//! New document ids for every pass after the first (`--repeat`, `--duration`).
//!
//! Drivers give a document inserted without an `_id` an ObjectId before sending it, so a capture's
//! inserts carry ids the application never chose. Sent again by a second pass they would be
//! duplicate keys, and the pass would write nothing. So on every pass after the first, an ObjectId
//! `_id` of an inserted document becomes another ObjectId, and so does that id wherever a later
//! request of the pass mentions it (a filter, a reference from another document): the timestamp
//! (first 4 bytes) is kept and the other 8 bytes are XORed with a mask drawn for the pass, so one
//! recorded id always gives the same new id within a pass, two never give the same one, and passes
//! differ. `_id`s of other types (numbers, strings: the application's own keys) are sent as
//! recorded, and conflict as they would if the client ran twice.
//!
//! The ids are rewritten in place (same length), after [`super::rewrite::rewrite`].

use crate::wire::bson_raw::{self, ARRAY, DOCUMENT, OBJECT_ID};
use crate::wire::{OpMsgView, SectionView};
use rand::RngCore;
use std::collections::HashSet;

pub type ObjectId = [u8; 12];
/// Ids remembered for references from other requests. Beyond it, inserted documents still get new
/// ids, but a later request that mentions one of the others keeps the recorded id.
pub const MAX_KNOWN: usize = 1 << 20;
/// Nesting followed when looking for references: the limit every walk over BSON keeps (requests
/// nested deeper are never replayed, `skipped.nests_too_deep`).
use crate::wire::depth::MAX_DEPTH;

#[derive(Default)]
pub struct IdRemap {
    known: HashSet<ObjectId>,
    /// `None` on the first pass: ids are sent as recorded.
    mask: Option<[u8; 8]>,
}

impl IdRemap {
    /// Starts a pass: the first keeps recorded ids, every later one draws a new mask.
    pub fn new_pass(&mut self, first: bool) {
        self.mask = (!first).then(|| {
            let mut mask = [0u8; 8];
            // The first 5 masked bytes are the generating process's random value: a non-zero
            // mask there keeps a new id from ever equalling an id of the same process.
            while mask[..5] == [0; 5] {
                rand::rng().fill_bytes(&mut mask);
            }
            mask
        });
    }

    pub fn active(&self) -> bool {
        self.mask.is_some()
    }

    pub fn known(&self) -> usize {
        self.known.len()
    }

    /// Remembers the ObjectId `_id`s of the documents an `insert` OP_MSG carries.
    pub fn learn(&mut self, msg: &[u8]) {
        for_each_document(msg, |doc, inserted| {
            if inserted && self.known.len() < MAX_KNOWN {
                if let Some(id) = top_level_id(doc) {
                    self.known.insert(id);
                }
            }
        });
    }

    /// Rewrites, in place, the ids of an OP_MSG written by `rewrite` (no checksum). `insert`: the
    /// message is an `insert` command, whose documents get new ids whether known or not.
    pub fn apply(&self, msg: &mut [u8], insert: bool) {
        let Some(mask) = self.mask else { return };
        let mut at = Vec::new();
        for_each_document(msg, |doc, inserted| {
            let base = doc.as_ptr() as usize - msg.as_ptr() as usize;
            if insert && inserted {
                if let Some(offset) = top_level_id_offset(doc) {
                    at.push(base + offset);
                }
            }
            if !self.known.is_empty() {
                references(doc, base, &self.known, 0, &mut at);
            }
        });
        at.sort_unstable();
        at.dedup();
        for a in at {
            for (b, m) in msg[a + 4..a + 12].iter_mut().zip(mask) {
                *b ^= m;
            }
        }
    }
}

/// Calls `f(document, is_an_inserted_document)` for the body and every document of every section
/// of an OP_MSG. Malformed sections end the walk.
fn for_each_document(msg: &[u8], mut f: impl FnMut(&[u8], bool)) {
    let Ok(view) = OpMsgView::new(msg) else {
        return;
    };
    let mut is_insert = false;
    for section in view.sections() {
        match section {
            Ok(SectionView::Body { document, .. }) => {
                let Ok(mut els) = bson_raw::iter(document) else {
                    return;
                };
                if let Some(Ok(first)) = els.next() {
                    is_insert = first.key == "insert";
                }
                f(document, false);
                if is_insert {
                    for e in els.flatten() {
                        if e.key == "documents" && e.kind == ARRAY {
                            for d in bson_raw::iter(e.value).into_iter().flatten().flatten() {
                                if d.kind == DOCUMENT {
                                    f(d.value, true);
                                }
                            }
                        }
                    }
                }
            }
            Ok(SectionView::Sequence {
                identifier,
                documents,
                ..
            }) => {
                let inserted = is_insert && identifier == "documents";
                for doc in documents {
                    let Ok(doc) = doc else { return };
                    f(doc, inserted);
                }
            }
            Err(_) => return,
        }
    }
}

/// Offset, in `doc`, of the value of a top-level ObjectId `_id`.
fn top_level_id_offset(doc: &[u8]) -> Option<usize> {
    let e = bson_raw::iter(doc)
        .ok()?
        .flatten()
        .find(|e| e.key == "_id")?;
    (e.kind == OBJECT_ID).then(|| e.value.as_ptr() as usize - doc.as_ptr() as usize)
}

fn top_level_id(doc: &[u8]) -> Option<ObjectId> {
    let at = top_level_id_offset(doc)?;
    doc.get(at..at + 12)?.try_into().ok()
}

/// Offsets (from `base`) of every ObjectId value in `doc`, at any depth, that is in `known`.
fn references(
    doc: &[u8],
    base: usize,
    known: &HashSet<ObjectId>,
    depth: usize,
    at: &mut Vec<usize>,
) {
    if depth > MAX_DEPTH {
        return;
    }
    let Ok(els) = bson_raw::iter(doc) else { return };
    for e in els.flatten() {
        let offset = base + (e.value.as_ptr() as usize - doc.as_ptr() as usize);
        match e.kind {
            OBJECT_ID
                if e.value
                    .try_into()
                    .is_ok_and(|id: ObjectId| known.contains(&id)) =>
            {
                at.push(offset)
            }
            DOCUMENT | ARRAY => references(e.value, offset, known, depth + 1, at),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::op_msg::{MsgFlags, OpMsg, Section};
    use bson::oid::ObjectId as Oid;
    use bson::{rawdoc, RawDocumentBuf};

    fn msg(body: RawDocumentBuf, docs: Vec<RawDocumentBuf>) -> Vec<u8> {
        let mut sections = vec![Section::Body(body)];
        if !docs.is_empty() {
            sections.push(Section::Sequence {
                identifier: "documents".into(),
                documents: docs,
            });
        }
        OpMsg {
            flags: MsgFlags::empty(),
            sections,
            checksum: None,
        }
        .encode(1, 0)
    }

    fn body(bytes: &[u8]) -> bson::Document {
        match crate::wire::Message::parse(bytes).unwrap().body {
            crate::wire::Body::Msg(m) => bson::Document::try_from(m.body().clone()).unwrap(),
            _ => unreachable!(),
        }
    }

    fn sequence(bytes: &[u8]) -> Vec<bson::Document> {
        match crate::wire::Message::parse(bytes).unwrap().body {
            crate::wire::Body::Msg(m) => m
                .sections
                .iter()
                .filter_map(|s| match s {
                    Section::Sequence { documents, .. } => Some(documents.clone()),
                    _ => None,
                })
                .flatten()
                .map(|d| bson::Document::try_from(d).unwrap())
                .collect(),
            _ => unreachable!(),
        }
    }

    #[test]
    fn inserted_object_ids_change_after_the_first_pass_and_references_follow() {
        let (a, b, c) = (Oid::new(), Oid::new(), Oid::new());
        let insert = msg(
            rawdoc! { "insert": "c", "$db": "x" },
            vec![rawdoc! { "_id": a, "n": 1 }, rawdoc! { "_id": 7, "ref": a }],
        );
        let embedded = msg(
            rawdoc! { "insert": "c", "documents": [{ "_id": b }], "$db": "x" },
            vec![],
        );
        let update = msg(
            rawdoc! { "update": "c", "updates": [{ "q": { "_id": a }, "u": { "$set": { "other": b, "untouched": c } } }], "$db": "x" },
            vec![],
        );
        let mut ids = IdRemap::default();
        ids.new_pass(true);
        for m in [&insert, &embedded] {
            ids.learn(m);
        }
        assert_eq!(ids.known(), 2);
        let mut first = insert.clone();
        ids.apply(&mut first, true);
        assert_eq!(first, insert, "the first pass sends recorded ids");

        ids.new_pass(false);
        let (mut i, mut e, mut u) = (insert.clone(), embedded.clone(), update.clone());
        ids.apply(&mut i, true);
        ids.apply(&mut e, true);
        ids.apply(&mut u, false);
        let docs = sequence(&i);
        let new_a = docs[0].get_object_id("_id").unwrap();
        assert_ne!(new_a, a);
        assert_eq!(new_a.timestamp(), a.timestamp());
        assert_eq!(
            docs[1].get_i32("_id").unwrap(),
            7,
            "other _id types are kept"
        );
        assert_eq!(docs[1].get_object_id("ref").unwrap(), new_a);
        let new_b = body(&e).get_array("documents").unwrap()[0]
            .as_document()
            .unwrap()
            .get_object_id("_id")
            .unwrap();
        assert_ne!(new_b, b);
        let upd = body(&u);
        let upd = upd.get_array("updates").unwrap()[0].as_document().unwrap();
        assert_eq!(
            upd.get_document("q").unwrap().get_object_id("_id").unwrap(),
            new_a
        );
        let set = upd.get_document("u").unwrap().get_document("$set").unwrap();
        assert_eq!(set.get_object_id("other").unwrap(), new_b);
        assert_eq!(
            set.get_object_id("untouched").unwrap(),
            c,
            "unknown ids are kept"
        );

        let once = new_a;
        ids.new_pass(false);
        let mut i3 = insert.clone();
        ids.apply(&mut i3, true);
        let third = sequence(&i3)[0].get_object_id("_id").unwrap();
        assert!(third != once && third != a, "every pass has its own ids");
    }

    #[test]
    fn garbage_is_left_alone() {
        let good = msg(
            rawdoc! { "insert": "c", "$db": "x" },
            vec![rawdoc! { "_id": Oid::new() }],
        );
        let mut ids = IdRemap::default();
        ids.new_pass(true);
        ids.learn(&good);
        ids.new_pass(false);
        for cut in 0..good.len() {
            let mut b = good[..cut].to_vec();
            ids.learn(&b);
            ids.apply(&mut b, true);
        }
    }
}
