//! The two legs' sockets, plain or TLS, as read and write halves the pumps use alike. A plain TCP
//! socket is split without a lock; a TLS stream goes through `tokio::io::split`.

use crate::capture::Side;
use crate::net::{tls, ClientTls, HostPort, NetError, ServerTls};
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::tcp::OwnedReadHalf;
use tokio::net::TcpStream;
use tokio_rustls::{TlsAcceptor, TlsConnector};

/// A leg's read side: a plain TCP half, whose reads can also carry the kernel's arrival stamp
/// ([`crate::net::stamped`]), or any other stream (TLS).
pub enum ReadHalf {
    Tcp(OwnedReadHalf),
    Other(Box<dyn AsyncRead + Unpin + Send>),
}

impl ReadHalf {
    /// The socket under a plain TCP half.
    pub fn tcp(&self) -> Option<&TcpStream> {
        match self {
            ReadHalf::Tcp(r) => Some(r.as_ref()),
            ReadHalf::Other(_) => None,
        }
    }
}

impl AsyncRead for ReadHalf {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            ReadHalf::Tcp(r) => Pin::new(r).poll_read(cx, buf),
            ReadHalf::Other(r) => Pin::new(r).poll_read(cx, buf),
        }
    }
}

pub type WriteHalf = Box<dyn AsyncWrite + Unpin + Send>;

/// How long a client or an upstream may take over its TLS handshake.
pub const TLS_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

fn split_tcp(stream: TcpStream) -> (ReadHalf, WriteHalf) {
    let _ = stream.set_nodelay(true);
    let (r, w) = stream.into_split();
    (ReadHalf::Tcp(r), Box::new(w))
}

fn split_any<S: AsyncRead + AsyncWrite + Send + 'static>(stream: S) -> (ReadHalf, WriteHalf) {
    let (r, w) = tokio::io::split(stream);
    (ReadHalf::Other(Box::new(r)), Box::new(w))
}

/// `EMFILE` and `ENFILE` on Linux: the process or the system is out of file descriptors.
const EMFILE: i32 = 24;
const ENFILE: i32 = 23;

/// True when `e` says the proxy itself ran out of file descriptors (not the peer's fault).
pub fn out_of_descriptors(e: &std::io::Error) -> bool {
    matches!(e.raw_os_error(), Some(EMFILE) | Some(ENFILE))
}

/// Why an upstream connection could not be made, and whose fault it is: the upstream's, or the
/// proxy's own when it is out of file descriptors.
#[derive(Debug, Clone)]
pub struct ConnectError {
    pub side: Side,
    pub reason: String,
}

impl From<ConnectError> for String {
    fn from(e: ConnectError) -> String {
        e.reason
    }
}

fn upstream_failure(reason: String) -> ConnectError {
    ConnectError {
        side: Side::Upstream,
        reason,
    }
}

/// How the proxy reaches upstream members: TCP, with TLS when the connection string asks.
#[derive(Clone)]
pub struct Connector {
    tls: Option<TlsConnector>,
    timeout: Duration,
}

impl Connector {
    pub fn new(tls: Option<&ClientTls>, timeout: Duration) -> Result<Connector, NetError> {
        let tls = match tls {
            Some(t) => Some(TlsConnector::from(t.client_config()?)),
            None => None,
        };
        Ok(Connector { tls, timeout })
    }

    pub fn is_tls(&self) -> bool {
        self.tls.is_some()
    }

    /// Connects (and shakes hands) within the timeout; the error says what failed, for a log line
    /// that names the upstream side.
    pub async fn connect(&self, member: &HostPort) -> Result<(ReadHalf, WriteHalf), ConnectError> {
        let target = member.to_string();
        let tcp = match tokio::time::timeout(
            self.timeout,
            TcpStream::connect((member.host.as_str(), member.port)),
        )
        .await
        {
            Ok(Ok(s)) => s,
            Ok(Err(e)) if out_of_descriptors(&e) => {
                return Err(ConnectError {
                    side: Side::Proxy,
                    reason: format!(
                        "the proxy is out of file descriptors ({e}) connecting to upstream \
                         {target}: raise `ulimit -n`"
                    ),
                })
            }
            Ok(Err(e)) => {
                return Err(upstream_failure(format!(
                    "cannot connect to upstream {target}: {e}"
                )))
            }
            Err(_) => {
                return Err(upstream_failure(format!(
                    "connecting to upstream {target} timed out after {:?} (--connect-timeout)",
                    self.timeout
                )))
            }
        };
        let Some(connector) = &self.tls else {
            return Ok(split_tcp(tcp));
        };
        let _ = tcp.set_nodelay(true);
        let name = tls::server_name(&member.host).map_err(|e| upstream_failure(e.to_string()))?;
        match tokio::time::timeout(TLS_HANDSHAKE_TIMEOUT, connector.connect(name, tcp)).await {
            Ok(Ok(stream)) => Ok(split_any(stream)),
            Ok(Err(e)) => Err(upstream_failure(format!(
                "TLS handshake with upstream {target} failed: {e}"
            ))),
            Err(_) => Err(upstream_failure(format!(
                "TLS handshake with upstream {target} timed out after {TLS_HANDSHAKE_TIMEOUT:?}"
            ))),
        }
    }
}

/// How the proxy takes client connections: as they come, or through a TLS handshake.
#[derive(Clone)]
pub struct Acceptor {
    tls: Option<TlsAcceptor>,
}

impl Acceptor {
    pub fn new(tls: Option<&ServerTls>) -> Result<Acceptor, NetError> {
        let tls = match tls {
            Some(t) => Some(TlsAcceptor::from(t.server_config()?)),
            None => None,
        };
        Ok(Acceptor { tls })
    }

    pub fn plain() -> Acceptor {
        Acceptor { tls: None }
    }

    pub fn is_tls(&self) -> bool {
        self.tls.is_some()
    }

    /// The client's halves, or why its TLS handshake failed (said from the client side).
    pub async fn accept(&self, tcp: TcpStream) -> Result<(ReadHalf, WriteHalf), String> {
        let Some(acceptor) = &self.tls else {
            return Ok(split_tcp(tcp));
        };
        let _ = tcp.set_nodelay(true);
        // A TLS client opens with a handshake record (0x16); anything else is a plain client.
        let mut first = [0u8; 1];
        match tokio::time::timeout(TLS_HANDSHAKE_TIMEOUT, tcp.peek(&mut first)).await {
            Ok(Ok(1)) if first[0] != 0x16 => {
                return Err(
                    "client sent plaintext to a TLS listener (connect with tls=true)".into(),
                )
            }
            Ok(Ok(_)) => {}
            Ok(Err(e)) => return Err(format!("client read failed before TLS: {e}")),
            Err(_) => return Err("client sent nothing within the TLS handshake timeout".into()),
        }
        match tokio::time::timeout(TLS_HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await {
            Ok(Ok(stream)) => Ok(split_any(stream)),
            Ok(Err(e)) => Err(format!("client TLS handshake failed: {e}")),
            Err(_) => Err("client TLS handshake timed out".into()),
        }
    }
}
