//! A `.bson` file as mongodump writes it: BSON documents one after another, nothing between them.
//! Read as a stream, one document in memory at a time; every length is checked against a bound
//! before anything is allocated, and every document is walked (framing, element types, nesting)
//! before it is handed out. A truncated or corrupt file is an error naming the file and the byte
//! offset of the document, never a panic.

use super::error::StateError;
use crate::wire::bson_raw::{declared_doc_len, MIN_DOC_LEN};
use crate::wire::depth::{depth, MAX_DEPTH};
use std::io::{ErrorKind, Read};
use std::path::{Path, PathBuf};

/// The largest document a server stores (16 MiB) plus its internal slack, as mongorestore allows.
pub const MAX_DOCUMENT_LEN: usize = 16 * 1024 * 1024 + 16 * 1024;

/// The documents of one `.bson` stream (already decompressed), in order.
pub struct BsonDocuments<R> {
    input: R,
    path: PathBuf,
    offset: u64,
    done: bool,
}

impl<R: Read> BsonDocuments<R> {
    /// `path` names the file in errors.
    pub fn new(input: R, path: &Path) -> BsonDocuments<R> {
        BsonDocuments {
            input,
            path: path.to_owned(),
            offset: 0,
            done: false,
        }
    }

    /// Bytes of the (uncompressed) stream read so far.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    fn corrupt(&self, why: impl Into<String>) -> StateError {
        StateError::Corrupt {
            path: self.path.clone(),
            offset: self.offset,
            why: why.into(),
        }
    }

    /// Fills `buf`; `Ok(false)` when the stream ended before its first byte.
    fn fill(&mut self, buf: &mut [u8], what: &str) -> Result<bool, StateError> {
        let mut got = 0;
        while got < buf.len() {
            match self.input.read(&mut buf[got..]) {
                Ok(0) if got == 0 => return Ok(false),
                Ok(0) => {
                    return Err(self.corrupt(format!(
                        "truncated: {what} ends after {got} of {} bytes",
                        buf.len()
                    )))
                }
                Ok(n) => got += n,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(self.corrupt(format!("cannot read: {e}"))),
            }
        }
        Ok(true)
    }

    fn next_document(&mut self) -> Result<Option<Vec<u8>>, StateError> {
        let mut len = [0u8; 4];
        if !self.fill(&mut len, "a document's length")? {
            return Ok(None);
        }
        let size = declared_doc_len(len, MAX_DOCUMENT_LEN).map_err(|declared| {
            self.corrupt(format!(
                "a document declares {declared} bytes (allowed {MIN_DOC_LEN} to {MAX_DOCUMENT_LEN})"
            ))
        })?;
        let mut doc = vec![0u8; size];
        doc[..4].copy_from_slice(&len);
        if !self.fill(&mut doc[4..], "a document")? {
            return Err(self.corrupt(format!(
                "truncated: a document of {size} bytes ends after 4"
            )));
        }
        match depth(&doc, MAX_DEPTH) {
            Ok(Some(_)) => {}
            Ok(None) => return Err(self.corrupt(format!("nests deeper than {MAX_DEPTH} levels"))),
            Err(e) => return Err(self.corrupt(format!("not a BSON document: {e}"))),
        }
        self.offset += size as u64;
        Ok(Some(doc))
    }
}

impl<R: Read> Iterator for BsonDocuments<R> {
    /// One whole, checked document's bytes.
    type Item = Result<Vec<u8>, StateError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let next = self.next_document().transpose();
        if !matches!(next, Some(Ok(_))) {
            self.done = true;
        }
        next
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::{doc, rawdoc};

    fn file(n: usize) -> Vec<u8> {
        let mut out = Vec::new();
        for i in 0..n {
            out.extend_from_slice(
                rawdoc! {"_id": i as i64, "s": "x", "d": {"a": [1, 2]}}.as_bytes(),
            );
        }
        out
    }

    #[test]
    fn every_prefix_gives_whole_documents_then_an_error_naming_the_file_or_a_clean_end() {
        let bytes = file(3);
        let one = bytes.len() / 3;
        for cut in 0..=bytes.len() {
            let docs: Vec<_> =
                BsonDocuments::new(&bytes[..cut], Path::new("shop/orders.bson")).collect();
            let whole = cut / one;
            assert_eq!(
                docs.iter().filter(|d| d.is_ok()).count(),
                whole,
                "cut {cut}"
            );
            match cut % one {
                0 => assert!(docs.iter().all(|d| d.is_ok())),
                _ => {
                    let e = docs.last().unwrap().as_ref().unwrap_err().to_string();
                    assert!(
                        e.starts_with("shop/orders.bson: corrupt at byte offset"),
                        "{e}"
                    );
                    assert!(e.contains(&format!("offset {}", whole * one)), "{e}");
                }
            }
        }
        let _ = doc! {};
    }

    #[test]
    fn corrupt_lengths_and_bodies_are_errors() {
        let mut bytes = file(1);
        bytes[0..4].copy_from_slice(&(-7i32).to_le_bytes());
        assert!(BsonDocuments::new(&bytes[..], Path::new("f"))
            .next()
            .unwrap()
            .is_err());
        let mut bytes = file(1);
        bytes[4] = 0x7f; // an unknown element type
        assert!(BsonDocuments::new(&bytes[..], Path::new("f"))
            .next()
            .unwrap()
            .is_err());
        let huge = (MAX_DOCUMENT_LEN as i32 + 1).to_le_bytes();
        assert!(BsonDocuments::new(&huge[..], Path::new("f"))
            .next()
            .unwrap()
            .is_err());
    }
}
