//! The state a replay starts from: a point-in-time snapshot of the collections a workload uses,
//! stored in mongodump's layout (`docs/state.md`).
//!
//! `pattern` is which namespaces (`shop.*`, `shop.orders`; never the server's own); `layout` the
//! files and what they hold, without I/O; `bsonfile` reads a `.bson` file as a stream of checked
//! documents; `writer` writes a snapshot folder as captures are written (no clobbering, no links,
//! a `.partial` until whole); `dump` opens a snapshot folder, mongotape's or mongodump's, for
//! reading; `source` takes a snapshot from a server at one cluster time, with the driver.
//! `load` restores a snapshot into a server (drop, create with the options, documents in
//! batches over several connections by `restore_batches`, then the indexes); `restore_plan`
//! what `replay --restore` is asked and reports.
//!
//! The end state (`docs/state.md`, "The end state"): `fingerprint` is a collection's count and
//! order-independent hash, without I/O; `end` the end's files (`mongotape-end.json`, the per-`_id`
//! digests); `survey` fingerprints collections on a server; `ending` takes the end when a
//! recording stops; `reproducible` counts the recorded writes a replay cannot reproduce;
//! `verdict` is what a check says, `compare` makes the check.
//!
//! Layers, bottom up: error < bsonfile layout pattern < dump writer restore_batches < source load fingerprint reproducible verdict < restore_plan end survey < ending compare

pub mod bsonfile;
pub mod compare;
pub mod dump;
pub mod end;
pub mod ending;
pub mod error;
pub mod fingerprint;
pub mod layout;
pub mod load;
pub mod pattern;
pub mod reproducible;
pub mod restore_batches;
pub mod restore_plan;
pub mod source;
pub mod survey;
pub mod verdict;
pub mod writer;

pub use dump::{DumpCollection, DumpMetadata, SnapshotDir};
pub use error::StateError;
pub use layout::{Manifest, SnapshotPoint};
pub use load::{load, DbTargets, LoadOptions, LoadReport};
pub use pattern::NsPattern;
pub use source::{take, SnapshotOptions};
