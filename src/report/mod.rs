//! What a capture or a replay says, for people (text tables, HTML) and for machines (JSON).
//!
//! One folder or file per product:
//!
//! - [`inspect`]: `mongotape inspect`, a capture's counts, connections and drivers.
//! - [`cat`]: `mongotape cat`, each message as one JSON line, filtered.
//! - [`analyze`]: `mongotape analyze`, one streaming pass over a capture: the pass, the per-connection
//!   clock and the per-command figures, the finish, the timeline, the text rendering.
//! - [`compare`]: `mongotape compare`, the summaries of captures and replays side by side, and its text.
//! - [`html`]: every HTML page (analyze's, compare's, the replay's) and the page and chart builders
//!   they share.
//! - [`schema`]: the JSON Schema of every report kind, generated from the report types
//!   (`docs/schemas/`).
//!
//! Layers, bottom up: pair < inspect cat compare < analyze < html schema
//!
//! Shared by those products: [`pair`], which pairs replies with their requests. The vocabulary
//! that `replay` and the proxy share with them (units, tables, the summary, phases, buckets) is
//! one floor down, in [`crate::figures`].

pub mod analyze;
pub mod cat;
pub mod compare;
pub mod html;
pub mod inspect;
pub mod pair;
pub mod schema;
