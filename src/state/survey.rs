//! Fingerprinting collections on a server, with the driver: which collections the patterns name
//! now, each one's documents streamed through [`super::fingerprint`] one batch at a time (memory
//! bounded by the batch, never by a collection), the server's `dbHash` where it answers one, and
//! the point in time the reads were answered at (the latest `operationTime`).

use super::error::StateError;
use super::fingerprint::{digest_doc, Buckets, DocDigest, Sum};
use super::layout::SnapshotPoint;
use super::pattern::{self, NsPattern};
use bson::{doc, Bson, Document, RawDocumentBuf, Timestamp};
use mongodb::options::ClientOptions;
use mongodb::{Client, Database};

/// Documents per batch read.
pub const BATCH: u32 = 1000;

/// A connection to the server fingerprinted, and the latest cluster time it answered at.
pub struct Surveyor {
    client: Client,
    latest: Option<Timestamp>,
}

/// One collection read whole: its count and hash, per bucket too, and the server's `dbHash`.
#[derive(Debug, Clone)]
pub struct Scanned {
    pub sum: Sum,
    pub buckets: Buckets,
    pub db_hash: Option<String>,
}

/// `host:port` as a connection string; a connection string as it is.
pub fn uri_of(target: &str) -> String {
    match target.contains("://") {
        true => target.to_owned(),
        false => format!("mongodb://{target}/"),
    }
}

impl Surveyor {
    pub async fn connect(uri: &str) -> Result<Surveyor, StateError> {
        let mut opts = ClientOptions::parse(uri_of(uri))
            .await
            .map_err(|e| StateError::source("parse the connection string", e))?;
        opts.app_name
            .get_or_insert_with(|| "mongotape-state".into());
        let client = Client::with_options(opts).map_err(|e| StateError::source("connect", e))?;
        Ok(Surveyor {
            client,
            latest: None,
        })
    }

    /// The namespaces (`db.coll`) of the plain collections the patterns name, in order: views
    /// hold no documents of their own.
    pub async fn namespaces(&self, patterns: &[NsPattern]) -> Result<Vec<String>, StateError> {
        let mut out = Vec::new();
        for db in pattern::databases(patterns) {
            let action = format!("listCollections on {db}");
            let reply = self
                .client
                .database(&db)
                .run_command(doc! {"listCollections": 1, "nameOnly": true})
                .await
                .map_err(|e| StateError::source(&action, e))?;
            let batch = reply
                .get_document("cursor")
                .and_then(|c| c.get_array("firstBatch"))
                .map_err(|e| StateError::source(&action, e))?;
            let mut names: Vec<String> = batch
                .iter()
                .filter_map(Bson::as_document)
                .filter(|c| c.get_str("type").unwrap_or("collection") == "collection")
                .filter_map(|c| c.get_str("name").ok().map(str::to_owned))
                .filter(|name| pattern::any_matches(patterns, &db, name))
                .collect();
            names.sort();
            out.extend(names.into_iter().map(|n| format!("{db}.{n}")));
        }
        Ok(out)
    }

    /// Reads `ns` whole: `each` sees every document's digest.
    pub async fn scan(
        &mut self,
        ns: &str,
        mut each: impl FnMut(&DocDigest) -> Result<(), StateError>,
    ) -> Result<Scanned, StateError> {
        let (db, coll) = ns.split_once('.').unwrap_or((ns, ""));
        let db = self.client.database(db);
        let db_hash = self.db_hash(&db, coll).await;
        let action = format!("find on {ns}");
        let mut cursor = db
            .collection::<RawDocumentBuf>(coll)
            .find(doc! {})
            .batch_size(BATCH)
            .await
            .map_err(|e| StateError::source(&action, e))?;
        let mut scanned = Scanned {
            sum: Sum::default(),
            buckets: Buckets::default(),
            db_hash,
        };
        while cursor
            .advance()
            .await
            .map_err(|e| StateError::source(&action, e))?
        {
            let d = digest_doc(cursor.current());
            scanned.sum.add(d.digest);
            scanned.buckets.add(&d);
            each(&d)?;
        }
        Ok(scanned)
    }

    /// The server's `dbHash` of one collection; `None` where it has none (the command unknown,
    /// refused, or silent about the collection). Its `operationTime` is noted either way.
    async fn db_hash(&mut self, db: &Database, coll: &str) -> Option<String> {
        let reply = db
            .run_command(doc! {"dbHash": 1, "collections": [coll]})
            .await
            .ok()?;
        self.note(&reply);
        match reply.get_document("collections").ok()?.get(coll)? {
            Bson::String(s) if !s.is_empty() => Some(s.clone()),
            _ => None,
        }
    }

    /// Notes a reply's `operationTime` when it is the latest.
    fn note(&mut self, reply: &Document) {
        if let Ok(t) = reply.get_timestamp("operationTime") {
            if self
                .latest
                .is_none_or(|l| (t.time, t.increment) > (l.time, l.increment))
            {
                self.latest = Some(t);
            }
        }
    }

    /// The point the reads so far were answered at: the latest `operationTime`, or the wall
    /// clock `started` without one.
    pub async fn point(&mut self, started: String) -> SnapshotPoint {
        if self.latest.is_none() {
            if let Ok(reply) = self
                .client
                .database("admin")
                .run_command(doc! {"ping": 1})
                .await
            {
                self.note(&reply);
            }
        }
        match self.latest {
            Some(t) => SnapshotPoint {
                kind: "cluster_time".into(),
                t: t.time,
                i: t.increment,
                wall_time: started,
            },
            None => SnapshotPoint {
                kind: "wall_clock".into(),
                t: 0,
                i: 0,
                wall_time: started,
            },
        }
    }

    pub async fn close(self) {
        self.client.shutdown().await;
    }
}
