//! `replay --restore [DIR]`: the snapshot loaded into each target before the run and again
//! before every later `--repeat` pass (the run's writes undone), into every database the replay
//! maps it to (`--db-map`, `--clones`), then `--restore-setup`'s commands for that target (the
//! difference an A/B experiment is about, such as an index dropped on B). What each load took
//! goes into the target's report (`restore`). The loading itself is `crate::state::load`.

use super::config::{ReplayConfig, ReplayError};
use super::source::BeforePass;
use crate::capture::{CaptureSet, SnapshotEvent, SNAPSHOT};
use crate::state::load::{self, load_showing_progress};
use crate::state::restore_plan::{RestorePlan, RestoreReport, SetupApplied, SetupCommand};
use crate::state::{DbTargets, LoadOptions, SnapshotDir, StateError};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// The snapshot folder `given` names: itself when it is a folder; for a capture (a file, or the
/// replay's `inputs` when `given` is empty), its own snapshot: `CAPTURE.snapshot/` beside it, or
/// the folder its `snapshot` record names.
pub fn snapshot_dir(given: &Path, inputs: &[PathBuf]) -> Result<PathBuf, StateError> {
    if !given.as_os_str().is_empty() && (given.is_dir() || !given.exists()) {
        return Ok(given.to_owned());
    }
    let capture = match given.as_os_str().is_empty() {
        true => inputs.first().cloned().unwrap_or_default(),
        false => given.to_owned(),
    };
    let mut beside = capture.file_name().unwrap_or_default().to_os_string();
    beside.push(".snapshot");
    let beside = capture.with_file_name(beside);
    if beside.is_dir() {
        return Ok(beside);
    }
    let inputs = match given.as_os_str().is_empty() {
        true => inputs.to_vec(),
        false => vec![capture.clone()],
    };
    if let Some(dir) = recorded_dir(&inputs, &capture) {
        return Ok(dir);
    }
    Err(StateError::NotASnapshot {
        path: capture,
        why: format!(
            "the capture has no snapshot: no {} beside it and no snapshot record (record it \
             with --snapshot, or name the folder: --restore DIR)",
            beside.display()
        ),
    })
}

/// The folder a capture's `snapshot` record names, as written or beside the capture.
fn recorded_dir(inputs: &[PathBuf], capture: &Path) -> Option<PathBuf> {
    let mut set = CaptureSet::open(inputs).ok()?;
    while let Some(record) = set.next_record() {
        let Ok(record) = record else { continue };
        if record.kind != SNAPSHOT {
            continue;
        }
        let event: SnapshotEvent = record.event().ok()?;
        let named = PathBuf::from(&event.dir);
        let near = capture.with_file_name(named.file_name()?);
        return [named, near].into_iter().find(|p| p.is_dir());
    }
    None
}

/// A bare `host:port` as a connection string.
fn uri_of(target: &str) -> String {
    match target.contains("://") {
        true => target.to_owned(),
        false => format!("mongodb://{target}/"),
    }
}

/// Before anything starts: the snapshot can be opened, and every `--restore-setup` entry names a
/// target of the run (`labels`) or `*`.
pub(crate) fn check(config: &ReplayConfig, labels: &[String]) -> Result<(), ReplayError> {
    let Some(plan) = &config.restore else {
        return Ok(());
    };
    let dir = snapshot_dir(plan.dir.as_deref().unwrap_or(Path::new("")), &config.inputs)?;
    SnapshotDir::open(&dir)?;
    match plan
        .setup
        .iter()
        .find(|s| !labels.iter().any(|l| s.is_for(l)))
    {
        Some(s) => Err(ReplayError::Option(format!(
            "--restore-setup: target {:?} is not one of this replay's ({})",
            s.target,
            labels.join(", ")
        ))),
        None => Ok(()),
    }
}

/// The first load into a target, before the run: its restorer, or why it failed (with what the
/// report can say of it).
pub(crate) async fn first_load(
    config: &ReplayConfig,
    single: bool,
) -> Result<Option<Arc<Restorer>>, (String, Option<RestoreReport>)> {
    let restorer = match Restorer::new(config, single) {
        Ok(None) => return Ok(None),
        Ok(Some(r)) => Arc::new(r),
        Err(e) => return Err((format!("--restore: {e}"), None)),
    };
    match restorer.restore().await {
        Ok(()) => Ok(Some(restorer)),
        Err(why) => Err((why, Some(restorer.report()))),
    }
}

/// What runs between passes: every target's snapshot loaded again, one target after another.
/// Called on the capture feed's thread, outside the runtime.
pub(crate) fn between_passes(restorers: Vec<Arc<Restorer>>) -> Option<BeforePass> {
    if restorers.is_empty() {
        return None;
    }
    let handle = tokio::runtime::Handle::current();
    Some(Arc::new(move || {
        restorers
            .iter()
            .try_for_each(|r| handle.block_on(r.restore()))
    }))
}

/// One target's restore: its snapshot, where it goes, and what every load did.
pub(crate) struct Restorer {
    snapshot: SnapshotDir,
    opts: LoadOptions,
    setup: Vec<SetupCommand>,
    label: String,
    progress: bool,
    report: Mutex<RestoreReport>,
}

impl Restorer {
    /// The restore `config` asks for its target (`single`: the only one, which answers to `A`
    /// too); `None` without `--restore`.
    pub fn new(config: &ReplayConfig, single: bool) -> Result<Option<Restorer>, StateError> {
        let Some(plan) = &config.restore else {
            return Ok(None);
        };
        let dir = snapshot_dir(plan.dir.as_deref().unwrap_or(Path::new("")), &config.inputs)?;
        let snapshot = SnapshotDir::open(&dir)?;
        let label = config.label.clone().unwrap_or_else(|| "A".into());
        let setup = Self::setup_for(plan, &label, single);
        let report = RestoreReport {
            snapshot: dir.display().to_string(),
            point: snapshot.point.as_ref().map(|p| p.to_string()),
            ..RestoreReport::default()
        };
        Ok(Some(Restorer {
            snapshot,
            opts: LoadOptions {
                uri: uri_of(&config.target),
                batch_size: plan.batch_size.max(1),
                connections: plan.connections.max(1),
                databases: DbTargets {
                    map: config.db_map.clone(),
                    clones: config.clones,
                },
                counters: None,
            },
            setup,
            label,
            progress: config.progress,
            report: Mutex::new(report),
        }))
    }

    fn setup_for(plan: &RestorePlan, label: &str, single: bool) -> Vec<SetupCommand> {
        plan.setup
            .iter()
            .filter(|s| s.is_for(label) || (single && s.is_for("A")))
            .cloned()
            .collect()
    }

    /// Loads the snapshot and applies the setup commands; the error says which target.
    pub async fn restore(&self) -> Result<(), String> {
        let first = self
            .report
            .lock()
            .expect("restore report lock")
            .loads
            .is_empty();
        // Between passes the replay's own bar is on the screen.
        let loaded = match self.progress && first {
            true => load_showing_progress(&self.snapshot, &self.opts).await,
            false => load::load(&self.snapshot, &self.opts).await,
        };
        let loaded = loaded.map_err(|e| format!("restore into {}: {e}", self.label))?;
        tracing::info!(
            "restored {} into {}: {} documents in {:.2} s ({:.0} documents/s, {:.1} MB/s)",
            self.snapshot.path.display(),
            self.label,
            loaded.documents,
            loaded.seconds,
            loaded.docs_per_s,
            loaded.mb_per_s
        );
        let applied = self.apply_setup().await?;
        let mut report = self.report.lock().expect("restore report lock");
        report.add(loaded);
        report.setup = applied;
        Ok(())
    }

    /// Runs this target's setup commands on every database their `db` maps to.
    async fn apply_setup(&self) -> Result<Vec<SetupApplied>, String> {
        if self.setup.is_empty() {
            return Ok(Vec::new());
        }
        let fail = |e: StateError| format!("restore setup on {}: {e}", self.label);
        let client = load::connect(&self.opts.uri, 1).await.map_err(fail)?;
        let mut applied = Vec::new();
        for s in &self.setup {
            for db in self.opts.databases.of(&s.db) {
                let ran = client.database(&db).run_command(s.command.clone()).await;
                if let Err(e) = ran {
                    client.clone().shutdown().await;
                    return Err(fail(StateError::target(
                        format!("{} on {db}", s.name()),
                        crate::state::restore_batches::describe(&e),
                    )));
                }
                applied.push(SetupApplied {
                    db,
                    command: s.name().to_owned(),
                    body: bson::Bson::Document(s.command.clone())
                        .into_relaxed_extjson()
                        .to_string(),
                });
            }
        }
        client.shutdown().await;
        Ok(applied)
    }

    pub fn report(&self) -> RestoreReport {
        self.report.lock().expect("restore report lock").clone()
    }
}
