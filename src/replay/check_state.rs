//! `replay --check-state [DIR]`: after the run, each target's end state against the capture's
//! (`DIR/mongotape-end.json`, written when `record --snapshot` stopped), and in an A/B replay the
//! targets' against each other. Every recorded collection is checked in each database the replay
//! wrote it to (`--db-map`, each of `--clones`). The comparing is [`crate::state::compare`]'s.

use super::config::ReplayConfig;
use super::request::db_map::{CopyDb, DbMap};
use crate::state::compare::{self, Checked, Side};
use crate::state::end::EndFile;
use crate::state::verdict::{StateReport, StatesBetween};
use std::collections::BTreeMap;
use std::path::Path;

/// Each recorded collection (its index in the end file) and the namespace it has on a target.
fn mapped(config: &ReplayConfig, end: &EndFile) -> Vec<(usize, String)> {
    let clones = config.clones.max(1);
    let mut out = Vec::new();
    for k in 1..=clones {
        let copy = CopyDb {
            map: &config.db_map,
            clone: (clones > 1).then_some(k),
        };
        for (index, c) in end.collections.iter().enumerate() {
            out.push((index, copy.map_ns(&c.ns)));
        }
    }
    out
}

/// The recorded writes a replay cannot reproduce, counted once per run.
pub(crate) async fn non_reproducible(config: &ReplayConfig) -> BTreeMap<String, u64> {
    let inputs = config.inputs.clone();
    tokio::task::spawn_blocking(move || crate::state::reproducible::count(&inputs))
        .await
        .unwrap_or_default()
}

/// The target `uri`'s end checked against the capture's in `dir`.
pub(crate) async fn check(
    config: &ReplayConfig,
    dir: &Path,
    uri: &str,
    causes: &BTreeMap<String, u64>,
) -> Checked {
    let mut checked = match EndFile::read(dir) {
        Ok(end) => compare::check(dir, uri, &mapped(config, &end)).await,
        Err(e) => Checked {
            report: StateReport {
                verdict: "unknown".into(),
                dir: dir.display().to_string(),
                error: Some(format!(
                    "no recorded end state: {e} (recorded with record --snapshot by a mongotape \
                     that writes the end state?)"
                )),
                ..StateReport::default()
            },
            scans: Vec::new(),
        },
    };
    checked.report.non_reproducible = causes.clone();
    checked
}

/// One replay target's end: the report gets its `state`.
pub(crate) async fn check_one(config: &ReplayConfig, report: &mut super::report::ReplayReport) {
    let Some(dir) = &config.check_state else {
        return;
    };
    let causes = non_reproducible(config).await;
    report.state = Some(check(config, dir, &config.target, &causes).await.report);
}

/// The targets of an A/B replay, each against the capture (its report's `state`), then each
/// after the first against the first.
pub(crate) async fn check_all(
    config: &ReplayConfig,
    targets: &[(String, String)],
    reports: &mut [super::report::ReplayReport],
) -> Option<StatesBetween> {
    let dir = config.check_state.as_ref()?;
    let causes = non_reproducible(config).await;
    let mut checked = Vec::new();
    for ((_, uri), report) in targets.iter().zip(reports.iter_mut()) {
        let c = check(config, dir, uri, &causes).await;
        report.state = Some(c.report.clone());
        checked.push(c);
    }
    let mut between = StatesBetween::default();
    let side = |i: usize| Side {
        label: &targets[i].0,
        uri: &targets[i].1,
        scans: &checked[i].scans,
    };
    for i in 1..checked.len().min(targets.len()) {
        between.pairs.push(compare::between(side(0), side(i)).await);
    }
    Some(between)
}
