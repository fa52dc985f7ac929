//! The replayed figures of each query shape (`docs/shapes.md`): the feed gives every request the
//! id of its shape (a getMore's or killCursors' is its cursor's, as recorded), and each answered
//! operation adds its latency, documents and bytes here, beside its command's figures. The shapes'
//! texts stay with the feed's table; an id is a place in it.

use super::sample::ShapeSample;
use crate::shape::stats::ReplyFigures;
use crate::shape::{ShapeId, ShapeStats};

/// Replayed figures per shape id, and those of the shapes past the feed's cap (`other`).
#[derive(Debug, Default)]
pub struct ReplayedShapes {
    per_id: Vec<ShapeStats>,
    other: ShapeStats,
}

impl ReplayedShapes {
    fn stats(&mut self, id: ShapeId) -> &mut ShapeStats {
        match id.index() {
            Some(i) => {
                if i >= self.per_id.len() {
                    // Ids are handed out in order by a table bounded by its cap.
                    self.per_id.resize_with(i + 1, ShapeStats::default);
                }
                &mut self.per_id[i]
            }
            None => &mut self.other,
        }
    }

    /// One operation of the shape: sent, and answered after `latency_ns` unless it expected no
    /// reply.
    pub fn record(&mut self, s: &ShapeSample, latency_ns: Option<u64>, error: bool) {
        let stats = self.stats(s.id);
        stats.request(s.continues, latency_ns.is_some());
        if let Some(latency_ns) = latency_ns {
            stats.reply(ReplyFigures {
                latency_ns,
                continues: s.continues,
                error,
                docs: s.docs,
                bytes: s.bytes,
            });
        }
    }

    /// The figures of the shape at `index` of the feed's table (empty when none was replayed).
    pub fn at(&self, index: usize) -> ShapeStats {
        self.per_id.get(index).cloned().unwrap_or_default()
    }

    pub fn other(&self) -> &ShapeStats {
        &self.other
    }
}
