//! What `replay --restore` is asked (the snapshot, the loader's settings, `--restore-setup`'s
//! commands) and what it reports: every load, one per pass, with its time and rates, and the setup
//! commands applied after each. Read by the replay's configuration and its report alike, so it
//! sits here, below both.

use super::error::StateError;
use super::load::LoadReport;
use bson::{Bson, Document};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The largest `--restore-setup` file read.
const MAX_SETUP_LEN: u64 = 1024 * 1024;

/// `replay --restore [DIR]` and its settings.
#[derive(Debug, Clone, Default)]
pub struct RestorePlan {
    /// The snapshot folder; `None`: the capture's own.
    pub dir: Option<PathBuf>,
    pub batch_size: usize,
    pub connections: usize,
    /// `--restore-setup FILE`: run after each load.
    pub setup: Vec<SetupCommand>,
}

/// One entry of a `--restore-setup` file: `{"target": "B", "db": "shop", "command": {...}}`.
#[derive(Debug, Clone, PartialEq)]
pub struct SetupCommand {
    /// A target's label (`A`, `B`, `A2`, a `--label`), or `*` for every target.
    pub target: String,
    /// The database, as the snapshot names it (mapped as the snapshot's databases are).
    pub db: String,
    pub command: Document,
}

impl SetupCommand {
    /// Reads a `--restore-setup` file: a JSON list of objects with `target`, `db` and `command`
    /// (the command in extended JSON).
    pub fn read_file(path: &Path) -> Result<Vec<SetupCommand>, StateError> {
        use std::io::Read;
        let mut bytes = Vec::new();
        std::fs::File::open(path)
            .and_then(|f| f.take(MAX_SETUP_LEN + 1).read_to_end(&mut bytes))
            .map_err(StateError::file("read", path))?;
        if bytes.len() as u64 > MAX_SETUP_LEN {
            return Err(setup_error(
                path,
                format!("longer than {MAX_SETUP_LEN} bytes"),
            ));
        }
        Self::parse(&bytes, path)
    }

    pub fn parse(bytes: &[u8], path: &Path) -> Result<Vec<SetupCommand>, StateError> {
        let value: serde_json::Value = serde_json::from_slice(bytes)
            .map_err(|e| setup_error(path, format!("not JSON: {e}")))?;
        let serde_json::Value::Array(entries) = value else {
            return Err(setup_error(path, "not a JSON list".into()));
        };
        entries
            .into_iter()
            .enumerate()
            .map(|(i, e)| Self::entry(e, i, path))
            .collect()
    }

    fn entry(e: serde_json::Value, i: usize, path: &Path) -> Result<SetupCommand, StateError> {
        let bad = |why: &str| setup_error(path, format!("entry {i}: {why}"));
        let text = |key: &str| {
            e.get(key)
                .and_then(|v| v.as_str())
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .ok_or_else(|| bad(&format!("{key:?} must be a non-empty string")))
        };
        let (target, db) = (text("target")?, text("db")?);
        let command = match e.get("command").cloned().map(Bson::try_from) {
            Some(Ok(Bson::Document(d))) if !d.is_empty() => d,
            Some(Err(err)) => return Err(bad(&format!("\"command\": {err}"))),
            _ => return Err(bad("\"command\" must be a non-empty object")),
        };
        Ok(SetupCommand {
            target,
            db,
            command,
        })
    }

    /// Whether this entry is for the target labelled `label`.
    pub fn is_for(&self, label: &str) -> bool {
        self.target == "*" || self.target == label
    }

    /// The command's name (its first key).
    pub fn name(&self) -> &str {
        self.command.keys().next().map_or("", String::as_str)
    }
}

fn setup_error(path: &Path, why: String) -> StateError {
    StateError::Setup {
        path: path.to_owned(),
        why,
    }
}

/// A setup command applied after a load.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SetupApplied {
    /// The database it ran on (after `--db-map` and clones).
    pub db: String,
    /// The command's name (`dropIndexes`, ...).
    pub command: String,
    /// The whole command, as relaxed extended JSON.
    pub body: String,
}

/// The report's `restore` section for one target.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RestoreReport {
    /// The snapshot folder restored.
    pub snapshot: String,
    /// The point in time the snapshot holds, as `inspect` says it; null when unknown (a dump
    /// without `--oplog`).
    pub point: Option<String>,
    /// Every load: the first before the run, then one before every later `--repeat` pass.
    pub loads: Vec<LoadReport>,
    /// Seconds of every load together.
    pub seconds: f64,
    /// Documents of the first load.
    pub documents: u64,
    /// BSON bytes of the first load.
    pub bytes: u64,
    /// Documents per second over every load.
    pub docs_per_s: f64,
    /// Megabytes (10^6 bytes) per second over every load.
    pub mb_per_s: f64,
    /// `--restore-setup`'s commands for this target, applied after every load.
    pub setup: Vec<SetupApplied>,
}

impl RestoreReport {
    /// The report's lines: one per load, then the setup commands.
    pub fn text(&self) -> String {
        let mut out = format!(
            "restored {} ({}) before each pass:\n",
            self.snapshot,
            self.point.as_deref().unwrap_or("point unknown")
        );
        for (i, l) in self.loads.iter().enumerate() {
            out.push_str(&format!(
                "  load {}: {} documents, {} bytes, {} indexes in {:.2} s ({:.0} documents/s, {:.1} MB/s)\n",
                i + 1,
                l.documents,
                l.bytes,
                l.indexes,
                l.seconds,
                l.docs_per_s,
                l.mb_per_s
            ));
        }
        for s in &self.setup {
            out.push_str(&format!("  then on {}: {}\n", s.db, s.body));
        }
        out
    }

    /// Adds one load and updates the totals.
    pub fn add(&mut self, load: LoadReport) {
        self.loads.push(load);
        self.seconds = self.loads.iter().map(|l| l.seconds).sum();
        let documents: u64 = self.loads.iter().map(|l| l.documents).sum();
        let bytes: u64 = self.loads.iter().map(|l| l.bytes).sum();
        self.documents = self.loads[0].documents;
        self.bytes = self.loads[0].bytes;
        let s = self.seconds.max(1e-9);
        self.docs_per_s = documents as f64 / s;
        self.mb_per_s = bytes as f64 / s / 1e6;
    }
}

/// `mongotape restore --json`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RestoreCommandReport {
    /// [`crate::figures::SCHEMA_VERSION`]: the layout of this JSON (docs/schemas/).
    #[schemars(extend("const" = crate::figures::SCHEMA_VERSION))]
    pub schema_version: u32,
    #[schemars(extend("const" = "restore"))]
    pub kind: String,
    /// The snapshot folder restored.
    pub snapshot: String,
    /// The point in time the snapshot holds; null when unknown (a dump without `--oplog`).
    pub point: Option<String>,
    /// The target, without user name or password.
    pub target: String,
    #[serde(flatten)]
    pub load: LoadReport,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn setup_files_are_read_by_their_keys_and_bad_ones_named() {
        let ok = br#"[{"target": "B", "db": "shop", "command": {"dropIndexes": "orders", "index": "status_1_ts_1"}}]"#;
        let list = SetupCommand::parse(ok, Path::new("s.json")).unwrap();
        assert_eq!(list[0].name(), "dropIndexes");
        assert!(list[0].is_for("B") && !list[0].is_for("A"));
        for (bad, says) in [
            (&b"{"[..], "not JSON"),
            (b"{}", "not a JSON list"),
            (
                br#"[{"db": "shop", "command": {"ping": 1}}]"#,
                "entry 0: \"target\"",
            ),
            (
                br#"[{"target": "A", "db": "shop", "command": 3}]"#,
                "\"command\"",
            ),
        ] {
            let e = SetupCommand::parse(bad, Path::new("s.json"))
                .unwrap_err()
                .to_string();
            assert!(e.starts_with("s.json: restore setup: "), "{e}");
            assert!(e.contains(says), "{e}");
        }
    }
}
