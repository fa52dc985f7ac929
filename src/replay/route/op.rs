//! What a lane is handed: one copy of a recorded request, written out and ready to send (or a step
//! marker, which is not sent).

use super::order::{After, Completes};
use crate::replay::measure::outcome::Outcome;
use crate::replay::measure::step_phases::Marker;
use crate::replay::request::Scope;
use crate::wire::compressed::Compressor;
use std::sync::Arc;

/// One request ready to send on one replay connection.
#[derive(Debug)]
pub struct Op {
    pub bytes: Vec<u8>,
    /// Where the live cursor ids go (offset of an int64, recorded id).
    pub cursor_patches: Vec<(usize, i64)>,
    pub expects_reply: bool,
    pub command: Arc<str>,
    pub namespace: Arc<str>,
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
}
