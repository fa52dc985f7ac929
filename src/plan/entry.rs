//! A shape's plan as reports carry it: the shape, the target it was explained on, and the plan
//! (`summary` reads it from an `explain` reply into the same type) or the error that took its
//! place.

use serde::{Deserialize, Serialize};

/// One entry of a report's `plans` array: a query shape's plan from `explain` (docs/shapes.md,
/// "Plans").
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[schemars(deny_unknown_fields)]
#[serde(default)]
pub struct PlanEntry {
    /// The shape's short hash (`shape::hash`), which joins this entry to the report's shapes.
    #[schemars(pattern(r"^[0-9a-f]{16}$"))]
    pub hash: String,
    /// The shape's text.
    pub shape: String,
    pub command: String,
    pub namespace: String,
    /// The target's label (an A/B replay).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// The winning plan from its leaves up (`IXSCAN {status: 1} -> FETCH`, `COLLSCAN`); null when
    /// `error` says why there is none.
    pub plan: Option<String>,
    /// Names of the indexes the plan reads.
    pub indexes: Vec<String>,
    /// executionStats.totalKeysExamined
    pub keys_examined: Option<u64>,
    /// executionStats.totalDocsExamined
    pub docs_examined: Option<u64>,
    /// A replay: `docs_examined` times the shape's requests in the run (`count` of its entry in
    /// `shapes`, of this target's in an A/B replay), the documents the shape examines over the
    /// run if each request examines as many as the explained one; absent when either is unknown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub docs_examined_run: Option<u64>,
    /// executionStats.nReturned
    pub n_returned: Option<u64>,
    /// executionStats.executionTimeMillis
    pub execution_time_ms: Option<u64>,
    /// The server's queryShapeHash (MongoDB 8.0+), when it reports one.
    pub query_shape_hash: Option<String>,
    /// The server's planCacheShapeHash (queryHash before 8.0), when it reports one.
    pub plan_cache_shape_hash: Option<String>,
    /// The server's planCacheKey, when it reports one.
    pub plan_cache_key: Option<String>,
    /// Why there is no plan: the explain failed (its errmsg and code), or could not be sent.
    pub error: Option<String>,
    /// A replay: how many of the capture's schema changes (create, createIndexes, dropIndexes,
    /// drop, collMod) the target had answered when this shape was explained; absent when one was
    /// in flight during the explain (the plan may or may not reflect it), or unknown. An A/B
    /// replay compares two targets' plans only when they were explained at the same count.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schema_changes: Option<u64>,
    /// An A/B replay: this target's plan line differs from the control's (A's; both explained
    /// without an error). Never set on the control's own entry.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plan_changed: Option<bool>,
}

impl PlanEntry {
    /// An entry for a shape (its hash, text, command and namespace), its plan still to come.
    pub fn of_shape(hash: &str, text: &str, command: &str, namespace: &str) -> PlanEntry {
        PlanEntry {
            hash: hash.to_owned(),
            shape: text.to_owned(),
            command: command.to_owned(),
            namespace: namespace.to_owned(),
            ..PlanEntry::default()
        }
    }

    /// Fills in the plan read from an explain ([`super::summarize`]: its plan's fields), or the
    /// error; the shape and the target stay this entry's.
    pub fn set(&mut self, result: Result<PlanEntry, String>) {
        match result {
            Ok(plan) => {
                *self = PlanEntry {
                    hash: std::mem::take(&mut self.hash),
                    shape: std::mem::take(&mut self.shape),
                    command: std::mem::take(&mut self.command),
                    namespace: std::mem::take(&mut self.namespace),
                    target: self.target.take(),
                    docs_examined_run: self.docs_examined_run,
                    plan_changed: self.plan_changed,
                    error: None,
                    ..plan
                }
            }
            Err(e) => self.error = Some(e),
        }
    }

    /// Several runs' plans (the shards of a replay): each shape's once, from the first run that
    /// explained it without an error (else the first that tried), in the order the runs list
    /// them; `None` when no run explained.
    pub fn merge<'a>(
        parts: impl IntoIterator<Item = Option<&'a [PlanEntry]>>,
    ) -> Option<Vec<PlanEntry>> {
        let mut out: Option<Vec<PlanEntry>> = None;
        for list in parts.into_iter().flatten() {
            let kept = out.get_or_insert_with(Vec::new);
            for entry in list {
                match kept.iter_mut().find(|e| e.hash == entry.hash) {
                    Some(k) if k.error.is_some() && entry.error.is_none() => *k = entry.clone(),
                    Some(_) => {}
                    None => kept.push(entry.clone()),
                }
            }
        }
        out
    }

    /// Sets `docs_examined_run` for a shape sent `requests` times in the run.
    pub fn count_requests(&mut self, requests: u64) {
        self.docs_examined_run = self.docs_examined.map(|d| d.saturating_mul(requests));
    }

    /// The plan as a report says it: the plan line, or `error: ...`.
    pub fn plan_or_error(&self) -> String {
        match (&self.plan, &self.error) {
            (Some(p), _) => p.clone(),
            (None, Some(e)) => format!("error: {e}"),
            (None, None) => "-".into(),
        }
    }
}
