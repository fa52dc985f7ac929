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

/// Whether `command` changes what a snapshot holds of its collection: a document write
/// ([`crate::replay::route::order::WRITES`]) or a change of its indexes or options
/// ([`crate::plan::request::SCHEMA_CHANGES`]).
fn changes_snapshot(command: &str) -> bool {
    crate::replay::route::order::WRITES.contains(&command)
        || crate::plan::request::SCHEMA_CHANGES.contains(&command)
}

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
        if !changes_snapshot(&req.command) || !self.holds(&req.db, coll) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::measure::outcome::Outcome;
    use crate::replay::names::Names;

    /// T0 (100, 5); shop.orders read later, at (100, 9), its read sent at 2,000 ns; the wall
    /// clock's window 1,000..3,000 ns.
    fn cut() -> SnapshotCut {
        SnapshotCut {
            dir: PathBuf::from("s"),
            point: SnapshotPoint {
                kind: "cluster_time".into(),
                t: 100,
                i: 5,
                wall_time: String::new(),
            },
            t0: Some((100, 5)),
            read_points: HashMap::from([("shop.orders".to_owned(), (100, 9))]),
            read_sent: HashMap::from([("shop.orders".to_owned(), 2_000)]),
            patterns: vec![NsPattern::parse("shop.*").unwrap()],
            collections: HashSet::new(),
            window: Some((1_000, 3_000)),
        }
    }

    /// A recorded `command` on `ns` sent at `ts_ns`, answered `latency` later with
    /// `operation_time` (no reply at all: `latency` None).
    fn write(
        ns: &str,
        command: &str,
        ts_ns: u64,
        latency: Option<u64>,
        at: Option<(u32, u32)>,
    ) -> Request {
        let mut names = Names::default();
        let (db, coll) = ns.split_once('.').unwrap();
        Request {
            conn_id: 1,
            ts_ns,
            request_id: 1,
            msg: bytes::Bytes::new(),
            plain: false,
            command: names.get(command),
            db: names.get(db),
            collection: Some(names.get(coll)),
            expects_reply: latency.is_some(),
            lsid: None,
            transaction: None,
            cursor_refs: Vec::new(),
            recorded: latency.map(|l| Outcome {
                ok: true,
                latency_ns: Some(l),
                operation_time: at,
                ..Outcome::default()
            }),
            compressor: None,
            shape: None,
        }
    }

    #[test]
    fn a_write_is_placed_by_its_operation_time_against_its_collections_point() {
        let c = cut();
        let place = |ns, ts, at| c.place(&write(ns, "insert", ts, Some(10), Some(at)));
        // shop.customers was read at T0.
        assert_eq!(
            place("shop.customers", 9_000, (100, 5)),
            Some((Place::Held, false))
        );
        assert_eq!(
            place("shop.customers", 0, (100, 6)),
            Some((Place::After, false))
        );
        // shop.orders at its own later point; acknowledged while its read was under way: uncertain.
        assert_eq!(
            place("shop.orders", 500, (100, 8)),
            Some((Place::Held, false))
        );
        assert_eq!(
            place("shop.orders", 2_500, (100, 8)),
            Some((Place::Uncertain, false))
        );
        assert_eq!(
            place("shop.orders", 500, (100, 10)),
            Some((Place::After, false))
        );
        // Not a snapshotted collection, or a read: not placed (replayed, not counted).
        assert_eq!(place("other.orders", 0, (1, 1)), None);
        let read = write("shop.orders", "find", 0, Some(10), Some((1, 1)));
        assert_eq!(c.place(&read), None);
    }

    #[test]
    fn without_an_operation_time_the_wall_clock_places_it() {
        let c = cut();
        let place = |ts, latency| c.place(&write("shop.customers", "update", ts, latency, None));
        assert_eq!(place(500, Some(400)), Some((Place::Held, true)));
        assert_eq!(place(500, Some(600)), Some((Place::Uncertain, true)));
        assert_eq!(place(3_001, Some(1)), Some((Place::After, true)));
        // Unacknowledged: its send time stands for the acknowledgement.
        assert_eq!(place(999, None), Some((Place::Held, true)));
        let no_window = SnapshotCut {
            window: None,
            ..cut()
        };
        let w = write("shop.customers", "delete", 0, None, None);
        assert_eq!(no_window.place(&w), Some((Place::Uncertain, true)));
    }

    #[test]
    fn a_transaction_is_uncertain_and_the_tally_adds_up() {
        let c = cut();
        let mut in_txn = write("shop.orders", "update", 0, Some(1), Some((1, 1)));
        in_txn.transaction = Some(3);
        assert_eq!(c.place(&in_txn), Some((Place::Uncertain, false)));
        let mut report = c.empty_report();
        assert!(c.keep(&in_txn, Some(&mut report)));
        let held = write("shop.customers", "insert", 0, Some(1), Some((100, 1)));
        assert!(!c.keep(&held, Some(&mut report)));
        assert!(c.keep(
            &write("shop.customers", "insert", 4_000, None, None),
            Some(&mut report)
        ));
        assert_eq!(report.skipped, BTreeMap::from([("insert".to_owned(), 1)]));
        assert_eq!(
            (report.replayed, report.uncertain, report.by_wall_clock),
            (1, 1, 1)
        );
        assert_eq!(report.method, "wall_clock");
        assert_eq!(report.read_points["shop.orders"], "Timestamp(100, 9)");
    }
}
