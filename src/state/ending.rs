//! Taking the end state when a recording with a snapshot stops: the collections the snapshot's
//! patterns name now, each one fingerprinted ([`super::survey`]) with its per-`_id` digests
//! streamed to `mongotape-end.digests`, then `mongotape-end.json` written last (the end is whole
//! once it exists), both into the snapshot's folder.

use super::end::{DigestWriter, EndFile, DIGESTS, FORMAT, FORMAT_VERSION};
use super::error::StateError;
use super::pattern::NsPattern;
use super::survey::Surveyor;
use crate::capture::CollectionFingerprint;
use std::path::Path;

/// Fingerprints what `patterns` name on `uri` into `dir` (a finished snapshot folder).
pub async fn take_end(
    uri: &str,
    patterns: &[NsPattern],
    dir: &Path,
) -> Result<EndFile, StateError> {
    let started = crate::capture::rfc3339(unix_ns());
    let mut surveyor = Surveyor::connect(uri).await?;
    let namespaces = surveyor.namespaces(patterns).await?;
    let mut digests = DigestWriter::create(dir)?;
    let mut collections = Vec::new();
    for (index, ns) in namespaces.iter().enumerate() {
        let scanned = surveyor.scan(ns, |d| digests.add(index, d)).await?;
        collections.push(CollectionFingerprint {
            ns: ns.clone(),
            documents: scanned.sum.documents,
            hash: scanned.sum.hex(),
            db_hash: scanned.db_hash,
        });
    }
    digests.finish()?;
    let point = surveyor.point(started).await;
    surveyor.close().await;
    let end = EndFile {
        format: FORMAT.into(),
        version: FORMAT_VERSION,
        point,
        collections,
        digests: DIGESTS.into(),
    };
    end.write(dir)?;
    Ok(end)
}

fn unix_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}
