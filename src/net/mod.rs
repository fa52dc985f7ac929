//! Reaching a MongoDB deployment: connection strings (`mongodb://`, `mongodb+srv://`, plain
//! `host:port`) and TLS configuration built with rustls. Shared by the proxy (its upstream) and the
//! replayer (its target); nothing here knows about either.
//!
//! Layers, bottom up: error < tls < conn_string

pub mod conn_string;
pub mod error;
pub mod tls;

pub use conn_string::{ConnString, HostPort};
pub use error::NetError;
pub use tls::{ClientTls, ServerTls};
