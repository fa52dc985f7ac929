//! OP_COMPRESSED (opcode 2012): a message whose body is compressed with snappy, zlib or zstd.
//!
//! Layers, bottom up: compressed.rs < scan

use super::error::WireError;
use super::header::{MsgHeader, OpCode, HEADER_LEN, MAX_MESSAGE_LEN};
use super::read::ByteCursor;
use std::io::Read;

mod scan;
pub use scan::inflated_contains;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Compressor {
    Noop,
    Snappy,
    Zlib,
    Zstd,
}

impl Compressor {
    pub fn from_id(id: u8) -> Result<Compressor, WireError> {
        match id {
            0 => Ok(Compressor::Noop),
            1 => Ok(Compressor::Snappy),
            2 => Ok(Compressor::Zlib),
            3 => Ok(Compressor::Zstd),
            id => Err(WireError::UnknownCompressor { id }),
        }
    }

    pub fn id(self) -> u8 {
        match self {
            Compressor::Noop => 0,
            Compressor::Snappy => 1,
            Compressor::Zlib => 2,
            Compressor::Zstd => 3,
        }
    }

    /// The name used in the handshake's `compression` list.
    pub fn name(self) -> &'static str {
        match self {
            Compressor::Noop => "noop",
            Compressor::Snappy => "snappy",
            Compressor::Zlib => "zlib",
            Compressor::Zstd => "zstd",
        }
    }

    pub fn from_name(name: &str) -> Option<Compressor> {
        match name {
            "noop" => Some(Compressor::Noop),
            "snappy" => Some(Compressor::Snappy),
            "zlib" => Some(Compressor::Zlib),
            "zstd" => Some(Compressor::Zstd),
            _ => None,
        }
    }
}

/// What the OP_COMPRESSED prefix says, before anything is inflated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Wrapped {
    pub header: MsgHeader,
    pub original: OpCode,
    /// `uncompressedSize`: the inner message's length without its header, within 48 MB.
    pub declared: usize,
    pub compressor: Compressor,
}

/// Where `uncompressedSize` stands in an OP_COMPRESSED message.
const DECLARED_SIZE_AT: usize = HEADER_LEN + 4;

/// Overwrites the `uncompressedSize` an OP_COMPRESSED message declares (a message too short to
/// hold one is left as it is): how hostile-input tests forge a message whose size lies.
pub fn set_declared_size(message: &mut [u8], size: i32) {
    if let Some(field) = message.get_mut(DECLARED_SIZE_AT..DECLARED_SIZE_AT + 4) {
        field.copy_from_slice(&size.to_le_bytes());
    }
}

/// Reads the OP_COMPRESSED prefix of `message`; returns it and the compressed payload.
pub fn wrapped(message: &[u8]) -> Result<(Wrapped, &[u8]), WireError> {
    let header = MsgHeader::parse_whole(message, "OP_COMPRESSED header")?;
    let mut r = ByteCursor::new(&message[HEADER_LEN..], HEADER_LEN);
    let original = OpCode::from_i32(r.i32("OP_COMPRESSED originalOpcode")?);
    if original == OpCode::Compressed {
        return Err(WireError::NestedCompression);
    }
    let size_at = r.offset();
    let declared = r.i32("OP_COMPRESSED uncompressedSize")?;
    if declared < 0 || declared as usize > MAX_MESSAGE_LEN - HEADER_LEN {
        return Err(WireError::Invalid {
            what: "OP_COMPRESSED uncompressedSize",
            offset: size_at,
            detail: format!("{declared} is outside 0..={}", MAX_MESSAGE_LEN - HEADER_LEN),
        });
    }
    let compressor = Compressor::from_id(r.u8("OP_COMPRESSED compressorId")?)?;
    let wrapped = Wrapped {
        header,
        original,
        declared: declared as usize,
        compressor,
    };
    Ok((wrapped, r.rest()))
}

/// Undoes OP_COMPRESSED: returns the compressor and the inner message, header included, with the
/// wrapper's request id and response-to and the original opcode.
pub fn decompress(message: &[u8]) -> Result<(Compressor, Vec<u8>), WireError> {
    let (w, payload) = wrapped(message)?;
    let declared = w.declared;
    let mut out = Vec::with_capacity(HEADER_LEN + declared);
    MsgHeader {
        message_length: HEADER_LEN + declared,
        request_id: w.header.request_id,
        response_to: w.header.response_to,
        op_code: w.original,
    }
    .write_to(&mut out);
    inflate(w.compressor, payload, declared, &mut out)?;
    let actual = out.len() - HEADER_LEN;
    if actual != declared {
        return Err(WireError::UncompressedSizeMismatch { declared, actual });
    }
    Ok((w.compressor, out))
}

fn inflate(
    c: Compressor,
    payload: &[u8],
    limit: usize,
    out: &mut Vec<u8>,
) -> Result<(), WireError> {
    let fail = |detail: String| WireError::Decompress {
        compressor: c.name(),
        detail,
    };
    match c {
        Compressor::Noop => out.extend_from_slice(payload),
        Compressor::Snappy => {
            let len = snap::raw::decompress_len(payload).map_err(|e| fail(e.to_string()))?;
            if len != limit {
                return Err(WireError::UncompressedSizeMismatch {
                    declared: limit,
                    actual: len,
                });
            }
            let start = out.len();
            out.resize(start + len, 0);
            snap::raw::Decoder::new()
                .decompress(payload, &mut out[start..])
                .map_err(|e| fail(e.to_string()))?;
        }
        Compressor::Zlib => {
            // Read one byte past the declared size so an overlong payload is caught, not truncated.
            flate2::read::ZlibDecoder::new(payload)
                .take(limit as u64 + 1)
                .read_to_end(out)
                .map_err(|e| fail(e.to_string()))?;
        }
        Compressor::Zstd => {
            zstd::stream::read::Decoder::new(payload)
                .map_err(|e| fail(e.to_string()))?
                .take(limit as u64 + 1)
                .read_to_end(out)
                .map_err(|e| fail(e.to_string()))?;
        }
    }
    Ok(())
}

/// Wraps a whole message (header included) in OP_COMPRESSED with the given compressor.
pub fn compress(message: &[u8], compressor: Compressor) -> Result<Vec<u8>, WireError> {
    let header = MsgHeader::parse_whole(message, "message header")?;
    let body = &message[HEADER_LEN..];
    let fail = |detail: String| WireError::Decompress {
        compressor: compressor.name(),
        detail,
    };
    let packed = match compressor {
        Compressor::Noop => body.to_vec(),
        Compressor::Snappy => snap::raw::Encoder::new()
            .compress_vec(body)
            .map_err(|e| fail(e.to_string()))?,
        Compressor::Zlib => {
            use std::io::Write;
            let mut enc =
                flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
            enc.write_all(body).map_err(|e| fail(e.to_string()))?;
            enc.finish().map_err(|e| fail(e.to_string()))?
        }
        Compressor::Zstd => zstd::bulk::compress(body, 1).map_err(|e| fail(e.to_string()))?,
    };
    let mut out = Vec::with_capacity(HEADER_LEN + 9 + packed.len());
    MsgHeader {
        message_length: HEADER_LEN + 9 + packed.len(),
        request_id: header.request_id,
        response_to: header.response_to,
        op_code: OpCode::Compressed,
    }
    .write_to(&mut out);
    out.extend_from_slice(&header.op_code.as_i32().to_le_bytes());
    out.extend_from_slice(&(body.len() as i32).to_le_bytes());
    out.push(compressor.id());
    out.extend_from_slice(&packed);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::op_msg::{MsgFlags, OpMsg};
    use bson::rawdoc;

    fn inner() -> Vec<u8> {
        OpMsg::with_body(
            rawdoc! { "find": "c", "filter": { "x": "a".repeat(300) }, "$db": "bench" },
            MsgFlags::empty(),
        )
        .encode(42, 0)
    }

    #[test]
    fn every_compressor_round_trips() {
        let msg = inner();
        for c in [
            Compressor::Noop,
            Compressor::Snappy,
            Compressor::Zlib,
            Compressor::Zstd,
        ] {
            let packed = compress(&msg, c).unwrap();
            let (used, unpacked) = decompress(&packed).unwrap();
            assert_eq!(used, c);
            assert_eq!(unpacked, msg, "{}", c.name());
        }
    }

    #[test]
    fn lying_sizes_are_errors() {
        let msg = inner();
        for c in [Compressor::Snappy, Compressor::Zlib, Compressor::Zstd] {
            let mut packed = compress(&msg, c).unwrap();
            let smaller = (msg.len() - HEADER_LEN - 10) as i32;
            packed[20..24].copy_from_slice(&smaller.to_le_bytes());
            assert!(decompress(&packed).is_err(), "{}", c.name());
            packed[20..24].copy_from_slice(&i32::MAX.to_le_bytes());
            assert!(decompress(&packed).is_err(), "{}", c.name());
        }
    }

    #[test]
    fn unknown_compressor_and_garbage_payload() {
        let mut packed = compress(&inner(), Compressor::Zlib).unwrap();
        packed[24] = 9;
        assert_eq!(
            decompress(&packed).unwrap_err(),
            WireError::UnknownCompressor { id: 9 }
        );
        packed[24] = 3;
        assert!(matches!(
            decompress(&packed),
            Err(WireError::Decompress { .. })
        ));
    }
}
