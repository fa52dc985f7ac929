//! Step 2 of the pipeline: a recorded request understood, then written out for each copy.
//!
//! Here: what a request is (command, database, collection, session, transaction, the cursors it
//! names) and whether it is replayed at all ([`Skip`]), decided once per recorded request whatever
//! its opcode ([`understand`], its names shared through [`crate::replay::names`]; legacy ones come in through [`as_command`], OP_KILL_CURSORS through
//! [`kill_cursors`]). Then, per copy: [`rewrite`] (with
//! [`db_map`] for databases and [`sessions`] for live `lsid`s) and [`ids`] (new ObjectId `_id`s on
//! every pass after the first).
//!
//! Layers, bottom up: db_map ids recorded < as_command rewrite sessions < understand < kill_cursors

pub mod as_command;
pub mod db_map;
pub mod ids;
pub mod kill_cursors;
pub mod recorded;
pub mod rewrite;
pub mod sessions;
pub mod understand;

pub use recorded::{Request, Scope, Skip};
pub use understand::{open, understand, understand_opened, understand_with, Opened};
