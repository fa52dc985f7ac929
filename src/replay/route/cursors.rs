//! Recorded cursor id -> live cursor id, shared by every replay connection: a getMore may run on
//! another connection than the find that opened its cursor.
//!
//! The capture reader announces a cursor (`expect`) when it hands out the request whose recorded reply
//! opened it, which is always before any getMore that uses it; the connection that gets the live reply
//! resolves it. A getMore waits for a cursor that is announced but not yet resolved.

use crate::replay::request::Scope;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;
use tokio::sync::Notify;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slot {
    Pending,
    Live(i64),
    /// The live request failed or its cursor was already exhausted.
    Gone,
}

#[derive(Default)]
pub struct Cursors {
    map: Mutex<HashMap<(Scope, i64), Slot>>,
    changed: Notify,
}

impl Cursors {
    pub fn expect(&self, scope: Scope, recorded: i64) {
        self.map
            .lock()
            .expect("cursor map lock")
            .entry((scope, recorded))
            .or_insert(Slot::Pending);
    }

    /// The live reply came: `live` is its cursor id (None when the request failed).
    pub fn resolve(&self, scope: Scope, recorded: i64, live: Option<i64>) {
        let slot = match live {
            Some(id) if id != 0 => Slot::Live(id),
            _ => Slot::Gone,
        };
        self.map
            .lock()
            .expect("cursor map lock")
            .insert((scope, recorded), slot);
        self.changed.notify_waiters();
    }

    /// Forgets a cursor (killed, or exhausted on both sides).
    pub fn forget(&self, scope: Scope, recorded: i64) {
        self.map
            .lock()
            .expect("cursor map lock")
            .remove(&(scope, recorded));
    }

    /// The live id for `recorded`, waiting up to `wait` while it is announced but unresolved.
    /// `None`: the cursor never came (never announced, failed, exhausted, or the wait ran out).
    pub async fn live(&self, scope: Scope, recorded: i64, wait: Duration) -> Option<i64> {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            match self
                .map
                .lock()
                .expect("cursor map lock")
                .get(&(scope, recorded))
            {
                Some(Slot::Live(id)) => return Some(*id),
                Some(Slot::Pending) => {}
                Some(Slot::Gone) | None => return None,
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return None;
            }
        }
    }

    pub fn len(&self) -> usize {
        self.map.lock().expect("cursor map lock").len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[tokio::test]
    async fn a_waiting_get_more_sees_the_cursor_resolved_elsewhere() {
        let c = Arc::new(Cursors::default());
        assert_eq!(c.live(0, 5, Duration::from_millis(10)).await, None);
        c.expect(0, 5);
        let c2 = c.clone();
        let waiter = tokio::spawn(async move { c2.live(0, 5, Duration::from_secs(10)).await });
        tokio::time::sleep(Duration::from_millis(20)).await;
        c.resolve(0, 5, Some(900));
        assert_eq!(waiter.await.unwrap(), Some(900));
        assert_eq!(c.live(1, 5, Duration::from_millis(1)).await, None);
        c.resolve(0, 5, Some(0));
        assert_eq!(c.live(0, 5, Duration::from_millis(1)).await, None);
    }
}
