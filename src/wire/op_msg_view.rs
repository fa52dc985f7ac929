//! OP_MSG over borrowed bytes: [`OpMsgView`] reads a whole message in place (flags, sections, the
//! body as raw BSON) without copying a document, and [`OpMsgWriter`] builds one section by section
//! (a rewrite copies the sections it keeps as bytes). [`super::op_msg::OpMsg`] is the owned form.

use super::error::WireError;
use super::header::{MsgHeader, OpCode, HEADER_LEN};
use super::op_msg::{MsgFlags, REQUIRED_BITS};

/// Offset of the first section: header, then the 4-byte flagBits.
const SECTIONS_AT: usize = HEADER_LEN + 4;
const CHECKSUM_LEN: usize = 4;

/// A whole OP_MSG, header included, borrowed from its frame. [`OpMsgView::new`] checks the header,
/// the opcode, the declared length and the flags; sections are checked as they are iterated. The
/// checksum, when present, is trimmed from the sections but not verified.
#[derive(Debug, Clone, Copy)]
pub struct OpMsgView<'a> {
    frame: &'a [u8],
    header: MsgHeader,
    flags: MsgFlags,
    sections_end: usize,
}

impl<'a> OpMsgView<'a> {
    pub fn new(frame: &'a [u8]) -> Result<OpMsgView<'a>, WireError> {
        let header = MsgHeader::parse_whole(frame, "OP_MSG header")?;
        if header.message_length != frame.len() {
            return Err(WireError::LengthMismatch {
                declared: header.message_length,
                actual: frame.len(),
            });
        }
        if header.op_code != OpCode::Msg {
            return Err(WireError::Invalid {
                what: "OP_MSG opcode",
                offset: 12,
                detail: format!("{} is not OP_MSG", header.op_code.name()),
            });
        }
        let raw_flags = super::read::ByteCursor::new(&frame[HEADER_LEN..], HEADER_LEN)
            .u32("OP_MSG flagBits")?;
        let unknown_required = raw_flags & REQUIRED_BITS & !MsgFlags::all().bits();
        if unknown_required != 0 {
            return Err(WireError::UnknownRequiredFlags {
                bits: unknown_required,
            });
        }
        let flags = MsgFlags::from_bits_retain(raw_flags);
        let sections_end = if flags.contains(MsgFlags::CHECKSUM_PRESENT) {
            frame
                .len()
                .checked_sub(CHECKSUM_LEN)
                .filter(|&end| end >= SECTIONS_AT)
                .ok_or(WireError::Truncated {
                    what: "OP_MSG checksum",
                    offset: SECTIONS_AT,
                    needed: CHECKSUM_LEN,
                    available: frame.len() - SECTIONS_AT,
                })?
        } else {
            frame.len()
        };
        Ok(OpMsgView {
            frame,
            header,
            flags,
            sections_end,
        })
    }

    pub fn header(&self) -> MsgHeader {
        self.header
    }

    /// Every flag bit as sent, unknown optional ones included.
    pub fn flags(&self) -> MsgFlags {
        self.flags
    }

    pub fn more_to_come(&self) -> bool {
        self.flags.contains(MsgFlags::MORE_TO_COME)
    }

    /// The sections in order, the checksum left out. After an error the iterator ends.
    pub fn sections(&self) -> Sections<'a> {
        Sections {
            frame: self.frame,
            at: SECTIONS_AT,
            end: self.sections_end,
        }
    }

    /// The body (kind 0) section: one BSON document, as bytes borrowed from the frame.
    pub fn body(&self) -> Result<&'a [u8], WireError> {
        for section in self.sections() {
            if let SectionView::Body { document, .. } = section? {
                return Ok(document);
            }
        }
        Err(WireError::Invalid {
            what: "OP_MSG sections",
            offset: SECTIONS_AT,
            detail: "no body section".into(),
        })
    }
}

/// One section of an OP_MSG, borrowed from the frame.
#[derive(Debug, Clone, Copy)]
pub enum SectionView<'a> {
    /// Kind 0: the command or reply document (its length prefix is checked, its elements are not).
    Body { document: &'a [u8], raw: &'a [u8] },
    /// Kind 1: documents that stand for the array field `identifier` of the body.
    Sequence {
        identifier: &'a str,
        documents: Documents<'a>,
        raw: &'a [u8],
    },
}

impl<'a> SectionView<'a> {
    /// The whole section as it is on the wire, kind byte included, to copy it unchanged.
    pub fn raw(&self) -> &'a [u8] {
        match self {
            SectionView::Body { raw, .. } | SectionView::Sequence { raw, .. } => raw,
        }
    }
}

/// The sections of an [`OpMsgView`].
#[derive(Debug, Clone)]
pub struct Sections<'a> {
    frame: &'a [u8],
    at: usize,
    end: usize,
}

impl<'a> Sections<'a> {
    fn section(&self) -> Result<(SectionView<'a>, usize), WireError> {
        let (frame, at, end) = (self.frame, self.at, self.end);
        let kind = frame[at];
        let len_at = at + 1;
        let len = length_prefix(&frame[..end], len_at, "OP_MSG section")?;
        let next = len_at + len;
        let raw = &frame[at..next];
        let payload = &frame[len_at..next];
        let section = match kind {
            0 => SectionView::Body {
                document: payload,
                raw,
            },
            1 => {
                let id_at = len_at + 4;
                let nul = payload[4..].iter().position(|&b| b == 0).ok_or_else(|| {
                    invalid(
                        "OP_MSG document sequence identifier",
                        id_at,
                        "missing NUL terminator",
                    )
                })?;
                let identifier = std::str::from_utf8(&payload[4..4 + nul]).map_err(|_| {
                    invalid("OP_MSG document sequence identifier", id_at, "not UTF-8")
                })?;
                let docs_at = id_at + nul + 1;
                SectionView::Sequence {
                    identifier,
                    documents: Documents {
                        bytes: &frame[..next],
                        at: docs_at,
                    },
                    raw,
                }
            }
            k => {
                return Err(invalid(
                    "OP_MSG section kind",
                    at,
                    format!("unknown kind {k}"),
                ))
            }
        };
        Ok((section, next))
    }
}

impl<'a> Iterator for Sections<'a> {
    type Item = Result<SectionView<'a>, WireError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.at >= self.end {
            return None;
        }
        match self.section() {
            Ok((section, next)) => {
                self.at = next;
                Some(Ok(section))
            }
            Err(e) => {
                self.at = self.end;
                Some(Err(e))
            }
        }
    }
}

/// The documents of a document sequence, each a BSON document borrowed from the frame (its length
/// prefix checked, its elements not). After an error the iterator ends.
#[derive(Debug, Clone, Copy)]
pub struct Documents<'a> {
    /// The frame up to the end of the sequence; documents start at `at`.
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Iterator for Documents<'a> {
    type Item = Result<&'a [u8], WireError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.at >= self.bytes.len() {
            return None;
        }
        match length_prefix(self.bytes, self.at, "OP_MSG sequence document") {
            Ok(len) => {
                let doc = &self.bytes[self.at..self.at + len];
                self.at += len;
                Some(Ok(doc))
            }
            Err(e) => {
                self.at = self.bytes.len();
                Some(Err(e))
            }
        }
    }
}

fn invalid(what: &'static str, offset: usize, detail: impl Into<String>) -> WireError {
    WireError::Invalid {
        what,
        offset,
        detail: detail.into(),
    }
}

/// The int32 length at `at` (which counts its own 4 bytes): at least 5, and within `bytes`.
fn length_prefix(bytes: &[u8], at: usize, what: &'static str) -> Result<usize, WireError> {
    let available = bytes.len().saturating_sub(at);
    let prefix = bytes.get(at..at + 4).ok_or(WireError::Truncated {
        what,
        offset: at,
        needed: 4,
        available,
    })?;
    let len = i32::from_le_bytes([prefix[0], prefix[1], prefix[2], prefix[3]]);
    let len = usize::try_from(len)
        .ok()
        .filter(|&l| l >= 5)
        .ok_or_else(|| invalid(what, at, format!("length {len} is below 5")))?;
    if len > available {
        return Err(WireError::Truncated {
            what,
            offset: at,
            needed: len,
            available,
        });
    }
    Ok(len)
}

/// Builds an OP_MSG section by section into one buffer: request id and response-to are left 0 (the
/// connection sets its own id when sending), the length is written by [`OpMsgWriter::finish`].
pub struct OpMsgWriter {
    out: Vec<u8>,
    flags: MsgFlags,
}

impl OpMsgWriter {
    pub fn new(capacity: usize, flags: MsgFlags) -> OpMsgWriter {
        let mut out = Vec::with_capacity(capacity);
        MsgHeader {
            message_length: 0,
            request_id: 0,
            response_to: 0,
            op_code: OpCode::Msg,
        }
        .write_to(&mut out);
        out.extend_from_slice(&flags.bits().to_le_bytes());
        OpMsgWriter { out, flags }
    }

    /// Starts the body section: the kind byte is written, the caller appends one BSON document to
    /// the buffer returned (offsets in it are offsets in the finished message).
    pub fn body(&mut self) -> &mut Vec<u8> {
        self.out.push(0);
        &mut self.out
    }

    /// Appends a section as it was on the wire ([`SectionView::raw`]).
    pub fn raw_section(&mut self, raw: &[u8]) {
        self.out.extend_from_slice(raw);
    }

    /// Writes the length (and the checksum, when the flags ask for one) and returns the message.
    pub fn finish(mut self) -> Vec<u8> {
        let checksum = self.flags.contains(MsgFlags::CHECKSUM_PRESENT);
        let len = self.out.len() + if checksum { CHECKSUM_LEN } else { 0 };
        self.out[..4].copy_from_slice(&(len as i32).to_le_bytes());
        if checksum {
            let crc = crc32c::crc32c(&self.out);
            self.out.extend_from_slice(&crc.to_le_bytes());
        }
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::{CaptureReader, RecordKind};
    use crate::wire::op_msg::{OpMsg, Section};
    use bson::rawdoc;

    fn sample(flags: MsgFlags) -> Vec<u8> {
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
        .encode(7, 3)
    }

    /// A section as owned values: the sequence identifier ("" for the body) and the documents.
    type Owned = (String, Vec<Vec<u8>>);

    /// Every section and document of a view, as owned values, or the first error.
    fn walk(frame: &[u8]) -> Result<Vec<Owned>, WireError> {
        let view = OpMsgView::new(frame)?;
        let mut out = Vec::new();
        for s in view.sections() {
            match s? {
                SectionView::Body { document, .. } => {
                    out.push(("".into(), vec![document.to_vec()]))
                }
                SectionView::Sequence {
                    identifier,
                    documents,
                    ..
                } => {
                    let docs = documents
                        .map(|d| d.map(<[u8]>::to_vec))
                        .collect::<Result<_, _>>()?;
                    out.push((identifier.to_owned(), docs));
                }
            }
        }
        Ok(out)
    }

    #[test]
    fn reads_flags_body_and_sequences_in_place() {
        for flags in [
            MsgFlags::empty(),
            MsgFlags::CHECKSUM_PRESENT | MsgFlags::MORE_TO_COME,
        ] {
            let bytes = sample(flags);
            let view = OpMsgView::new(&bytes).unwrap();
            assert_eq!(view.flags(), flags);
            assert_eq!(view.more_to_come(), flags.contains(MsgFlags::MORE_TO_COME));
            assert_eq!(
                (view.header().request_id, view.header().response_to),
                (7, 3)
            );
            assert_eq!(
                view.body().unwrap(),
                rawdoc! { "insert": "c", "$db": "bench" }.as_bytes()
            );
            let sections = walk(&bytes).unwrap();
            assert_eq!(sections.len(), 2, "the checksum is not a section");
            assert_eq!(sections[1].0, "documents");
            assert_eq!(sections[1].1[1], rawdoc! { "_id": 2 }.as_bytes());
        }
    }

    #[test]
    fn the_writer_rebuilds_what_the_view_reads() {
        for flags in [MsgFlags::empty(), MsgFlags::CHECKSUM_PRESENT] {
            let bytes = sample(flags);
            let view = OpMsgView::new(&bytes).unwrap();
            let mut w = OpMsgWriter::new(bytes.len(), view.flags());
            for s in view.sections() {
                w.raw_section(s.unwrap().raw());
            }
            let mut out = w.finish();
            MsgHeader::write_request_id(&mut out, 7);
            out[8..12].copy_from_slice(&3i32.to_le_bytes());
            if flags.contains(MsgFlags::CHECKSUM_PRESENT) {
                // The response-to changed after the checksum was computed: recompute to compare.
                let at = out.len() - 4;
                let crc = crc32c::crc32c(&out[..at]);
                out[at..].copy_from_slice(&crc.to_le_bytes());
            }
            assert_eq!(out, bytes);
            assert_eq!(OpMsg::parse(&out).unwrap().flags, flags);
        }
    }

    #[test]
    fn every_truncation_and_every_bad_byte_is_an_error_not_a_panic() {
        let bytes = sample(MsgFlags::CHECKSUM_PRESENT);
        for cut in 0..bytes.len() {
            let mut b = bytes[..cut].to_vec();
            assert!(walk(&b).is_err(), "cut at {cut}");
            if b.len() >= 4 {
                b[..4].copy_from_slice(&(cut as i32).to_le_bytes());
                // With the length fixed up only the walk can notice; it must not panic.
                let _ = walk(&b);
            }
        }
        for at in 0..bytes.len() {
            for v in [0x00, 0x04, 0x7f, 0xff] {
                let mut b = bytes.clone();
                b[at] = v;
                let _ = walk(&b);
                let _ = OpMsgView::new(&b).and_then(|v| v.body());
            }
        }
        let mut b = bytes.clone();
        b[SECTIONS_AT] = 2;
        assert!(walk(&b).is_err(), "unknown section kind");
    }

    #[test]
    fn every_op_msg_of_the_captures_reads_like_the_owned_parse() {
        let mut seen = 0;
        for entry in std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/captures")).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|e| e != "mtape") {
                continue;
            }
            let mut reader = CaptureReader::open(&path).unwrap();
            while let Some(record) = reader.next_record() {
                let record = record.unwrap();
                if !matches!(record.kind, RecordKind::Request | RecordKind::Reply) {
                    continue;
                }
                let Ok(owned) = OpMsg::parse(&record.payload) else {
                    continue;
                };
                let view = OpMsgView::new(&record.payload).unwrap();
                assert_eq!(view.flags(), owned.flags);
                assert_eq!(view.body().unwrap(), owned.body().as_bytes());
                assert_eq!(walk(&record.payload).unwrap().len(), owned.sections.len());
                seen += 1;
                if seen % 50 == 0 {
                    let b = &record.payload;
                    for cut in 0..b.len() {
                        assert!(OpMsgView::new(&b[..cut]).is_err());
                    }
                }
            }
        }
        assert!(seen > 100, "only {seen} OP_MSG in the captures");
    }
}
