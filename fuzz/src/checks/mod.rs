//! One function per fuzz target: feed it any bytes; it returns normally, or panics when mongotape
//! panicked or broke one of the invariants asserted here. Shared by the fuzz targets
//! (`fuzz/fuzz_targets/*.rs`) and by `tests/fuzz_regressions.rs`, which includes this folder by path
//! so that a saved input is replayed through exactly the same code.
//!
//! Several targets read their first byte as a mode (wrap the rest in a header, compress it, pick a
//! direction): random bytes rarely make a valid header, a length that matches and a zstd frame at
//! once, and the mode byte lets the fuzzer reach the parsers behind them.

mod capture;
mod fault;
mod import;
mod plan;
mod rewrite;
mod shape;
mod state;
mod wire;

pub use capture::capture_reader;
pub use fault::fault_rule;
pub use import::{mongod_recording_import, mongoreplay_import, pcap_import};
pub use plan::plan;
pub use rewrite::{hello_rewrite, redact, redact_deep, replay_rewrite};
pub use shape::shape;
pub use state::{restore_setup, snapshot_bson, state_end};
pub use wire::{bson_inspect, decompress, frame_splitter, message_parse, op_msg_view};

/// A target's check: returns, or panics on a fault.
pub type Check = fn(&[u8]);

/// Every target, by the name of its file in `fuzz/fuzz_targets/` and folder in `fuzz/corpus/`.
pub const TARGETS: &[(&str, Check)] = &[
    ("frame_splitter", frame_splitter),
    ("message_parse", message_parse),
    ("decompress", decompress),
    ("op_msg_view", op_msg_view),
    ("bson_inspect", bson_inspect),
    ("capture_reader", capture_reader),
    ("hello_rewrite", hello_rewrite),
    ("redact", redact),
    ("redact_deep", redact_deep),
    ("replay_rewrite", replay_rewrite),
    ("shape", shape),
    ("pcap_import", pcap_import),
    ("plan", plan),
    ("mongoreplay_import", mongoreplay_import),
    ("mongod_recording_import", mongod_recording_import),
    ("snapshot_bson", snapshot_bson),
    ("restore_setup", restore_setup),
    ("state_end", state_end),
    ("fault_rule", fault_rule),
];

/// The check of a target, by name.
pub fn check(target: &str) -> Option<Check> {
    TARGETS
        .iter()
        .find(|(name, _)| *name == target)
        .map(|(_, f)| *f)
}

/// The first byte as a mode (0 for empty input) and the rest.
fn mode(data: &[u8]) -> (u8, &[u8]) {
    match data.split_first() {
        Some((m, rest)) => (*m, rest),
        None => (0, data),
    }
}

const OP_REPLY: i32 = 1;
const OP_QUERY: i32 = 2004;
const OP_MSG: i32 = 2013;

/// A header with the right length in front of `body` (request id 7, response-to 3).
fn framed(op_code: i32, body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(16 + body.len());
    out.extend_from_slice(&((16 + body.len()) as i32).to_le_bytes());
    out.extend_from_slice(&7i32.to_le_bytes());
    out.extend_from_slice(&3i32.to_le_bytes());
    out.extend_from_slice(&op_code.to_le_bytes());
    out.extend_from_slice(body);
    out
}

/// An OP_MSG whose only section is `doc` (any bytes, as the body section).
fn op_msg_of(flags: u32, doc: &[u8]) -> Vec<u8> {
    let mut body = flags.to_le_bytes().to_vec();
    body.push(0);
    body.extend_from_slice(doc);
    framed(OP_MSG, &body)
}

/// An OP_QUERY on `ns` with `doc` as its query.
fn op_query_of(ns: &str, doc: &[u8]) -> Vec<u8> {
    let mut body = 0i32.to_le_bytes().to_vec();
    body.extend_from_slice(ns.as_bytes());
    body.push(0);
    body.extend_from_slice(&0i32.to_le_bytes());
    body.extend_from_slice(&(-1i32).to_le_bytes());
    body.extend_from_slice(doc);
    framed(OP_QUERY, &body)
}

/// An OP_REPLY holding `docs` (any bytes) as its documents.
fn op_reply_of(docs: &[u8]) -> Vec<u8> {
    let mut body = 8i32.to_le_bytes().to_vec(); // AwaitCapable
    body.extend_from_slice(&0i64.to_le_bytes());
    body.extend_from_slice(&0i32.to_le_bytes());
    body.extend_from_slice(&1i32.to_le_bytes());
    body.extend_from_slice(docs);
    framed(OP_REPLY, &body)
}
