//! A lane's end, on one target or on A/B: the read-ahead of requests never sent given back, the
//! connections' counters added up and their unacknowledged writes confirmed.

use super::conns::Conns;
use crate::replay::route::counter;
use crate::replay::route::op::Op;
use crate::replay::route::run::Run;
use crate::replay::route::target::TargetState;
use bson::rawdoc;
use tokio::sync::mpsc::UnboundedReceiver;

/// The lane's end: its connections' counters, and its unacknowledged writes confirmed.
pub(super) async fn finish(target: &TargetState, conns: &mut Conns, last_unacknowledged: bool) {
    for conn in conns.all() {
        counter::add(&target.counters.stray_replies, conn.stray_replies);
    }
    // Unacknowledged writes are only known to have arrived once a later request is answered.
    if last_unacknowledged && !target.abort.is_set() {
        let ping = rawdoc! { "ping": 1, "$db": "admin" };
        for conn in conns.all() {
            if let Err(e) = conn
                .command(&ping, "confirming unacknowledged writes")
                .await
            {
                target.abort.trigger(e.to_string());
            }
        }
    }
}

/// Releases the read-ahead budget of requests that will not be sent.
pub(super) fn drain(run: &Run, rx: &mut UnboundedReceiver<Box<Op>>) {
    rx.close();
    while let Ok(op) = rx.try_recv() {
        run.budget.release(op.charge);
    }
}
