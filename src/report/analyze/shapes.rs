//! Query shapes in `mongotape analyze` (`docs/shapes.md`): each workload request charged to its
//! shape, a getMore or killCursors to the shape of the cursor it continues (followed across
//! connections), and each reply's latency, documents and bytes to the shape of its request.

use crate::plan::PlanEntry;
use crate::shape::stats::ReplyFigures;
use crate::shape::{
    CursorShapes, Shape, ShapeId, ShapeStats, ShapeTable, Shaped, Shaper, ShapesReport,
};
use crate::wire::{Body, Message, ReplyInfo, RequestInfo};
use bson::RawDocumentBuf;
use hdrhistogram::Histogram;
use std::collections::HashSet;

#[derive(Debug, Default)]
pub(super) struct ShapeBook {
    shaper: Shaper,
    table: ShapeTable<ShapeStats>,
    cursors: CursorShapes,
    /// `analyze --explain`: the `explain` command of each shape's first request (OP_MSG, of an
    /// explained command), one per shape within the cap.
    explain: Option<FirstRequests>,
}

#[derive(Debug, Default)]
struct FirstRequests {
    seen: HashSet<ShapeId>,
    commands: Vec<(ShapeId, RawDocumentBuf)>,
}

impl ShapeBook {
    pub(super) fn with_cap(max_shapes: usize) -> ShapeBook {
        ShapeBook {
            table: ShapeTable::new(max_shapes),
            ..Default::default()
        }
    }

    /// Keeps the `explain` command of each shape's first request, for `analyze --explain`.
    pub(super) fn keep_first_requests(&mut self) {
        self.explain = Some(FirstRequests::default());
    }

    /// The kept `explain` commands, each with its shape's plan entry to fill in.
    pub(super) fn take_explains(&mut self) -> Vec<(PlanEntry, RawDocumentBuf)> {
        let Some(first) = self.explain.take() else {
            return Vec::new();
        };
        first
            .commands
            .into_iter()
            .filter_map(|(id, cmd)| {
                let (shape, _) = self.table.get(id)?;
                let entry = PlanEntry::of_shape(
                    &shape.hash(),
                    &shape.text,
                    &shape.command,
                    &shape.namespace,
                );
                Some((entry, cmd))
            })
            .collect()
    }

    /// Charges a request to its shape; `None` for a message with no shape, or for every
    /// message when shapes are off (a cap of 0).
    pub(super) fn request(&mut self, msg: &Message, info: &RequestInfo) -> Option<ShapeId> {
        if self.table.cap() == 0 {
            return None;
        }
        let expects_reply = info.expects_reply;
        let (id, continues) = match self.shaper.request_with(msg, info)? {
            Shaped::Own(view) => {
                let id = self.table.id(&view);
                if let Some(first) = self.explain.as_mut() {
                    first.keep(id, view.command, msg);
                }
                (id, false)
            }
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

    /// The latency histograms of the `n` shapes with the most total time, with their text (for
    /// the page's charts).
    pub(super) fn top_histograms(&self, n: usize) -> Vec<(String, Histogram<u32>)> {
        let mut top: Vec<&(Shape, ShapeStats)> = self
            .table
            .entries()
            .iter()
            .filter(|(_, s)| s.histogram().is_some_and(|h| h.len() > 1))
            .collect();
        top.sort_by_key(|(_, s)| std::cmp::Reverse(s.total_ns));
        top.into_iter()
            .take(n)
            .filter_map(|(shape, s)| Some((shape.text.clone(), s.histogram()?.clone())))
            .collect()
    }

    pub(super) fn report(self) -> ShapesReport {
        ShapesReport::of(self.table)
    }
}

impl FirstRequests {
    /// The first OP_MSG request of a shape, when its command is explained.
    fn keep(&mut self, id: ShapeId, command: &str, msg: &Message) {
        if id == ShapeId::OTHER
            || !crate::plan::request::EXPLAINABLE.contains(&command)
            || !self.seen.insert(id)
        {
            return;
        }
        if let Body::Msg(m) = &msg.body {
            if let Ok(cmd) = crate::plan::explain_request(&m.encode(0, 0)) {
                self.commands.push((id, cmd));
            }
        }
    }
}
