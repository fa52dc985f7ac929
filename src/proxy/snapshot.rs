//! `record --snapshot`: the starting state taken beside the proxy. The snapshot runs on a thread
//! and a runtime of its own, on its own connections to the upstream (the driver's, not the
//! proxy's), so recording never waits for it; it starts after the capture was opened, so its T0
//! is later than the capture's start and no write falls between the two. As soon as the first
//! read fixed T0, a `snapshot` record says so in the capture (`inspect` shows it). When recording
//! stops, once the connections have drained and the snapshot is whole, the end state
//! ([`record_end`]): T1 and a fingerprint of every collection the patterns name, as a `state_end`
//! record and as files in the snapshot's folder.

use super::clock::Clock;
use super::recorder::RecorderHandle;
use crate::capture::{Record, SnapshotEvent, StateEndEvent, SNAPSHOT, STATE_END};
use crate::state::{Manifest, NsPattern, SnapshotOptions, StateError};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// What the end of a recording with a snapshot takes, and when the snapshot is done.
pub struct AtStop {
    uri: String,
    patterns: Vec<NsPattern>,
    dir: std::path::PathBuf,
    /// `Some(whole)` once the snapshot ended.
    done: watch::Receiver<Option<bool>>,
}

/// The snapshot folder of a capture: `trace.mtape` -> `trace.mtape.snapshot`.
pub fn dir_beside(capture: &std::path::Path) -> std::path::PathBuf {
    let mut name = capture.file_name().unwrap_or_default().to_os_string();
    name.push(".snapshot");
    capture.with_file_name(name)
}

/// Starts the snapshot on a thread of its own; the handle (a task of the current runtime) ends
/// with its manifest.
pub fn start(
    opts: SnapshotOptions,
    recorder: Option<RecorderHandle>,
    clock: Clock,
) -> (JoinHandle<Result<Manifest, StateError>>, AtStop) {
    let (done_tx, done) = watch::channel(None);
    let at_stop = AtStop {
        uri: opts.uri.clone(),
        patterns: opts.patterns.clone(),
        dir: opts.out.clone(),
        done,
    };
    // A thread and a runtime of its own: decoding and writing a batch never takes the forwarding
    // tasks' worker (`record --threads 1` has one), and the thread runs at a lower priority
    // (nice 10): where the cores are busy, the clients' requests go first.
    let (tx, rx) = tokio::sync::oneshot::channel();
    let thread = std::thread::Builder::new()
        .name("mongotape-snapshot".into())
        .spawn(move || {
            beside_clients();
            let taken = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| StateError::source("start the snapshot's runtime", e))
                .and_then(|runtime| runtime.block_on(take_beside(opts, recorder, clock)));
            let _ = done_tx.send(Some(taken.is_ok()));
            let _ = tx.send(taken);
        });
    let handle = tokio::spawn(async move {
        match thread {
            Err(e) => Err(StateError::source("start the snapshot's thread", e)),
            Ok(_) => rx.await.unwrap_or_else(|_| {
                Err(StateError::source(
                    "take the snapshot",
                    "its thread ended early",
                ))
            }),
        }
    });
    (handle, at_stop)
}

/// Lowers the calling thread's priority (nice 10) for work done beside the forwarding (the
/// snapshot, the shadow's mirror): where the cores are busy, the clients' requests go first. A
/// system that refuses leaves the thread as it was.
pub fn beside_clients() {
    let _ = rustix::process::setpriority_process(Some(rustix::thread::gettid()), 10);
}

/// Takes the end state once the snapshot is whole and writes its `state_end` record; a failure
/// is said and leaves the capture without one (the recording itself is whole). A second signal
/// (`now`) stops waiting.
pub async fn record_end(
    at: AtStop,
    recorder: RecorderHandle,
    clock: Clock,
    mut now: watch::Receiver<bool>,
) {
    let mut done = at.done;
    if done.borrow().is_none() {
        tracing::info!("recording stopped; waiting for the snapshot to finish ...");
    }
    let taken = async {
        let whole = matches!(
            done.wait_for(Option::is_some).await.as_deref(),
            Ok(Some(true))
        );
        if !whole {
            return None;
        }
        Some(crate::state::ending::take_end(&at.uri, &at.patterns, &at.dir).await)
    };
    let end = tokio::select! {
        end = taken => end,
        _ = now.wait_for(|stop| *stop) => {
            tracing::warn!("stopped at once: the end state was not taken");
            return;
        }
    };
    match end {
        None => tracing::warn!("no end state: the snapshot is not whole"),
        Some(Err(e)) => tracing::error!("the end state could not be taken: {e}"),
        Some(Ok(end)) => {
            let event = StateEndEvent {
                dir: at.dir.display().to_string(),
                kind: end.point.kind,
                t: end.point.t,
                i: end.point.i,
                wall_time: end.point.wall_time,
                collections: end.collections,
            };
            recorder.submit(Record::json(STATE_END, 0, clock.now_ns(), &event));
        }
    }
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
