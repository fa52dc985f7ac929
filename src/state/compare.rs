//! Comparing end states: a target's collections against the capture's recorded end
//! (`mongotape-end.json` and its digests), and two targets against each other. Counts and hashes
//! first; only for a collection that differs are the buckets whose sums differ read again, from
//! both sides, to name up to [`MAX_IDS`] differing `_id`s (memory: those buckets' documents).

use super::end::{recorded_in, EndFile};
use super::error::StateError;
use super::fingerprint::{Buckets, DocDigest};
use super::survey::{Scanned, Surveyor};
use super::verdict::{CollectionDifference, PairState, StateReport, MAX_IDS};
use std::collections::HashMap;
use std::path::Path;

/// A target's end checked: the report, and each namespace's scan (for A/B comparisons).
#[derive(Debug, Default)]
pub struct Checked {
    pub report: StateReport,
    pub scans: Vec<(String, Scanned)>,
}

/// `_id` document bytes to digest, for the documents of a few buckets.
type ById = HashMap<Vec<u8>, u128>;

fn keep_into(map: &mut ById, buckets: &[usize], d: &DocDigest) {
    if buckets.contains(&d.bucket) {
        map.insert(d.id.as_bytes().to_vec(), d.digest);
    }
}

/// The recorded documents of collection `index` in `buckets`, and every bucket's sum.
fn recorded(
    dir: &Path,
    end: &EndFile,
    index: usize,
    buckets: &[usize],
) -> Result<(Buckets, ById), StateError> {
    let mut sums = Buckets::default();
    let mut map = ById::new();
    recorded_in(
        dir,
        end,
        index,
        |_| true,
        |d| {
            sums.add(&d);
            keep_into(&mut map, buckets, &d);
        },
    )?;
    Ok((sums, map))
}

/// The documents of `ns` in `buckets`, read again.
async fn live(surveyor: &mut Surveyor, ns: &str, buckets: &[usize]) -> Result<ById, StateError> {
    let mut map = ById::new();
    surveyor
        .scan(ns, |d| {
            keep_into(&mut map, buckets, d);
            Ok(())
        })
        .await?;
    Ok(map)
}

/// The `_id`s (relaxed extended JSON) on one side only or with another digest, at most
/// [`MAX_IDS`], in a stable order.
fn differing_ids(a: &ById, b: &ById) -> Vec<String> {
    let mut keys: Vec<&Vec<u8>> = a
        .iter()
        .filter(|(k, d)| b.get(*k) != Some(d))
        .map(|(k, _)| k)
        .chain(b.keys().filter(|k| !a.contains_key(*k)))
        .collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .take(MAX_IDS)
        .filter_map(|k| {
            let doc = bson::Document::from_reader(&mut k.as_slice()).ok()?;
            Some(doc.get("_id")?.clone().into_relaxed_extjson().to_string())
        })
        .collect()
}

/// Checks the target `uri` against the recorded end in `dir`: `mapped` pairs each recorded
/// collection (its index in the end file) with a namespace on the target.
pub async fn check(dir: &Path, uri: &str, mapped: &[(usize, String)]) -> Checked {
    let mut checked = Checked::default();
    checked.report.dir = dir.display().to_string();
    if let Err(e) = check_into(&mut checked, dir, uri, mapped).await {
        checked.report.verdict = "unknown".into();
        checked.report.error = Some(e.to_string());
    }
    checked
}

async fn check_into(
    checked: &mut Checked,
    dir: &Path,
    uri: &str,
    mapped: &[(usize, String)],
) -> Result<(), StateError> {
    let end = EndFile::read(dir)?;
    checked.report.recorded_at = end.point.to_string();
    let mut surveyor = Surveyor::connect(uri).await?;
    for (index, ns) in mapped {
        let Some(rec) = end.collections.get(*index) else {
            continue;
        };
        let scanned = surveyor.scan(ns, |_| Ok(())).await?;
        checked.report.collections += 1;
        if scanned.sum.documents == rec.documents && scanned.sum.hex() == rec.hash {
            if let (Some(a), Some(b)) = (&rec.db_hash, &scanned.db_hash) {
                if a != b {
                    checked.report.db_hash_only.push(ns.clone());
                }
            }
        } else {
            let (sums, _) = recorded(dir, &end, *index, &[])?;
            let buckets = sums.differing(&scanned.buckets, MAX_IDS);
            let (_, theirs) = recorded(dir, &end, *index, &buckets)?;
            let ours = live(&mut surveyor, ns, &buckets).await?;
            checked.report.differing.push(CollectionDifference {
                ns: rec.ns.clone(),
                other_ns: ns.clone(),
                documents: rec.documents,
                other_documents: scanned.sum.documents,
                ids: differing_ids(&theirs, &ours),
            });
        }
        checked.scans.push((ns.clone(), scanned));
    }
    surveyor.close().await;
    checked.report.verdict = match checked.report.differing.is_empty() {
        true => "equal".into(),
        false => "differs".into(),
    };
    Ok(())
}

/// One target of an A/B comparison: its label, URI and scans.
pub struct Side<'a> {
    pub label: &'a str,
    pub uri: &'a str,
    pub scans: &'a [(String, Scanned)],
}

/// Target `b`'s end against target `a`'s, namespace by namespace in the same order.
pub async fn between(a: Side<'_>, b: Side<'_>) -> PairState {
    let mut pair = PairState {
        a: a.label.to_owned(),
        b: b.label.to_owned(),
        ..PairState::default()
    };
    match between_into(&mut pair, &a, &b).await {
        Ok(()) if pair.differing.is_empty() => pair.verdict = "equal".into(),
        Ok(()) => pair.verdict = "differs".into(),
        Err(e) => {
            pair.verdict = "unknown".into();
            pair.error = Some(e.to_string());
        }
    }
    pair
}

async fn between_into(pair: &mut PairState, a: &Side<'_>, b: &Side<'_>) -> Result<(), StateError> {
    if a.scans.len() != b.scans.len() {
        return Err(StateError::source(
            "compare the targets",
            format!(
                "{} checked {} collections, {} {}",
                a.label,
                a.scans.len(),
                b.label,
                b.scans.len()
            ),
        ));
    }
    let mut surveyors: Option<(Surveyor, Surveyor)> = None;
    for ((ns_a, sa), (ns_b, sb)) in a.scans.iter().zip(b.scans) {
        if sa.sum == sb.sum {
            continue;
        }
        if surveyors.is_none() {
            surveyors = Some((
                Surveyor::connect(a.uri).await?,
                Surveyor::connect(b.uri).await?,
            ));
        }
        let Some((on_a, on_b)) = surveyors.as_mut() else {
            continue;
        };
        let buckets = sa.buckets.differing(&sb.buckets, MAX_IDS);
        let docs_a = live(on_a, ns_a, &buckets).await?;
        let docs_b = live(on_b, ns_b, &buckets).await?;
        pair.differing.push(CollectionDifference {
            ns: ns_a.clone(),
            other_ns: ns_b.clone(),
            documents: sa.sum.documents,
            other_documents: sb.sum.documents,
            ids: differing_ids(&docs_a, &docs_b),
        });
    }
    if let Some((on_a, on_b)) = surveyors {
        on_a.close().await;
        on_b.close().await;
    }
    Ok(())
}
