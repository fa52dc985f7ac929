//! The end state's files in a snapshot folder: `mongotape-end.json` (the point T1 and each
//! collection's fingerprint) and `mongotape-end.digests`, one BSON document per recorded document
//! `{c: collection index, _id: value, d: BinData(16-byte digest)}`, collection after collection,
//! from which the `_id`s that differ are named. Both names are top-level files, which mongorestore
//! and [`super::SnapshotDir`] leave alone.

use super::bsonfile::BsonDocuments;
use super::error::StateError;
use super::fingerprint::{bucket_of, DocDigest};
use super::layout::SnapshotPoint;
use crate::capture::output::{self, Existing};
use crate::capture::CollectionFingerprint;
use bson::raw::{cstr, RawBinaryRef, RawBsonRef, RawDocument, RawDocumentBuf};
use bson::spec::BinarySubtype;
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

pub const END_FILE: &str = "mongotape-end.json";
pub const DIGESTS: &str = "mongotape-end.digests";
pub const FORMAT: &str = "mongotape-end";
pub const FORMAT_VERSION: u32 = 1;
/// A `mongotape-end.json` larger than this is not one.
const MAX_END_FILE: u64 = 64 * 1024 * 1024;

/// `mongotape-end.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EndFile {
    pub format: String,
    pub version: u32,
    /// T1: when the recording stopped, as the server's cluster time where it gave one.
    pub point: SnapshotPoint,
    pub collections: Vec<CollectionFingerprint>,
    /// The digests' file name in the same folder.
    pub digests: String,
}

impl EndFile {
    /// Reads `DIR/mongotape-end.json`.
    pub fn read(dir: &Path) -> Result<EndFile, StateError> {
        let path = dir.join(END_FILE);
        let meta = std::fs::metadata(&path).map_err(StateError::file("open", &path))?;
        if meta.len() > MAX_END_FILE {
            return Err(StateError::Corrupt {
                path,
                offset: MAX_END_FILE,
                why: format!("longer than {MAX_END_FILE} bytes"),
            });
        }
        let bytes = std::fs::read(&path).map_err(StateError::file("read", &path))?;
        EndFile::parse(&bytes, &path)
    }

    /// An end file's bytes; `path` names it in errors.
    pub fn parse(bytes: &[u8], path: &Path) -> Result<EndFile, StateError> {
        let end: EndFile = serde_json::from_slice(bytes).map_err(|e| StateError::Corrupt {
            path: path.to_owned(),
            offset: 0,
            why: e.to_string(),
        })?;
        if end.format != FORMAT || end.digests.contains(['/', '\\']) || end.digests == ".." {
            return Err(StateError::NotASnapshot {
                path: path.to_owned(),
                why: format!(
                    "format {:?} and digests {:?}: expected {FORMAT:?} and a file name",
                    end.format, end.digests
                ),
            });
        }
        Ok(end)
    }

    /// Writes it into `dir` (never over an existing file).
    pub fn write(&self, dir: &Path) -> Result<(), StateError> {
        let path = dir.join(END_FILE);
        let json = serde_json::to_vec_pretty(self).unwrap_or_default();
        let mut file = output::create(&path, Existing::Refuse, 0o600)?;
        file.write_all(&json)
            .and_then(|()| file.sync_all())
            .map_err(StateError::file("write", &path))
    }
}

/// `mongotape-end.digests` being written.
pub struct DigestWriter {
    out: BufWriter<File>,
    path: PathBuf,
}

impl DigestWriter {
    pub fn create(dir: &Path) -> Result<DigestWriter, StateError> {
        let path = dir.join(DIGESTS);
        let file = output::create(&path, Existing::Refuse, 0o600)?;
        Ok(DigestWriter {
            out: BufWriter::with_capacity(256 * 1024, file),
            path,
        })
    }

    /// One document of the collection at `index` in the end file.
    pub fn add(&mut self, index: usize, d: &DocDigest) -> Result<(), StateError> {
        let mut entry = RawDocumentBuf::new();
        entry.append(cstr!("c"), i32::try_from(index).unwrap_or(i32::MAX));
        if let Ok(Some(id)) = d.id.get("_id") {
            entry.append(cstr!("_id"), id);
        }
        let digest = d.digest.to_be_bytes();
        entry.append(
            cstr!("d"),
            RawBinaryRef {
                subtype: BinarySubtype::Generic,
                bytes: &digest,
            },
        );
        self.out
            .write_all(entry.as_bytes())
            .map_err(StateError::file("write", &self.path))
    }

    pub fn finish(self) -> Result<(), StateError> {
        let file = self
            .out
            .into_inner()
            .map_err(|e| e.into_error())
            .map_err(StateError::file("write", &self.path))?;
        file.sync_all()
            .map_err(StateError::file("write", &self.path))
    }
}

/// Calls `each` with every recorded document of the collection at `index` whose `_id`'s bucket
/// `keep` keeps, streaming the digests file.
pub fn recorded_in(
    dir: &Path,
    end: &EndFile,
    index: usize,
    keep: impl Fn(usize) -> bool,
    mut each: impl FnMut(DocDigest),
) -> Result<(), StateError> {
    let path = dir.join(&end.digests);
    let file = File::open(&path).map_err(StateError::file("open", &path))?;
    for entry in Entries::new(BufReader::with_capacity(256 * 1024, file), &path) {
        let (c, digest) = entry?;
        if c == index && keep(digest.bucket) {
            each(digest);
        }
    }
    Ok(())
}

/// The digests file's entries, streamed: `(collection index, digest)`; after an error, none.
pub struct Entries<R> {
    docs: BsonDocuments<R>,
    path: PathBuf,
    done: bool,
}

impl<R: Read> Entries<R> {
    /// `path` names the file in errors.
    pub fn new(input: R, path: &Path) -> Entries<R> {
        Entries {
            docs: BsonDocuments::new(input, path),
            path: path.to_owned(),
            done: false,
        }
    }
}

impl<R: Read> Iterator for Entries<R> {
    type Item = Result<(usize, DocDigest), StateError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let at = self.docs.offset();
        let next = match self.docs.next()? {
            Ok(bytes) => parse_entry(&bytes).ok_or_else(|| StateError::Corrupt {
                path: self.path.clone(),
                offset: at,
                why: "a digest entry without c, _id or a 16-byte d".into(),
            }),
            Err(e) => Err(e),
        };
        self.done = next.is_err();
        Some(next)
    }
}

/// `(collection index, digest)` of one entry.
fn parse_entry(bytes: &[u8]) -> Option<(usize, DocDigest)> {
    let doc = RawDocument::from_bytes(bytes).ok()?;
    let index = usize::try_from(doc.get_i32("c").ok()?).ok()?;
    let mut id = RawDocumentBuf::new();
    id.append(cstr!("_id"), doc.get("_id").ok()??);
    let d = match doc.get("d").ok()?? {
        RawBsonRef::Binary(b) if b.bytes.len() == 16 => {
            let mut raw = [0u8; 16];
            raw.copy_from_slice(b.bytes);
            u128::from_be_bytes(raw)
        }
        _ => return None,
    };
    Some((
        index,
        DocDigest {
            bucket: bucket_of(&id),
            id,
            digest: d,
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::fingerprint::digest_doc;
    use bson::rawdoc;

    #[test]
    fn digests_round_trip_by_collection_and_bucket() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = DigestWriter::create(dir.path()).unwrap();
        let a = digest_doc(&rawdoc! {"_id": 7, "v": 1});
        let b = digest_doc(&rawdoc! {"_id": "k", "v": 2});
        w.add(0, &a).unwrap();
        w.add(1, &b).unwrap();
        w.finish().unwrap();
        let end = EndFile {
            format: FORMAT.into(),
            version: FORMAT_VERSION,
            point: SnapshotPoint {
                kind: "wall_clock".into(),
                t: 0,
                i: 0,
                wall_time: "2026-12-05T00:00:00Z".into(),
            },
            collections: Vec::new(),
            digests: DIGESTS.into(),
        };
        end.write(dir.path()).unwrap();
        let end = EndFile::read(dir.path()).unwrap();
        let mut seen = Vec::new();
        recorded_in(dir.path(), &end, 1, |_| true, |d| seen.push(d)).unwrap();
        assert_eq!(seen, vec![b.clone()]);
        seen.clear();
        recorded_in(dir.path(), &end, 0, |k| k == a.bucket, |d| seen.push(d)).unwrap();
        assert_eq!(seen, vec![a]);
        assert!(
            end.write(dir.path()).is_err(),
            "never over an existing file"
        );
    }
}
