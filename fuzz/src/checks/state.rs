//! The snapshot folder's parsers (`mongotape::state`) over any bytes.

use super::mode;
use mongotape::state::bsonfile::{BsonDocuments, MAX_DOCUMENT_LEN};
use mongotape::state::DumpMetadata;
use std::path::Path;

/// An even first byte: the rest is a `.bson` file (documents one after another), read to its end
/// or its first error; every document handed out is whole and checked, they are the file's
/// first bytes in order, nothing follows an error, and the error names the file and an offset
/// at a document boundary. Odd: the rest is a `COLL.metadata.json`.
pub fn snapshot_bson(data: &[u8]) {
    let (m, rest) = mode(data);
    if m & 1 == 1 {
        if let Err(e) = DumpMetadata::parse(rest, Path::new("f.metadata.json")) {
            assert!(e.to_string().starts_with("f.metadata.json: "), "{e}");
        }
        return;
    }
    let mut docs = BsonDocuments::new(rest, Path::new("db/c.bson"));
    let mut at = 0usize;
    while let Some(next) = docs.next() {
        match next {
            Ok(doc) => {
                assert!(doc.len() >= 5 && doc.len() <= MAX_DOCUMENT_LEN);
                assert_eq!(
                    &rest[at..at + doc.len()],
                    &doc[..],
                    "a document is not the file's bytes"
                );
                at += doc.len();
                assert_eq!(docs.offset(), at as u64);
                assert!(bson::RawDocument::from_bytes(&doc).is_ok());
            }
            Err(e) => {
                let text = e.to_string();
                assert!(
                    text.starts_with(&format!("db/c.bson: corrupt at byte offset {at}:")),
                    "{text}"
                );
                assert!(docs.next().is_none(), "a document after an error");
                return;
            }
        }
    }
    assert_eq!(at, rest.len(), "a clean end before the end of the file");
}

/// A `--restore-setup` file (`mongotape::state::restore_plan::SetupCommand::parse`) over any
/// bytes: never a panic; an error names the file; every entry read has a target, a database and
/// a non-empty command whose name is its first key.
pub fn restore_setup(data: &[u8]) {
    use mongotape::state::restore_plan::SetupCommand;
    match SetupCommand::parse(data, Path::new("setup.json")) {
        Ok(list) => {
            for s in &list {
                assert!(!s.target.is_empty() && !s.db.is_empty() && !s.command.is_empty());
                assert_eq!(Some(s.name()), s.command.keys().next().map(String::as_str));
            }
        }
        Err(e) => assert!(e.to_string().starts_with("setup.json: "), "{e}"),
    }
}

/// An even first byte: the rest is a `mongotape-end.digests` file, read to its end or its first
/// error; every entry handed out has a bucket in range and an `_id` document, nothing follows an
/// error, and the error names the file. Odd: the rest is a `mongotape-end.json`, whose error
/// names its file, and whose digests name never leaves the folder.
pub fn state_end(data: &[u8]) {
    use mongotape::state::end::{EndFile, Entries};
    use mongotape::state::fingerprint::BUCKETS;
    let (m, rest) = mode(data);
    if m & 1 == 1 {
        match EndFile::parse(rest, Path::new("s/mongotape-end.json")) {
            Ok(end) => assert!(!end.digests.contains('/') && end.digests != ".."),
            Err(e) => assert!(e.to_string().starts_with("s/mongotape-end.json: "), "{e}"),
        }
        return;
    }
    let mut entries = Entries::new(rest, Path::new("s/mongotape-end.digests"));
    while let Some(next) = entries.next() {
        match next {
            Ok((_, d)) => {
                assert!(d.bucket < BUCKETS);
                assert!(d.id.get("_id").is_ok_and(|v| v.is_some()));
            }
            Err(e) => {
                let text = e.to_string();
                assert!(text.starts_with("s/mongotape-end.digests: "), "{text}");
                assert!(entries.next().is_none(), "an entry after an error");
                return;
            }
        }
    }
}
