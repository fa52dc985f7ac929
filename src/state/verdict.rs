//! What a replay's end-state check says (`replay --check-state`): the report's `state` section of
//! each target, the A/B report's comparison of the targets' ends, and their text.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The most differing `_id`s named per collection.
pub const MAX_IDS: usize = 5;

/// `replay --check-state`: the target's end state against the capture's.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default)]
pub struct StateReport {
    /// `equal`: every snapshotted collection ended with the documents recorded at T1 (same count,
    /// same hash); `differs`: some did not, listed in `differing`; `unknown`: the check could not
    /// be made, `error` says why.
    pub verdict: String,
    /// The snapshot folder the recorded end state was read from.
    pub dir: String,
    /// T1, the point the recorded end was taken at, as text.
    pub recorded_at: String,
    /// Collections compared: each recorded one once per database it was replayed into
    /// (`--db-map`, `--clones`).
    pub collections: u64,
    /// The collections that ended otherwise than recorded.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub differing: Vec<CollectionDifference>,
    /// Collections whose `dbHash` both servers gave and which differ there although mongotape's
    /// hash agrees (the servers hash differently, e.g. in another order): said, not counted.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub db_hash_only: Vec<String>,
    /// Recorded write requests whose effect the server decides (so a replay cannot reproduce
    /// it exactly), by cause: `$currentDate`, `$rand`, `$$NOW`, `$$CLUSTER_TIME`, `$sample`,
    /// `upsert without _id`, `insert without _id`.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub non_reproducible: BTreeMap<String, u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// One collection that ended otherwise on one side than on the other.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default)]
pub struct CollectionDifference {
    /// The namespace on the first side (as recorded, or on the first target).
    pub ns: String,
    /// The namespace on the other side (the target's, after `--db-map` and `--clones`).
    pub other_ns: String,
    /// Documents on the first side (recorded, or on the first target).
    pub documents: u64,
    /// Documents on the other side.
    pub other_documents: u64,
    /// Up to 5 `_id`s (relaxed extended JSON) of documents missing, extra or changed on the
    /// other side.
    pub ids: Vec<String>,
}

/// A/B with `--check-state`: the targets' end states against each other.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default)]
pub struct StatesBetween {
    /// One comparison per target after the first, against the first.
    pub pairs: Vec<PairState>,
}

/// Two targets' end states compared.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default)]
pub struct PairState {
    /// The first target's label.
    pub a: String,
    /// The other target's label.
    pub b: String,
    /// `equal` (b ended with the same data as a), `differs` or `unknown` (with `error`).
    pub verdict: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub differing: Vec<CollectionDifference>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// `1 collection`, `2 collections`.
pub fn collections(n: u64) -> String {
    match n {
        1 => "1 collection".into(),
        n => format!("{n} collections"),
    }
}

impl CollectionDifference {
    fn text(&self) -> String {
        let ns = match self.ns == self.other_ns {
            true => self.ns.clone(),
            false => format!("{} / {}", self.ns, self.other_ns),
        };
        let ids = match self.ids.is_empty() {
            true => String::new(),
            false => format!(", _id {}", self.ids.join(", ")),
        };
        format!(
            "{ns}: {} vs {} documents{ids}",
            self.documents, self.other_documents
        )
    }
}

impl StateReport {
    /// `state: equal ...` or `state: differs ...`, then a line per difference and the
    /// non-reproducible operations.
    pub fn text(&self) -> String {
        let mut out = match self.verdict.as_str() {
            "equal" => format!(
                "state: equal ({} as recorded at {})\n",
                collections(self.collections),
                self.recorded_at
            ),
            "differs" => format!(
                "state: differs in {} of {} (recorded at {}; recorded vs target):\n",
                self.differing.len(),
                collections(self.collections),
                self.recorded_at
            ),
            _ => format!(
                "state: unknown: {}\n",
                self.error.as_deref().unwrap_or("not checked")
            ),
        };
        for d in &self.differing {
            out.push_str(&format!("  {}\n", d.text()));
        }
        for ns in &self.db_hash_only {
            out.push_str(&format!("  {ns}: dbHash differs, documents equal\n"));
        }
        if !self.non_reproducible.is_empty() {
            let causes: Vec<String> = self
                .non_reproducible
                .iter()
                .map(|(k, n)| format!("{n} {k}"))
                .collect();
            out.push_str(&format!(
                "non-reproducible writes recorded (server-generated values): {}\n",
                causes.join(", ")
            ));
        }
        out
    }
}

impl StatesBetween {
    /// `state: B ended with the same data as A`, or what differs.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for p in &self.pairs {
            match p.verdict.as_str() {
                "equal" => out.push_str(&format!(
                    "state: {} ended with the same data as {}\n",
                    p.b, p.a
                )),
                "differs" => {
                    out.push_str(&format!(
                        "state: {} ended with other data than {}:\n",
                        p.b, p.a
                    ));
                    for d in &p.differing {
                        out.push_str(&format!("  {}\n", d.text()));
                    }
                }
                _ => out.push_str(&format!(
                    "state: {} against {}: unknown: {}\n",
                    p.b,
                    p.a,
                    p.error.as_deref().unwrap_or("not checked")
                )),
            }
        }
        out
    }

    pub fn differs(&self) -> bool {
        self.pairs.iter().any(|p| p.verdict != "equal")
    }
}
