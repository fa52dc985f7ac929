//! A collection's documents into the target: read from its `.bson` file on a blocking thread in
//! batches of `batch_size` documents, handed over a bounded channel to `connections` writers, each
//! sending unordered `insert`s (a capped collection: one writer, ordered, so its natural order
//! is kept). Memory holds at most `2 x connections + 1` batches: one being read, `connections`
//! queued, `connections` being written. Every batch remembers where its documents came from, so
//! a refused insert names the file and the document's byte offset.

use super::bsonfile::BsonDocuments;
use super::error::StateError;
use bson::RawDocumentBuf;
use mongodb::error::ErrorKind;
use mongodb::{Client, Collection};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tokio::sync::{mpsc, Mutex};

/// Documents and bytes loaded so far, for a progress bar (updated after every batch).
#[derive(Debug, Default)]
pub struct LoadCounters {
    pub documents: AtomicU64,
    pub bytes: AtomicU64,
}

/// One batch of documents, with the byte offset of each in its file.
struct Batch {
    docs: Vec<RawDocumentBuf>,
    offsets: Vec<u64>,
    bytes: u64,
}

/// Where one collection's documents go, and how.
pub(crate) struct Copy<'a> {
    pub client: &'a Client,
    /// The collection's name and the databases it goes to on the target.
    pub name: &'a str,
    pub databases: &'a [String],
    pub file: &'a Path,
    pub batch_size: usize,
    pub connections: usize,
    /// A capped collection: one writer, in order.
    pub ordered: bool,
    pub counters: Option<Arc<LoadCounters>>,
}

/// Error codes of a server that will not take writes at all (not a primary, not allowed, read
/// only): said plainly, as the target's refusal.
const REFUSALS: &[(i32, &str)] = &[
    (13, "the user may not write (Unauthorized)"),
    (
        10107,
        "the target is not a primary (NotWritablePrimary); restore into the primary",
    ),
    (
        13435,
        "the target is not a primary (NotPrimaryNoSecondaryOk); restore into the primary",
    ),
    (20, "the target is read-only (IllegalOperation)"),
];

/// A driver error's server code: a command's, or the first write error's.
pub(crate) fn code_of(e: &mongodb::error::Error) -> Option<i32> {
    match e.kind.as_ref() {
        ErrorKind::Command(c) => Some(c.code),
        ErrorKind::InsertMany(m) => m.write_errors.as_ref()?.first().map(|w| w.code),
        ErrorKind::Write(mongodb::error::WriteFailure::WriteError(w)) => Some(w.code),
        _ => None,
    }
}

/// The error's text, with the refusal said first when the target refuses writes.
pub(crate) fn describe(e: &mongodb::error::Error) -> String {
    match code_of(e).and_then(|c| REFUSALS.iter().find(|(code, _)| *code == c)) {
        Some((_, why)) => format!("the target refuses writes: {why}: {e}"),
        None => e.to_string(),
    }
}

impl Copy<'_> {
    /// Loads every document; returns the documents and bytes read from the file (each written
    /// once per database).
    pub async fn run(
        &self,
        docs: BsonDocuments<Box<dyn Read + Send>>,
    ) -> Result<(u64, u64), StateError> {
        let writers = if self.ordered {
            1
        } else {
            self.connections.max(1)
        };
        let (tx, rx) = mpsc::channel::<Batch>(writers);
        let batch_size = self.batch_size.max(1);
        let path = self.file.to_owned();
        let reader = tokio::task::spawn_blocking(move || read_batches(docs, &path, batch_size, tx));
        let rx = Arc::new(Mutex::new(rx));
        let mut tasks = tokio::task::JoinSet::new();
        for _ in 0..writers {
            let rx = rx.clone();
            let targets: Vec<Collection<RawDocumentBuf>> = self
                .databases
                .iter()
                .map(|db| self.client.database(db).collection(self.name))
                .collect();
            let (ordered, file, counters) =
                (self.ordered, self.file.to_owned(), self.counters.clone());
            tasks.spawn(async move { write_batches(rx, targets, ordered, file, counters).await });
        }
        let mut failed = None;
        while let Some(done) = tasks.join_next().await {
            let result = done.unwrap_or_else(|e| Err(StateError::target("insert", e)));
            if let (Err(e), None) = (result, &failed) {
                failed = Some(e);
                // The reader stops once nobody takes its batches.
                rx.lock().await.close();
            }
        }
        let read = reader
            .await
            .unwrap_or_else(|e| Err(StateError::target("read the documents", e)));
        match (failed, read) {
            (Some(e), _) => Err(e),
            (None, Err(e)) => Err(e),
            (None, Ok(counts)) => Ok(counts),
        }
    }
}

/// The reader's side: batches until the file ends, a corrupt document (its error), or the
/// writers stop taking them.
fn read_batches(
    mut docs: BsonDocuments<Box<dyn Read + Send>>,
    path: &Path,
    batch_size: usize,
    tx: mpsc::Sender<Batch>,
) -> Result<(u64, u64), StateError> {
    let (mut documents, mut bytes) = (0u64, 0u64);
    loop {
        let mut batch = Batch {
            docs: Vec::with_capacity(batch_size),
            offsets: Vec::with_capacity(batch_size),
            bytes: 0,
        };
        while batch.docs.len() < batch_size {
            let offset = docs.offset();
            let Some(doc) = docs.next() else { break };
            let doc = doc?;
            batch.bytes += doc.len() as u64;
            batch.offsets.push(offset);
            // Already walked by the reader: a whole, well-formed document.
            let raw = RawDocumentBuf::from_bytes(doc).map_err(|e| StateError::Corrupt {
                path: path.to_owned(),
                offset,
                why: e.to_string(),
            })?;
            batch.docs.push(raw);
        }
        if batch.docs.is_empty() {
            return Ok((documents, bytes));
        }
        documents += batch.docs.len() as u64;
        bytes += batch.bytes;
        if tx.blocking_send(batch).is_err() {
            return Ok((documents, bytes));
        }
    }
}

/// A writer's side: takes batches until none are left, inserting each into every target.
async fn write_batches(
    rx: Arc<Mutex<mpsc::Receiver<Batch>>>,
    targets: Vec<Collection<RawDocumentBuf>>,
    ordered: bool,
    file: PathBuf,
    counters: Option<Arc<LoadCounters>>,
) -> Result<(), StateError> {
    loop {
        let Some(batch) = rx.lock().await.recv().await else {
            return Ok(());
        };
        for coll in &targets {
            // Documents written before a validator was added are restored as they are.
            let sent = coll
                .insert_many(&batch.docs)
                .ordered(ordered)
                .bypass_document_validation(true)
                .await;
            if let Err(e) = sent {
                return Err(refused(&e, coll, &batch, &file));
            }
        }
        if let Some(c) = &counters {
            let copies = targets.len() as u64;
            c.documents
                .fetch_add(batch.docs.len() as u64 * copies, Ordering::Relaxed);
            c.bytes.fetch_add(batch.bytes * copies, Ordering::Relaxed);
        }
    }
}

/// A refused insert, naming the collection, the file and the first refused document's offset.
fn refused(
    e: &mongodb::error::Error,
    coll: &Collection<RawDocumentBuf>,
    batch: &Batch,
    file: &Path,
) -> StateError {
    let index = match e.kind.as_ref() {
        ErrorKind::InsertMany(m) => m
            .write_errors
            .as_ref()
            .and_then(|w| w.first())
            .map_or(0, |w| w.index),
        _ => 0,
    };
    let first = batch.offsets.first().copied().unwrap_or(0);
    let at = batch.offsets.get(index).copied().unwrap_or(first);
    StateError::Target {
        action: format!(
            "insert into {} ({} documents from byte offset {first} of {}; the first refused at byte offset {at})",
            coll.namespace(),
            batch.docs.len(),
            file.display()
        ),
        message: describe(e),
    }
}
