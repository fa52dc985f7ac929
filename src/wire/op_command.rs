//! OP_COMMAND (2010) and OP_COMMANDREPLY (2011): the command opcodes 3.2-4.0 servers and shells
//! sent between themselves, removed in 4.2 (OP_MSG replaced them). Read so that a capture holding
//! them says what they are; a current server takes neither, so they are never replayed.
//!
//! OP_COMMAND: database (cstring), command name (cstring), then two documents (the protocol's
//! documentation says metadata then command; 3.2's server read the command first), then the input
//! documents. OP_COMMANDREPLY: two documents (reply and metadata) then the output documents. The
//! command is told from the metadata by its first key, the reply by its `ok`.

use super::error::WireError;
use super::header::{MsgHeader, OpCode, HEADER_LEN};
use super::read::ByteCursor;
use bson::{RawDocument, RawDocumentBuf};

#[derive(Debug, Clone, PartialEq)]
pub struct OpCommand {
    pub database: String,
    pub command_name: String,
    /// The two documents after the names, as they came.
    pub documents: [RawDocumentBuf; 2],
    pub input_docs: Vec<RawDocumentBuf>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct OpCommandReply {
    /// The reply and metadata documents as they came, then the output documents.
    pub documents: Vec<RawDocumentBuf>,
}

fn cursor(message: &[u8]) -> ByteCursor<'_> {
    ByteCursor::new(message.get(HEADER_LEN..).unwrap_or_default(), HEADER_LEN)
}

impl OpCommand {
    pub fn parse(message: &[u8]) -> Result<OpCommand, WireError> {
        let mut r = cursor(message);
        let database = r.cstring("OP_COMMAND database")?.to_owned();
        let command_name = r.cstring("OP_COMMAND commandName")?.to_owned();
        let first = r.document("OP_COMMAND metadata or command")?;
        let second = r.document("OP_COMMAND metadata or command")?;
        let mut input_docs = Vec::new();
        while !r.is_empty() {
            input_docs.push(r.document("OP_COMMAND input document")?);
        }
        Ok(OpCommand {
            database,
            command_name,
            documents: [first, second],
            input_docs,
        })
    }

    /// The command document: the one whose first key is the command's name (the second when
    /// neither is).
    pub fn command(&self) -> &RawDocument {
        let named = |d: &RawDocumentBuf| {
            d.iter()
                .next()
                .and_then(Result::ok)
                .is_some_and(|(k, _)| k.as_str().eq_ignore_ascii_case(&self.command_name))
        };
        match named(&self.documents[0]) {
            true => &self.documents[0],
            false => &self.documents[1],
        }
    }

    pub fn encode(&self, request_id: i32) -> Vec<u8> {
        let mut out = MsgHeader::start(request_id, 0, OpCode::Command);
        for name in [&self.database, &self.command_name] {
            out.extend_from_slice(name.as_bytes());
            out.push(0);
        }
        for d in self.documents.iter().chain(&self.input_docs) {
            out.extend_from_slice(d.as_bytes());
        }
        MsgHeader::finish(out)
    }
}

impl OpCommandReply {
    pub fn parse(message: &[u8]) -> Result<OpCommandReply, WireError> {
        let mut r = cursor(message);
        let mut documents = Vec::new();
        while !r.is_empty() {
            documents.push(r.document("OP_COMMANDREPLY document")?);
        }
        if documents.len() < 2 {
            return Err(WireError::Invalid {
                what: "OP_COMMANDREPLY",
                offset: HEADER_LEN,
                detail: format!("holds {} documents, a reply and metadata", documents.len()),
            });
        }
        Ok(OpCommandReply { documents })
    }

    /// The reply document: the first of the two that holds `ok`.
    pub fn reply(&self) -> &RawDocument {
        let has_ok = |d: &RawDocumentBuf| d.get("ok").ok().flatten().is_some();
        match !has_ok(&self.documents[0]) && has_ok(&self.documents[1]) {
            true => &self.documents[1],
            false => &self.documents[0],
        }
    }

    pub fn encode(&self, request_id: i32, response_to: i32) -> Vec<u8> {
        let mut out = MsgHeader::start(request_id, response_to, OpCode::CommandReply);
        for d in &self.documents {
            out.extend_from_slice(d.as_bytes());
        }
        MsgHeader::finish(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::rawdoc;

    #[test]
    fn command_and_reply_round_trip_and_name_their_documents_in_either_order() {
        let cmd = OpCommand {
            database: "shop".into(),
            command_name: "find".into(),
            documents: [
                rawdoc! {},
                rawdoc! { "find": "orders", "filter": { "a": 1 } },
            ],
            input_docs: vec![],
        };
        let bytes = cmd.encode(7);
        let back = OpCommand::parse(&bytes).unwrap();
        assert_eq!(back, cmd);
        assert_eq!(back.command().get_str("find").unwrap(), "orders");
        let swapped = OpCommand {
            documents: [cmd.documents[1].clone(), cmd.documents[0].clone()],
            ..cmd
        };
        assert_eq!(swapped.command().get_str("find").unwrap(), "orders");
        let reply = OpCommandReply {
            documents: vec![rawdoc! { "ok": 1.0, "n": 2 }, rawdoc! {}],
        };
        let back = OpCommandReply::parse(&reply.encode(8, 7)).unwrap();
        assert_eq!(back.reply().get_i32("n").unwrap(), 2);
        // Cut anywhere: an error, never a panic.
        for cut in 0..bytes.len() {
            let mut short = bytes[..cut].to_vec();
            if cut >= 4 {
                short[..4].copy_from_slice(&(cut as i32).to_le_bytes());
            }
            assert!(OpCommand::parse(&short).is_err(), "{cut}");
        }
        let one = OpCommandReply {
            documents: vec![rawdoc! { "ok": 1 }],
        };
        assert!(OpCommandReply::parse(&one.encode(1, 1)).is_err());
    }
}
