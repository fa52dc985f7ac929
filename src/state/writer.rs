//! Writing a snapshot folder as captures are written (`capture::output`): the folder is made as
//! `DIR.partial` and renamed to `DIR` only once every file and the manifest are whole, so a `DIR`
//! is always complete; nothing is written over an existing file or folder, and no file or folder
//! is created through a symbolic link.

use super::error::StateError;
use super::layout::{self, ClusterTime, CollectionCount, Manifest, ReadClock, SnapshotPoint};
use crate::capture::output::{self, Existing, OutputError};
use flate2::write::GzEncoder;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

const FILE_MODE: u32 = 0o600;

/// A snapshot folder being written.
pub struct SnapshotWriter {
    dir: PathBuf,
    partial: PathBuf,
    gzip: bool,
    counts: Vec<CollectionCount>,
    /// The manifest's `read_clock` and `redaction`, as the reader sets them.
    pub read_clock: Option<ReadClock>,
    pub redaction: Option<String>,
}

/// Refuses an existing `path` (a dangling link too).
fn refuse_existing(path: &Path) -> Result<(), StateError> {
    output::refuse_symlink(path)?;
    if std::fs::symlink_metadata(path).is_ok() {
        return Err(OutputError::Exists {
            path: path.to_owned(),
        }
        .into());
    }
    Ok(())
}

/// `DIR.partial` beside `DIR`.
pub fn partial_of(dir: &Path) -> PathBuf {
    let mut name = dir.file_name().unwrap_or_default().to_os_string();
    name.push(layout::PARTIAL);
    dir.with_file_name(name)
}

/// Makes a new folder (never one that exists, never through a link: `mkdir` makes a new inode
/// or fails).
fn make_dir(path: &Path) -> Result<(), StateError> {
    refuse_existing(path)?;
    std::fs::create_dir(path).map_err(StateError::file("create the folder", path))
}

impl SnapshotWriter {
    /// Checks that `dir` and `DIR.partial` are free, and makes `DIR.partial`.
    pub fn create(dir: &Path, gzip: bool) -> Result<SnapshotWriter, StateError> {
        Self::check_free(dir)?;
        let partial = partial_of(dir);
        make_dir(&partial)?;
        Ok(SnapshotWriter {
            dir: dir.to_owned(),
            partial,
            gzip,
            counts: Vec::new(),
            read_clock: None,
            redaction: None,
        })
    }

    /// Says, before any work, that `dir` (or its `.partial`) is taken.
    pub fn check_free(dir: &Path) -> Result<(), StateError> {
        refuse_existing(dir)?;
        refuse_existing(&partial_of(dir))
    }

    /// Writes `db.coll`'s metadata and opens its data file (none for a view, which has no
    /// documents of its own).
    pub fn collection(
        &mut self,
        db: &str,
        coll: &str,
        kind: &str,
        metadata: &serde_json::Value,
    ) -> Result<CollectionFile, StateError> {
        let folder = self.partial.join(db);
        if !self
            .counts
            .iter()
            .any(|c| c.ns.split('.').next() == Some(db))
        {
            make_dir(&folder)?;
        }
        let meta_path = folder.join(layout::metadata_file(coll, self.gzip));
        let mut sink = Sink::create(&meta_path, self.gzip)?;
        let json = serde_json::to_vec(metadata).map_err(|e| StateError::NotASnapshot {
            path: meta_path.clone(),
            why: e.to_string(),
        })?;
        sink.write(&json, &meta_path)?;
        sink.finish(&meta_path)?;
        let data = if kind == "view" {
            None
        } else {
            let path = folder.join(layout::data_file(coll, self.gzip));
            Some((Sink::create(&path, self.gzip)?, path))
        };
        self.counts.push(CollectionCount {
            ns: format!("{db}.{coll}"),
            kind: kind.to_owned(),
            ..Default::default()
        });
        Ok(CollectionFile {
            data,
            index: self.counts.len() - 1,
            documents: 0,
            bytes: 0,
            read_at: None,
            read_sent_ns: None,
        })
    }

    /// Closes a collection's data file and books its counts.
    pub fn close(&mut self, file: CollectionFile) -> Result<(), StateError> {
        if let Some((sink, path)) = file.data {
            sink.finish(&path)?;
        }
        if let Some(count) = self.counts.get_mut(file.index) {
            count.documents = file.documents;
            count.bytes = file.bytes;
            count.read_at = file.read_at;
            count.read_sent_ns = file.read_sent_ns;
        }
        Ok(())
    }

    /// Writes the manifest and renames `DIR.partial` to `DIR`: returns the manifest.
    pub fn finish(
        self,
        point: SnapshotPoint,
        source: &str,
        patterns: Vec<String>,
        finished_unix_ns: u64,
    ) -> Result<Manifest, StateError> {
        let manifest = Manifest {
            format: layout::FORMAT.into(),
            version: layout::FORMAT_VERSION,
            point,
            source: layout::without_credentials(source),
            patterns,
            gzip: self.gzip,
            documents: self.counts.iter().map(|c| c.documents).sum(),
            bytes: self.counts.iter().map(|c| c.bytes).sum(),
            collections: self.counts,
            finished: crate::capture::rfc3339(finished_unix_ns),
            read_clock: self.read_clock,
            redaction: self.redaction,
        };
        let path = self.partial.join(layout::MANIFEST);
        let json = serde_json::to_vec_pretty(&manifest).unwrap_or_default();
        let mut file = output::create(&path, Existing::Refuse, FILE_MODE)?;
        file.write_all(&json)
            .and_then(|()| file.sync_all())
            .map_err(StateError::file("write", &path))?;
        refuse_existing(&self.dir)?;
        std::fs::rename(&self.partial, &self.dir)
            .map_err(StateError::file("rename", &self.partial))?;
        Ok(manifest)
    }
}

/// One collection's data file, open.
pub struct CollectionFile {
    data: Option<(Sink, PathBuf)>,
    index: usize,
    documents: u64,
    bytes: u64,
    /// The cluster time the collection was read at, when the server said, and when the read
    /// was sent (Unix ns).
    pub read_at: Option<ClusterTime>,
    pub read_sent_ns: Option<u64>,
}

impl CollectionFile {
    /// A file that keeps nothing (a read made only to fix the point in time).
    pub fn discard() -> CollectionFile {
        CollectionFile {
            data: None,
            index: usize::MAX,
            documents: 0,
            bytes: 0,
            read_at: None,
            read_sent_ns: None,
        }
    }

    /// Appends one whole BSON document.
    pub fn document(&mut self, bytes: &[u8]) -> Result<(), StateError> {
        if let Some((sink, path)) = &mut self.data {
            sink.write(bytes, path)?;
        }
        self.documents += 1;
        self.bytes += bytes.len() as u64;
        Ok(())
    }
}

/// A file written plainly or through gzip.
enum Sink {
    Plain(BufWriter<File>),
    Gzip(GzEncoder<BufWriter<File>>),
}

impl Sink {
    fn create(path: &Path, gzip: bool) -> Result<Sink, StateError> {
        let file = BufWriter::with_capacity(
            256 * 1024,
            output::create(path, Existing::Refuse, FILE_MODE)?,
        );
        Ok(match gzip {
            true => Sink::Gzip(GzEncoder::new(file, flate2::Compression::fast())),
            false => Sink::Plain(file),
        })
    }

    fn write(&mut self, bytes: &[u8], path: &Path) -> Result<(), StateError> {
        match self {
            Sink::Plain(w) => w.write_all(bytes),
            Sink::Gzip(w) => w.write_all(bytes),
        }
        .map_err(StateError::file("write", path))
    }

    fn finish(self, path: &Path) -> Result<(), StateError> {
        let file = match self {
            Sink::Plain(w) => w.into_inner().map_err(|e| e.into_error()),
            Sink::Gzip(w) => w
                .finish()
                .and_then(|b| b.into_inner().map_err(|e| e.into_error())),
        }
        .map_err(StateError::file("write", path))?;
        file.sync_all().map_err(StateError::file("write", path))
    }
}
