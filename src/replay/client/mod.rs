//! A minimal MongoDB client for the replayer, below every other part of `replay/` (it knows only
//! `wire/` and `net/`): where to connect ([`target`]: the `--target` connection string, and
//! [`topology`]: one server, a replica set's primary and secondaries, or mongos found from
//! `hello`), a connection that sends raw OP_MSG bytes and reads whole frames ([`connection`], over
//! TCP or TLS: [`stream`]; on plain TCP its reads may say when their bytes arrived:
//! [`crate::net::stamped`]), opening one ([`handshake`]: `hello`, compression) and authenticating
//! ([`auth`]: MONGODB-X509, and [`scram`]: SCRAM-SHA-256 with SASLprep and SCRAM-SHA-1).
//!
//! Layers, bottom up: stream target < connection < scram topology < auth < handshake

pub mod auth;
pub mod connection;
pub mod handshake;
pub mod scram;
pub mod stream;
pub mod target;
pub mod topology;

pub use connection::{Conn, ConnError};
pub use target::{ReadMode, Target, TargetError};
pub use topology::{is_not_primary, Kind, Topology};
