//! Where to replay: the `--target` connection string read by [`crate::net::ConnString`] (the
//! driver's parser, `mongodb+srv://` resolved) into the seeds, the replica-set name, the TLS
//! configuration, the credentials and the read preference. Every option is either honoured,
//! carried by the recorded requests themselves (noted, [`Target::unused`]), or an error naming it.

use crate::net::{ConnString, HostPort, NetError};
use mongodb::options::{AuthMechanism, ReadPreference};
use std::sync::Arc;
use thiserror::Error;

/// Options the replayer acts on (lower-case), besides the TLS ones ([`crate::net::tls::TLS_OPTIONS`]).
const HONOURED: &[&str] = &[
    "replicaset",
    "directconnection",
    "authsource",
    "authmechanism",
    "readpreference",
    "appname",
    "connecttimeoutms",
    "srvservicename",
];

/// Options a driver acts on that the recorded requests already carry (write concern, read concern,
/// retries, compression) or that size a driver's pool: accepted so an application's string can be
/// pasted, and named as not used.
const CARRIED_BY_REQUESTS: &[&str] = &[
    "w",
    "journal",
    "wtimeoutms",
    "retrywrites",
    "retryreads",
    "readconcernlevel",
    "compressors",
    "zlibcompressionlevel",
    "maxpoolsize",
    "minpoolsize",
    "maxidletimems",
    "maxconnecting",
    "waitqueuetimeoutms",
    "serverselectiontimeoutms",
    "heartbeatfrequencyms",
    "sockettimeoutms",
    "localthresholdms",
];

/// How the replayer authenticates each connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mechanism {
    /// SCRAM, SHA-256 unless the server lists only SHA-1 for the user.
    ScramNegotiated,
    ScramSha1,
    ScramSha256,
    /// MONGODB-X509: the TLS client certificate is the identity.
    X509,
}

#[derive(Clone)]
pub struct Auth {
    /// Required for SCRAM; optional for X.509 (the server takes it from the certificate).
    pub user: Option<String>,
    pub password: Option<String>,
    pub source: String,
    pub mechanism: Mechanism,
}

/// A read preference mode, as a recorded `$readPreference` or the target's `readPreference` says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadMode {
    Primary,
    PrimaryPreferred,
    Secondary,
    SecondaryPreferred,
    Nearest,
}

impl ReadMode {
    pub fn from_name(name: &str) -> Option<ReadMode> {
        Some(match name {
            "primary" => ReadMode::Primary,
            "primaryPreferred" => ReadMode::PrimaryPreferred,
            "secondary" => ReadMode::Secondary,
            "secondaryPreferred" => ReadMode::SecondaryPreferred,
            "nearest" => ReadMode::Nearest,
            _ => return None,
        })
    }

    /// Whether a secondary serves it when the set has one (`nearest` counts: all members are near
    /// on a replay's network).
    pub fn prefers_secondary(self) -> bool {
        matches!(
            self,
            ReadMode::Secondary | ReadMode::SecondaryPreferred | ReadMode::Nearest
        )
    }
}

/// Where to replay.
#[derive(Clone)]
pub struct Target {
    /// The string as given, password masked.
    pub display: String,
    /// The hosts of the string (resolved from SRV for `mongodb+srv://`).
    pub seeds: Vec<HostPort>,
    pub replica_set: Option<String>,
    /// `directConnection=true`: the one host only, no discovery.
    pub direct: bool,
    pub auth: Option<Auth>,
    pub tls: Option<Arc<rustls::ClientConfig>>,
    /// The mode for requests recorded without `$readPreference`.
    pub read_preference: Option<ReadMode>,
    pub app_name: String,
    /// Options accepted but not acted on (see [`CARRIED_BY_REQUESTS`]), as written.
    pub unused: Vec<String>,
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.display)
    }
}

#[derive(Debug, Error)]
#[error("--target {uri}: {detail}")]
pub struct TargetError {
    pub uri: String,
    pub detail: String,
    /// The string itself is wrong (a usage error), as against a lookup or a file that failed.
    pub malformed: bool,
}

impl Target {
    /// Reads a `mongodb://` or `mongodb+srv://` string or a bare `host:port[,host:port]` (SRV and
    /// TXT records are looked up here).
    pub async fn parse(uri: &str) -> Result<Target, TargetError> {
        let failed = |detail: String, malformed: bool| TargetError {
            uri: crate::net::conn_string::mask_password(uri.trim()),
            detail,
            malformed,
        };
        let fail = |detail: String| failed(detail, true);
        let cs = ConnString::parse(uri)
            .await
            .map_err(|e| failed(e.to_string(), !matches!(e, NetError::Resolve { .. })))?;
        let mut allowed: Vec<&str> = HONOURED.to_vec();
        allowed.extend_from_slice(crate::net::tls::TLS_OPTIONS);
        allowed.extend_from_slice(CARRIED_BY_REQUESTS);
        cs.refuse_options_except(&allowed, "the replayer cannot honour it")
            .map_err(|e| fail(e.to_string()))?;
        if cs.load_balanced == Some(true) {
            return Err(fail(unsupported(
                "loadBalanced",
                "replay against the mongos behind the load balancer instead",
            )));
        }
        if cs.hosts.is_empty() {
            return Err(fail("no host".into()));
        }
        let read_preference = cs.read_preference.as_ref().map(read_mode);
        let auth = auth(&cs).map_err(fail)?;
        if auth
            .as_ref()
            .is_some_and(|a| a.mechanism == Mechanism::X509)
            && cs.tls.as_ref().is_none_or(|t| t.cert_key_file.is_none())
        {
            return Err(fail(
                "authMechanism=MONGODB-X509 needs tls=true and tlsCertificateKeyFile (the client \
                 certificate is the identity)"
                    .into(),
            ));
        }
        let tls = match &cs.tls {
            Some(t) => Some(
                t.client_config()
                    .map_err(|e| failed(e.to_string(), false))?,
            ),
            None => None,
        };
        Ok(Target {
            display: cs.display.clone(),
            seeds: cs.hosts.clone(),
            replica_set: cs.replica_set.clone(),
            direct: cs.direct_connection == Some(true),
            auth,
            tls,
            read_preference,
            app_name: app_name(uri).unwrap_or_else(|| "mongotape replay".into()),
            unused: cs.options_among(CARRIED_BY_REQUESTS),
        })
    }

    /// [`Target::parse`] on a runtime of its own, for callers outside one.
    pub fn parse_blocking(uri: &str) -> Result<Target, TargetError> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| TargetError {
                uri: crate::net::conn_string::mask_password(uri),
                detail: format!("cannot start a runtime to resolve it: {e}"),
                malformed: false,
            })?;
        runtime.block_on(Target::parse(uri))
    }

    /// The user name shown in errors (`X.509 certificate` when the certificate names it).
    pub fn user_label(&self) -> String {
        match &self.auth {
            Some(Auth { user: Some(u), .. }) => u.clone(),
            Some(_) => "the X.509 certificate's subject".into(),
            None => String::new(),
        }
    }
}

fn unsupported(option: &str, why: &str) -> String {
    NetError::Unsupported {
        option: option.into(),
        why: why.into(),
    }
    .to_string()
}

fn read_mode(p: &ReadPreference) -> ReadMode {
    match p {
        ReadPreference::Primary => ReadMode::Primary,
        ReadPreference::PrimaryPreferred { .. } => ReadMode::PrimaryPreferred,
        ReadPreference::Secondary { .. } => ReadMode::Secondary,
        ReadPreference::SecondaryPreferred { .. } => ReadMode::SecondaryPreferred,
        ReadPreference::Nearest { .. } => ReadMode::Nearest,
        #[allow(unreachable_patterns)]
        _ => ReadMode::Primary,
    }
}

fn auth(cs: &ConnString) -> Result<Option<Auth>, String> {
    let Some(c) = &cs.credential else {
        return Ok(None);
    };
    let mechanism = match &c.mechanism {
        None => Mechanism::ScramNegotiated,
        Some(AuthMechanism::ScramSha1) => Mechanism::ScramSha1,
        Some(AuthMechanism::ScramSha256) => Mechanism::ScramSha256,
        Some(AuthMechanism::MongoDbX509) => Mechanism::X509,
        Some(other) => {
            return Err(unsupported(
                &format!("authMechanism={}", other.as_str()),
                "the replayer authenticates with SCRAM-SHA-256, SCRAM-SHA-1 or MONGODB-X509",
            ))
        }
    };
    if mechanism != Mechanism::X509 && c.username.is_none() {
        return Err("SCRAM needs a user name in the connection string".into());
    }
    let source = match (&c.source, mechanism) {
        (Some(s), _) => s.clone(),
        (None, Mechanism::X509) => "$external".into(),
        (None, _) => cs
            .default_database
            .clone()
            .unwrap_or_else(|| "admin".into()),
    };
    Ok(Some(Auth {
        user: c.username.clone(),
        password: c.password.clone(),
        source,
        mechanism,
    }))
}

/// `appName` as written (the driver's parser keeps it only inside its client options).
fn app_name(uri: &str) -> Option<String> {
    let query = uri.split_once('?')?.1;
    query.split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=')?;
        k.eq_ignore_ascii_case("appname").then(|| v.to_owned())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn parse(s: &str) -> Result<Target, TargetError> {
        Target::parse(s).await
    }

    #[tokio::test]
    async fn full_strings() {
        let t = parse("mongodb://u%40x:p%3Aw@127.0.0.1:4000,other:1/app?replicaSet=rs0&authMechanism=SCRAM-SHA-1&readPreference=secondaryPreferred&w=majority&retryWrites=true").await.unwrap();
        assert_eq!(t.seeds.len(), 2);
        assert_eq!(t.replica_set.as_deref(), Some("rs0"));
        let a = t.auth.as_ref().unwrap();
        assert_eq!(a.user.as_deref(), Some("u@x"));
        assert_eq!(a.password.as_deref(), Some("p:w"));
        assert_eq!(a.source, "app");
        assert_eq!(a.mechanism, Mechanism::ScramSha1);
        assert_eq!(t.read_preference, Some(ReadMode::SecondaryPreferred));
        assert_eq!(t.unused, ["w", "retryWrites"]);
        assert!(!t.display.contains("p%3Aw"));
        let t = parse("127.0.0.1:27017").await.unwrap();
        assert_eq!(t.seeds[0].to_string(), "127.0.0.1:27017");
        assert!(t.auth.is_none() && t.tls.is_none() && !t.direct);
        let t = parse("mongodb://localhost/?directConnection=true&appName=x")
            .await
            .unwrap();
        assert!(t.direct);
        assert_eq!(t.app_name, "x");
    }

    #[tokio::test]
    async fn options_it_cannot_honour_are_named() {
        for (uri, named) in [
            (
                "mongodb://h:1/?readPreferenceTags=dc:ny&readPreference=secondary",
                "readPreferenceTags",
            ),
            ("mongodb://h:1/?loadBalanced=true", "loadBalanced"),
            ("mongodb://u:p@h:1/?authMechanism=PLAIN", "PLAIN"),
            ("mongodb://h:1/?authMechanism=MONGODB-X509", "MONGODB-X509"),
            (
                "mongodb://h:1/?maxStalenessSeconds=120&readPreference=secondary",
                "maxStalenessSeconds",
            ),
        ] {
            let err = parse(uri).await.unwrap_err().to_string();
            assert!(err.contains(named), "{uri}: {err}");
        }
        let err = parse("mongodb://u:secret@h:1/?bogus=1")
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains("bogus") && !err.contains("secret"), "{err}");
    }

    #[test]
    fn read_modes() {
        assert!(ReadMode::from_name("nearest").unwrap().prefers_secondary());
        assert!(!ReadMode::from_name("primaryPreferred")
            .unwrap()
            .prefers_secondary());
        assert!(ReadMode::from_name("sideways").is_none());
    }
}
