//! How `record` stops: SIGTERM, SIGINT and SIGHUP as one stream; the first signal drains (the
//! listeners close, requests already sent are answered for up to the drain timeout), the second
//! stops at once. What a connection does with either is [`super::supervise`]'s. `record
//! --interface`, which runs no async runtime, raises the same [`Shutdown`] from a thread of its
//! own ([`on_thread`]).

use super::supervise::Shutdown;
use super::ProxyError;
use crate::metrics::MetricsServer;
use prometheus_client::registry::Registry;
use std::io::Write;
use std::time::Duration;
use tokio::signal::unix::{signal, Signal, SignalKind};
use tokio::sync::watch;

/// SIGTERM, SIGINT and SIGHUP, as one stream: an ssh session that drops (SIGHUP) stops the proxy
/// the way SIGTERM does, with the drain and the capture's `end` record.
pub struct Signals {
    term: Signal,
    int: Signal,
    hup: Signal,
}

impl Signals {
    /// Installs the handlers: from then on a signal drains, never kills. Install them before the
    /// listeners are announced.
    pub fn new() -> std::io::Result<Signals> {
        Ok(Signals {
            term: signal(SignalKind::terminate())?,
            int: signal(SignalKind::interrupt())?,
            hup: signal(SignalKind::hangup())?,
        })
    }

    pub async fn next(&mut self) -> &'static str {
        tokio::select! {
            _ = self.term.recv() => "SIGTERM",
            _ = self.int.recv() => "SIGINT",
            _ = self.hup.recv() => "SIGHUP",
        }
    }

    /// The [`Shutdown`] these signals raise: `drain` at the first, `now` at the second, each said
    /// on stderr (a stderr nobody reads loses the line, never stops the proxy).
    pub fn shutdown(mut self, drain_timeout: Duration) -> Shutdown {
        let (drain_tx, drain) = watch::channel(false);
        let (now_tx, now) = watch::channel(false);
        tokio::spawn(async move {
            let first = self.next().await;
            say(format_args!(
                "\nmongotape: stopping ({first}): draining for up to {drain_timeout:?} (a second \
                 signal stops at once)"
            ));
            let _ = drain_tx.send(true);
            let second = self.next().await;
            say(format_args!("mongotape: stopping at once ({second})"));
            let _ = now_tx.send(true);
        });
        Shutdown { drain, now }
    }
}

/// The [`Shutdown`] of a program without an async runtime of its own (`record --interface`):
/// a thread with a runtime of one thread watches the signals, as [`Signals::shutdown`] says, and
/// serves `metrics` (the endpoint and its registry), when given, until the second signal.
pub fn on_thread(
    drain_timeout: Duration,
    metrics: Option<(MetricsServer, Registry)>,
) -> Result<Shutdown, ProxyError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(ProxyError::Signals)?;
    // The handlers and the endpoint need the runtime's reactor; their tasks run on the thread.
    let shutdown = runtime.block_on(async {
        let signals = Signals::new().map_err(ProxyError::Signals)?;
        if let Some((server, registry)) = metrics {
            server.serve(registry)?;
        }
        Ok::<_, ProxyError>(signals.shutdown(drain_timeout))
    })?;
    let mut now = shutdown.now.clone();
    std::thread::Builder::new()
        .name("mongotape-signals".into())
        .spawn(move || {
            runtime.block_on(async move {
                let _ = now.wait_for(|up| *up).await;
            })
        })
        .map_err(ProxyError::Signals)?;
    Ok(shutdown)
}

fn say(line: std::fmt::Arguments) {
    let _ = writeln!(std::io::stderr(), "{line}");
}
