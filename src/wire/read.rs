//! A bounds-checked cursor over a message body. Every read checks what is left first, so nothing read
//! from the network can index out of bounds or allocate more than the message holds.

use super::error::WireError;
use bson::RawDocumentBuf;

/// Smallest valid BSON document: a 4-byte length and the terminating NUL.
const MIN_DOC_LEN: usize = 5;

pub struct ByteCursor<'a> {
    buf: &'a [u8],
    pos: usize,
    /// Offset of `buf[0]` within the whole message, for error positions.
    base: usize,
}

impl<'a> ByteCursor<'a> {
    pub fn new(buf: &'a [u8], base: usize) -> ByteCursor<'a> {
        ByteCursor { buf, pos: 0, base }
    }

    pub fn offset(&self) -> usize {
        self.base + self.pos
    }

    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    pub fn is_empty(&self) -> bool {
        self.remaining() == 0
    }

    pub fn bytes(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], WireError> {
        if n > self.remaining() {
            return Err(WireError::Truncated {
                what,
                offset: self.offset(),
                needed: n,
                available: self.remaining(),
            });
        }
        let out = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    pub fn rest(&mut self) -> &'a [u8] {
        let out = &self.buf[self.pos..];
        self.pos = self.buf.len();
        out
    }

    pub fn u8(&mut self, what: &'static str) -> Result<u8, WireError> {
        Ok(self.bytes(1, what)?[0])
    }

    pub fn i32(&mut self, what: &'static str) -> Result<i32, WireError> {
        let b = self.bytes(4, what)?;
        Ok(i32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    pub fn u32(&mut self, what: &'static str) -> Result<u32, WireError> {
        Ok(self.i32(what)? as u32)
    }

    pub fn i64(&mut self, what: &'static str) -> Result<i64, WireError> {
        let b = self.bytes(8, what)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(i64::from_le_bytes(a))
    }

    /// A NUL-terminated UTF-8 string (BSON cstring).
    pub fn cstring(&mut self, what: &'static str) -> Result<&'a str, WireError> {
        let start = self.offset();
        let rest = &self.buf[self.pos..];
        let Some(nul) = rest.iter().position(|&b| b == 0) else {
            return Err(WireError::Invalid {
                what,
                offset: start,
                detail: "missing NUL terminator".into(),
            });
        };
        let s = std::str::from_utf8(&rest[..nul]).map_err(|e| WireError::Invalid {
            what,
            offset: start,
            detail: format!("not UTF-8: {e}"),
        })?;
        self.pos += nul + 1;
        Ok(s)
    }

    /// A length-prefixed BSON document, its length checked against what is left.
    pub fn document(&mut self, what: &'static str) -> Result<RawDocumentBuf, WireError> {
        let start = self.offset();
        if self.remaining() < 4 {
            return Err(WireError::Truncated {
                what,
                offset: start,
                needed: 4,
                available: self.remaining(),
            });
        }
        let b = &self.buf[self.pos..];
        let len = i32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        if len < MIN_DOC_LEN as i32 {
            return Err(WireError::Invalid {
                what,
                offset: start,
                detail: format!("document length {len} is below {MIN_DOC_LEN}"),
            });
        }
        let bytes = self.bytes(len as usize, what)?;
        RawDocumentBuf::from_bytes(bytes.to_vec()).map_err(|e| WireError::Invalid {
            what,
            offset: start,
            detail: super::bson_error_text(&e),
        })
    }
}
