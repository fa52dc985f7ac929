//! A minimal MongoDB connection for the replayer: raw OP_MSG bytes out, whole frames back, and
//! commands of its own (handshake, auth, serverStatus). Nothing here re-encodes a replayed request.
//! Opening one (`hello`, SCRAM) is [`super::handshake`].

use super::stream::Stream;
use crate::net::stamped::{self, ReadStamp, Stamper};
use crate::wire::compressed::Compressor;
use crate::wire::header::MsgHeader;
use crate::wire::op_msg::{MsgFlags, OpMsg};
use crate::wire::{reply, FrameSplitter, OpMsgView, WireError};
use bson::RawDocumentBuf;
use bytes::Bytes;
use std::pin::Pin;
use std::time::Duration;
use thiserror::Error;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::time::{Instant, Sleep};

/// What went wrong talking to the target. Every variant names the target's address: these are
/// target-side failures, as opposed to capture or internal ones.
#[derive(Debug, Error)]
pub enum ConnError {
    #[error("cannot connect to the target {addr}: {source}")]
    Connect {
        addr: String,
        source: std::io::Error,
    },
    #[error("the target {addr} closed the connection while {during}")]
    Closed { addr: String, during: &'static str },
    #[error("i/o error with the target {addr} while {during}: {source}")]
    Io {
        addr: String,
        during: &'static str,
        source: std::io::Error,
    },
    #[error("the target {addr} sent a malformed message: {source}")]
    Wire { addr: String, source: WireError },
    #[error("the target {addr} did not answer within {secs:.1} s while {during}")]
    Timeout {
        addr: String,
        secs: f64,
        during: &'static str,
    },
    #[error(
        "the target {addr} answered request {request_id} with a reply to {response_to}, a request \
         this connection ({local}) never sent: its replies cannot be matched to requests any more"
    )]
    WrongReply {
        addr: String,
        local: String,
        request_id: i32,
        response_to: i32,
    },
    #[error(
        "the target {addr} answered request {request_id} with a reply to {response_to} (an earlier \
         request on connection {local}) and sent no reply to {request_id} within {secs:.1} s"
    )]
    AnsweredAnother {
        addr: String,
        local: String,
        request_id: i32,
        response_to: i32,
        secs: f64,
    },
    #[error("TLS handshake with the target {addr} failed: {detail}")]
    Tls { addr: String, detail: String },
    #[error("handshake with the target {addr} failed: {detail}")]
    Handshake { addr: String, detail: String },
    #[error("authentication as {user:?} with the target {addr} failed: {detail}")]
    Auth {
        addr: String,
        user: String,
        detail: String,
    },
    #[error(
        "unauthorized: the target {addr} requires authentication ({command}: {detail}); give \
         credentials in --target, e.g. mongodb://USER:PASSWORD@{addr}/?authSource=admin"
    )]
    Unauthorized {
        addr: String,
        command: String,
        detail: String,
    },
}

pub struct Conn {
    stream: Stream,
    splitter: FrameSplitter,
    next_id: i32,
    /// `next_id` went past `i32::MAX` and started again at 1.
    wrapped: bool,
    addr: String,
    /// This end's address, which names the connection in errors (and in the target's logs).
    local: String,
    timeout: Duration,
    /// One timer for the connection's replies, moved only when it would fire too early (arming a
    /// timer for every reply would lock the runtime's timer wheel twice per request).
    watchdog: Option<Pin<Box<Sleep>>>,
    compressor: Option<Compressor>,
    /// Replies that answered no request we were waiting for (exhaust pushes, late replies).
    pub stray_replies: u64,
    /// The request the last stray reply answered, while waiting for the current one.
    stray_to: Option<i32>,
    /// Reads say when their bytes arrived ([`Conn::stamp_replies`]).
    stamper: Option<Stamper>,
    last_read: Option<ReadStamp>,
}

impl Conn {
    /// A connection over `stream` that has not said `hello` yet ([`Conn::connect`] does).
    pub(super) fn new(stream: Stream, addr: String, timeout: Duration) -> Conn {
        Conn {
            local: stream.local_addr(),
            stream,
            splitter: FrameSplitter::new(),
            next_id: 1,
            wrapped: false,
            addr,
            timeout,
            watchdog: None,
            compressor: None,
            stray_replies: 0,
            stray_to: None,
            stamper: None,
            last_read: None,
        }
    }

    /// Sets the compressor the target agreed to in the handshake.
    pub(super) fn agree_compressor(&mut self, compressor: Compressor) {
        self.compressor = Some(compressor);
    }

    /// From now on, each read notes how late it was to read what had arrived (the kernel's
    /// receive timestamp): [`Conn::last_read`]. Plain TCP only; false when it cannot.
    pub fn stamp_replies(&mut self) -> bool {
        let stamped = match &self.stream {
            Stream::Plain(tcp) => stamped::enable(tcp).is_ok(),
            Stream::Tls(_) => false,
        };
        self.stamper = stamped.then(Stamper::default);
        stamped
    }

    /// The read that completed the last reply, when reads are stamped.
    pub fn last_read(&self) -> Option<ReadStamp> {
        self.last_read
    }

    pub fn addr(&self) -> &str {
        &self.addr
    }

    pub fn is_tls(&self) -> bool {
        self.stream.is_tls()
    }

    /// The compressor offered and agreed in the handshake, if any.
    pub fn compressor(&self) -> Option<Compressor> {
        self.compressor
    }

    fn io(&self, during: &'static str) -> impl Fn(std::io::Error) -> ConnError + '_ {
        move |source| ConnError::Io {
            addr: self.addr.clone(),
            during,
            source,
        }
    }

    /// Sends a whole message after giving it a fresh request id; returns that id.
    pub async fn send(&mut self, message: &mut [u8]) -> Result<i32, ConnError> {
        let id = self.next_id;
        self.next_id = self.next_id.wrapping_add(1).max(1);
        self.wrapped |= self.next_id == 1;
        MsgHeader::write_request_id(message, id);
        let addr = &self.addr;
        let io = |source| ConnError::Io {
            addr: addr.clone(),
            during: "sending a request",
            source,
        };
        self.stream.write_all(message).await.map_err(io)?;
        if self.stream.is_tls() {
            // rustls may hold the last record until flushed.
            self.stream.flush().await.map_err(io)?;
        }
        Ok(id)
    }

    /// Reads until the reply to `request_id`; replies to anything else are counted and dropped.
    /// Fails after the connection's timeout without a reply.
    pub async fn recv(&mut self, request_id: i32) -> Result<Bytes, ConnError> {
        let limit = Instant::now() + self.timeout;
        // The watchdog was armed for an earlier request, so it is due at or before `limit`; when it
        // fires early it is moved to `limit` (about once per timeout period, not per request).
        let mut watchdog = self
            .watchdog
            .take()
            .unwrap_or_else(|| Box::pin(tokio::time::sleep_until(limit)));
        self.stray_to = None;
        let result = loop {
            tokio::select! {
                biased;
                // Cancel-safe: a read lands in the splitter's buffer, frames are taken out synchronously.
                r = self.recv_inner(request_id) => break r,
                _ = watchdog.as_mut() => {
                    if Instant::now() >= limit {
                        break Err(self.timed_out(request_id));
                    }
                    watchdog.as_mut().reset(limit);
                }
            }
        };
        self.watchdog = Some(watchdog);
        result
    }

    async fn recv_inner(&mut self, request_id: i32) -> Result<Bytes, ConnError> {
        loop {
            let frame = self
                .splitter
                .next_frame()
                .map_err(|source| ConnError::Wire {
                    addr: self.addr.clone(),
                    source,
                })?;
            if let Some(frame) = frame {
                let header = MsgHeader::parse(&frame)
                    .map_err(|source| ConnError::Wire {
                        addr: self.addr.clone(),
                        source,
                    })?
                    .expect("a whole frame has a header");
                if header.response_to == request_id {
                    return Ok(frame);
                }
                self.stray(&frame, request_id, header.response_to)?;
                continue;
            }
            let n = match (&self.stream, self.stamper.as_mut()) {
                (Stream::Plain(tcp), Some(stamper)) => {
                    let read = stamper.read(tcp, self.splitter.read_buf()).await;
                    let (n, stamp) = read.map_err(self.io("reading a reply"))?;
                    self.last_read = Some(stamp);
                    n
                }
                _ => self
                    .stream
                    .read_buf(self.splitter.read_buf())
                    .await
                    .map_err(self.io("reading a reply"))?,
            };
            if n == 0 {
                return Err(ConnError::Closed {
                    addr: self.addr.clone(),
                    during: "waiting for a reply",
                });
            }
        }
    }

    /// A reply to another request than `request_id`. An exhaust push (moreToCome) or a late reply
    /// to an earlier request is counted and skipped (the reply awaited may still come); a reply to
    /// a request never sent means the replies no longer match the requests: an error.
    fn stray(&mut self, frame: &[u8], request_id: i32, response_to: i32) -> Result<(), ConnError> {
        let push = OpMsgView::new(frame).is_ok_and(|v| v.more_to_come());
        let sent_before = response_to >= 1 && (response_to < request_id || self.wrapped);
        if !(push || sent_before) {
            return Err(ConnError::WrongReply {
                addr: self.addr.clone(),
                local: self.local.clone(),
                request_id,
                response_to,
            });
        }
        self.stray_replies += 1;
        if !push {
            self.stray_to = Some(response_to);
        }
        Ok(())
    }

    /// No reply to `request_id` in time: said as a reply to another request when one came instead.
    fn timed_out(&self, request_id: i32) -> ConnError {
        let secs = self.timeout.as_secs_f64();
        match self.stray_to {
            Some(response_to) => ConnError::AnsweredAnother {
                addr: self.addr.clone(),
                local: self.local.clone(),
                request_id,
                response_to,
                secs,
            },
            None => ConnError::Timeout {
                addr: self.addr.clone(),
                secs,
                during: "waiting for a reply",
            },
        }
    }

    /// Runs one command (not a replayed one: handshake, auth, serverStatus) and returns its reply.
    pub async fn command(
        &mut self,
        body: &RawDocumentBuf,
        during: &'static str,
    ) -> Result<RawDocumentBuf, ConnError> {
        let mut bytes = OpMsg::with_body(body.clone(), MsgFlags::empty()).encode(0, 0);
        let id = self.send(&mut bytes).await?;
        let frame = self.recv(id).await.map_err(|e| match e {
            ConnError::Closed { addr, .. } => ConnError::Closed { addr, during },
            e => e,
        })?;
        let wire = |source| ConnError::Wire {
            addr: self.addr.clone(),
            source,
        };
        let body = reply::body(&frame).map_err(wire)?;
        let doc = body.doc.ok_or_else(|| {
            wire(WireError::Invalid {
                what: "reply document",
                offset: 0,
                detail: "the reply has no document".into(),
            })
        })?;
        RawDocumentBuf::from_bytes(doc.into_owned()).map_err(|e| {
            wire(WireError::Invalid {
                what: "reply document",
                offset: 0,
                detail: crate::wire::bson_error_text(&e),
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::client::Target;
    use bson::rawdoc;

    /// A server that answers each request after the given delays (then never again).
    async fn slow_server(delays: Vec<u64>) -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        tokio::spawn(async move {
            let (mut s, _) = listener.accept().await.unwrap();
            let mut splitter = FrameSplitter::new();
            for delay in delays {
                let frame = loop {
                    if let Some(f) = splitter.next_frame().unwrap() {
                        break f;
                    }
                    if s.read_buf(splitter.read_buf()).await.unwrap() == 0 {
                        return;
                    }
                };
                let id = MsgHeader::parse(&frame).unwrap().unwrap().request_id;
                tokio::time::sleep(Duration::from_millis(delay)).await;
                let reply =
                    OpMsg::with_body(rawdoc! { "ok": 1.0 }, MsgFlags::empty()).encode(1, id);
                s.write_all(&reply).await.unwrap();
            }
            tokio::time::sleep(Duration::from_secs(30)).await;
        });
        addr
    }

    #[tokio::test]
    async fn the_reply_timeout_holds_for_every_request_not_just_the_first() {
        let timeout = Duration::from_millis(1000);
        // hello at once; then replies after 400 ms each: more than the timeout in total, none late
        // (with room for a busy machine).
        let addr = slow_server(vec![0, 400, 400, 400]).await;
        let target = Target::parse(&addr).await.unwrap();
        let mut conn = Conn::connect(&target, &target.seeds[0], timeout)
            .await
            .unwrap();
        let ping = rawdoc! { "ping": 1, "$db": "admin" };
        for _ in 0..3 {
            conn.command(&ping, "pinging").await.unwrap();
        }
        let started = std::time::Instant::now();
        match conn.command(&ping, "pinging").await {
            Err(ConnError::Timeout { .. }) => {}
            other => panic!("expected a timeout, got {:?}", other.map(|_| ())),
        }
        let waited = started.elapsed();
        assert!(
            waited >= timeout && waited < timeout * 3,
            "timed out after {waited:?}"
        );
    }
}
