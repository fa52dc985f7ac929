//! `--mirror all --snapshot`: production's state at T0, taken and restored into every target.
//! On a thread and a runtime of its own (at a lower priority, as `record --snapshot`'s): the
//! snapshot of the namespaces the patterns name is taken from production at one cluster time T0
//! (`state::take`, into `--snapshot-dir`), T0 is told to the mirror as soon as the first read
//! fixed it (writes acknowledged before it are in the snapshot), then the snapshot is restored
//! into each target in turn (`state::load`), and that target's writes start.

use super::shared::{Shared, StartPoint};
use super::writes::Writes;
use crate::state::{self, LoadOptions, SnapshotDir, SnapshotOptions};
use std::sync::Arc;
use std::time::Instant;

/// What is restored where: production's connection string, and each target's with its writes.
pub struct Restore {
    pub production: String,
    pub targets: Vec<(String, Arc<Writes>)>,
}

/// Starts the snapshot and the restores on a thread of their own.
pub fn start(restore: Restore, shared: Arc<Shared>) {
    let thread = std::thread::Builder::new()
        .name("mongotape-restore".into())
        .spawn({
            let shared = shared.clone();
            let targets: Vec<_> = restore.targets.iter().map(|t| t.1.clone()).collect();
            move || {
                crate::proxy::snapshot::beside_clients();
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build();
                match runtime {
                    Ok(runtime) => runtime.block_on(run(restore, shared)),
                    Err(e) => give_up(&targets, &format!("cannot start its runtime: {e}")),
                }
            }
        });
    if let Err(e) = thread {
        tracing::error!("the restore's thread did not start: {e}");
    }
}

fn give_up(targets: &[Arc<Writes>], why: &str) {
    for w in targets {
        w.restored(Err(why.to_owned()));
    }
}

async fn run(restore: Restore, shared: Arc<Shared>) {
    let writes: Vec<_> = restore.targets.iter().map(|t| t.1.clone()).collect();
    let Some(plan) = shared
        .config
        .writes
        .as_ref()
        .and_then(|w| w.snapshot.clone())
    else {
        return;
    };
    let opts = SnapshotOptions {
        uri: restore.production.clone(),
        patterns: plan.patterns.clone(),
        out: plan.dir.clone(),
        gzip: false,
        batch_size: state::source::DEFAULT_BATCH,
        redact: None,
    };
    let fixed = shared.clone();
    let taken = state::take(&opts, move |point| {
        let _ = fixed.t0.set(StartPoint {
            cluster_time: point.cluster_time(),
            fixed: Instant::now(),
        });
        tracing::info!("shadow: production's snapshot at T0 {point}");
    })
    .await;
    let manifest = match taken {
        Ok(m) => m,
        Err(e) => {
            tracing::error!("shadow: production's snapshot failed: {e}");
            return give_up(&writes, &format!("production's snapshot failed: {e}"));
        }
    };
    tracing::info!(
        "shadow: snapshot of {} documents in {}; restoring it",
        manifest.documents,
        plan.dir.display()
    );
    let dir = match SnapshotDir::open(&plan.dir) {
        Ok(dir) => dir,
        Err(e) => return give_up(&writes, &e.to_string()),
    };
    for (uri, w) in &restore.targets {
        match state::load(&dir, &LoadOptions::new(uri.clone())).await {
            Ok(report) => {
                tracing::info!(
                    "shadow: restored {} documents into {} in {:.1}s; its writes start",
                    report.documents,
                    w.label(),
                    report.seconds
                );
                w.restored(Ok(()));
            }
            Err(e) => {
                tracing::error!("shadow: the restore failed: {e}");
                w.restored(Err(e.to_string()));
            }
        }
    }
}
