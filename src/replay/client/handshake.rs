//! Opening a replay connection: TCP connect (and the TLS handshake when the target asks for it),
//! the `hello` handshake (with the compressor the recorded client used, when there was one), then
//! authentication when the target carries credentials.

use super::auth;
use super::connection::{Conn, ConnError};
use super::stream::{self, OpenError};
use super::target::{Mechanism, Target};
use crate::net::HostPort;
use crate::wire::compressed::Compressor;
use crate::wire::reply;
use bson::{rawdoc, RawDocumentBuf};
use std::time::Duration;

impl Conn {
    /// Connects to `host`, says `hello`, and authenticates when the target carries credentials.
    pub async fn connect(
        target: &Target,
        host: &HostPort,
        timeout: Duration,
    ) -> Result<Conn, ConnError> {
        Conn::connect_offering(target, host, timeout, None).await
    }

    /// [`Conn::connect`], offering a compressor in the `hello` (as the recorded client did); the
    /// target's answer says whether it agreed ([`Conn::compressor`]).
    pub async fn connect_offering(
        target: &Target,
        host: &HostPort,
        timeout: Duration,
        offer: Option<Compressor>,
    ) -> Result<Conn, ConnError> {
        let (mut conn, reply) = Conn::open(target, host, timeout, offer, true).await?;
        if let Some(c) = offer.filter(|c| agreed(&reply, *c)) {
            conn.agree_compressor(c);
        }
        if let Some(a) = &target.auth {
            auth::authenticate(&mut conn, a, &reply).await?;
        }
        Ok(conn)
    }

    /// Connects and says `hello` without authenticating: what the topology is read with.
    pub async fn hello_only(
        target: &Target,
        host: &HostPort,
        timeout: Duration,
    ) -> Result<RawDocumentBuf, ConnError> {
        Ok(Conn::open(target, host, timeout, None, false).await?.1)
    }

    async fn open(
        target: &Target,
        host: &HostPort,
        timeout: Duration,
        offer: Option<Compressor>,
        for_auth: bool,
    ) -> Result<(Conn, RawDocumentBuf), ConnError> {
        let addr = host.to_string();
        let stream =
            match tokio::time::timeout(timeout, stream::open(host, target.tls.as_ref())).await {
                Ok(Ok(s)) => s,
                Ok(Err(OpenError::Tcp(source))) => return Err(ConnError::Connect { addr, source }),
                Ok(Err(OpenError::Tls(detail))) => return Err(ConnError::Tls { addr, detail }),
                Err(_) => {
                    return Err(ConnError::Timeout {
                        addr,
                        secs: timeout.as_secs_f64(),
                        during: "connecting",
                    })
                }
            };
        let mut conn = Conn::new(stream, addr, timeout);
        // A TLS server drops a plain-text hello without a word: say what it likely means.
        let during = if target.tls.is_none() {
            "saying hello (the server may require TLS: tls=true)"
        } else {
            "saying hello"
        };
        let reply = conn
            .command(&hello(target, offer, for_auth), during)
            .await?;
        if let Err(detail) = reply::check_command(reply.as_bytes()) {
            return Err(ConnError::Handshake {
                addr: conn.addr().to_owned(),
                detail,
            });
        }
        Ok((conn, reply))
    }
}

/// The `hello` a replay connection opens with: who we are, the user whose SASL mechanisms we want
/// to know, and the compressor offered.
fn hello(target: &Target, offer: Option<Compressor>, for_auth: bool) -> RawDocumentBuf {
    let mut hello = rawdoc! {
        "hello": 1, "helloOk": true,
        "client": {
            "application": { "name": target.app_name.as_str() },
            "driver": { "name": "mongotape", "version": env!("CARGO_PKG_VERSION") },
            "os": { "type": std::env::consts::OS },
        },
    };
    if let Some(auth) = target
        .auth
        .as_ref()
        .filter(|a| for_auth && a.mechanism != Mechanism::X509)
    {
        if let Some(user) = &auth.user {
            hello.append(
                bson::cstr!("saslSupportedMechs"),
                format!("{}.{user}", auth.source),
            );
        }
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
