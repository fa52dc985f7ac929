//! BSON documents as byte ranges: the top-level elements of a document borrowed in place, and a
//! writer that copies them, so a rewrite keeps what it does not touch without decoding or
//! re-encoding it. Values are bounds-checked; nothing here panics on malformed bytes.

use thiserror::Error;

#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("malformed BSON at byte {offset}: {detail}")]
pub struct RawError {
    pub offset: usize,
    pub detail: &'static str,
}

fn bad(offset: usize, detail: &'static str) -> RawError {
    RawError { offset, detail }
}

/// One top-level element of a document.
#[derive(Debug, Clone, Copy)]
pub struct Element<'a> {
    pub kind: u8,
    pub key: &'a str,
    /// The whole element: type byte, key, value.
    pub raw: &'a [u8],
    /// The value only.
    pub value: &'a [u8],
}

pub const DOUBLE: u8 = 0x01;
pub const STRING: u8 = 0x02;
pub const DOCUMENT: u8 = 0x03;
pub const ARRAY: u8 = 0x04;
pub const BINARY: u8 = 0x05;
pub const OBJECT_ID: u8 = 0x07;
pub const BOOLEAN: u8 = 0x08;
pub const INT32: u8 = 0x10;
pub const TIMESTAMP: u8 = 0x11;
pub const INT64: u8 = 0x12;
/// The binary subtype of a UUID (`lsid.id`).
pub const BINARY_UUID: u8 = 0x04;

impl From<RawError> for super::WireError {
    fn from(e: RawError) -> Self {
        super::WireError::Invalid {
            what: "BSON document",
            offset: e.offset,
            detail: e.detail.into(),
        }
    }
}

/// Overwrites the 8 bytes of an int64 value at `at` (an offset [`DocWriter::i64`] returned); a
/// range outside `bytes` is left as it is.
pub fn write_i64_at(bytes: &mut [u8], at: usize, v: i64) {
    if let Some(value) = at.checked_add(8).and_then(|end| bytes.get_mut(at..end)) {
        value.copy_from_slice(&v.to_le_bytes());
    }
}

fn read_i32(b: &[u8], at: usize) -> Option<i32> {
    let s = b.get(at..at.checked_add(4)?)?;
    Some(i32::from_le_bytes([s[0], s[1], s[2], s[3]]))
}

fn cstring_len(b: &[u8], at: usize) -> Option<usize> {
    b.get(at..)?.iter().position(|&c| c == 0).map(|p| p + 1)
}

/// Bytes taken by a value of type `kind` starting at `at`.
fn value_len(b: &[u8], kind: u8, at: usize) -> Option<usize> {
    let len_prefixed = |extra: usize| -> Option<usize> {
        let n = read_i32(b, at)?;
        usize::try_from(n).ok()?.checked_add(extra)
    };
    let len = match kind {
        0x01 | 0x09 | 0x11 | 0x12 => 8,
        0x02 | 0x0D | 0x0E => len_prefixed(4)?,
        0x03 | 0x04 | 0x0F => {
            let n = len_prefixed(0)?;
            if n < 5 {
                return None;
            }
            n
        }
        0x05 => len_prefixed(5)?,
        0x06 | 0x0A | 0x7F | 0xFF => 0,
        0x07 => 12,
        0x08 => 1,
        0x0B => {
            let a = cstring_len(b, at)?;
            a + cstring_len(b, at + a)?
        }
        0x0C => len_prefixed(4)?.checked_add(12)?,
        0x10 => 4,
        0x13 => 16,
        _ => return None,
    };
    if b.len() < at.checked_add(len)? {
        return None;
    }
    Some(len)
}

/// Whether `bytes` hold one of `needles`, each ending in a NUL (a BSON key, `name\0`, or a type
/// byte and a key). One pass over byte pairs: a needle is compared only where a NUL follows a
/// byte that ends one of them, so the cost does not grow with the number of needles, and the
/// many NULs of ordinary BSON (small integers, document ends) cost a table lookup each: 88 ns
/// per message against 560 for a `memchr` for each NUL, on inserts of ~200 bytes and their
/// replies (the recorder's credential test runs on every message).
pub fn holds_any_key(bytes: &[u8], needles: &[&[u8]]) -> bool {
    debug_assert!(needles.iter().all(|n| n.last() == Some(&0)));
    let mut ends = [false; 256];
    for n in needles {
        match n.len() {
            0 => {}
            1 => return bytes.contains(&0),
            len => ends[usize::from(n[len - 2])] = true,
        }
    }
    bytes.windows(2).enumerate().any(|(at, pair)| {
        pair[1] == 0 && ends[usize::from(pair[0])] && {
            // Compared from their ends, byte by byte: a near miss is told in two or three bytes
            // (`ends_with` calls `memcmp` for each needle).
            let before = &bytes[..at + 2];
            needles.iter().any(|n| {
                n.len() <= before.len()
                    && n.iter().rev().zip(before.iter().rev()).all(|(a, b)| a == b)
            })
        }
    })
}

/// The length of the document `bytes` starts with, when it fits in them.
pub fn doc_len(bytes: &[u8]) -> Option<usize> {
    let len = usize::try_from(read_i32(bytes, 0)?).ok()?;
    (len >= 5 && len <= bytes.len()).then_some(len)
}

/// The smallest document: its 4-byte length and its terminating NUL.
pub const MIN_DOC_LEN: usize = 5;

/// For documents stored one after another (mongodump's `.bson` files, mongoreplay's playback
/// files): the length the next document declares in its first four bytes, when it lies within
/// [`MIN_DOC_LEN`]`..=max`; `Err` with the declared value otherwise, for the reader's error.
pub fn declared_doc_len(prefix: [u8; 4], max: usize) -> Result<usize, i32> {
    let declared = i32::from_le_bytes(prefix);
    usize::try_from(declared)
        .ok()
        .filter(|n| (MIN_DOC_LEN..=max).contains(n))
        .ok_or(declared)
}

/// The top-level elements of `doc`, in order. Values are bounds-checked but not validated inside.
pub fn elements(doc: &[u8]) -> Result<Vec<Element<'_>>, RawError> {
    iter(doc)?.collect()
}

/// The top-level elements of `doc` one by one, without collecting them (the replay's hot paths).
/// The document's length and final byte are checked first; an element that does not fit is an
/// error item, after which the iterator ends.
pub fn iter(doc: &[u8]) -> Result<Elements<'_>, RawError> {
    let declared = read_i32(doc, 0).ok_or(bad(0, "shorter than a document length"))?;
    if declared < 5 || declared as usize != doc.len() {
        return Err(bad(0, "document length does not match its bytes"));
    }
    if doc[doc.len() - 1] != 0 {
        return Err(bad(doc.len() - 1, "document does not end with a zero byte"));
    }
    Ok(Elements {
        doc,
        at: 4,
        end: doc.len() - 1,
    })
}

pub struct Elements<'a> {
    doc: &'a [u8],
    at: usize,
    end: usize,
}

impl<'a> Elements<'a> {
    fn element(&self) -> Result<(Element<'a>, usize), RawError> {
        let (doc, at, end) = (self.doc, self.at, self.end);
        let kind = doc[at];
        let key_len = cstring_len(doc, at + 1).ok_or(bad(at, "unterminated key"))?;
        let key = std::str::from_utf8(&doc[at + 1..at + key_len])
            .map_err(|_| bad(at + 1, "key is not UTF-8"))?;
        let value_at = at + 1 + key_len;
        let len =
            value_len(doc, kind, value_at).ok_or(bad(value_at, "bad value length or type"))?;
        let next = value_at + len;
        if next > end {
            return Err(bad(at, "element runs past the end of the document"));
        }
        let element = Element {
            kind,
            key,
            raw: &doc[at..next],
            value: &doc[value_at..next],
        };
        Ok((element, next))
    }
}

impl<'a> Iterator for Elements<'a> {
    type Item = Result<Element<'a>, RawError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.at >= self.end {
            return None;
        }
        match self.element() {
            Ok((element, next)) => {
                self.at = next;
                Some(Ok(element))
            }
            Err(e) => {
                self.at = self.end;
                Some(Err(e))
            }
        }
    }
}

impl<'a> Element<'a> {
    pub fn as_str(&self) -> Option<&'a str> {
        if self.kind != STRING || self.value.len() < 5 {
            return None;
        }
        std::str::from_utf8(&self.value[4..self.value.len() - 1]).ok()
    }

    pub fn as_i64(&self) -> Option<i64> {
        match self.kind {
            INT32 => read_i32(self.value, 0).map(i64::from),
            INT64 => Some(i64::from_le_bytes(self.value.try_into().ok()?)),
            DOUBLE => {
                let v = f64::from_le_bytes(self.value.try_into().ok()?);
                (v.fract() == 0.0 && v.abs() < 9.0e18).then_some(v as i64)
            }
            _ => None,
        }
    }

    /// A number (double, int32 or int64) as a double; anything else is None.
    pub fn as_f64(&self) -> Option<f64> {
        match self.kind {
            DOUBLE => Some(f64::from_le_bytes(self.value.try_into().ok()?)),
            INT32 | INT64 => self.as_i64().map(|v| v as f64),
            _ => None,
        }
    }

    /// A BSON Timestamp as `(t, i)`: seconds, then increment (the order they compare in).
    pub fn as_timestamp(&self) -> Option<(u32, u32)> {
        if self.kind != TIMESTAMP {
            return None;
        }
        let v = u64::from_le_bytes(self.value.try_into().ok()?);
        Some(((v >> 32) as u32, v as u32))
    }

    pub fn as_bool(&self) -> Option<bool> {
        (self.kind == BOOLEAN).then(|| self.value.first() == Some(&1))
    }

    /// The value bytes of an embedded document or array.
    pub fn as_doc(&self) -> Option<&'a [u8]> {
        matches!(self.kind, DOCUMENT | ARRAY).then_some(self.value)
    }
}

/// Builds a document by appending elements; the length is written by [`DocWriter::finish`].
pub struct DocWriter<'o> {
    out: &'o mut Vec<u8>,
    start: usize,
}

impl<'o> DocWriter<'o> {
    pub fn new(out: &'o mut Vec<u8>) -> DocWriter<'o> {
        let start = out.len();
        out.extend_from_slice(&[0; 4]);
        DocWriter { out, start }
    }

    /// Offset of the next byte in the output buffer.
    pub fn position(&self) -> usize {
        self.out.len()
    }

    pub fn raw(&mut self, element: &[u8]) {
        self.out.extend_from_slice(element);
    }

    fn key(&mut self, kind: u8, key: &str) {
        self.out.push(kind);
        self.out.extend_from_slice(key.as_bytes());
        self.out.push(0);
    }

    /// Appends an int64 and returns the offset of its 8 value bytes.
    pub fn i64(&mut self, key: &str, v: i64) -> usize {
        self.key(INT64, key);
        let at = self.out.len();
        self.out.extend_from_slice(&v.to_le_bytes());
        at
    }

    pub fn i32(&mut self, key: &str, v: i32) {
        self.key(INT32, key);
        self.out.extend_from_slice(&v.to_le_bytes());
    }

    pub fn str(&mut self, key: &str, v: &str) {
        self.key(STRING, key);
        self.out
            .extend_from_slice(&((v.len() + 1) as i32).to_le_bytes());
        self.out.extend_from_slice(v.as_bytes());
        self.out.push(0);
    }

    pub fn binary(&mut self, key: &str, subtype: u8, v: &[u8]) {
        self.key(BINARY, key);
        self.out.extend_from_slice(&(v.len() as i32).to_le_bytes());
        self.out.push(subtype);
        self.out.extend_from_slice(v);
    }

    /// An embedded document (or array, with `kind` ARRAY) written by `f`.
    pub fn sub<R>(&mut self, kind: u8, key: &str, f: impl FnOnce(&mut DocWriter<'_>) -> R) -> R {
        self.key(kind, key);
        let mut inner = DocWriter::new(self.out);
        let r = f(&mut inner);
        inner.finish();
        r
    }

    /// An embedded document or array given as its bytes.
    pub fn doc(&mut self, kind: u8, key: &str, bytes: &[u8]) {
        self.value(kind, key, bytes);
    }

    /// An element of any type given as its value bytes, as [`Element::value`] holds them.
    pub fn value(&mut self, kind: u8, key: &str, value: &[u8]) {
        self.key(kind, key);
        self.out.extend_from_slice(value);
    }

    pub fn finish(self) {
        self.out.push(0);
        let len = (self.out.len() - self.start) as i32;
        self.out[self.start..self.start + 4].copy_from_slice(&len.to_le_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::rawdoc;

    #[test]
    fn walks_every_type_and_rebuilds_identically() {
        let doc = rawdoc! {
            "a": 1.5, "b": "x", "c": {"d": 1}, "e": [1, 2], "f": bson::Binary { subtype: bson::spec::BinarySubtype::Uuid, bytes: vec![1; 16] },
            "g": bson::oid::ObjectId::new(), "h": true, "i": bson::DateTime::now(), "j": bson::RawBson::Null,
            "k": bson::Regex { pattern: "a.*".try_into().unwrap(), options: "i".try_into().unwrap() }, "l": 7, "m": bson::Timestamp { time: 1, increment: 2 },
            "n": 9i64, "o": bson::Decimal128::from_bytes([0; 16]), "p": bson::RawBson::MinKey, "q": bson::RawBson::MaxKey,
        };
        let els = elements(doc.as_bytes()).unwrap();
        assert_eq!(els.len(), 16);
        assert_eq!(els[1].as_str(), Some("x"));
        assert_eq!(els[10].as_i64(), Some(7));
        assert_eq!(els[12].as_i64(), Some(9));
        let mut out = Vec::new();
        let mut w = DocWriter::new(&mut out);
        for e in &els {
            w.raw(e.raw);
        }
        w.finish();
        assert_eq!(out, doc.as_bytes());
    }

    #[test]
    fn every_truncation_and_bad_length_is_an_error() {
        let doc = rawdoc! { "insert": "c", "lsid": {"id": 1}, "$db": "x" };
        let bytes = doc.as_bytes();
        for cut in 0..bytes.len() {
            let mut b = bytes[..cut].to_vec();
            if b.len() >= 4 {
                b[..4].copy_from_slice(&(cut as i32).to_le_bytes());
            }
            assert!(elements(&b).is_err(), "cut {cut}");
        }
        let mut b = bytes.to_vec();
        b[5 + 7] = 0x7f - 1; // an unknown type
        assert!(elements(&b).is_err());
    }

    const NEEDLES: &[&[u8]] = &[b"pwd\0", b"key\0", b"\x03SCRAM-SHA-1\0", b"payload\0"];

    /// What [`holds_any_key`] must say: some needle occurs anywhere in the bytes.
    fn holds_any_key_naively(bytes: &[u8], needles: &[&[u8]]) -> bool {
        needles
            .iter()
            .any(|n| bytes.windows(n.len()).any(|w| w == *n))
    }

    #[test]
    fn keys_are_found_wherever_they_are_and_only_there() {
        let doc = rawdoc! { "saslStart": 1, "payload": bson::Binary { subtype: bson::spec::BinarySubtype::Generic, bytes: vec![0; 8] }, "$db": "admin" };
        assert!(holds_any_key(doc.as_bytes(), NEEDLES));
        let nested = rawdoc! { "insert": "u", "documents": [{ "user": "a", "pwd": "secret" }] };
        assert!(holds_any_key(nested.as_bytes(), NEEDLES));
        // A key that merely ends like a needle, and the needle's name as a value, are not keys.
        let near = rawdoc! { "monkey": 1, "pwds": 2, "note": "pwd", "x": 0 };
        assert!(!holds_any_key(
            near.as_bytes(),
            &[b"\x10key\0", b"\x10pwd\0", b"\x02pwd\0"]
        ));
        assert!(
            holds_any_key(near.as_bytes(), NEEDLES),
            "`monkey\\0` ends in `key\\0`"
        );
        assert!(!holds_any_key(b"", NEEDLES) && !holds_any_key(b"\0", NEEDLES));
        assert!(holds_any_key(b"key\0", NEEDLES) && !holds_any_key(b"key", NEEDLES));
        assert!(holds_any_key(b"a\0b", &[b"\0"]) && !holds_any_key(b"ab", &[b"\0"]));
    }

    proptest::proptest! {
        /// Bytes drawn from the needles' own letters, so that needles and near misses abound.
        #[test]
        fn holds_any_key_agrees_with_a_plain_search(
            bytes in proptest::collection::vec(proptest::sample::select(b"\0\x03pwdkeyalSCRAM-1".to_vec()), 0..64)
        ) {
            proptest::prop_assert_eq!(holds_any_key(&bytes, NEEDLES), holds_any_key_naively(&bytes, NEEDLES));
        }
    }

    #[test]
    fn a_declared_length_outside_its_bounds_is_refused_with_its_value() {
        assert_eq!(declared_doc_len(5i32.to_le_bytes(), 5), Ok(5));
        assert_eq!(declared_doc_len(4i32.to_le_bytes(), 100), Err(4));
        assert_eq!(declared_doc_len((-7i32).to_le_bytes(), 100), Err(-7));
        assert_eq!(declared_doc_len(101i32.to_le_bytes(), 100), Err(101));
        assert_eq!(declared_doc_len(i32::MAX.to_le_bytes(), 100), Err(i32::MAX));
    }
}
