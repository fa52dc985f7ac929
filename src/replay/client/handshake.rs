//! Opening a replay connection: TCP connect, the `hello` handshake (with the compressor the recorded
//! client used, when there was one), then SCRAM when the target carries credentials.

use super::connection::{command_ok, error_text, Conn, ConnError};
use super::scram;
use super::target::Target;
use crate::wire::compressed::Compressor;
use bson::{rawdoc, RawDocumentBuf};
use std::time::Duration;
use tokio::net::TcpStream;

impl Conn {
    /// Connects, says `hello`, and authenticates when the target carries credentials.
    pub async fn connect(target: &Target, timeout: Duration) -> Result<Conn, ConnError> {
        Conn::connect_offering(target, timeout, None).await
    }

    /// [`Conn::connect`], offering a compressor in the `hello` (as the recorded client did); the
    /// target's answer says whether it agreed ([`Conn::compressor`]).
    pub async fn connect_offering(
        target: &Target,
        timeout: Duration,
        offer: Option<Compressor>,
    ) -> Result<Conn, ConnError> {
        let addr = target.addr.clone();
        let stream = match tokio::time::timeout(timeout, TcpStream::connect(&addr)).await {
            Ok(Ok(s)) => s,
            Ok(Err(source)) => return Err(ConnError::Connect { addr, source }),
            Err(_) => {
                return Err(ConnError::Timeout {
                    addr,
                    secs: timeout.as_secs_f64(),
                    during: "connecting",
                })
            }
        };
        let _ = stream.set_nodelay(true);
        let mut conn = Conn::new(stream, addr, timeout);
        let reply = conn.command(&hello(target, offer), "saying hello").await?;
        if !command_ok(&reply) {
            return Err(ConnError::Handshake {
                addr: conn.addr().to_owned(),
                detail: error_text(&reply),
            });
        }
        if let Some(c) = offer.filter(|c| agreed(&reply, *c)) {
            conn.agree_compressor(c);
        }
        if target.user.is_some() {
            scram::authenticate(&mut conn, target, &reply).await?;
        }
        Ok(conn)
    }
}

/// The `hello` a replay connection opens with: who we are, the user whose SASL mechanisms we want
/// to know, and the compressor offered.
fn hello(target: &Target, offer: Option<Compressor>) -> RawDocumentBuf {
    let mut hello = rawdoc! {
        "hello": 1, "helloOk": true,
        "client": {
            "application": { "name": target.app_name.as_str() },
            "driver": { "name": "mongotape", "version": env!("CARGO_PKG_VERSION") },
            "os": { "type": std::env::consts::OS },
        },
    };
    if let Some(user) = &target.user {
        hello.append(
            bson::cstr!("saslSupportedMechs"),
            format!("{}.{user}", target.auth_source),
        );
    }
    if let Some(c) = offer {
        let mut names = bson::RawArrayBuf::new();
        names.push(c.name());
        hello.append(bson::cstr!("compression"), names);
    }
    hello.append(bson::cstr!("$db"), "admin");
    hello
}

/// Whether the `hello` reply lists the compressor offered.
fn agreed(reply: &RawDocumentBuf, offered: Compressor) -> bool {
    reply.get_array("compression").is_ok_and(|agreed| {
        agreed
            .into_iter()
            .flatten()
            .any(|a| a.as_str() == Some(offered.name()))
    })
}
