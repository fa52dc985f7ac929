//! `record --snapshot`: the starting state taken beside the proxy. The snapshot runs on a thread
//! and a runtime of its own, on its own connections to the upstream (the driver's, not the
//! proxy's), so recording never waits for it; it starts after the capture was opened, so its T0
//! is later than the capture's start and no write falls between the two. As soon as the first read fixed T0, a
//! `snapshot` record says so in the capture (`inspect` shows it).

use super::clock::Clock;
use super::recorder::RecorderHandle;
use crate::capture::{Record, SnapshotEvent, SNAPSHOT};
use crate::state::{Manifest, SnapshotOptions, StateError};
use tokio::task::JoinHandle;

/// The snapshot folder of a capture: `trace.mtape` -> `trace.mtape.snapshot`.
pub fn dir_beside(capture: &std::path::Path) -> std::path::PathBuf {
    let mut name = capture.file_name().unwrap_or_default().to_os_string();
    name.push(".snapshot");
    capture.with_file_name(name)
}

/// Starts the snapshot on a thread of the current runtime's blocking pool; the handle ends with
/// its manifest.
pub fn start(
    opts: SnapshotOptions,
    recorder: Option<RecorderHandle>,
    clock: Clock,
) -> JoinHandle<Result<Manifest, StateError>> {
    // A thread and a runtime of its own: decoding and writing a batch never takes the forwarding
    // tasks' worker (`record --threads 1` has one), so no client waits for the snapshot.
    tokio::task::spawn_blocking(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| StateError::source("start the snapshot's runtime", e))?;
        runtime.block_on(take_beside(opts, recorder, clock))
    })
}

/// The snapshot, its T0 told to the recorder as soon as it is fixed.
async fn take_beside(
    opts: SnapshotOptions,
    recorder: Option<RecorderHandle>,
    clock: Clock,
) -> Result<Manifest, StateError> {
    let dir = opts.out.display().to_string();
    // Let go of the recorder once T0 is written: the capture ends when its last sender is
    // gone, and a snapshot may outlast the recording.
    let mut recorder = recorder;
    let taken = crate::state::take(&opts, move |point| {
        let event = SnapshotEvent {
            dir: dir.clone(),
            kind: point.kind.clone(),
            t: point.t,
            i: point.i,
            wall_time: point.wall_time.clone(),
        };
        if let Some(recorder) = recorder.take() {
            recorder.submit(Record::json(SNAPSHOT, 0, clock.now_ns(), &event));
        }
    })
    .await;
    // Said at once: the recording goes on, and `record` fails with it when it stops.
    if let Err(e) = &taken {
        tracing::error!("the snapshot beside the recording failed: {e}");
    }
    taken
}
