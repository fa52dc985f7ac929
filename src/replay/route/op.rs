//! What a lane is handed: one copy of a recorded request, written out and ready to send (or a step
//! marker, which is not sent).

use super::budget::heap_block;
use super::order::{After, Completes};
use crate::replay::measure::outcome::Outcome;
use crate::replay::measure::step_phases::Marker;
use crate::replay::names::Name;
use crate::replay::request::Scope;
use crate::shape::ShapeId;
use crate::wire::compressed::Compressor;

/// One request ready to send on one replay connection.
#[derive(Debug)]
pub struct Op {
    pub bytes: Vec<u8>,
    /// Where the live cursor ids go (offset of an int64, recorded id).
    pub cursor_patches: Vec<(usize, i64)>,
    pub expects_reply: bool,
    pub command: Name,
    pub namespace: Name,
    /// Recorded time since the first replayed request (plus earlier repeat iterations).
    pub offset_ns: u64,
    /// Position in the whole replay, for `--rate`.
    pub seq: u64,
    pub scope: Scope,
    /// The recorded cursor this request opened, to be resolved from the live reply.
    pub produces_cursor: Option<i64>,
    pub recorded: Option<Outcome>,
    pub origin_conn: u64,
    pub origin_request: i32,
    /// A step marker: not sent, it starts a phase when the lane reaches it (`phases`).
    pub marker: Option<Marker>,
    /// How the recorded client compressed it: sent compressed when the connection agreed on one.
    pub compressor: Option<Compressor>,
    /// `--connections N`: the write on another connection this request must follow ([`super::order`]).
    pub after: Option<After>,
    /// This write's completion, for those that follow it (completes when the op is dropped).
    pub completes: Option<Completes>,
    /// The first request of a recorded connection: how long before it the client opened that
    /// connection. The lane connects that much before the request is due, as the client did, so
    /// the handshake is not charged to the request (0: connect when it is due).
    pub connect_lead_ns: u64,
    /// What the op was charged against the read-ahead budget ([`Op::cost`]), released when it is
    /// sent or dropped; 0 for step markers, which are not charged.
    pub charge: usize,
    /// `--explain`: the slot of the request's shape ([`crate::replay::explain::PlanShapes`]).
    pub plan_slot: Option<u32>,
    /// The recorded request's query shape (its cursor's, for a getMore or killCursors).
    pub shape: Option<ShapeId>,
}

impl Op {
    /// What the op holds in memory while it waits in a lane's queue, for the read-ahead budget:
    /// its box and the queue's slot pointing to it, and each heap block it owns, as the allocator
    /// rounds them. A 311-byte insert costs 776 bytes this way; charging its message bytes
    /// alone let the read-ahead take about twice its bound with small messages.
    pub fn cost(&self) -> usize {
        let patches = self.cursor_patches.capacity() * std::mem::size_of::<(usize, i64)>();
        let errmsg = self
            .recorded
            .as_ref()
            .and_then(|r| r.errmsg.as_ref())
            .map_or(0, |e| heap_block(e.capacity()));
        std::mem::size_of::<Box<Op>>()
            + heap_block(std::mem::size_of::<Op>())
            + heap_block(self.bytes.capacity())
            + heap_block(patches)
            + errmsg
            + self.after.as_ref().map_or(0, After::heap_bytes)
            + self.completes.as_ref().map_or(0, |_| Completes::HEAP_BYTES)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::route::order::pair;

    fn insert(len: usize) -> Op {
        let (after, completes) = pair();
        Op {
            bytes: vec![0; len],
            cursor_patches: Vec::new(),
            expects_reply: true,
            command: Name::from("insert"),
            namespace: Name::from("db.c"),
            offset_ns: 0,
            seq: 0,
            scope: 0,
            produces_cursor: None,
            recorded: Some(Outcome::default()),
            origin_conn: 1,
            origin_request: 1,
            marker: None,
            compressor: None,
            after: Some(after),
            completes: Some(completes),
            connect_lead_ns: 0,
            charge: 0,
            plan_slot: None,
            shape: None,
        }
    }

    #[test]
    fn an_op_costs_its_struct_and_its_heap_blocks_not_just_its_bytes() {
        let op = insert(311);
        let cost = op.cost();
        eprintln!(
            "size_of::<Op>() {} B; a 311-byte insert costs {cost} B",
            std::mem::size_of::<Op>()
        );
        assert!(cost >= std::mem::size_of::<Op>() + 311 + Completes::HEAP_BYTES);
        assert_eq!(heap_block(0), 0);
        assert_eq!(heap_block(1), 32);
        assert_eq!(heap_block(311), 320);
        assert_eq!(insert(0).cost() + 320, cost);
    }
}
