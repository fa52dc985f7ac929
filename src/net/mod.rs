//! Reaching a MongoDB deployment: connection strings (`mongodb://`, `mongodb+srv://`, plain
//! `host:port`), TLS configuration built with rustls, and reads of a plain TCP socket that say
//! when their bytes arrived ([`stamped`]). Shared by the proxy (its upstream) and the replayer
//! (its target); nothing here knows about either.
//!
//! Layers, bottom up: stamped error < tls < conn_string

pub mod conn_string;
pub mod error;
pub mod stamped;
pub mod tls;

pub use conn_string::{ConnString, HostPort};
pub use error::NetError;
pub use tls::{ClientTls, ServerTls};
