//! One op sent until it is answered by the primary: after a "not primary" reply, or a dropped
//! connection when it is safe to send again, the primary found again and the op sent again, a
//! few times at most. Used by the lanes of one target and of A/B alike.

use super::conns::{Conns, Side};
use super::step::{one, Step};
use crate::replay::client::ConnError;
use crate::replay::route::counter;
use crate::replay::route::op::Op;
use crate::replay::route::run::Run;
use crate::replay::route::target::TargetState;

/// How many times one request is sent again after "not primary" replies or dropped connections
/// before the replay gives up.
const NOT_PRIMARY_RETRIES: u32 = 3;

/// One op; after a "not primary" reply, or when the connection it was in flight on dropped and it
/// is safe to send again, finds the primary again, reconnects and sends it again (counted in the
/// report), a few times at most.
pub(super) async fn send_following_primary(
    run: &Run,
    target: &TargetState,
    conns: &mut Conns,
    op: Box<Op>,
    abort: &mut tokio::sync::watch::Receiver<bool>,
) -> Result<Step, ConnError> {
    let first = one(run, target, conns, op, abort).await;
    if matches!(first, Ok(Step::NotPrimary(_) | Step::Dropped(..))) {
        // Rare, and a large future: boxed, so the common path's stays small.
        return Box::pin(follow_primary(run, target, conns, first, abort)).await;
    }
    first
}

/// [`send_following_primary`] once the first send answered "not primary" or was dropped.
async fn follow_primary(
    run: &Run,
    target: &TargetState,
    conns: &mut Conns,
    mut result: Result<Step, ConnError>,
    abort: &mut tokio::sync::watch::Receiver<bool>,
) -> Result<Step, ConnError> {
    let mut retries = 0;
    loop {
        let (op, retried, last_error) = match result {
            Ok(Step::NotPrimary(op)) => {
                let addr = conns
                    .primary
                    .as_ref()
                    .map(|c| c.addr().to_owned())
                    .unwrap_or_default();
                let error = ConnError::Handshake {
                    addr,
                    detail: format!(
                        "{} still answered \"not primary\" after {NOT_PRIMARY_RETRIES} rediscoveries",
                        op.command
                    ),
                };
                conns.primary = None;
                (op, &target.servers.retried, error)
            }
            Ok(Step::Dropped(op, side, error)) => {
                match side {
                    Side::Primary => conns.primary = None,
                    Side::Secondary => conns.secondary = None,
                }
                (op, &target.servers.retried_dropped, error)
            }
            other => return other,
        };
        if retries == NOT_PRIMARY_RETRIES {
            return Err(last_error);
        }
        retries += 1;
        target
            .servers
            .rediscover(&target.target, conns.generation, run.op_timeout)
            .await?;
        counter::bump(retried);
        result = one(run, target, conns, op, abort).await;
    }
}
