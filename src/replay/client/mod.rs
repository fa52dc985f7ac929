//! A minimal MongoDB client for the replayer, below every other part of `replay/` (it knows only
//! `wire/`): where to connect ([`target`]), a connection that sends raw OP_MSG bytes and reads whole
//! frames ([`connection`]), opening one ([`handshake`]: `hello`, compression) and authenticating
//! ([`scram`]: SCRAM-SHA-256 and SCRAM-SHA-1).

pub mod connection;
pub mod handshake;
pub mod scram;
pub mod target;

pub use connection::{command_ok, error_text, Conn, ConnError, UNAUTHORIZED};
pub use target::{Target, TargetError};
