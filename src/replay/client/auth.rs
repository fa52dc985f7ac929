//! Authenticating a replay connection: SCRAM ([`super::scram`]) or MONGODB-X509, where the TLS
//! client certificate is the identity and one `authenticate` command on `$external` proves it.

use super::connection::{Conn, ConnError};
use super::scram;
use super::target::{Auth, Mechanism};
use crate::wire::reply;
use bson::{rawdoc, RawDocumentBuf};

pub async fn authenticate(
    conn: &mut Conn,
    auth: &Auth,
    hello: &RawDocumentBuf,
) -> Result<(), ConnError> {
    match auth.mechanism {
        Mechanism::X509 => x509(conn, auth).await,
        _ => scram::authenticate(conn, auth, hello).await,
    }
}

async fn x509(conn: &mut Conn, auth: &Auth) -> Result<(), ConnError> {
    let label = auth
        .user
        .clone()
        .unwrap_or_else(|| "the X.509 certificate's subject".into());
    if !conn.is_tls() {
        return Err(ConnError::Auth {
            addr: conn.addr().to_owned(),
            user: label,
            detail: "MONGODB-X509 needs a TLS connection".into(),
        });
    }
    let mut cmd = rawdoc! { "authenticate": 1, "mechanism": "MONGODB-X509" };
    if let Some(user) = &auth.user {
        cmd.append(bson::cstr!("user"), user.as_str());
    }
    cmd.append(bson::cstr!("$db"), auth.source.as_str());
    let reply = conn.command(&cmd, "authenticating").await?;
    reply::check_command(reply.as_bytes()).map_err(|e| ConnError::Auth {
        addr: conn.addr().to_owned(),
        user: label,
        detail: format!("MONGODB-X509: {e}"),
    })
}
