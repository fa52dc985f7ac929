//! The metrics endpoint: a minimal HTTP/1.1 server on tokio that answers `GET /metrics` with the
//! registry's exposition, and `GET`/`PUT` on a [`Control`]'s path when one is given (the proxy's
//! `/faults`), and closes the connection. Requests are read with a
//! size bound and a short deadline, and connections that send nothing give their slot back soon:
//! a scraper can never hold the proxy or the replayer up, and idle connections cannot blind it.

use super::expose::{render, CONTENT_TYPE};
use prometheus_client::registry::Registry;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use thiserror::Error;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// Longest request head read.
const MAX_REQUEST: usize = 8 * 1024;
/// A client has this long to send its request head (a scraper sends it at once).
const HEAD_DEADLINE: Duration = Duration::from_secs(2);
/// And this long in all, to send its request and read the answer.
const DEADLINE: Duration = Duration::from_secs(10);
/// Connections served at once; more wait for a turn (in the listen backlog).
const MAX_CONCURRENT: usize = 64;
/// At most one "all slots busy" line this often.
const BUSY_LOG_EVERY: Duration = Duration::from_secs(60);

#[derive(Debug, Error)]
pub enum MetricsError {
    #[error("--metrics {addr}: cannot listen there: {source}")]
    Listen {
        addr: String,
        source: std::io::Error,
    },
}

/// Longest request body read (a `PUT` to a [`Control`]).
const MAX_BODY: usize = 1024 * 1024;

/// A path besides `/metrics` that can be read (`GET`) and replaced (`PUT`, a JSON body). Only
/// served when the listener is on loopback or the request carries `Authorization: Bearer TOKEN`.
pub trait Control: Send + Sync {
    /// The path, such as `/faults`.
    fn path(&self) -> &'static str;
    /// The JSON answer to `GET`.
    fn get(&self) -> Vec<u8>;
    /// Replaces the state with the body; the JSON answer, or why the body was refused.
    fn put(&self, body: &[u8]) -> Result<Vec<u8>, String>;
}

/// A [`Control`] and who may use it.
#[derive(Clone)]
pub struct Controlled {
    pub control: Arc<dyn Control>,
    /// The bearer token that opens the control on a listener that is not on loopback.
    pub token: Option<String>,
}

/// A bound listener; [`MetricsServer::serve`] answers scrapes until the task is aborted.
#[derive(Debug)]
pub struct MetricsServer {
    listener: std::net::TcpListener,
    addr: SocketAddr,
}

impl MetricsServer {
    /// Binds `addr` (`host:port`; port 0 picks one). Needs no runtime: errors come before
    /// anything starts.
    pub fn bind(addr: &str) -> Result<MetricsServer, MetricsError> {
        let err = |source| MetricsError::Listen {
            addr: addr.to_owned(),
            source,
        };
        let listener = std::net::TcpListener::bind(addr).map_err(err)?;
        listener.set_nonblocking(true).map_err(err)?;
        let addr = listener.local_addr().map_err(err)?;
        Ok(MetricsServer { listener, addr })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Serves scrapes of `registry` on the current runtime.
    pub fn serve(self, registry: Registry) -> Result<JoinHandle<()>, MetricsError> {
        self.serve_with(registry, None)
    }

    /// Serves scrapes of `registry`, and `control` on its path.
    pub fn serve_with(
        self,
        registry: Registry,
        control: Option<Controlled>,
    ) -> Result<JoinHandle<()>, MetricsError> {
        let loopback = self.addr.ip().is_loopback();
        let addr = self.addr;
        let listener =
            TcpListener::from_std(self.listener).map_err(|source| MetricsError::Listen {
                addr: addr.to_string(),
                source,
            })?;
        let registry = Arc::new(registry);
        let slots = Arc::new(tokio::sync::Semaphore::new(MAX_CONCURRENT));
        Ok(tokio::spawn(async move {
            let mut busy_logged: Option<tokio::time::Instant> = None;
            loop {
                let slot = match slots.clone().try_acquire_owned() {
                    Ok(slot) => slot,
                    Err(_) => {
                        if busy_logged.is_none_or(|at| at.elapsed() >= BUSY_LOG_EVERY) {
                            tracing::warn!(
                                "metrics endpoint on {addr}: all {MAX_CONCURRENT} connections \
                                 busy; new scrapes wait (a client that sends no request within \
                                 {HEAD_DEADLINE:?} is closed)"
                            );
                            busy_logged = Some(tokio::time::Instant::now());
                        }
                        match slots.clone().acquire_owned().await {
                            Ok(slot) => slot,
                            Err(_) => return,
                        }
                    }
                };
                let Ok((stream, _)) = listener.accept().await else {
                    // Out of descriptors and the like: try again shortly.
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                };
                let registry = registry.clone();
                let control = control.clone();
                tokio::spawn(async move {
                    let control = control.as_ref().map(|c| (c, loopback));
                    let answering = answer(stream, &registry, control);
                    let _ = tokio::time::timeout(DEADLINE, answering).await;
                    drop(slot);
                });
            }
        }))
    }
}

async fn answer(
    mut stream: TcpStream,
    registry: &Registry,
    control: Option<(&Controlled, bool)>,
) -> std::io::Result<()> {
    let head = match tokio::time::timeout(HEAD_DEADLINE, read_head(&mut stream)).await {
        Ok(Ok(Some(head))) if head.is_empty() => return Ok(()),
        Ok(Ok(Some(head))) => head,
        Ok(Ok(None)) => {
            return respond(
                &mut stream,
                "431 Request Header Fields Too Large",
                "text/plain",
                b"",
            )
            .await
        }
        Ok(Err(e)) => return Err(e),
        // Sent nothing whole in time: the slot goes to the next scraper.
        Err(_) => return Ok(()),
    };
    let line = head.split(|&b| b == b'\r').next().unwrap_or_default();
    let mut parts = line.split(|&b| b == b' ');
    let method = parts.next().unwrap_or_default();
    let target = parts.next().unwrap_or_default();
    let path = target.split(|&b| b == b'?').next().unwrap_or_default();
    if let Some((c, loopback)) = control {
        if path == c.control.path().as_bytes() {
            return control_answer(&mut stream, &head, method, c, loopback).await;
        }
    }
    match (method, path) {
        (b"GET", b"/metrics") => {
            let body = render(registry);
            respond(&mut stream, "200 OK", CONTENT_TYPE, body.as_bytes()).await
        }
        (b"GET", _) => {
            respond(
                &mut stream,
                "404 Not Found",
                "text/plain",
                b"try /metrics\n",
            )
            .await
        }
        _ => respond(&mut stream, "405 Method Not Allowed", "text/plain", b"").await,
    }
}

/// A header's value (case-insensitive name), from a request head.
fn header<'h>(head: &'h [u8], name: &str) -> Option<&'h str> {
    let text = std::str::from_utf8(head).ok()?;
    let end = text.find("\r\n\r\n").unwrap_or(text.len());
    text[..end].split("\r\n").skip(1).find_map(|line| {
        let (key, value) = line.split_once(':')?;
        key.trim()
            .eq_ignore_ascii_case(name)
            .then_some(value.trim())
    })
}

/// `GET`/`PUT` on the control's path, refused (403) unless on loopback or with the token.
async fn control_answer(
    stream: &mut TcpStream,
    head: &[u8],
    method: &[u8],
    c: &Controlled,
    loopback: bool,
) -> std::io::Result<()> {
    let bearer = header(head, "authorization").and_then(|v| v.strip_prefix("Bearer "));
    let token_ok = matches!((&c.token, bearer), (Some(t), Some(b)) if t == b.trim());
    if !loopback && !token_ok {
        let why = b"refused: this listener is not on loopback; send Authorization: Bearer TOKEN (--fault-token)\n";
        return respond(stream, "403 Forbidden", "text/plain", why).await;
    }
    match method {
        b"GET" => respond(stream, "200 OK", JSON, &c.control.get()).await,
        b"PUT" => {
            let Some(body) = read_body(stream, head).await? else {
                let why = format!("a PUT needs a Content-Length of at most {MAX_BODY} bytes\n");
                return respond(stream, "400 Bad Request", "text/plain", why.as_bytes()).await;
            };
            match c.control.put(&body) {
                Ok(answer) => respond(stream, "200 OK", JSON, &answer).await,
                Err(why) => {
                    let why = format!("{why}\n");
                    respond(stream, "400 Bad Request", "text/plain", why.as_bytes()).await
                }
            }
        }
        _ => respond(stream, "405 Method Not Allowed", "text/plain", b"").await,
    }
}

const JSON: &str = "application/json";

/// The body after `head` (its first bytes may be in `head`), `Content-Length` long; `None` when
/// that header is missing or over [`MAX_BODY`].
async fn read_body(stream: &mut TcpStream, head: &[u8]) -> std::io::Result<Option<Vec<u8>>> {
    let Some(len) = header(head, "content-length").and_then(|v| v.parse::<usize>().ok()) else {
        return Ok(None);
    };
    if len > MAX_BODY {
        return Ok(None);
    }
    let start = head
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map_or(head.len(), |at| at + 4);
    let mut body = head[start..].to_vec();
    body.truncate(len);
    let mut buf = [0u8; 4096];
    while body.len() < len {
        let n = stream.read(&mut buf).await?;
        if n == 0 {
            return Ok(None);
        }
        let want = (len - body.len()).min(n);
        body.extend_from_slice(&buf[..want]);
    }
    Ok(Some(body))
}

/// The request head, up to its blank line; `None` when it is longer than [`MAX_REQUEST`]; empty
/// when the client closed before sending it whole.
async fn read_head(stream: &mut TcpStream) -> std::io::Result<Option<Vec<u8>>> {
    let mut head = Vec::with_capacity(1024);
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        if head.len() >= MAX_REQUEST {
            return Ok(None);
        }
        let n = stream.read(&mut buf).await?;
        if n == 0 {
            return Ok(Some(Vec::new()));
        }
        head.extend_from_slice(&buf[..n]);
    }
    Ok(Some(head))
}

async fn respond(
    stream: &mut TcpStream,
    status: &str,
    content_type: &str,
    body: &[u8],
) -> std::io::Result<()> {
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(body).await?;
    stream.shutdown().await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_address_says_which_option_failed() {
        let e = MetricsServer::bind("not-an-address")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("--metrics not-an-address: cannot listen there"),
            "{e}"
        );
    }

    #[tokio::test]
    async fn answers_get_metrics_and_refuses_the_rest() {
        let server = MetricsServer::bind("127.0.0.1:0").unwrap();
        let addr = server.local_addr();
        let mut registry = Registry::with_prefix("mongotape");
        let c: prometheus_client::metrics::counter::Counter = Default::default();
        c.inc();
        registry.register("things", "Things seen", c);
        let task = server.serve(registry).unwrap();
        let get = |req: &'static str| async move {
            let mut s = TcpStream::connect(addr).await.unwrap();
            s.write_all(req.as_bytes()).await.unwrap();
            let mut out = String::new();
            s.read_to_string(&mut out).await.unwrap();
            out
        };
        let ok = get("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n").await;
        assert!(ok.starts_with("HTTP/1.1 200 OK\r\n"), "{ok}");
        assert!(
            ok.contains("# TYPE mongotape_things_total counter\nmongotape_things_total 1\n"),
            "{ok}"
        );
        assert!(get("GET /nope HTTP/1.1\r\n\r\n")
            .await
            .starts_with("HTTP/1.1 404"));
        // The documented path only: `/` is not an alias.
        assert!(get("GET / HTTP/1.1\r\n\r\n")
            .await
            .starts_with("HTTP/1.1 404"));
        assert!(get("POST /metrics HTTP/1.1\r\n\r\n")
            .await
            .starts_with("HTTP/1.1 405"));
        task.abort();
    }
}
