//! What a capture or a replay says, for people (text tables, HTML) and for machines (JSON).
//!
//! One folder or file per product:
//!
//! - [`inspect`]: `mongotape inspect`, a capture's counts, connections and drivers.
//! - [`cat`]: `mongotape cat`, each message as one JSON line, filtered.
//! - [`analyze`]: `mongotape analyze`, one streaming pass over a capture: the pass, the per-connection
//!   clock and the per-command figures, the finish, the timeline, the text rendering.
//! - [`compare`]: `mongotape compare`, the summaries of captures and replays side by side, and its text.
//! - [`merge`]: `mongotape merge`, the reports of a sharded replay added into one, exactly.
//! - [`html`]: every HTML page (analyze's, compare's, the replay's) and the page and chart builders
//!   they share.
//!
//! Shared by those products (and by `replay`):
//!
//! - [`buckets`]: how wide a timeline's points are, for any run's length.
//! - [`summary`]: the summary every report carries (`compare` reads it back).
//! - [`phases`]: the figures per phase, cut at step markers, with their text table.
//! - [`pair`]: pairs replies with their requests.
//! - [`table`]: plain-text tables.
//! - [`units`]: every number as text: durations, bytes, counts, rates, shares.

/// The `schema_version` at the top of every JSON report (`docs/schemas/<kind>.schema.json`).
/// Raised when a key is removed or renamed or changes type; adding a key keeps it.
pub const SCHEMA_VERSION: u32 = 1;

pub mod analyze;
pub mod buckets;
pub mod cat;
pub mod compare;
pub mod html;
pub mod inspect;
pub mod merge;
pub mod pair;
pub mod phases;
pub mod summary;
pub mod table;
pub mod units;
