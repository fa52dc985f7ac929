//! The replay connection's socket: plain TCP, or TLS (rustls) when the target's connection string
//! says `tls=true`. One enum rather than a boxed trait object: every request goes through it.

use crate::net::{tls, HostPort, NetError};
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;
use tokio_rustls::TlsConnector;

pub enum Stream {
    Plain(TcpStream),
    Tls(Box<TlsStream<TcpStream>>),
}

/// Why a socket could not be opened: the TCP connect, or the TLS handshake over it.
#[derive(Debug)]
pub enum OpenError {
    Tcp(io::Error),
    Tls(String),
}

/// Connects to `host` and, with a TLS configuration, shakes hands checking the name `host.host`.
pub async fn open(
    host: &HostPort,
    tls: Option<&Arc<rustls::ClientConfig>>,
) -> Result<Stream, OpenError> {
    let tcp = TcpStream::connect((host.host.as_str(), host.port))
        .await
        .map_err(OpenError::Tcp)?;
    let _ = tcp.set_nodelay(true);
    let Some(config) = tls else {
        return Ok(Stream::Plain(tcp));
    };
    let name = tls::server_name(&host.host).map_err(|e: NetError| OpenError::Tls(e.to_string()))?;
    let stream = TlsConnector::from(config.clone())
        .connect(name, tcp)
        .await
        .map_err(|e| OpenError::Tls(e.to_string()))?;
    Ok(Stream::Tls(Box::new(stream)))
}

impl Stream {
    pub fn is_tls(&self) -> bool {
        matches!(self, Stream::Tls(_))
    }

    /// This end's address (`?` when the socket cannot say).
    pub fn local_addr(&self) -> String {
        let tcp = match self {
            Stream::Plain(s) => s,
            Stream::Tls(s) => s.get_ref().0,
        };
        tcp.local_addr()
            .map_or_else(|_| "?".into(), |a| a.to_string())
    }
}

impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_flush(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}
