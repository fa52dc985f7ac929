//! Query shapes in `mongotape analyze` (`docs/shapes.md`): each workload request charged to its
//! shape, a getMore or killCursors to the shape of the cursor it continues (followed across
//! connections), and each reply's latency, documents and bytes to the shape of its request.

use crate::shape::stats::ReplyFigures;
use crate::shape::{CursorShapes, ShapeId, ShapeStats, ShapeTable, Shaped, Shaper, ShapesReport};
use crate::wire::{Message, ReplyInfo, RequestInfo};

#[derive(Debug, Default)]
pub(super) struct ShapeBook {
    shaper: Shaper,
    table: ShapeTable<ShapeStats>,
    cursors: CursorShapes,
}

impl ShapeBook {
    pub(super) fn with_cap(max_shapes: usize) -> ShapeBook {
        ShapeBook {
            table: ShapeTable::new(max_shapes),
            ..Default::default()
        }
    }

    /// Charges a request to its shape; `None` for a message with no shape.
    pub(super) fn request(&mut self, msg: &Message, expects_reply: bool) -> Option<ShapeId> {
        let (id, continues) = match self.shaper.request(msg)? {
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
        self.table.get_mut(id).request(continues, expects_reply);
        Some(id)
    }

    /// Charges a reply to the shape its request was charged to, and follows the cursor it
    /// opens or exhausts.
    pub(super) fn reply(
        &mut self,
        id: ShapeId,
        request: &RequestInfo,
        reply: &ReplyInfo,
        latency_ns: u64,
        bytes: u64,
        error: bool,
    ) {
        let get_more = request.command == "getMore";
        match reply.cursor_id {
            Some(0) if get_more => {
                if let Some(c) = request.cursor_id {
                    self.cursors.closed(c);
                }
            }
            Some(c) if c != 0 => self.cursors.opened(c, id),
            _ => {}
        }
        self.table.get_mut(id).reply(ReplyFigures {
            latency_ns,
            continues: get_more || request.command == "killCursors",
            error,
            docs: reply.batch_len.unwrap_or(0) as u64,
            bytes,
        });
    }

    /// A shape's hash and text, for the entries that name it (errors, slowest requests).
    pub(super) fn describe(&self, id: ShapeId) -> Option<(String, String)> {
        self.table.get(id).map(|(s, _)| (s.hash(), s.text.clone()))
    }

    pub(super) fn report(self) -> ShapesReport {
        ShapesReport::of(self.table)
    }
}
