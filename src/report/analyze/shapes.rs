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

    /// Charges a request to its shape; `None` for a message with no shape, or for every
    /// message when shapes are off (a cap of 0).
    pub(super) fn request(&mut self, msg: &Message, info: &RequestInfo) -> Option<ShapeId> {
        if self.table.cap() == 0 {
            return None;
        }
        let expects_reply = info.expects_reply;
        let (id, continues) = match self.shaper.request_with(msg, info)? {
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

    pub(super) fn report(self) -> ShapesReport {
        ShapesReport::of(self.table)
    }
}
