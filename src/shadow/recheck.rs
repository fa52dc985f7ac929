//! A read whose replies differed is sent again, once, to production and to the candidate after
//! a short delay (`recheck_delay`): data that changed between the two reads is the main source
//! of false differences. Only a read that still differs counts; with a control, a difference the
//! control shows too is noise. Each side is asked on a connection of the shadow's own, opened
//! for it; a cursor the read opened is killed. At most [`super::config::MAX_RECHECKS`] run at
//! once; a difference found beyond them stays unconfirmed.

use super::compare::{self, Verdict};
use super::plans;
use super::shared::{Pair, Shared};
use super::stats::{CandidateStats, Event, ExplainedFor};
use crate::replay::client::{Conn, ConnError, Target};
use crate::replay::measure::outcome;
use crate::replay::request::db_map::DbMap;
use crate::replay::request::rewrite::rewrite;
use bson::rawdoc;
use std::borrow::Cow;
use std::collections::BTreeSet;
use std::sync::Arc;

/// Databases as they are: the candidate holds production's.
pub struct SameDb;

impl DbMap for SameDb {
    fn map_db<'a>(&'a self, db: &'a str) -> Cow<'a, str> {
        Cow::Borrowed(db)
    }
}

/// What the recheck needs of the candidate.
pub struct Side {
    pub label: String,
    pub target: Target,
    pub stats: Arc<CandidateStats>,
}

/// Starts the recheck of `pair`, whose candidate reply differed on `fields`.
pub fn spawn(shared: Arc<Shared>, side: Arc<Side>, pair: Arc<Pair>, fields: BTreeSet<String>) {
    let Ok(permit) = shared.rechecks.clone().try_acquire_owned() else {
        side.stats.count(&pair.key, Event::Unconfirmed);
        return;
    };
    tokio::spawn(async move {
        let _permit = permit;
        let event = run(&shared, &side, &pair, &fields).await;
        side.stats.count(&pair.key, event);
    });
}

async fn run(shared: &Shared, side: &Side, pair: &Pair, first: &BTreeSet<String>) -> Event {
    tokio::time::sleep(shared.config.recheck_delay).await;
    let Ok(request) = rewrite(&pair.req, &SameDb, None) else {
        return Event::Unconfirmed;
    };
    let timeout = shared.config.reply_timeout;
    let (p, c) = tokio::join!(
        fetch(&shared.production, &request.bytes, pair, timeout),
        fetch(&side.target, &request.bytes, pair, timeout),
    );
    let (Ok(p), Ok(c)) = (p, c) else {
        return Event::Unconfirmed;
    };
    let (Some(pb), Some(cb)) = (compare::body(&p), compare::body(&c)) else {
        return Event::Unconfirmed;
    };
    let Verdict::Differ(fields) = compare::compare(&shared.opts, &pb, &cb, pair.unordered) else {
        return Event::Settled;
    };
    if let Some(control) = &shared.control {
        if let Ok(a2) = fetch(control, &request.bytes, pair, timeout).await {
            let a2 = compare::body(&a2).unwrap_or_default();
            if let Verdict::Differ(noise) = compare::compare(&shared.opts, &pb, &a2, pair.unordered)
            {
                if fields.is_subset(&noise) {
                    return Event::Noise;
                }
            }
        }
    }
    if let Some(log) = &shared.log {
        log.write(&line(shared, side, pair, (&p, &c), first.union(&fields)));
    }
    let (prod, stats) = (&shared.production, &side.stats);
    plans::explain_both(
        prod,
        &side.target,
        stats,
        &pair.key,
        &request.bytes,
        (timeout, ExplainedFor::Discrepancy),
    )
    .await;
    Event::Discrepancy
}

/// The discrepancy's JSON line: the shape, the namespace, the `_id`s of the documents that
/// differ, the fields, and both sides' outcome.
fn line<'a>(
    shared: &Shared,
    side: &Side,
    pair: &Pair,
    (p, c): (&[u8], &[u8]),
    fields: impl Iterator<Item = &'a String>,
) -> serde_json::Value {
    let (ps, cs) = (shared.shown(p), shared.shown(c));
    let (pb, cb) = (
        compare::body(&ps).unwrap_or_default(),
        compare::body(&cs).unwrap_or_default(),
    );
    let now = now_unix_ns();
    serde_json::json!({
        "time": crate::capture::rfc3339(now),
        // When production answered the read, and how long the discrepancy took to be confirmed
        // (the recheck's delay and both sides' answers to it).
        "read_time": crate::capture::rfc3339(pair.answered_ns),
        "confirmed_after_ms": now.saturating_sub(pair.answered_ns) / 1_000_000,
        "candidate": side.label,
        "shape": pair.key.text,
        "shape_hash": crate::shape::hash(&pair.key.text),
        "command": pair.key.command,
        "ns": pair.key.namespace,
        "ids": compare::differing_ids(&pb, &cb, 20),
        "fields": fields.collect::<BTreeSet<_>>(),
        "production": outcome::scan(&ps).ok(),
        "candidate_reply": outcome::scan(&cs).ok(),
    })
}

fn now_unix_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// Sends `request` on a connection of its own to `target` and returns the reply; kills the
/// cursor the reply opened.
async fn fetch(
    target: &Target,
    request: &[u8],
    pair: &Pair,
    timeout: std::time::Duration,
) -> Result<bytes::Bytes, ConnError> {
    let host = target.seeds.first().ok_or(ConnError::Closed {
        addr: target.display.clone(),
        during: "choosing a host",
    })?;
    let mut conn = Conn::connect(target, host, timeout).await?;
    let mut bytes = request.to_vec();
    let id = conn.send(&mut bytes).await?;
    let reply = conn.recv(id).await?;
    if let (Ok(Some(cursor)), Some(coll)) = (
        outcome::scan(&reply).map(|o| o.cursor_id.filter(|&c| c != 0)),
        &pair.req.collection,
    ) {
        let kill = rawdoc! {
            "killCursors": coll.to_string(),
            "cursors": [cursor],
            "$db": pair.req.db.to_string(),
        };
        let _ = conn.command(&kill, "killing the recheck's cursor").await;
    }
    Ok(reply)
}
