//! `--skip-snapshotted`: which recorded writes the snapshot already holds. A write to a
//! snapshotted collection whose recorded reply's `operationTime` is at or before the point the
//! collection was read at (T0, or the collection's own later point when the server did not keep
//! T0 for it) is in the snapshot and is left out; every later one is replayed. Reads are always
//! replayed: they change nothing.
//!
//! A write without an `operationTime` (a standalone upstream, legacy or unacknowledged writes, a
//! snapshot without a cluster time) is placed by the wall clock instead: acknowledged before the
//! snapshot's first read, it is held; sent after its point was fixed (after its last read, for
//! plain reads), it is not; in between it is uncertain, replayed and counted. So are the
//! statements of a multi-document transaction, whose effects show only at its commit.

use crate::capture::{CaptureError, CaptureSet, SnapshotEvent, SNAPSHOT};
use crate::replay::report::SnapshotCutReport;
use crate::replay::request::Request;
use crate::state::layout::ClusterTime;
use crate::state::{NsPattern, SnapshotDir, SnapshotPoint, StateError};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use thiserror::Error;

/// Commands that change a collection's documents, indexes or options: what a snapshot holds.
const WRITES: &[&str] = &[
    "insert",
    "update",
    "delete",
    "findAndModify",
    "findandmodify",
    "create",
    "createIndexes",
    "drop",
    "dropIndexes",
    "collMod",
];

/// Which snapshot to cut at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CutFrom {
    /// The capture's own: the folder its `snapshot` record names, else `CAPTURE.snapshot`.
    Capture,
    Dir(PathBuf),
}

#[derive(Debug, Error)]
pub enum CutError {
    #[error("--skip-snapshotted: {0}")]
    State(#[from] StateError),
    #[error("--skip-snapshotted: {0}")]
    Capture(#[from] CaptureError),
    #[error(
        "--skip-snapshotted: the capture {capture} names no snapshot (it was not recorded with \
         --snapshot) and there is no {beside}: name the snapshot's folder, --skip-snapshotted DIR"
    )]
    NoSnapshot { capture: PathBuf, beside: PathBuf },
    #[error(
        "--skip-snapshotted: {dir}: the snapshot does not say when it was taken (a mongodump \
         folder made without --oplog): which recorded writes it holds cannot be told"
    )]
    NoPoint { dir: PathBuf },
}

/// Where a recorded write stands against the snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// In the snapshot already: left out.
    Held,
    /// Later than the snapshot: replayed.
    After,
    /// Cannot be told: replayed.
    Uncertain,
}

/// The snapshot's point, read once before the replay.
#[derive(Debug, Clone)]
pub struct SnapshotCut {
    dir: PathBuf,
    point: SnapshotPoint,
    t0: Option<(u32, u32)>,
    /// Collections read at a later point than T0, by `db.collection`.
    read_points: HashMap<String, (u32, u32)>,
    /// When each collection's read was sent (Unix ns), by `db.collection`.
    read_sent: HashMap<String, u64>,
    /// The namespaces the snapshot holds: its patterns, else its collections.
    patterns: Vec<NsPattern>,
    collections: HashSet<String>,
    /// Unix ns: acknowledged before the first, a write is held; sent after the second, it is not.
    window: Option<(u64, u64)>,
}

impl SnapshotCut {
    /// Reads the snapshot's point (and, for the capture's own, the capture's `snapshot` record).
    pub fn load(from: &CutFrom, inputs: &[PathBuf]) -> Result<SnapshotCut, CutError> {
        let event = match from {
            CutFrom::Capture => snapshot_event(inputs)?,
            CutFrom::Dir(_) => None,
        };
        let dir = match from {
            CutFrom::Dir(d) => d.clone(),
            CutFrom::Capture => own_dir(inputs, event.as_ref().map(|(e, _)| e))?,
        };
        let snapshot = SnapshotDir::open(&dir)?;
        let point = snapshot
            .point
            .clone()
            .ok_or_else(|| CutError::NoPoint { dir: dir.clone() })?;
        let t0 = point.cluster_time();
        let mut cut = SnapshotCut {
            window: window(&snapshot, &point, event.map(|(_, ts)| ts)),
            dir,
            point,
            t0,
            read_points: HashMap::new(),
            read_sent: HashMap::new(),
            patterns: Vec::new(),
            collections: snapshot
                .collections
                .iter()
                .map(|c| format!("{}.{}", c.db, c.name))
                .collect(),
        };
        if let Some(m) = &snapshot.manifest {
            cut.patterns = m
                .patterns
                .iter()
                .filter_map(|p| NsPattern::parse(p).ok())
                .collect();
            for c in &m.collections {
                if let Some(sent) = c.read_sent_ns {
                    cut.read_sent.insert(c.ns.clone(), sent);
                }
                let at = c.read_at.map(|ClusterTime { t, i }| (t, i));
                if let (Some(at), Some(t0)) = (at, t0) {
                    if at != t0 {
                        cut.read_points.insert(c.ns.clone(), at);
                    }
                }
            }
        }
        Ok(cut)
    }

    /// Whether `db.coll` is one of the snapshot's namespaces.
    fn holds(&self, db: &str, coll: &str) -> bool {
        match self.patterns.is_empty() {
            false => crate::state::pattern::any_matches(&self.patterns, db, coll),
            true => self.collections.contains(&format!("{db}.{coll}")),
        }
    }

    /// Where `req` stands, and whether the wall clock placed it; `None` for anything but a
    /// write to a snapshotted collection (replayed, not counted).
    pub fn place(&self, req: &Request) -> Option<(Place, bool)> {
        let coll = req.collection.as_deref()?;
        if !WRITES.contains(&&*req.command) || !self.holds(&req.db, coll) {
            return None;
        }
        if req.transaction.is_some() {
            return Some((Place::Uncertain, false));
        }
        let recorded = req.recorded.as_ref();
        // Without a reply (unacknowledged), the send time stands for the acknowledgement.
        let acked = req.ts_ns + recorded.and_then(|o| o.latency_ns).unwrap_or(0);
        let ns = format!("{}.{coll}", &*req.db);
        let point = self.read_points.get(&ns).copied().or(self.t0);
        if let (Some(at), Some(point)) = (recorded.and_then(|o| o.operation_time), point) {
            // A server may report the time its read ended, not the one it read at: a write
            // acknowledged while the read was under way is not known to be in it.
            let place = match self.read_sent.get(&ns) {
                _ if at > point => Place::After,
                Some(&sent) if acked >= sent => Place::Uncertain,
                _ => Place::Held,
            };
            return Some((place, false));
        }
        let Some((held_before, after_from)) = self.window else {
            return Some((Place::Uncertain, true));
        };
        let place = if acked < held_before {
            Place::Held
        } else if req.ts_ns > after_from {
            Place::After
        } else {
            Place::Uncertain
        };
        Some((place, true))
    }

    /// Whether `req` is replayed; counted in `tally` (the first pass's report) when given.
    pub fn keep(&self, req: &Request, tally: Option<&mut SnapshotCutReport>) -> bool {
        let Some((place, by_wall_clock)) = self.place(req) else {
            return true;
        };
        if let Some(t) = tally {
            t.by_wall_clock += u64::from(by_wall_clock);
            if by_wall_clock {
                t.method = "wall_clock".into();
            }
            match place {
                Place::Held => *t.skipped.entry(req.command.to_string()).or_default() += 1,
                Place::After => t.replayed += 1,
                Place::Uncertain => t.uncertain += 1,
            }
        }
        place != Place::Held
    }

    /// The report's `snapshot_cut` before anything was counted.
    pub fn empty_report(&self) -> SnapshotCutReport {
        SnapshotCutReport {
            dir: self.dir.display().to_string(),
            t0: self.point.clone(),
            method: match self.t0 {
                Some(_) => "operation_time".into(),
                None => "wall_clock".into(),
            },
            skipped: BTreeMap::new(),
            replayed: 0,
            uncertain: 0,
            by_wall_clock: 0,
            window_s: self.window.map(|(a, b)| b.saturating_sub(a) as f64 / 1e9),
            read_points: self
                .read_points
                .iter()
                .map(|(ns, (t, i))| (ns.clone(), format!("Timestamp({t}, {i})")))
                .collect(),
        }
    }
}

/// The capture's `snapshot` record and its time, if it has one (it comes early: read until it).
fn snapshot_event(inputs: &[PathBuf]) -> Result<Option<(SnapshotEvent, u64)>, CutError> {
    let mut set = CaptureSet::open(inputs)?;
    while let Some(record) = set.next_record() {
        let Ok(record) = record else { continue };
        if record.kind == SNAPSHOT {
            return Ok(record
                .event::<SnapshotEvent>()
                .ok()
                .map(|e| (e, record.ts_ns)));
        }
    }
    Ok(None)
}

/// The capture's own snapshot folder: as its record names it, or by that name beside the
/// capture (a capture moved with its snapshot), or `CAPTURE.snapshot`.
fn own_dir(inputs: &[PathBuf], event: Option<&SnapshotEvent>) -> Result<PathBuf, CutError> {
    let capture = inputs.first().cloned().unwrap_or_default();
    let folder = capture.parent().unwrap_or(Path::new("."));
    if let Some(e) = event {
        let named = PathBuf::from(&e.dir);
        if named.is_dir() {
            return Ok(named);
        }
        if let Some(name) = named.file_name() {
            if folder.join(name).is_dir() {
                return Ok(folder.join(name));
            }
        }
    }
    let mut name = capture.file_name().unwrap_or_default().to_os_string();
    name.push(".snapshot");
    let beside = capture.with_file_name(name);
    match beside.is_dir() {
        true => Ok(beside),
        false => Err(CutError::NoSnapshot { capture, beside }),
    }
}

/// The wall-clock window: from the first read to the point's fixing (a snapshot read) or to the
/// last read's end (plain reads). From the manifest's read clock; else from the point's wall
/// time (whole seconds) to the capture's `snapshot` record.
fn window(dir: &SnapshotDir, point: &SnapshotPoint, event_ns: Option<u64>) -> Option<(u64, u64)> {
    let plain = point.cluster_time().is_none();
    if let Some(c) = dir.manifest.as_ref().and_then(|m| m.read_clock) {
        return Some((c.started_ns, if plain { c.finished_ns } else { c.fixed_ns }));
    }
    let started = humantime::parse_rfc3339_weak(&point.wall_time).ok()?;
    let started_ns = started
        .duration_since(std::time::UNIX_EPOCH)
        .ok()?
        .as_nanos() as u64;
    let end = event_ns
        .filter(|_| !plain)
        .unwrap_or(started_ns + 1_000_000_000);
    Some((started_ns, end.max(started_ns)))
}
