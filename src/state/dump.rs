//! Opening a snapshot folder for reading: one mongotape wrote, or one `mongodump` wrote (with
//! `oplog.bson` when dumped with `--oplog`). Lists its collections with their metadata and
//! streams each collection's documents ([`BsonDocuments`]), decompressing `.gz` files. Its point
//! in time is the manifest's; for a mongodump folder, the `ts` of the oplog's last entry; neither
//! (a dump without `--oplog`): unknown, and said so. The server's own databases and `system.*`
//! collections of a dump are never listed.

use super::bsonfile::BsonDocuments;
use super::error::StateError;
use super::layout::{self, FileKind, Manifest, SnapshotPoint};
use super::pattern;
use bson::{Bson, Document, RawDocument};
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

/// The largest metadata or manifest file read (they hold options and index specifications).
const MAX_JSON_LEN: u64 = 16 * 1024 * 1024;

/// A collection's `COLL.metadata.json`, by mongodump's keys.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DumpMetadata {
    pub options: Document,
    pub indexes: Vec<Document>,
    pub uuid: String,
    pub collection_name: String,
    /// `collection`, `view`, `timeseries` (mongodump leaves it out for a plain collection).
    pub kind: String,
}

impl DumpMetadata {
    /// Parses a metadata file's bytes (extended JSON, canonical or relaxed).
    pub fn parse(bytes: &[u8], path: &Path) -> Result<DumpMetadata, StateError> {
        let bad = |why: String| StateError::Corrupt {
            path: path.to_owned(),
            offset: 0,
            why,
        };
        let value: serde_json::Value =
            serde_json::from_slice(bytes).map_err(|e| bad(format!("not JSON: {e}")))?;
        let serde_json::Value::Object(map) = value else {
            return Err(bad("not a JSON object".into()));
        };
        let doc = |key: &str| -> Result<Option<Bson>, StateError> {
            map.get(key)
                .map(|v| Bson::try_from(v.clone()).map_err(|e| bad(format!("{key}: {e}"))))
                .transpose()
        };
        let options = match doc("options")? {
            Some(Bson::Document(d)) => d,
            None => Document::new(),
            Some(_) => return Err(bad("options is not an object".into())),
        };
        let indexes = match doc("indexes")? {
            Some(Bson::Array(a)) => a
                .into_iter()
                .map(|i| match i {
                    Bson::Document(d) => Ok(d),
                    _ => Err(bad("an index is not an object".into())),
                })
                .collect::<Result<_, _>>()?,
            None => Vec::new(),
            Some(_) => return Err(bad("indexes is not an array".into())),
        };
        let text = |key: &str| {
            map.get(key)
                .and_then(|v| v.as_str())
                .unwrap_or_default()
                .to_owned()
        };
        let kind = match text("type") {
            t if t.is_empty() => "collection".to_owned(),
            t => t,
        };
        Ok(DumpMetadata {
            options,
            indexes,
            uuid: text("uuid"),
            collection_name: text("collectionName"),
            kind,
        })
    }
}

/// One collection of a snapshot folder.
#[derive(Debug, Clone)]
pub struct DumpCollection {
    pub db: String,
    pub name: String,
    pub metadata: Option<DumpMetadata>,
    /// `COLL.bson` or `COLL.bson.gz`; none for a view.
    pub data: Option<PathBuf>,
}

/// A snapshot folder, opened.
#[derive(Debug)]
pub struct SnapshotDir {
    pub path: PathBuf,
    /// Written by mongotape: its `mongotape-snapshot.json`.
    pub manifest: Option<Manifest>,
    /// The point in time it holds; `None` for a dump without `--oplog`.
    pub point: Option<SnapshotPoint>,
    /// By database, then collection name.
    pub collections: Vec<DumpCollection>,
}

/// Opens `path` for reading, decompressing a `.gz`.
fn open_stream(path: &Path) -> Result<Box<dyn Read + Send>, StateError> {
    let file = File::open(path).map_err(StateError::file("open", path))?;
    let file = BufReader::with_capacity(256 * 1024, file);
    Ok(match path.extension().is_some_and(|e| e == "gz") {
        true => Box::new(flate2::read::MultiGzDecoder::new(file)),
        false => Box::new(file),
    })
}

/// A small file's bytes (decompressed), refused past [`MAX_JSON_LEN`].
fn read_small(path: &Path) -> Result<Vec<u8>, StateError> {
    let mut bytes = Vec::new();
    open_stream(path)?
        .take(MAX_JSON_LEN + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| StateError::Corrupt {
            path: path.to_owned(),
            offset: bytes.len() as u64,
            why: format!("cannot read: {e}"),
        })?;
    if bytes.len() as u64 > MAX_JSON_LEN {
        return Err(StateError::Corrupt {
            path: path.to_owned(),
            offset: MAX_JSON_LEN,
            why: format!("longer than {MAX_JSON_LEN} bytes"),
        });
    }
    Ok(bytes)
}

fn entries(dir: &Path) -> Result<Vec<(String, std::fs::FileType)>, StateError> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(StateError::file("list", dir))? {
        let entry = entry.map_err(StateError::file("list", dir))?;
        let kind = entry.file_type().map_err(StateError::file("list", dir))?;
        out.push((entry.file_name().to_string_lossy().into_owned(), kind));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

impl SnapshotDir {
    /// Reads the folder's layout, its metadata files and its point in time (documents are read
    /// later, as a stream, by [`SnapshotDir::documents`]).
    pub fn open(path: &Path) -> Result<SnapshotDir, StateError> {
        let not = |why: &str| StateError::NotASnapshot {
            path: path.to_owned(),
            why: why.to_owned(),
        };
        if !std::fs::metadata(path).is_ok_and(|m| m.is_dir()) {
            return Err(not("not a folder"));
        }
        let manifest_path = path.join(layout::MANIFEST);
        let manifest: Option<Manifest> = match manifest_path.exists() {
            true => Some(
                serde_json::from_slice(&read_small(&manifest_path)?).map_err(|e| {
                    StateError::Corrupt {
                        path: manifest_path.clone(),
                        offset: 0,
                        why: e.to_string(),
                    }
                })?,
            ),
            false => None,
        };
        let mut collections = Vec::new();
        for (db, kind) in entries(path)? {
            if kind.is_dir() && !pattern::SERVER_DATABASES.contains(&db.as_str()) {
                collections.extend(Self::database(&path.join(&db), &db)?);
            }
        }
        let oplog = path.join(layout::OPLOG);
        let point = match &manifest {
            Some(m) => Some(m.point.clone()),
            None if oplog.is_file() => last_oplog_ts(&oplog)?,
            None => None,
        };
        if manifest.is_none() && collections.is_empty() && point.is_none() {
            return Err(not(
                "no mongotape-snapshot.json, no DB/COLL.bson or .metadata.json",
            ));
        }
        Ok(SnapshotDir {
            path: path.to_owned(),
            manifest,
            point,
            collections,
        })
    }

    /// The collections of one database folder.
    fn database(dir: &Path, db: &str) -> Result<Vec<DumpCollection>, StateError> {
        let mut by_name: BTreeMap<String, DumpCollection> = BTreeMap::new();
        for (file, kind) in entries(dir)? {
            let Some((name, which, _)) = layout::collection_of(&file) else {
                continue;
            };
            if !kind.is_file() || !pattern::is_user_namespace(db, &name) {
                continue;
            }
            let entry = by_name
                .entry(name.clone())
                .or_insert_with(|| DumpCollection {
                    db: db.to_owned(),
                    name,
                    metadata: None,
                    data: None,
                });
            let path = dir.join(&file);
            match which {
                FileKind::Data => entry.data = Some(path),
                FileKind::Metadata => {
                    entry.metadata = Some(DumpMetadata::parse(&read_small(&path)?, &path)?)
                }
            }
        }
        Ok(by_name.into_values().collect())
    }

    /// The documents of one collection, streamed (none for a view).
    pub fn documents(
        &self,
        c: &DumpCollection,
    ) -> Result<Option<BsonDocuments<Box<dyn Read + Send>>>, StateError> {
        c.data
            .as_ref()
            .map(|path| Ok(BsonDocuments::new(open_stream(path)?, path)))
            .transpose()
    }
}

/// The `ts` of the last entry of a mongodump `oplog.bson`: the point its dump is consistent at.
fn last_oplog_ts(path: &Path) -> Result<Option<SnapshotPoint>, StateError> {
    let mut last = None;
    for doc in BsonDocuments::new(open_stream(path)?, path) {
        last = Some(doc?);
    }
    let Some(doc) = last else { return Ok(None) };
    let ts = RawDocument::from_bytes(&doc)
        .ok()
        .and_then(|d| d.get_timestamp("ts").ok())
        .ok_or_else(|| StateError::Corrupt {
            path: path.to_owned(),
            offset: 0,
            why: "the last oplog entry has no timestamp ts".into(),
        })?;
    Ok(Some(SnapshotPoint {
        kind: "oplog".into(),
        t: ts.time,
        i: ts.increment,
        // A cluster time's seconds are the primary's clock.
        wall_time: crate::capture::rfc3339(u64::from(ts.time) * 1_000_000_000),
    }))
}
