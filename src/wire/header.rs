//! The 16-byte message header that starts every MongoDB wire message.

use super::error::WireError;

/// Length of the standard message header.
pub const HEADER_LEN: usize = 16;

/// The largest message a MongoDB server accepts (`maxMessageSizeBytes`).
pub const MAX_MESSAGE_LEN: usize = 48_000_000;

/// Operation codes of the MongoDB wire protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum OpCode {
    Reply,
    Update,
    Insert,
    Query,
    GetMore,
    Delete,
    KillCursors,
    /// OP_COMMAND and OP_COMMANDREPLY: 3.2-4.0's command opcodes, read but never replayed.
    Command,
    CommandReply,
    Compressed,
    Msg,
    /// An opcode mongotape does not know; its message is kept as raw bytes.
    Unknown(i32),
}

impl OpCode {
    pub fn from_i32(code: i32) -> OpCode {
        match code {
            1 => OpCode::Reply,
            2001 => OpCode::Update,
            2002 => OpCode::Insert,
            2004 => OpCode::Query,
            2005 => OpCode::GetMore,
            2006 => OpCode::Delete,
            2007 => OpCode::KillCursors,
            2010 => OpCode::Command,
            2011 => OpCode::CommandReply,
            2012 => OpCode::Compressed,
            2013 => OpCode::Msg,
            other => OpCode::Unknown(other),
        }
    }

    pub fn as_i32(self) -> i32 {
        match self {
            OpCode::Reply => 1,
            OpCode::Update => 2001,
            OpCode::Insert => 2002,
            OpCode::Query => 2004,
            OpCode::GetMore => 2005,
            OpCode::Delete => 2006,
            OpCode::KillCursors => 2007,
            OpCode::Command => 2010,
            OpCode::CommandReply => 2011,
            OpCode::Compressed => 2012,
            OpCode::Msg => 2013,
            OpCode::Unknown(code) => code,
        }
    }

    /// Every opcode mongotape knows, in the protocol's order.
    pub const KNOWN: [OpCode; 11] = [
        OpCode::Reply,
        OpCode::Update,
        OpCode::Insert,
        OpCode::Query,
        OpCode::GetMore,
        OpCode::Delete,
        OpCode::KillCursors,
        OpCode::Command,
        OpCode::CommandReply,
        OpCode::Compressed,
        OpCode::Msg,
    ];

    /// The protocol's name of a known opcode (`OP_MSG`, `OP_QUERY`, ...); `None` for an unknown one.
    pub fn known_name(self) -> Option<&'static str> {
        Some(match self {
            OpCode::Reply => "OP_REPLY",
            OpCode::Update => "OP_UPDATE",
            OpCode::Insert => "OP_INSERT",
            OpCode::Query => "OP_QUERY",
            OpCode::GetMore => "OP_GET_MORE",
            OpCode::Delete => "OP_DELETE",
            OpCode::KillCursors => "OP_KILL_CURSORS",
            OpCode::Command => "OP_COMMAND",
            OpCode::CommandReply => "OP_COMMANDREPLY",
            OpCode::Compressed => "OP_COMPRESSED",
            OpCode::Msg => "OP_MSG",
            OpCode::Unknown(_) => return None,
        })
    }

    /// The name used in reports: `OP_MSG`, `OP_QUERY`, ..., `OP_UNKNOWN(n)`.
    pub fn name(self) -> String {
        match self.known_name() {
            Some(name) => name.into(),
            None => format!("OP_UNKNOWN({})", self.as_i32()),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MsgHeader {
    /// Total message length, header included. Always within `HEADER_LEN..=MAX_MESSAGE_LEN`.
    pub message_length: usize,
    pub request_id: i32,
    pub response_to: i32,
    pub op_code: OpCode,
}

impl MsgHeader {
    /// Parses a header from the first 16 bytes of `buf`, checking the length field.
    /// `Ok(None)` when fewer than 16 bytes are available.
    pub fn parse(buf: &[u8]) -> Result<Option<MsgHeader>, WireError> {
        if buf.len() < HEADER_LEN {
            return Ok(None);
        }
        let length = read_i32(buf, 0);
        let message_length = check_length(length)?;
        Ok(Some(MsgHeader {
            message_length,
            request_id: read_i32(buf, 4),
            response_to: read_i32(buf, 8),
            op_code: OpCode::from_i32(read_i32(buf, 12)),
        }))
    }

    /// Like [`MsgHeader::parse`], for a buffer that must hold a whole message: fewer than 16 bytes
    /// is a truncation error naming `what`.
    pub fn parse_whole(buf: &[u8], what: &'static str) -> Result<MsgHeader, WireError> {
        MsgHeader::parse(buf)?.ok_or(WireError::Truncated {
            what,
            offset: 0,
            needed: HEADER_LEN,
            available: buf.len(),
        })
    }

    /// Peeks only at the length prefix: `Ok(None)` with fewer than 4 bytes.
    pub fn peek_length(buf: &[u8]) -> Result<Option<usize>, WireError> {
        if buf.len() < 4 {
            return Ok(None);
        }
        check_length(read_i32(buf, 0)).map(Some)
    }

    /// Whether the first bytes of a connection are a TLS handshake record (a client speaking TLS
    /// to a plaintext listener) rather than a message header: content type 0x16, version 3.0
    /// to 3.4. As a header those bytes read as a length of 0x..0X0316 (66,326 bytes for a
    /// ClientHello under 256 bytes, 33 MB for one of 512), so the caller must ask before waiting
    /// for the "message". A real message that starts so (66,326 bytes long) has a known opcode.
    pub fn looks_like_tls(first: &[u8]) -> bool {
        let record = matches!(first, [0x16, 0x03, 0x00..=0x04, ..]);
        let known_opcode = first.len() >= HEADER_LEN
            && !matches!(OpCode::from_i32(read_i32(first, 12)), OpCode::Unknown(_));
        record && !known_opcode
    }

    /// Sets the request id of a whole message in place (a connection numbers what it sends); a
    /// buffer too short to hold one is left as it is.
    pub fn write_request_id(message: &mut [u8], request_id: i32) {
        if let Some(field) = message.get_mut(4..8) {
            field.copy_from_slice(&request_id.to_le_bytes());
        }
    }

    /// Sets the responseTo field of a message in place; a buffer too short to hold one is left as
    /// it is.
    pub fn write_response_to(message: &mut [u8], response_to: i32) {
        if let Some(field) = message.get_mut(8..12) {
            field.copy_from_slice(&response_to.to_le_bytes());
        }
    }

    /// Sets the length field of a message in place (to fix up a buffer that was cut); a buffer too
    /// short to hold one is left as it is.
    pub fn write_message_length(message: &mut [u8], length: i32) {
        if let Some(field) = message.get_mut(..4) {
            field.copy_from_slice(&length.to_le_bytes());
        }
    }

    /// A message being encoded: its header, the length filled in by [`MsgHeader::finish`].
    pub fn start(request_id: i32, response_to: i32, op_code: OpCode) -> Vec<u8> {
        let mut out = Vec::with_capacity(128);
        MsgHeader {
            message_length: 0,
            request_id,
            response_to,
            op_code,
        }
        .write_to(&mut out);
        out
    }

    /// An encoded message with its length written into its header.
    pub fn finish(mut out: Vec<u8>) -> Vec<u8> {
        let len = out.len() as i32;
        out[..4].copy_from_slice(&len.to_le_bytes());
        out
    }

    pub fn write_to(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&(self.message_length as i32).to_le_bytes());
        out.extend_from_slice(&self.request_id.to_le_bytes());
        out.extend_from_slice(&self.response_to.to_le_bytes());
        out.extend_from_slice(&self.op_code.as_i32().to_le_bytes());
    }
}

fn check_length(length: i32) -> Result<usize, WireError> {
    if length < HEADER_LEN as i32 {
        return Err(WireError::LengthTooSmall { length });
    }
    let length = length as usize;
    if length > MAX_MESSAGE_LEN {
        return Err(WireError::LengthTooLarge {
            length,
            max: MAX_MESSAGE_LEN,
        });
    }
    Ok(length)
}

fn read_i32(buf: &[u8], at: usize) -> i32 {
    i32::from_le_bytes([buf[at], buf[at + 1], buf[at + 2], buf[at + 3]])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_every_known_opcode() {
        for code in [1, 2001, 2002, 2004, 2005, 2006, 2007, 2012, 2013, 9999] {
            assert_eq!(OpCode::from_i32(code).as_i32(), code);
        }
        assert_eq!(OpCode::from_i32(9999), OpCode::Unknown(9999));
    }

    #[test]
    fn rejects_lengths_outside_bounds() {
        let mut buf = [0u8; 16];
        buf[..4].copy_from_slice(&15i32.to_le_bytes());
        assert!(matches!(
            MsgHeader::parse(&buf),
            Err(WireError::LengthTooSmall { length: 15 })
        ));
        buf[..4].copy_from_slice(&(-1i32).to_le_bytes());
        assert!(MsgHeader::parse(&buf).is_err());
        buf[..4].copy_from_slice(&48_000_001i32.to_le_bytes());
        assert!(matches!(
            MsgHeader::parse(&buf),
            Err(WireError::LengthTooLarge { .. })
        ));
        buf[..4].copy_from_slice(&48_000_000i32.to_le_bytes());
        assert_eq!(
            MsgHeader::parse(&buf).unwrap().unwrap().message_length,
            48_000_000
        );
    }

    /// A ClientHello as rustls sends it, and a real hello whose length starts with the same bytes.
    #[test]
    fn a_tls_client_hello_is_told_from_a_message() {
        let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(rustls::RootCertStore::empty())
            .with_no_client_auth();
        let name = rustls_pki_types::ServerName::try_from("localhost").unwrap();
        let mut client = rustls::ClientConnection::new(std::sync::Arc::new(config), name).unwrap();
        let mut hello = Vec::new();
        client.write_tls(&mut hello).unwrap();
        assert!(MsgHeader::looks_like_tls(&hello), "{:02x?}", &hello[..8]);
        assert!(MsgHeader::looks_like_tls(&hello[..3]));
        // As a header it reads as a length the splitter would wait for (66,326 bytes for this
        // 200-odd-byte hello, 33 MB for OpenSSL's 512-byte one), or one it refuses.
        let read_as = MsgHeader::peek_length(&hello);
        assert!(
            read_as.as_ref().map_or(true, |n| n.unwrap() > hello.len()),
            "{read_as:?}"
        );

        let hello_of = |pad: usize| {
            crate::wire::OpMsg {
                flags: crate::wire::MsgFlags::empty(),
                sections: vec![crate::wire::Section::Body(bson::rawdoc! {
                    "hello": 1, "pad": "x".repeat(pad), "$db": "admin",
                })],
                checksum: None,
            }
            .encode(7, 0)
        };
        let mut message = hello_of(0x0001_0316 - hello_of(0).len());
        assert_eq!(&message[..3], &[0x16, 0x03, 0x01]);
        assert!(!MsgHeader::looks_like_tls(&message));
        message[0] = 0x17;
        assert!(!MsgHeader::looks_like_tls(&message));
        assert!(!MsgHeader::looks_like_tls(&[0x16]));
    }

    #[test]
    fn needs_sixteen_bytes() {
        assert_eq!(MsgHeader::parse(&[0u8; 15]).unwrap(), None);
    }
}
