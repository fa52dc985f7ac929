//! Taking a snapshot from a server with the MongoDB driver: the collections the patterns name
//! (`listCollections`: options and type), their indexes (`listIndexes`), and every document read
//! at one cluster time T0. The first collection's read in a snapshot session (`readConcern:
//! {level: "snapshot"}`) gets T0 from the server (`atClusterTime`); the session reads every later
//! collection at that same T0. A server without snapshot reads (a standalone) is read plainly and
//! the point is the wall clock, said so in the manifest. Documents stream from the cursor to the
//! file one batch at a time: memory is bounded by the batch size, never by a collection.

use super::error::StateError;
use super::layout::{ClusterTime, Manifest, ReadClock, SnapshotPoint};
use super::pattern::{self, NsPattern};
use super::writer::SnapshotWriter;
use bson::{doc, Bson, Document, RawDocumentBuf};
use mongodb::error::ErrorKind;
use mongodb::options::ClientOptions;
use mongodb::{Client, ClientSession, Database};
use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

/// The server's answer to a snapshot read where it has none.
const SNAPSHOT_UNAVAILABLE: i32 = 246;
/// Documents per batch: what a snapshot holds in memory at once (with their bytes).
pub const DEFAULT_BATCH: u32 = 1000;

/// What to snapshot and where.
#[derive(Debug, Clone)]
pub struct SnapshotOptions {
    /// The source's connection string (credentials are used, never written down).
    pub uri: String,
    pub patterns: Vec<NsPattern>,
    pub out: PathBuf,
    pub gzip: bool,
    pub batch_size: u32,
    /// `--redact values`: every string and binary value hashed under this key, the capture's
    /// own under `record --snapshot` ([`crate::redact::stored_document`]).
    pub redact: Option<crate::redact::ValueKey>,
}

/// One collection to read: its name, its `listCollections` entry.
struct Listed {
    db: String,
    name: String,
    kind: String,
    spec: Document,
}

fn unix_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// Takes the snapshot; `on_point` is told T0 as soon as the first read fixed it (before the
/// documents are read), so a recording can note it at once.
pub async fn take(
    opts: &SnapshotOptions,
    on_point: impl FnMut(&SnapshotPoint) + Send,
) -> Result<Manifest, StateError> {
    let mut writer = SnapshotWriter::create(&opts.out, opts.gzip)?;
    let mut client_opts = ClientOptions::parse(&opts.uri)
        .await
        .map_err(|e| StateError::source("parse the connection string", e))?;
    client_opts
        .app_name
        .get_or_insert_with(|| "mongotape-snapshot".into());
    let client = Client::with_options(client_opts).map_err(|e| StateError::source("connect", e))?;
    let started = unix_ns();
    let mut listed = Vec::new();
    for db in pattern::databases(&opts.patterns) {
        listed.extend(list(&client.database(&db), &opts.patterns).await?);
    }
    // Views hold no documents: the collections first, so T0 comes from a real read.
    listed.sort_by_key(|c| c.kind == "view");
    let mut reader = Reader::start(&client, opts.batch_size, started, Box::new(on_point)).await?;
    reader.redact = opts.redact.clone();
    if listed.iter().all(|c| c.kind == "view") {
        let db = pattern::databases(&opts.patterns).swap_remove(0);
        reader
            .fix_point(&client.database(&db), "mongotape.snapshot.probe")
            .await?;
    }
    for c in &listed {
        let db = client.database(&c.db);
        let indexes = indexes(&db, c).await?;
        let mut file = writer.collection(&c.db, &c.name, &c.kind, &metadata_json(c, indexes))?;
        if c.kind != "view" {
            reader.copy(&db, &c.name, &mut file).await?;
        }
        writer.close(file)?;
    }
    let point = reader.point.clone();
    let fixed_ns = reader.fixed_ns.unwrap_or(started);
    // The client's shutdown waits for every session to be dropped.
    drop(reader);
    client.shutdown().await;
    writer.read_clock = Some(ReadClock {
        started_ns: started,
        fixed_ns,
        finished_ns: unix_ns(),
    });
    writer.redaction = opts.redact.as_ref().map(|_| "values".to_owned());
    let patterns = opts.patterns.iter().map(|p| p.to_string()).collect();
    let manifest = writer.finish(point, &opts.uri, patterns, unix_ns())?;
    Ok(manifest)
}

/// The collections of `db` the patterns name, by name.
async fn list(db: &Database, patterns: &[NsPattern]) -> Result<Vec<Listed>, StateError> {
    let action = format!("listCollections on {}", db.name());
    let mut out = Vec::new();
    for spec in drain(db, doc! {"listCollections": 1}, &action).await? {
        let name = spec.get_str("name").unwrap_or_default().to_owned();
        if !pattern::any_matches(patterns, db.name(), &name) {
            continue;
        }
        let kind = spec.get_str("type").unwrap_or("collection").to_owned();
        out.push(Listed {
            db: db.name().to_owned(),
            name,
            kind,
            spec,
        });
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

/// Every document of a metadata command's cursor (`listCollections`, `listIndexes`): a
/// database's collection list or a collection's indexes, never its documents.
async fn drain(
    db: &Database,
    command: Document,
    action: &str,
) -> Result<Vec<Document>, StateError> {
    let mut cursor = db
        .run_cursor_command(command)
        .await
        .map_err(|e| StateError::source(action, e))?;
    let mut out = Vec::new();
    while cursor
        .advance()
        .await
        .map_err(|e| StateError::source(action, e))?
    {
        out.push(
            cursor
                .deserialize_current()
                .map_err(|e| StateError::source(action, e))?,
        );
    }
    Ok(out)
}

/// The collection's indexes (`listIndexes`); a view has none.
async fn indexes(db: &Database, c: &Listed) -> Result<Vec<Document>, StateError> {
    if c.kind == "view" {
        return Ok(Vec::new());
    }
    let action = format!("listIndexes on {}.{}", c.db, c.name);
    drain(db, doc! {"listIndexes": &c.name}, &action).await
}

/// mongodump's `COLL.metadata.json`: options, indexes, uuid (hex), collectionName, type; the
/// values in canonical extended JSON.
fn metadata_json(c: &Listed, indexes: Vec<Document>) -> serde_json::Value {
    let options = c.spec.get_document("options").cloned().unwrap_or_default();
    let uuid = match c.spec.get_document("info").ok().and_then(|i| i.get("uuid")) {
        Some(Bson::Binary(b)) => b.bytes.iter().map(|x| format!("{x:02x}")).collect(),
        _ => String::new(),
    };
    let indexes: Vec<Bson> = indexes.into_iter().map(Bson::Document).collect();
    serde_json::json!({
        "options": Bson::Document(options).into_canonical_extjson(),
        "indexes": Bson::Array(indexes).into_canonical_extjson(),
        "uuid": uuid,
        "collectionName": c.name,
        "type": c.kind,
    })
}

/// Told the point in time once it is fixed.
type OnPoint<'a> = Box<dyn FnMut(&SnapshotPoint) + Send + 'a>;

/// Reads collections at one point: a snapshot session, or plain reads on a standalone.
struct Reader<'a> {
    session: Option<ClientSession>,
    /// Told T0 once, as soon as the first read fixed it.
    on_point: Option<OnPoint<'a>>,
    batch_size: u32,
    point: SnapshotPoint,
    /// When the first read answered (Unix ns).
    fixed_ns: Option<u64>,
    redact: Option<crate::redact::ValueKey>,
}

impl<'a> Reader<'a> {
    async fn start(
        client: &Client,
        batch_size: u32,
        started: u64,
        on_point: OnPoint<'a>,
    ) -> Result<Reader<'a>, StateError> {
        let session = client
            .start_session()
            .snapshot(true)
            .await
            .map_err(|e| StateError::source("start a snapshot session", e))?;
        Ok(Reader {
            session: Some(session),
            on_point: Some(on_point),
            batch_size: batch_size.max(1),
            point: SnapshotPoint {
                kind: "cluster_time".into(),
                t: 0,
                i: 0,
                wall_time: crate::capture::rfc3339(started),
            },
            fixed_ns: None,
            redact: None,
        })
    }

    /// After the first read: T0 from the session, or the wall clock without one (then every
    /// later read is a plain one).
    fn note_point(&mut self, fixed: Option<bson::Timestamp>) {
        let Some(mut tell) = self.on_point.take() else {
            return;
        };
        self.fixed_ns = Some(unix_ns());
        match fixed {
            Some(ts) => (self.point.t, self.point.i) = (ts.time, ts.increment),
            None => self.point.kind = "wall_clock".into(),
        }
        {
            tell(&self.point);
        }
    }

    /// Fixes T0 without documents to read (every matched collection is a view, or none matched).
    async fn fix_point(&mut self, db: &Database, coll: &str) -> Result<(), StateError> {
        let mut file = super::writer::CollectionFile::discard();
        self.copy(db, coll, &mut file).await
    }

    /// Streams every document of `db.coll` into `file`.
    async fn copy(
        &mut self,
        db: &Database,
        coll: &str,
        file: &mut super::writer::CollectionFile,
    ) -> Result<(), StateError> {
        let action = format!("find on {}.{coll}", db.name());
        let collection = db.collection::<RawDocumentBuf>(coll);
        file.read_sent_ns = Some(unix_ns());
        if let Some(mut session) = self.session.take() {
            let found = collection
                .find(doc! {})
                .batch_size(self.batch_size)
                .session(&mut session)
                .await;
            match found {
                Ok(mut cursor) => {
                    self.note_point(session.snapshot_time());
                    file.read_at = self.read_point(&session, db.name(), coll);
                    while let Some(doc) = cursor.next(&mut session).await {
                        let doc = doc.map_err(|e| StateError::source(&action, e))?;
                        self.write(file, &doc, &action)?;
                    }
                    if self.point.kind == "cluster_time" {
                        self.session = Some(session);
                    }
                    return Ok(());
                }
                Err(e) if is_snapshot_unavailable(&e) => self.note_point(None),
                Err(e) => return Err(StateError::source(&action, e)),
            }
        }
        let mut cursor = collection
            .find(doc! {})
            .batch_size(self.batch_size)
            .await
            .map_err(|e| StateError::source(&action, e))?;
        while cursor
            .advance()
            .await
            .map_err(|e| StateError::source(&action, e))?
        {
            self.write(file, cursor.current(), &action)?;
        }
        Ok(())
    }

    /// One document into `file`, its values hashed under `--redact values`.
    fn write(
        &self,
        file: &mut super::writer::CollectionFile,
        doc: &bson::RawDocument,
        action: &str,
    ) -> Result<(), StateError> {
        let Some(key) = &self.redact else {
            return file.document(doc.as_bytes());
        };
        let hashed = crate::redact::stored_document(key, doc).map_err(|e| {
            StateError::source(action, format!("a document cannot be redacted: {e}"))
        })?;
        file.document(hashed.as_bytes())
    }

    /// The point the collection was actually read at: its snapshot read's `operationTime`.
    /// A server that does not keep `atClusterTime` for every read of a snapshot session reads a
    /// later collection at a later point; said, and kept in the manifest for the cut.
    fn read_point(&self, session: &ClientSession, db: &str, coll: &str) -> Option<ClusterTime> {
        let at = session.operation_time()?;
        let at = ClusterTime {
            t: at.time,
            i: at.increment,
        };
        let t0 = ClusterTime {
            t: self.point.t,
            i: self.point.i,
        };
        if at != t0 {
            tracing::warn!(
                "snapshot: {db}.{coll} was read at Timestamp({}, {}), not at T0 Timestamp({}, {}): \
                 the server did not keep atClusterTime; its own point is in the manifest",
                at.t,
                at.i,
                t0.t,
                t0.i
            );
        }
        Some(at)
    }
}

fn is_snapshot_unavailable(e: &mongodb::error::Error) -> bool {
    matches!(e.kind.as_ref(), ErrorKind::Command(c) if c.code == SNAPSHOT_UNAVAILABLE)
}
