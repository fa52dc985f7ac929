//! A lane's end, on one target or on A/B: the read-ahead of requests never sent given back, the
//! connections' counters added up and their unacknowledged writes confirmed.

use super::conns::Conns;
use crate::replay::route::op::Op;
use crate::replay::route::shared::Shared;
use bson::rawdoc;
use tokio::sync::mpsc::UnboundedReceiver;

/// The lane's end: its connections' counters, and its unacknowledged writes confirmed.
pub(super) async fn finish(shared: &Shared, conns: &mut Conns, last_unacknowledged: bool) {
    for conn in conns.all() {
        shared
            .counters
            .stray_replies
            .fetch_add(conn.stray_replies, std::sync::atomic::Ordering::Relaxed);
    }
    // Unacknowledged writes are only known to have arrived once a later request is answered.
    if last_unacknowledged && !shared.abort.is_set() {
        let ping = rawdoc! { "ping": 1, "$db": "admin" };
        for conn in conns.all() {
            if let Err(e) = conn
                .command(&ping, "confirming unacknowledged writes")
                .await
            {
                shared.abort.trigger(e.to_string());
            }
        }
    }
}

/// Releases the read-ahead budget of requests that will not be sent.
pub(super) fn drain(shared: &Shared, rx: &mut UnboundedReceiver<Box<Op>>) {
    rx.close();
    while let Ok(op) = rx.try_recv() {
        shared.run.budget.release(op.charge);
    }
}
