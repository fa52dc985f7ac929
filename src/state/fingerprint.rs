//! A collection's fingerprint, computed the same way on any server and without I/O: the count of
//! its documents and an order-independent hash of them (each document's SHA-256, truncated to 16
//! bytes, summed mod 2^128), so two servers holding the same documents in any order agree. To
//! name the `_id`s that differ without holding a collection in memory, each document also falls
//! into one of [`BUCKETS`] buckets by a hash of its `_id`, and a [`Buckets`] table keeps the count
//! and sum per bucket: only the buckets whose sums differ are read again, document by document.

use bson::raw::{cstr, RawBsonRef, RawDocument, RawDocumentBuf};
use sha2::{Digest, Sha256};

/// Buckets an `_id` falls into (a power of two): a difference is looked for among about
/// `documents / BUCKETS` documents.
pub const BUCKETS: usize = 4096;

/// One document: its `_id` as a document `{_id: value}` (kept to name it), its bucket and its
/// digest.
#[derive(Debug, Clone, PartialEq)]
pub struct DocDigest {
    pub id: RawDocumentBuf,
    pub bucket: usize,
    pub digest: u128,
}

/// The first 16 bytes of SHA-256 of `bytes`, as a number.
fn digest16(bytes: &[u8]) -> u128 {
    let hash = Sha256::digest(bytes);
    let mut first = [0u8; 16];
    first.copy_from_slice(&hash[..16]);
    u128::from_be_bytes(first)
}

/// `{_id: value}` of a document (`{_id: null}` for one without, which no collection holds).
pub fn id_of(doc: &RawDocument) -> RawDocumentBuf {
    let mut id = RawDocumentBuf::new();
    match doc.get("_id").ok().flatten() {
        Some(value) => id.append(cstr!("_id"), value),
        None => id.append(cstr!("_id"), RawBsonRef::Null),
    }
    id
}

/// The bucket of an `_id` document.
pub fn bucket_of(id: &RawDocument) -> usize {
    (digest16(id.as_bytes()) >> 116) as usize % BUCKETS
}

/// A document's `_id`, bucket and digest (over its whole BSON, field order included).
pub fn digest_doc(doc: &RawDocument) -> DocDigest {
    let id = id_of(doc);
    DocDigest {
        bucket: bucket_of(&id),
        digest: digest16(doc.as_bytes()),
        id,
    }
}

/// The count and the hash of documents added one at a time, in any order.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Sum {
    pub documents: u64,
    pub hash: u128,
}

impl Sum {
    pub fn add(&mut self, digest: u128) {
        self.documents += 1;
        self.hash = self.hash.wrapping_add(digest);
    }

    /// The hash as the end state writes it: 32 hex digits.
    pub fn hex(&self) -> String {
        format!("{:032x}", self.hash)
    }
}

/// A [`Sum`] per bucket: 4096 of them, 128 KiB, whatever the collection's size.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Buckets(Vec<Sum>);

impl Default for Buckets {
    fn default() -> Buckets {
        Buckets(vec![Sum::default(); BUCKETS])
    }
}

impl Buckets {
    pub fn add(&mut self, d: &DocDigest) {
        if let Some(sum) = self.0.get_mut(d.bucket) {
            sum.add(d.digest);
        }
    }

    /// The buckets whose documents differ between `self` and `other`, in order, at most `limit`.
    pub fn differing(&self, other: &Buckets, limit: usize) -> Vec<usize> {
        (0..BUCKETS)
            .filter(|&b| self.0.get(b) != other.0.get(b))
            .take(limit)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::rawdoc;

    #[test]
    fn the_hash_ignores_order_and_sees_every_change() {
        let docs = [
            rawdoc! {"_id": 1, "status": "new"},
            rawdoc! {"_id": 2, "status": "paid"},
            rawdoc! {"_id": "x", "n": 1.5},
        ];
        let mut forward = Sum::default();
        let mut backward = Sum::default();
        for d in &docs {
            forward.add(digest_doc(d).digest);
        }
        for d in docs.iter().rev() {
            backward.add(digest_doc(d).digest);
        }
        assert_eq!(forward, backward);
        assert_eq!(forward.documents, 3);
        let mut changed = Sum::default();
        for d in [&docs[0], &rawdoc! {"_id": 2, "status": "sent"}, &docs[2]] {
            changed.add(digest_doc(d).digest);
        }
        assert_ne!(changed.hash, forward.hash);
        assert_eq!(forward.hex().len(), 32);
    }

    #[test]
    fn buckets_point_at_the_changed_document() {
        let (mut a, mut b) = (Buckets::default(), Buckets::default());
        for i in 0..1000 {
            let doc = rawdoc! {"_id": i, "v": i};
            a.add(&digest_doc(&doc));
            let doc = match i {
                500 => rawdoc! {"_id": i, "v": -1},
                _ => doc,
            };
            b.add(&digest_doc(&doc));
        }
        let differing = a.differing(&b, 5);
        assert_eq!(differing.len(), 1);
        let id = rawdoc! {"_id": 500};
        assert_eq!(differing[0], bucket_of(&id));
        assert_eq!(id_of(&rawdoc! {"_id": 500, "v": 1}), id);
    }
}
