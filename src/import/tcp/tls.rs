//! TLS on a connection: its records (RFC 8446 §5.1) cannot be read without the keys, so such a
//! connection is recognised by its first bytes in either direction and left out, said once.

use crate::wire::{MsgHeader, OpCode};

/// The largest TLS record: 2^14 bytes of plaintext plus what protection adds.
const MAX_RECORD: usize = (1 << 14) + 2048;

/// Whether the first bytes a side sent read as a TLS record (a handshake, alert, change of
/// cipher spec or application data, versions SSL 3.0 to TLS 1.3) and not as a MongoDB message
/// header with a known opcode.
pub fn looks_like_tls(first: &[u8]) -> bool {
    let [kind, major, minor, hi, lo, ..] = *first else {
        return false;
    };
    let len = usize::from(u16::from_be_bytes([hi, lo]));
    let record =
        (20..=23).contains(&kind) && major == 3 && minor <= 4 && (1..=MAX_RECORD).contains(&len);
    let mongo =
        matches!(MsgHeader::parse(first), Ok(Some(h)) if !matches!(h.op_code, OpCode::Unknown(_)));
    record && !mongo
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_hello_and_application_data_are_tls_a_message_is_not() {
        let hello = [
            0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03,
        ];
        assert!(looks_like_tls(&hello));
        assert!(looks_like_tls(&[0x17, 0x03, 0x03, 0x00, 0x45, 0xaa]));
        let mut msg = vec![0x16, 0x03, 0x01, 0x00];
        msg.extend_from_slice(&[0; 8]);
        msg.extend_from_slice(&2013i32.to_le_bytes());
        assert!(!looks_like_tls(&msg));
        assert!(!looks_like_tls(b"\x16\x03"));
    }
}
