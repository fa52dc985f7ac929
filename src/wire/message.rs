//! A whole decoded message: the header plus one variant per opcode. OP_COMPRESSED is undone here, so
//! callers see the inner message and which compressor carried it.

use super::compressed::{self, Compressor};
use super::error::WireError;
use super::header::{MsgHeader, OpCode, HEADER_LEN};
use super::legacy::{OpDelete, OpGetMore, OpInsert, OpKillCursors, OpQuery, OpReply, OpUpdate};
use super::op_command::{OpCommand, OpCommandReply};
use super::op_msg::OpMsg;

#[derive(Debug, Clone, PartialEq)]
pub enum Body {
    Msg(OpMsg),
    Query(OpQuery),
    Reply(OpReply),
    Insert(OpInsert),
    Update(OpUpdate),
    Delete(OpDelete),
    GetMore(OpGetMore),
    KillCursors(OpKillCursors),
    Command(OpCommand),
    CommandReply(OpCommandReply),
    /// An opcode mongotape does not know: the bytes after the header, untouched.
    Unknown(Vec<u8>),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    /// The header of the (inner, when compressed) message.
    pub header: MsgHeader,
    /// Set when the message came wrapped in OP_COMPRESSED.
    pub compressor: Option<Compressor>,
    pub body: Body,
}

impl Message {
    /// Decodes one whole message as it was on the wire, header included.
    pub fn parse(bytes: &[u8]) -> Result<Message, WireError> {
        let header = MsgHeader::parse_whole(bytes, "message header")?;
        if header.message_length != bytes.len() {
            return Err(WireError::LengthMismatch {
                declared: header.message_length,
                actual: bytes.len(),
            });
        }
        if header.op_code == OpCode::Compressed {
            let (compressor, inner) = compressed::decompress(bytes)?;
            let mut msg = Message::parse_plain(&inner)?;
            msg.compressor = Some(compressor);
            return Ok(msg);
        }
        Message::parse_plain(bytes)
    }

    fn parse_plain(bytes: &[u8]) -> Result<Message, WireError> {
        let header = MsgHeader::parse_whole(bytes, "message header")?;
        let body = match header.op_code {
            OpCode::Msg => Body::Msg(OpMsg::parse(bytes)?),
            OpCode::Query => Body::Query(OpQuery::parse(bytes)?),
            OpCode::Reply => Body::Reply(OpReply::parse(bytes)?),
            OpCode::Insert => Body::Insert(OpInsert::parse(bytes)?),
            OpCode::Update => Body::Update(OpUpdate::parse(bytes)?),
            OpCode::Delete => Body::Delete(OpDelete::parse(bytes)?),
            OpCode::GetMore => Body::GetMore(OpGetMore::parse(bytes)?),
            OpCode::KillCursors => Body::KillCursors(OpKillCursors::parse(bytes)?),
            OpCode::Command => Body::Command(OpCommand::parse(bytes)?),
            OpCode::CommandReply => Body::CommandReply(OpCommandReply::parse(bytes)?),
            OpCode::Compressed => return Err(WireError::NestedCompression),
            OpCode::Unknown(_) => Body::Unknown(bytes[HEADER_LEN..].to_vec()),
        };
        Ok(Message {
            header,
            compressor: None,
            body,
        })
    }

    /// The inner message's opcode (OP_MSG for an OP_COMPRESSED OP_MSG).
    pub fn op_code(&self) -> OpCode {
        self.header.op_code
    }
}
