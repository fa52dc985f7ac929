//! The query shape of every recorded request (`docs/shapes.md`), computed once, where the feed
//! reads it: the shape's id travels with the request to its lanes, which add the replayed figures
//! to it. A getMore or killCursors takes the shape of the cursor it continues, followed by the
//! recorded cursor ids across connections. The first pass also keeps the recorded figures of
//! each shape (the capture's request-to-reply latency, documents, bytes), to set beside the
//! replayed ones.

use crate::replay::measure::outcome::Outcome;
use crate::replay::request::Request;
use crate::shape::stats::ReplyFigures;
use crate::shape::{CursorShapes, ShapeId, ShapeStats, ShapeTable, Shaped, Shaper};
use crate::wire::OpMsgView;

/// The feed's shapes: the table every id points into, with the recorded figures.
#[derive(Debug, Default)]
pub struct FeedShapes {
    shaper: Shaper,
    /// Every shape seen, with its recorded figures (of the first pass).
    pub table: ShapeTable<ShapeStats>,
    cursors: CursorShapes,
    /// The first pass's shape of each request it shaped, in order, for the passes after it (the
    /// same requests in the same order): a repeat does not shape again. At most
    /// [`MAX_REMEMBERED`]; past them a pass shapes as the first did.
    remembered: Vec<Option<ShapeId>>,
    /// Whether passes may follow the first (then it remembers).
    remember: bool,
    /// Requests shaped so far in this pass; whether this pass is the first.
    at: usize,
    first_pass: bool,
}

/// Shapes remembered from the first pass (8 bytes each: 32 MiB at most).
pub const MAX_REMEMBERED: usize = 4 << 20;

impl FeedShapes {
    /// `remember`: more than one pass may run.
    pub fn new(max_shapes: usize, remember: bool) -> FeedShapes {
        FeedShapes {
            table: ShapeTable::new(max_shapes),
            remember,
            first_pass: true,
            ..FeedShapes::default()
        }
    }

    /// A pass over the capture begins.
    pub fn new_pass(&mut self, first: bool) {
        self.at = 0;
        self.first_pass = first;
    }

    /// The shape of the next request replayed: the first pass's when it remembered it. `view`:
    /// the OP_MSG the request was read from, unless it came as a legacy opcode (then its shape is
    /// read from `wire`, its bytes as recorded).
    pub fn request(
        &mut self,
        wire: &[u8],
        view: Option<&OpMsgView<'_>>,
        req: &Request,
        count: bool,
    ) -> Option<ShapeId> {
        let at = self.at;
        self.at += 1;
        if !self.first_pass {
            if let Some(id) = self.remembered.get(at) {
                return *id;
            }
        }
        let id = self.shape(wire, view, req, count);
        if self.first_pass && self.remember && self.remembered.len() < MAX_REMEMBERED {
            self.remembered.push(id);
        }
        id
    }

    /// The shape of a recorded request from the OP_MSG it was read as, else from its bytes as
    /// recorded; `count`: its recorded figures are this replay's. `None` for bytes that do not
    /// decode.
    fn shape(
        &mut self,
        wire: &[u8],
        view: Option<&OpMsgView<'_>>,
        req: &Request,
        count: bool,
    ) -> Option<ShapeId> {
        let shaped = match view {
            // Its namespace alone, known already: the command is not read again.
            Some(_) if is_op_msg_insert(req) => {
                self.shaper.insert(Some(&req.db), req.collection.as_deref())
            }
            Some(view) => self.shaper.request_view(view)?,
            None => self.shaper.request_wire(wire)?,
        };
        let (id, continues) = match shaped {
            Shaped::Own(view) => (self.table.id(&view), false),
            Shaped::Continues { cursors, fallback } => {
                let known = cursors.first().and_then(|c| self.cursors.shape(*c));
                let id = known.unwrap_or_else(|| self.table.id(&fallback));
                if fallback.command == "killCursors" {
                    for c in &cursors {
                        self.cursors.closed(*c);
                    }
                }
                (id, true)
            }
        };
        if count {
            self.table.get_mut(id).request(continues, req.expects_reply);
        }
        Some(id)
    }

    /// The recorded reply of a request of shape `id`, `latency_ns` after it: the cursor it opens
    /// or exhausts is followed, and on the first pass (`count`) its figures are kept.
    pub fn reply(&mut self, req: &Request, id: ShapeId, reply: &Outcome, figures: Recorded) {
        let continues = matches!(&*req.command, "getMore" | "killCursors");
        match reply.cursor_id {
            Some(0) if &*req.command == "getMore" => {
                if let Some(c) = req.cursor_refs.first() {
                    self.cursors.closed(*c);
                }
            }
            Some(c) if c != 0 => self.cursors.opened(c, id),
            _ => {}
        }
        if figures.count {
            self.table.get_mut(id).reply(ReplyFigures {
                latency_ns: figures.latency_ns,
                continues,
                error: !reply.ok || reply.write_errors > 0,
                docs: reply.batch_len.unwrap_or(0) as u64,
                bytes: figures.bytes,
            });
        }
    }
}

/// An insert read as an OP_MSG with a `$db` (the request's database is empty when the body has
/// none, and the shape then tells the two apart).
fn is_op_msg_insert(req: &Request) -> bool {
    &*req.command == "insert" && !req.db.is_empty()
}

/// What the capture says of a reply besides its outcome.
#[derive(Debug, Clone, Copy)]
pub struct Recorded {
    pub latency_ns: u64,
    pub bytes: u64,
    /// Kept in the recorded figures (the first pass).
    pub count: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::names::Names;
    use crate::replay::request::understand::tests::msg;
    use crate::replay::request::understand::{open, understand_opened};
    use crate::wire::op_msg::MsgFlags;
    use bson::rawdoc;

    /// The shape an insert gets from its known namespace is the one reading it gives, for the
    /// forms the shortcut takes and those it leaves to the shaper.
    #[test]
    fn an_insert_shaped_from_its_namespace_has_the_shape_read_from_its_bytes() {
        let inserts = [
            msg(
                MsgFlags::empty(),
                rawdoc! {"insert": "c", "ordered": true, "$db": "bench"},
                true,
            ),
            msg(
                MsgFlags::empty(),
                rawdoc! {"insert": "c", "documents": [{"a": 1}], "$db": "b"},
                false,
            ),
            msg(MsgFlags::empty(), rawdoc! {"insert": "c", "$db": ""}, true),
            msg(
                MsgFlags::empty(),
                rawdoc! {"insert": 5, "$db": "bench"},
                true,
            ),
            msg(MsgFlags::empty(), rawdoc! {"insert": "c"}, true),
        ];
        for wire in inserts {
            let opened = open(&wire).unwrap();
            let (req, view) = understand_opened(1, 1, &opened, &mut Names::default()).unwrap();
            let mut feed = FeedShapes::new(100, false);
            let id = feed.request(&wire, view.as_ref(), &req, true).unwrap();
            let mut shaper = Shaper::new();
            let read = shaper.request_wire(&wire).unwrap().view();
            let (shape, stats) = feed.table.get(id).unwrap();
            assert_eq!(
                (&*shape.text, &*shape.command, &*shape.namespace),
                (read.text, read.command, read.namespace)
            );
            assert_eq!(stats.count, 1);
        }
    }

    /// The shape taken from the OP_MSG read while understanding a request is the one its bytes
    /// as recorded give: plain, compressed (the insert shortcut included) and legacy requests.
    #[test]
    fn a_request_shaped_from_its_view_has_the_shape_read_from_its_bytes() {
        use crate::wire::compressed::{compress, Compressor};
        use crate::wire::legacy::OpQuery;
        let find = msg(
            MsgFlags::empty(),
            rawdoc! {"find": "c", "filter": {"a": 1, "b": {"$gt": 2}}, "$db": "bench"},
            false,
        );
        let insert = msg(
            MsgFlags::empty(),
            rawdoc! {"insert": "c", "ordered": true, "$db": "bench"},
            true,
        );
        let query = OpQuery {
            flags: 0,
            full_collection_name: "bench.c".into(),
            number_to_skip: 0,
            number_to_return: 0,
            query: rawdoc! {"$query": {"a": 1}, "$orderby": {"b": 1}},
            return_fields_selector: None,
        };
        let query = bytes::Bytes::from(query.encode(3));
        let mut wires = vec![find.clone(), insert.clone(), query.clone()];
        for plain in [&find, &insert, &query] {
            for c in [Compressor::Noop, Compressor::Zlib] {
                wires.push(compress(plain, c).unwrap().into());
            }
        }
        for wire in wires {
            let opened = open(&wire).unwrap();
            let (req, view) = understand_opened(1, 1, &opened, &mut Names::default()).unwrap();
            assert_eq!(view.is_none(), opened.legacy);
            let mut feed = FeedShapes::new(100, false);
            let id = feed.request(&wire, view.as_ref(), &req, true).unwrap();
            let mut shaper = Shaper::new();
            let read = shaper.request_wire(&wire).unwrap().view();
            let (shape, _) = feed.table.get(id).unwrap();
            assert_eq!(
                (&*shape.text, &*shape.command, &*shape.namespace),
                (read.text, read.command, read.namespace)
            );
        }
    }
}
