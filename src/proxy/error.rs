//! What can stop the proxy: a listener that cannot bind, the capture, the upstream, TLS, the
//! topology, the metrics endpoint. A file of its own because `monitor` returns it too.

use super::listen::ListenError;
use crate::capture::CaptureError;
use crate::metrics::MetricsError;
use crate::net::NetError;
use thiserror::Error;

#[derive(Debug, Error)]
pub enum ProxyError {
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        addr: String,
        source: std::io::Error,
    },
    #[error(transparent)]
    Capture(#[from] CaptureError),
    #[error("--upstream")]
    Upstream(#[from] NetError),
    /// `--tls-cert`, `--tls-key`, `--tls-ca`: the error names the option.
    #[error(transparent)]
    ClientTls(NetError),
    #[error(transparent)]
    ListenPlan(#[from] ListenError),
    #[error("upstream topology: {0}")]
    Topology(String),
    #[error(transparent)]
    Metrics(#[from] MetricsError),
    /// The signal handlers, or the thread that watches them, could not be set up.
    #[error("cannot watch the signals: {0}")]
    Signals(std::io::Error),
}
