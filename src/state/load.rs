//! Restoring a snapshot into a server (`mongotape restore`, `replay --restore`), with the driver:
//! for each collection, on each database it goes to, the namespace dropped, the collection created
//! with the options its metadata holds (validator, collation, capped, time series, clustered, a
//! view's pipeline), its documents loaded in large unordered batches over several connections
//! ([`super::restore_batches`]), then its indexes built with one `createIndexes`. Memory is
//! bounded by the batch size times the connections, never by a collection.
//!
//! The driver rather than mongotape's own wire client: it pools the connections, splits a batch
//! at the server's message size, finds a replica set's primary and speaks TLS and SCRAM; the
//! documents go out as the raw bytes read from the file, so the one copy it adds per document is
//! small next to the server's insert (`docs/benchmarks.md`, "Restore").

use super::dump::{DumpCollection, SnapshotDir};
use super::error::StateError;
use super::layout;
use super::restore_batches::{describe, Copy, LoadCounters};
use bson::{doc, Bson, Document};
use mongodb::options::ClientOptions;
use mongodb::{Client, Database};
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::time::Instant;

/// Documents per `insert`.
pub const DEFAULT_BATCH: usize = 1000;
/// Connections loading at once (`docs/benchmarks.md`, "Restore": with the server on the same
/// two cores, one connection loaded fastest; more pay off only where the server has cores of
/// its own to insert with).
pub const DEFAULT_CONNECTIONS: usize = 1;

/// Where each database of a snapshot goes on the target: `--db-map`, then one copy per clone
/// (`DB_1`..`DB_K`), as the replay maps them.
#[derive(Debug, Clone, Default)]
pub struct DbTargets {
    pub map: Vec<(String, String)>,
    /// `--clones K`: with K > 1, database `DB` goes to `DB_1`..`DB_K`.
    pub clones: u32,
}

impl DbTargets {
    /// The databases `db` is restored into.
    pub fn of(&self, db: &str) -> Vec<String> {
        let base = self
            .map
            .iter()
            .find(|(from, _)| from == db)
            .map_or(db, |(_, to)| to.as_str());
        match self.clones {
            0 | 1 => vec![base.to_owned()],
            k => (1..=k).map(|i| format!("{base}_{i}")).collect(),
        }
    }
}

/// How to restore.
#[derive(Debug, Clone)]
pub struct LoadOptions {
    /// The target's connection string.
    pub uri: String,
    pub batch_size: usize,
    pub connections: usize,
    pub databases: DbTargets,
    /// Updated as documents go in, for a progress bar.
    pub counters: Option<Arc<LoadCounters>>,
}

impl LoadOptions {
    pub fn new(uri: impl Into<String>) -> LoadOptions {
        LoadOptions {
            uri: uri.into(),
            batch_size: DEFAULT_BATCH,
            connections: DEFAULT_CONNECTIONS,
            databases: DbTargets::default(),
            counters: None,
        }
    }
}

/// One collection restored into one database.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LoadedCollection {
    /// The namespace on the target (`db.collection`, after `--db-map` and clones).
    pub ns: String,
    /// `collection`, `view` or `timeseries`.
    #[serde(rename = "type")]
    pub kind: String,
    pub documents: u64,
    /// BSON bytes of the documents.
    pub bytes: u64,
    /// Indexes built after the load (the `_id` index is the collection's own).
    pub indexes: u64,
}

/// What a restore did, and how fast.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LoadReport {
    /// Seconds from the first drop to the last index built.
    pub seconds: f64,
    /// Documents written (each copy counted: a snapshot restored into two clones counts twice).
    pub documents: u64,
    /// BSON bytes written.
    pub bytes: u64,
    pub docs_per_s: f64,
    /// Megabytes (10^6 bytes) per second.
    pub mb_per_s: f64,
    pub indexes: u64,
    pub collections: Vec<LoadedCollection>,
}

impl LoadReport {
    fn finish(&mut self, seconds: f64) {
        self.seconds = seconds;
        self.documents = self.collections.iter().map(|c| c.documents).sum();
        self.bytes = self.collections.iter().map(|c| c.bytes).sum();
        self.indexes = self.collections.iter().map(|c| c.indexes).sum();
        let s = seconds.max(1e-9);
        self.docs_per_s = self.documents as f64 / s;
        self.mb_per_s = self.bytes as f64 / s / 1e6;
    }
}

/// [`load`] with a progress bar on stderr (documents out of the snapshot's, when its manifest
/// says how many), cleared when done.
pub async fn load_showing_progress(
    dir: &SnapshotDir,
    opts: &LoadOptions,
) -> Result<LoadReport, StateError> {
    let counters = Arc::new(LoadCounters::default());
    let copies = dir
        .collections
        .first()
        .map_or(1, |c| opts.databases.of(&c.db).len() as u64);
    let total = dir.manifest.as_ref().map(|m| m.documents * copies);
    let bar = match total {
        Some(n) => indicatif::ProgressBar::new(n),
        None => indicatif::ProgressBar::new_spinner(),
    };
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{spinner} restore [{elapsed_precise}] {wide_bar} {pos}/{len} documents {msg}",
        )
        .expect("static template"),
    );
    let ticker = {
        let (bar, counters) = (bar.clone(), counters.clone());
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(std::time::Duration::from_millis(200)).await;
                bar.set_position(
                    counters
                        .documents
                        .load(std::sync::atomic::Ordering::Relaxed),
                );
                let mb = counters.bytes.load(std::sync::atomic::Ordering::Relaxed) as f64 / 1e6;
                bar.set_message(format!("{mb:.1} MB"));
            }
        })
    };
    let opts = LoadOptions {
        counters: Some(counters),
        ..opts.clone()
    };
    let result = load(dir, &opts).await;
    ticker.abort();
    bar.finish_and_clear();
    result
}

/// A driver client for the target, with a pool as large as the loaders.
pub async fn connect(uri: &str, connections: usize) -> Result<Client, StateError> {
    let mut opts = ClientOptions::parse(uri)
        .await
        .map_err(|e| StateError::target("parse the connection string", e))?;
    opts.app_name
        .get_or_insert_with(|| "mongotape-restore".into());
    opts.max_pool_size = Some(connections.max(1) as u32 + 1);
    Client::with_options(opts).map_err(|e| StateError::target("connect", e))
}

/// Restores every collection of `dir` into the target.
pub async fn load(dir: &SnapshotDir, opts: &LoadOptions) -> Result<LoadReport, StateError> {
    let client = connect(&opts.uri, opts.connections).await?;
    let result = load_with(&client, dir, opts).await;
    client.shutdown().await;
    result
}

/// [`load`] with a client of the caller's.
pub async fn load_with(
    client: &Client,
    dir: &SnapshotDir,
    opts: &LoadOptions,
) -> Result<LoadReport, StateError> {
    let started = Instant::now();
    let mut report = LoadReport::default();
    // A view reads collections: created after them.
    let mut order: Vec<&DumpCollection> = dir.collections.iter().collect();
    order.sort_by_key(|c| kind_of(c) == "view");
    for c in order {
        let databases = opts.databases.of(&c.db);
        for db in &databases {
            create(&client.database(db), dir, c).await?;
        }
        let (documents, bytes) = match (dir.documents(c)?, &c.data) {
            (Some(docs), Some(file)) if kind_of(c) != "view" => {
                let copy = Copy {
                    client,
                    name: &c.name,
                    databases: &databases,
                    file,
                    batch_size: opts.batch_size,
                    connections: opts.connections,
                    ordered: is_capped(c),
                    counters: opts.counters.clone(),
                };
                copy.run(docs).await?
            }
            _ => (0, 0),
        };
        for db in &databases {
            let indexes = build_indexes(&client.database(db), dir, c).await?;
            report.collections.push(LoadedCollection {
                ns: format!("{db}.{}", c.name),
                kind: kind_of(c).to_owned(),
                documents,
                bytes,
                indexes,
            });
        }
    }
    report.finish(started.elapsed().as_secs_f64());
    Ok(report)
}

fn kind_of(c: &DumpCollection) -> &str {
    c.metadata
        .as_ref()
        .map_or("collection", |m| m.kind.as_str())
}

fn is_capped(c: &DumpCollection) -> bool {
    c.metadata
        .as_ref()
        .is_some_and(|m| m.options.get_bool("capped").unwrap_or(false))
}

/// The metadata file a collection's options and indexes came from, for errors.
fn metadata_path(dir: &SnapshotDir, c: &DumpCollection) -> std::path::PathBuf {
    let folder = dir.path.join(layout::escape_name(&c.db));
    let plain = folder.join(layout::metadata_file(&c.name, false));
    match plain.exists() {
        true => plain,
        false => folder.join(layout::metadata_file(&c.name, true)),
    }
}

/// Drops `db.coll` and creates it again with the metadata's options (a collection without
/// metadata is created plainly by its first insert).
async fn create(db: &Database, dir: &SnapshotDir, c: &DumpCollection) -> Result<(), StateError> {
    let ns = format!("{}.{}", db.name(), c.name);
    db.collection::<Document>(&c.name)
        .drop()
        .await
        .map_err(|e| StateError::target(format!("drop {ns}"), describe(&e)))?;
    let Some(meta) = &c.metadata else {
        return Ok(());
    };
    let mut command = doc! {"create": &c.name};
    for (key, value) in &meta.options {
        command.insert(key, value.clone());
    }
    db.run_command(command)
        .await
        .map_err(|e| StateError::Target {
            action: format!(
                "create {ns} with the options of {}",
                metadata_path(dir, c).display()
            ),
            message: describe(&e),
        })?;
    Ok(())
}

/// Builds the metadata's indexes on `db.coll` after its documents are in: all in one
/// `createIndexes`. The `_id` index and a clustered collection's key come with the collection.
async fn build_indexes(
    db: &Database,
    dir: &SnapshotDir,
    c: &DumpCollection,
) -> Result<u64, StateError> {
    let Some(meta) = c.metadata.as_ref().filter(|m| m.kind != "view") else {
        return Ok(0);
    };
    let specs: Vec<Bson> = meta
        .indexes
        .iter()
        .filter(|i| i.get_str("name").ok() != Some("_id_"))
        .filter(|i| !i.get_bool("clustered").unwrap_or(false))
        .map(|i| {
            let mut spec = i.clone();
            // Servers before 4.4 wrote the namespace into each spec; newer ones refuse it.
            spec.remove("ns");
            Bson::Document(spec)
        })
        .collect();
    if specs.is_empty() {
        return Ok(0);
    }
    let count = specs.len() as u64;
    let command = doc! {"createIndexes": &c.name, "indexes": specs};
    db.run_command(command)
        .await
        .map_err(|e| StateError::Target {
            action: format!(
                "createIndexes on {}.{} with the indexes of {}",
                db.name(),
                c.name,
                metadata_path(dir, c).display()
            ),
            message: describe(&e),
        })?;
    Ok(count)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn databases_are_mapped_then_cloned_as_the_replay_maps_them() {
        let t = DbTargets {
            map: vec![("shop".into(), "staging".into())],
            clones: 1,
        };
        assert_eq!(t.of("shop"), vec!["staging"]);
        assert_eq!(t.of("billing"), vec!["billing"]);
        let t = DbTargets { clones: 2, ..t };
        assert_eq!(t.of("shop"), vec!["staging_1", "staging_2"]);
    }

    #[test]
    fn rates_come_from_the_collections() {
        let mut r = LoadReport {
            collections: vec![LoadedCollection {
                documents: 1000,
                bytes: 2_000_000,
                indexes: 2,
                ..LoadedCollection::default()
            }],
            ..LoadReport::default()
        };
        r.finish(2.0);
        assert_eq!((r.documents, r.bytes, r.indexes), (1000, 2_000_000, 2));
        assert_eq!((r.docs_per_s, r.mb_per_s), (500.0, 1.0));
    }
}
