//! The MongoDB wire protocol: framing, every opcode, and what a message means.
//!
//! Everything here is pure (no I/O) and safe on hostile input: lengths are checked against bounds
//! before use, and every malformed input is a [`WireError`] that names what was wrong and where.

pub mod compressed;
pub mod error;
pub mod frame;
pub mod header;
pub mod hello;
pub mod info;
pub mod legacy;
pub mod marker;
pub mod message;
pub mod op_msg;
mod read;

pub use compressed::Compressor;
pub use error::WireError;
pub use frame::FrameSplitter;
pub use header::{MsgHeader, OpCode, HEADER_LEN, MAX_MESSAGE_LEN};
pub use info::{ReplyInfo, RequestInfo};
pub use marker::step_marker;
pub use message::{Body, Message};
pub use op_msg::{MsgFlags, OpMsg, Section};
