//! `--discrepancies FILE`: one JSON line per confirmed discrepancy, flushed as it is written
//! (`tail -f` shows them as they come).

use super::config::ShadowError;
use std::io::Write;
use std::path::Path;
use std::sync::Mutex;

pub struct DiscrepancyLog {
    file: Mutex<std::io::BufWriter<std::fs::File>>,
}

impl DiscrepancyLog {
    /// Creates (or truncates) `path`.
    pub fn create(path: &Path) -> Result<DiscrepancyLog, ShadowError> {
        let file = std::fs::File::create(path).map_err(|source| ShadowError::File {
            what: "--discrepancies",
            path: path.to_path_buf(),
            source,
        })?;
        Ok(DiscrepancyLog {
            file: Mutex::new(std::io::BufWriter::new(file)),
        })
    }

    /// Writes one line. A failed write is logged once per failure, never fatal: the report
    /// still counts the discrepancy.
    pub fn write(&self, line: &serde_json::Value) {
        let mut file = self.file.lock().unwrap_or_else(|e| e.into_inner());
        let written = serde_json::to_writer(&mut *file, line)
            .map_err(std::io::Error::other)
            .and_then(|()| file.write_all(b"\n"))
            .and_then(|()| file.flush());
        if let Err(e) = written {
            tracing::warn!("--discrepancies: a line could not be written: {e}");
        }
    }
}
