//! Errors from reading a connection string or building a TLS configuration.

use std::path::PathBuf;
use thiserror::Error;

#[derive(Debug, Error)]
pub enum NetError {
    #[error("invalid connection string {uri}: {detail}")]
    ConnString { uri: String, detail: String },
    #[error("connection string option {option} is not supported here: {why}")]
    Unsupported { option: String, why: String },
    #[error("cannot resolve {uri}: {detail}")]
    Resolve { uri: String, detail: String },
    #[error("cannot read {what} {path}: {source}")]
    ReadFile {
        what: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{what} {path} holds no {expected}")]
    EmptyPem {
        what: &'static str,
        path: PathBuf,
        expected: &'static str,
    },
    #[error("invalid TLS configuration: {0}")]
    Tls(String),
    #[error("{host} is not a valid TLS server name")]
    ServerName { host: String },
}
