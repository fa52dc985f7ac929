//! The MongoDB wire protocol: framing, every opcode, and what a message means.
//!
//! Everything here is pure (no I/O) and safe on hostile input: lengths are checked against bounds
//! before use, and every malformed input is a [`WireError`] that names what was wrong and where.
//! This is the only place that knows byte layouts: the rest of mongotape asks these modules for a
//! field, an opcode, a flag or a section, never for a byte offset.
//!
//! - [`header`]: the 16-byte header and [`OpCode`]; [`frame`]: a byte stream split into messages.
//! - [`op_msg`]: OP_MSG owned ([`OpMsg`], flags, sections, checksum); [`op_msg_view`]: the same read
//!   in place ([`OpMsgView`], zero-copy) and written section by section ([`OpMsgWriter`]).
//! - [`legacy`]: OP_QUERY, OP_REPLY (and its in-place head) and the removed legacy opcodes;
//!   [`op_command`]: 3.2-4.0's OP_COMMAND and OP_COMMANDREPLY (read, never replayed);
//!   [`compressed`]: OP_COMPRESSED; [`message`]: any message decoded by opcode.
//! - [`bson_raw`]: a BSON document's elements as byte ranges, and a writer that copies them;
//!   [`depth`]: how deeply a document nests, measured without recursion, and the one limit every
//!   walk over BSON follows; [`extjson`]: a document as extended JSON, without recursing.
//! - [`reply`]: the one reader of replies (body of any reply opcode, `ok`, `code`, `codeName`,
//!   `errmsg`, write errors, cursor), and OP_REPLY's flags; [`codes`]: the server error codes
//!   mongotape acts on.
//! - [`info`]: what a request or reply means (command, namespace, session, outcome);
//!   [`made_up`]: the replies the proxy makes up for fault rules; [`recording`]: a packet of a
//!   mongod/mongos traffic recording (`import`); [`marker`]: step markers; [`peek`]: a request's command and a reply's error code read in
//!   place, without allocating (the proxy's live metrics). [`error`]: [`WireError`].
//!
//! Layers, bottom up: codes error < bson_raw header read < compressed depth frame legacy op_command op_msg recording < extjson message op_msg_view < hello marker reply < info made_up peek

pub mod bson_raw;
pub mod codes;
pub mod compressed;
pub mod depth;
pub mod error;
pub mod extjson;
pub mod frame;
pub mod header;
pub mod hello;
pub mod info;
pub mod legacy;
pub mod made_up;
pub mod marker;
pub mod message;
pub mod op_command;
pub mod op_msg;
pub mod op_msg_view;
pub mod peek;
mod read;
pub mod recording;
pub mod reply;

pub use compressed::Compressor;
pub use error::{bson_error_text, WireError};
pub use frame::FrameSplitter;
pub use header::{MsgHeader, OpCode, HEADER_LEN, MAX_MESSAGE_LEN};
pub use info::{ReplyInfo, RequestInfo};
pub use marker::step_marker;
pub use message::{Body, Message};
pub use op_msg::{MsgFlags, OpMsg, Section};
pub use op_msg_view::{OpMsgView, OpMsgWriter, SectionView};
