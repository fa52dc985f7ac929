//! `replay --explain`: each shape's plan on the target. The feed gives each explainable recorded
//! request its shape's slot ([`PlanShapes`], shared by every target); the first request of a
//! shape that a target answers without an error is explained there ([`PlanRunner`]), once, by a
//! task of its own on a connection of its own, so the measured connections carry only the
//! capture's requests. An explain that fails is kept as the shape's error; it never stops the
//! replay.
//!
//! An explain runs beside the lanes, so the capture's schema changes (a `createIndexes` just
//! after a shape's first request) could land before it. A lane about to send one waits until
//! the explains already asked for are done (at most the explain timeout): a shape is explained
//! on the indexes its first request met. Each target counts the changes ([`SchemaClock`]) and
//! each plan carries the count it was explained at (`schema_changes`; absent when one was in
//! flight): an A/B run compares two targets' plans only at the same count.

use crate::net::HostPort;
use crate::plan::{self, PlanEntry};
use crate::replay::client::{Conn, Target};
use crate::shape::{self, Shaper};
use crate::wire::Message;
use bson::RawDocumentBuf;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc::{unbounded_channel, UnboundedSender};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// A shape the feed saw: its hash, text, command and namespace.
#[derive(Debug, Clone)]
struct Seen {
    hash: String,
    text: String,
    command: String,
    namespace: String,
}

#[derive(Default)]
struct Slots {
    shaper: Shaper,
    by_text: HashMap<String, u32>,
    shapes: Vec<Seen>,
}

/// The explainable shapes of the capture, numbered in the order the feed meets them; at most
/// `max` (the shape cap), later shapes are not explained.
pub struct PlanShapes {
    slots: Mutex<Slots>,
    max: usize,
}

impl PlanShapes {
    pub fn new(max: usize) -> PlanShapes {
        PlanShapes {
            slots: Mutex::new(Slots::default()),
            max,
        }
    }

    /// The slot of a recorded request's shape (`msg`, the request as a plain OP_MSG), when its
    /// command is explained; `None` for any other request, or past the cap.
    pub fn slot(&self, command: &str, msg: &[u8]) -> Option<u32> {
        if !plan::request::EXPLAINABLE.contains(&command) {
            return None;
        }
        let message = Message::parse(msg).ok()?;
        let mut slots = self.slots.lock().expect("plan shapes lock");
        let Slots {
            shaper,
            by_text,
            shapes,
        } = &mut *slots;
        let view = shaper.request(&message)?.view();
        if let Some(&slot) = by_text.get(view.text) {
            return Some(slot);
        }
        if shapes.len() >= self.max {
            return None;
        }
        let slot = u32::try_from(shapes.len()).ok()?;
        by_text.insert(view.text.to_owned(), slot);
        shapes.push(Seen {
            hash: shape::hash(view.text),
            text: view.text.to_owned(),
            command: view.command.to_owned(),
            namespace: view.namespace.to_owned(),
        });
        Some(slot)
    }

    fn entry(&self, slot: u32) -> PlanEntry {
        let slots = self.slots.lock().expect("plan shapes lock");
        match slots.shapes.get(slot as usize) {
            Some(s) => PlanEntry::of_shape(&s.hash, &s.text, &s.command, &s.namespace),
            None => PlanEntry::default(),
        }
    }
}

/// The explains done so far: each slot with its plan or error.
type Explained = Arc<Mutex<Vec<(u32, Result<plan::PlanEntry, String>)>>>;

/// A request to explain, or its error before it could be sent.
struct Job {
    slot: u32,
    command: Result<RawDocumentBuf, String>,
}

/// The capture's schema changes ([`plan::request::SCHEMA_CHANGES`]) one target's lanes have
/// sent, and answered (or given up on).
#[derive(Default)]
pub struct SchemaClock {
    sent: AtomicU64,
    settled: AtomicU64,
}

impl SchemaClock {
    /// The changes answered, when none is in flight.
    fn settled_count(&self) -> Option<u64> {
        let settled = self.settled.load(Ordering::Acquire);
        (self.sent.load(Ordering::Acquire) == settled).then_some(settled)
    }
}

/// A schema change in flight on a lane: settled when dropped (answered, failed or abandoned).
pub struct SchemaChange(Arc<SchemaClock>);

impl Drop for SchemaChange {
    fn drop(&mut self) {
        self.0.settled.fetch_add(1, Ordering::AcqRel);
    }
}

/// `--explain` (`plans`): a lane's schema change waits for the explains asked before it, then is
/// in flight until the returned guard is dropped (the lane's step ends, however it ends).
pub async fn schema_change(plans: Option<&PlanRunner>, command: &str) -> Option<SchemaChange> {
    match plans {
        Some(plans) => plans.schema_change(command).await,
        None => None,
    }
}

/// One target's explains: which shapes it has claimed, and the task that runs them.
pub struct PlanRunner {
    shapes: Arc<PlanShapes>,
    schema: Arc<SchemaClock>,
    /// Explains asked for and not done yet.
    pending: Arc<watch::Sender<u64>>,
    /// How long a schema change waits for them.
    timeout: Duration,
    claimed: Mutex<Vec<bool>>,
    jobs: Mutex<Option<UnboundedSender<Job>>>,
    task: Mutex<Option<JoinHandle<()>>>,
    done: Explained,
}

impl PlanRunner {
    /// Starts the target's explain task (on the current runtime); it connects with its first job.
    pub fn start(
        shapes: Arc<PlanShapes>,
        target: Target,
        host: HostPort,
        timeout: Duration,
    ) -> PlanRunner {
        let (tx, mut rx) = unbounded_channel::<Job>();
        let done: Explained = Arc::default();
        let schema: Arc<SchemaClock> = Arc::default();
        let pending = Arc::new(watch::Sender::new(0u64));
        let task = {
            let done = done.clone();
            let clock = schema.clone();
            let pending = pending.clone();
            tokio::spawn(async move {
                let mut conn: Option<Conn> = None;
                while let Some(job) = rx.recv().await {
                    let before = clock.settled_count();
                    let result = match job.command {
                        Ok(cmd) => explain(&mut conn, &target, &host, timeout, &cmd).await,
                        Err(e) => Err(e),
                    };
                    let at = before.filter(|_| clock.settled_count() == before);
                    let result = result.map(|plan| PlanEntry {
                        schema_changes: at,
                        ..plan
                    });
                    done.lock()
                        .expect("plan results lock")
                        .push((job.slot, result));
                    pending.send_modify(|n| *n = n.saturating_sub(1));
                }
            })
        };
        PlanRunner {
            shapes,
            schema,
            pending,
            timeout,
            claimed: Mutex::new(Vec::new()),
            jobs: Mutex::new(Some(tx)),
            task: Mutex::new(Some(task)),
            done,
        }
    }

    /// A lane is about to send `command`: when it changes a collection's indexes or options, it
    /// waits for the explains asked so far (at most the explain timeout), then is counted in
    /// flight until the returned guard is dropped.
    pub async fn schema_change(&self, command: &str) -> Option<SchemaChange> {
        if !plan::request::SCHEMA_CHANGES.contains(&command) {
            return None;
        }
        let mut pending = self.pending.subscribe();
        let _ = tokio::time::timeout(self.timeout, pending.wait_for(|n| *n == 0)).await;
        self.schema.sent.fetch_add(1, Ordering::AcqRel);
        Some(SchemaChange(self.schema.clone()))
    }

    /// A request of shape `slot` was answered without an error: the first one is explained.
    pub fn answered(&self, slot: u32, request: &[u8]) {
        {
            let mut claimed = self.claimed.lock().expect("plan claims lock");
            let i = slot as usize;
            if claimed.len() <= i {
                claimed.resize(i + 1, false);
            }
            if std::mem::replace(&mut claimed[i], true) {
                return;
            }
        }
        let command = plan::explain_request(request).map_err(|e| e.to_string());
        if let Some(tx) = &*self.jobs.lock().expect("plan jobs lock") {
            self.pending.send_modify(|n| *n += 1);
            if tx.send(Job { slot, command }).is_err() {
                self.pending.send_modify(|n| *n = n.saturating_sub(1));
            }
        }
    }

    /// Waits at most `within` for the explains asked so far (a target that stops answering
    /// costs one `within`, not one per shape); the plans in the order their shapes were met,
    /// each explain still unanswered then kept as that shape's error.
    pub async fn finish(&self, within: Duration) -> Vec<PlanEntry> {
        drop(self.jobs.lock().expect("plan jobs lock").take());
        let task = self.task.lock().expect("plan task lock").take();
        if let Some(mut task) = task {
            if tokio::time::timeout(within, &mut task).await.is_err() {
                task.abort();
                let why = format!(
                    "not explained: the target had not answered within {} after the run \
                     (--op-timeout)",
                    crate::figures::units::duration_s(within.as_secs_f64())
                );
                return self.entries(&why);
            }
        }
        self.entries("not explained")
    }

    /// Stops the explains at once (the replay was interrupted): the plans done so far, every
    /// other claimed shape with `why` as its error.
    pub fn cut(&self, why: &str) -> Vec<PlanEntry> {
        drop(self.jobs.lock().expect("plan jobs lock").take());
        if let Some(task) = self.task.lock().expect("plan task lock").take() {
            task.abort();
        }
        self.entries(why)
    }

    /// Every claimed shape's entry, in slot order; one without a result has `missing` as its error.
    fn entries(&self, missing: &str) -> Vec<PlanEntry> {
        let mut done = std::mem::take(&mut *self.done.lock().expect("plan results lock"));
        let claimed = self.claimed.lock().expect("plan claims lock").clone();
        for (slot, _) in claimed.iter().enumerate().filter(|(_, c)| **c) {
            let slot = slot as u32;
            if !done.iter().any(|(s, _)| *s == slot) {
                done.push((slot, Err(missing.to_owned())));
            }
        }
        done.sort_by_key(|(slot, _)| *slot);
        done.into_iter()
            .map(|(slot, result)| {
                let mut entry = self.shapes.entry(slot);
                entry.set(result);
                entry
            })
            .collect()
    }
}

/// Runs one explain on the runner's connection (opened, or opened again after a failure).
async fn explain(
    conn: &mut Option<Conn>,
    target: &Target,
    host: &HostPort,
    timeout: Duration,
    cmd: &RawDocumentBuf,
) -> Result<plan::PlanEntry, String> {
    if conn.is_none() {
        *conn = Some(
            Conn::connect(target, host, timeout)
                .await
                .map_err(|e| e.to_string())?,
        );
    }
    let c = conn.as_mut().expect("connected above");
    match c.command(cmd, "explaining a request").await {
        Ok(reply) => plan::summarize(reply.as_bytes()).map_err(|e| e.to_string()),
        Err(e) => {
            *conn = None;
            Err(e.to_string())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::op_msg::{MsgFlags, OpMsg};
    use bson::rawdoc;

    fn msg(body: RawDocumentBuf) -> Vec<u8> {
        OpMsg::with_body(body, MsgFlags::empty()).encode(1, 0)
    }

    #[test]
    fn one_slot_per_shape_within_the_cap_and_none_for_other_commands() {
        let shapes = PlanShapes::new(2);
        let a1 = msg(rawdoc! {"find": "orders", "filter": {"status": "A"}, "$db": "shop"});
        let a2 = msg(rawdoc! {"find": "orders", "filter": {"status": "B"}, "$db": "shop"});
        let b = msg(rawdoc! {"find": "orders", "filter": {"sku": "x"}, "$db": "shop"});
        let c = msg(rawdoc! {"count": "orders", "query": {"qty": 1}, "$db": "shop"});
        let more = msg(rawdoc! {"getMore": 7_i64, "collection": "orders", "$db": "shop"});
        let insert = msg(rawdoc! {"insert": "orders", "documents": [{}], "$db": "shop"});
        assert_eq!(shapes.slot("find", &a1), Some(0));
        assert_eq!(shapes.slot("find", &a2), Some(0));
        assert_eq!(shapes.slot("find", &b), Some(1));
        assert_eq!(shapes.slot("count", &c), None, "past the cap");
        assert_eq!(shapes.slot("getMore", &more), None);
        assert_eq!(shapes.slot("insert", &insert), None);
        assert_eq!(shapes.slot("find", b"garbage"), None);
        let entry = shapes.entry(0);
        assert_eq!(entry.shape, "find shop.orders {status: ?string}");
        assert_eq!(entry.hash, shape::hash(&entry.shape));
        assert_eq!(entry.namespace, "shop.orders");
    }
}
