//! The query plans of a shape that differed or whose latency shifted: `explain` (executionStats) of the read on production
//! and on the target, each on a connection of its own, summarized by [`crate::plan`] into one
//! line (`IXSCAN {g: 1} -> FETCH`), kept per shape beside its figures with `plan_changed`.
//! Rate-limited: at most one explain per shape and target per [`EXPLAIN_EVERY`].

use super::stats::{CandidateStats, ExplainedFor, Plans, ShapeKey};
use crate::replay::client::{Conn, Target};
use std::time::Duration;

/// The least time between two explains of one shape on one target: at most 2 in 15 minutes.
pub const EXPLAIN_EVERY: Duration = Duration::from_secs(450);

/// Explains `request` (the read as sent, a whole OP_MSG) on both sides and keeps both plans
/// under `key`, unless this shape was explained on this target within [`EXPLAIN_EVERY`].
pub async fn explain_both(
    production: &Target,
    target: &Target,
    stats: &CandidateStats,
    key: &ShapeKey,
    request: &[u8],
    (timeout, reason): (Duration, ExplainedFor),
) {
    if !stats.may_explain(&key.text, EXPLAIN_EVERY) {
        return;
    }
    let Ok(command) = crate::plan::explain_request(request) else {
        return;
    };
    let (p, t) = tokio::join!(
        plan(production, &command, timeout),
        plan(target, &command, timeout)
    );
    stats.plans(
        key,
        Plans {
            production: p,
            candidate: t,
            reason,
        },
    );
}

/// The winning plan's line on `target`, or why there is none.
async fn plan(target: &Target, command: &bson::RawDocumentBuf, timeout: Duration) -> String {
    let Some(host) = target.seeds.first() else {
        return "no host".into();
    };
    let asked = tokio::time::timeout(timeout, async {
        let mut conn = Conn::connect(target, host, timeout).await?;
        conn.command(command, "explaining a read").await
    });
    match asked.await {
        Ok(Ok(reply)) => match crate::plan::summarize(reply.as_bytes()) {
            Ok(entry) => entry
                .plan
                .or(entry.error)
                .unwrap_or_else(|| "no plan".into()),
            Err(e) => format!("explain failed: {e}"),
        },
        Ok(Err(e)) => format!("explain failed: {e}"),
        Err(_) => "explain timed out".into(),
    }
}
