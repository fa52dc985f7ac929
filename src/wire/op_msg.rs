//! OP_MSG (opcode 2013): flag bits, a body section, document sequences, and an optional CRC-32C.

use super::error::WireError;
use super::header::{MsgHeader, OpCode, HEADER_LEN};
use super::read::ByteCursor;
use bitflags::bitflags;
use bson::RawDocumentBuf;

bitflags! {
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct MsgFlags: u32 {
        const CHECKSUM_PRESENT = 1 << 0;
        const MORE_TO_COME = 1 << 1;
        const EXHAUST_ALLOWED = 1 << 16;
    }
}

/// Bits 0-15 are required: a receiver must fail on one it does not know.
pub(super) const REQUIRED_BITS: u32 = 0xffff;

/// Whether the OP_MSG that `message` starts with (header included) sets only flag bits the
/// protocol defines; `None` when it is too short to hold its flags. A reader hunting for a
/// message boundary in a stream joined part-way takes an unknown bit as "not a boundary".
pub fn flags_all_known(message: &[u8]) -> Option<bool> {
    let at = super::header::HEADER_LEN;
    let bits = u32::from_le_bytes(message.get(at..at + 4)?.try_into().ok()?);
    Some(MsgFlags::from_bits(bits).is_some())
}

#[derive(Debug, Clone, PartialEq)]
pub enum Section {
    /// Kind 0: the command or reply document.
    Body(RawDocumentBuf),
    /// Kind 1: a document sequence that stands for the array field `identifier` of the body.
    Sequence {
        identifier: String,
        documents: Vec<RawDocumentBuf>,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct OpMsg {
    pub flags: MsgFlags,
    pub sections: Vec<Section>,
    pub checksum: Option<u32>,
}

impl OpMsg {
    /// Decodes a whole OP_MSG message, header included, verifying the checksum when present.
    pub fn parse(message: &[u8]) -> Result<OpMsg, WireError> {
        let body = message.get(HEADER_LEN..).unwrap_or_default();
        let mut r = ByteCursor::new(body, HEADER_LEN);
        let raw_flags = r.u32("OP_MSG flagBits")?;
        let unknown_required = raw_flags & REQUIRED_BITS & !MsgFlags::all().bits();
        if unknown_required != 0 {
            return Err(WireError::UnknownRequiredFlags {
                bits: unknown_required,
            });
        }
        let flags = MsgFlags::from_bits_retain(raw_flags);
        let mut checksum = None;
        let sections_end = if flags.contains(MsgFlags::CHECKSUM_PRESENT) {
            if body.len() < 8 {
                return Err(WireError::Truncated {
                    what: "OP_MSG checksum",
                    offset: message.len(),
                    needed: 4,
                    available: body.len().saturating_sub(4),
                });
            }
            let at = message.len() - 4;
            let expected = u32::from_le_bytes([
                message[at],
                message[at + 1],
                message[at + 2],
                message[at + 3],
            ]);
            let computed = crc32c::crc32c(&message[..at]);
            if expected != computed {
                return Err(WireError::ChecksumMismatch { expected, computed });
            }
            checksum = Some(expected);
            body.len() - 4
        } else {
            body.len()
        };
        let mut r = ByteCursor::new(&body[4..sections_end], HEADER_LEN + 4);
        let mut sections = Vec::new();
        while !r.is_empty() {
            let kind_at = r.offset();
            match r.u8("OP_MSG section kind")? {
                0 => sections.push(Section::Body(r.document("OP_MSG body")?)),
                1 => sections.push(parse_sequence(&mut r)?),
                kind => {
                    return Err(WireError::Invalid {
                        what: "OP_MSG section kind",
                        offset: kind_at,
                        detail: format!("unknown kind {kind}"),
                    })
                }
            }
        }
        let bodies = sections
            .iter()
            .filter(|s| matches!(s, Section::Body(_)))
            .count();
        if bodies != 1 {
            return Err(WireError::Invalid {
                what: "OP_MSG sections",
                offset: HEADER_LEN + 4,
                detail: format!("expected exactly one body section, found {bodies}"),
            });
        }
        Ok(OpMsg {
            flags,
            sections,
            checksum,
        })
    }

    /// A message of one body section and no checksum: every command mongotape sends itself.
    pub fn with_body(body: RawDocumentBuf, flags: MsgFlags) -> OpMsg {
        OpMsg {
            flags,
            sections: vec![Section::Body(body)],
            checksum: None,
        }
    }

    pub fn body(&self) -> &RawDocumentBuf {
        self.sections
            .iter()
            .find_map(|s| match s {
                Section::Body(doc) => Some(doc),
                Section::Sequence { .. } => None,
            })
            .expect("parse guarantees one body section")
    }

    pub fn more_to_come(&self) -> bool {
        self.flags.contains(MsgFlags::MORE_TO_COME)
    }

    /// Encodes the message with a fresh header; the checksum is recomputed when the flag is set.
    pub fn encode(&self, request_id: i32, response_to: i32) -> Vec<u8> {
        let mut out = Vec::with_capacity(256);
        MsgHeader {
            message_length: 0,
            request_id,
            response_to,
            op_code: OpCode::Msg,
        }
        .write_to(&mut out);
        out.extend_from_slice(&self.flags.bits().to_le_bytes());
        for section in &self.sections {
            match section {
                Section::Body(doc) => {
                    out.push(0);
                    out.extend_from_slice(doc.as_bytes());
                }
                Section::Sequence {
                    identifier,
                    documents,
                } => {
                    out.push(1);
                    let size_at = out.len();
                    out.extend_from_slice(&[0; 4]);
                    out.extend_from_slice(identifier.as_bytes());
                    out.push(0);
                    for doc in documents {
                        out.extend_from_slice(doc.as_bytes());
                    }
                    let size = (out.len() - size_at) as i32;
                    out[size_at..size_at + 4].copy_from_slice(&size.to_le_bytes());
                }
            }
        }
        if self.flags.contains(MsgFlags::CHECKSUM_PRESENT) {
            let len = (out.len() + 4) as i32;
            out[..4].copy_from_slice(&len.to_le_bytes());
            let crc = crc32c::crc32c(&out);
            out.extend_from_slice(&crc.to_le_bytes());
        } else {
            let len = out.len() as i32;
            out[..4].copy_from_slice(&len.to_le_bytes());
        }
        out
    }
}

fn parse_sequence(r: &mut ByteCursor<'_>) -> Result<Section, WireError> {
    let start = r.offset();
    let size = r.i32("OP_MSG document sequence size")?;
    if size < 5 {
        return Err(WireError::Invalid {
            what: "OP_MSG document sequence size",
            offset: start,
            detail: format!("size {size} is below 5"),
        });
    }
    let payload = r.bytes(size as usize - 4, "OP_MSG document sequence")?;
    let mut seq = ByteCursor::new(payload, start + 4);
    let identifier = seq
        .cstring("OP_MSG document sequence identifier")?
        .to_owned();
    let mut documents = Vec::new();
    while !seq.is_empty() {
        documents.push(seq.document("OP_MSG sequence document")?);
    }
    Ok(Section::Sequence {
        identifier,
        documents,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::rawdoc;

    fn sample(flags: MsgFlags) -> OpMsg {
        OpMsg {
            flags,
            sections: vec![
                Section::Body(rawdoc! { "insert": "c", "$db": "bench" }),
                Section::Sequence {
                    identifier: "documents".into(),
                    documents: vec![rawdoc! { "_id": 1 }, rawdoc! { "_id": 2 }],
                },
            ],
            checksum: None,
        }
    }

    #[test]
    fn encode_then_parse_round_trips() {
        let msg = sample(MsgFlags::MORE_TO_COME);
        let bytes = msg.encode(7, 0);
        let parsed = OpMsg::parse(&bytes).unwrap();
        assert_eq!(parsed, msg);
        assert!(parsed.more_to_come());
    }

    #[test]
    fn verifies_checksum() {
        let bytes = sample(MsgFlags::CHECKSUM_PRESENT).encode(1, 0);
        let parsed = OpMsg::parse(&bytes).unwrap();
        assert_eq!(
            parsed.checksum,
            Some(crc32c::crc32c(&bytes[..bytes.len() - 4]))
        );
        let mut bad = bytes.clone();
        let mid = bad.len() / 2;
        bad[mid] ^= 0x40;
        assert!(matches!(
            OpMsg::parse(&bad),
            Err(WireError::ChecksumMismatch { .. })
        ));
    }

    #[test]
    fn rejects_unknown_required_flag_and_bad_sections() {
        let mut bytes = sample(MsgFlags::empty()).encode(1, 0);
        bytes[16] |= 1 << 5;
        assert!(matches!(
            OpMsg::parse(&bytes),
            Err(WireError::UnknownRequiredFlags { bits: 32 })
        ));
        let mut bytes = sample(MsgFlags::empty()).encode(1, 0);
        bytes[20] = 9;
        assert!(OpMsg::parse(&bytes).is_err());
    }

    #[test]
    fn every_truncation_is_an_error_not_a_panic() {
        let bytes = sample(MsgFlags::CHECKSUM_PRESENT).encode(1, 0);
        for cut in 0..bytes.len() {
            assert!(OpMsg::parse(&bytes[..cut]).is_err(), "cut at {cut}");
        }
    }
}
