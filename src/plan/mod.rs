//! Query plans: what the server chose for a request, read from its `explain` reply, so a report can
//! say `IXSCAN {status: 1} -> FETCH` next to a shape's latency, and an A/B report which shapes
//! changed plan. `docs/shapes.md` describes the fields.
//!
//! - [`request`]: which commands are explained, and the `explain` command built from a request
//!   as it goes to the server (already rewritten for a replay): the session, transaction,
//!   cluster time, read and write concern left out, `verbosity: "executionStats"`.
//! - [`entry`]: a shape's plan as a report's `plans` array carries it ([`PlanEntry`], the one
//!   type of a plan).
//! - [`summary`]: an `explain` reply to a [`PlanEntry`]'s plan: the winning plan as one line,
//!   the keys and documents examined, documents returned, and the server's own hashes when it
//!   reports them. Reads find/count/distinct/update/delete/findAndModify replies, aggregate's
//!   `stages` with `$cursor`, and the `shards` forms of a sharded cluster.
//! - [`text`]: the plans table and an A/B run's plans side by side (`plan_changed`, a finding
//!   per changed plan).
//!
//! Pure, no I/O, never panics on input: replies are walked as raw BSON with every length checked,
//! the plan tree without recursion and with its depth and size bounded. Beside `shape`: reads
//! `wire` and `figures` only.
//!
//! Layers, bottom up: entry request < summary < text

pub mod entry;
pub mod request;
pub mod summary;
pub mod text;

pub use entry::PlanEntry;
pub use request::{explain_request, explainable, RequestError};
pub use summary::{summarize, ExplainError};

#[cfg(test)]
mod tests;
