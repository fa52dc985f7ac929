//! A recorded request as the rest of the replay sees it ([`Request`]), why one is not replayed
//! ([`Skip`]), and which copy of the traffic a copy of it belongs to ([`Scope`]).

use crate::replay::measure::outcome::Outcome;
use crate::replay::names::Name;
use crate::shape::ShapeId;
use crate::wire::compressed::Compressor;
use bytes::Bytes;

/// A copy of the traffic (repeat iteration x clone): each recorded request is written out once per
/// copy, and the sessions, cursors and lanes of one copy never serve another.
pub type Scope = u32;

/// Why a recorded request is not replayed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Skip {
    /// Handshake, monitoring or authentication: every replay connection does its own.
    Handshake,
    /// A `ping` (a driver's monitor, a health check, a step marker): not part of the workload, and
    /// not a handshake either.
    Ping,
    /// An opcode a current server no longer takes and that has no command equivalent here.
    Unsupported,
    /// OP_COMMAND, 3.2-4.0's command opcode: a current server no longer takes it.
    OpCommand,
    /// The recorded bytes do not decode.
    Malformed,
    /// A document nests deeper than `wire::depth::MAX_DEPTH` levels: a server refuses it (and
    /// the rewrites do not walk it).
    TooDeep,
}

impl Skip {
    pub fn name(self) -> &'static str {
        match self {
            Skip::Handshake => "handshake",
            Skip::Ping => "ping",
            Skip::Unsupported => "unsupported_opcode",
            Skip::OpCommand => "op_command",
            Skip::Malformed => "malformed",
            Skip::TooDeep => "nests_too_deep",
        }
    }
}

/// A recorded request that will be replayed, as a plain (uncompressed) OP_MSG.
#[derive(Debug, Clone)]
pub struct Request {
    pub conn_id: u64,
    pub ts_ns: u64,
    pub request_id: i32,
    pub msg: Bytes,
    /// The body holds none of the fields a copy changes (session, cluster time, read concern,
    /// cursor ids, renamed namespaces) and a string `$db`: a copy whose database is unchanged is
    /// the recorded bytes ([`super::rewrite`]).
    pub plain: bool,
    pub command: Name,
    pub db: Name,
    pub collection: Option<Name>,
    pub expects_reply: bool,
    /// The raw bytes of the recorded `lsid.id` (or of the whole lsid when it has no `id`).
    pub lsid: Option<Vec<u8>>,
    /// `txnNumber` of a multi-statement transaction statement (`autocommit: false`).
    pub transaction: Option<i64>,
    /// Cursors a getMore or killCursors refers to, as recorded.
    pub cursor_refs: Vec<i64>,
    /// The recorded reply's outcome, once the reply has been read from the capture.
    pub recorded: Option<Outcome>,
    /// The compressor of the recorded OP_COMPRESSED this request came in, if any.
    pub compressor: Option<Compressor>,
    /// Its query shape (a getMore's or killCursors' is its cursor's), given by the feed.
    pub shape: Option<ShapeId>,
}

impl Request {
    pub fn namespace(&self) -> String {
        match &self.collection {
            Some(c) => format!("{}.{c}", self.db),
            None => self.db.to_string(),
        }
    }

    /// The cursor the recorded reply handed out, if this request opened one.
    pub fn produces_cursor(&self) -> Option<i64> {
        if &*self.command == "getMore" {
            return None;
        }
        self.recorded
            .as_ref()
            .and_then(|o| o.cursor_id)
            .filter(|&c| c != 0)
    }
}
