//! What the proxy takes from `--upstream`: the options it acts on, the ones it passes over as the
//! application's, and the check that refuses the rest.

use super::error::ProxyError;
use crate::net::{ConnString, NetError};

/// Connection-string options the proxy acts on, besides the TLS ones ([`crate::net::tls::TLS_OPTIONS`]).
pub const UPSTREAM_OPTIONS: &[&str] = &[
    "replicaset",
    "directconnection",
    "connecttimeoutms",
    "srvservicename",
    "srvmaxhosts",
];

/// Options that only the application's own driver acts on: accepted in `--upstream` (so the
/// application's URI can be pasted as it is) and named at start as not used by the proxy.
pub const CLIENT_ONLY_OPTIONS: &[&str] = &[
    "authsource",
    "authmechanism",
    "authmechanismproperties",
    "readpreference",
    "readpreferencetags",
    "maxstalenessseconds",
    "appname",
    "retrywrites",
    "retryreads",
    "w",
    "journal",
    "wtimeoutms",
    "readconcernlevel",
    "compressors",
    "zlibcompressionlevel",
    "maxpoolsize",
    "minpoolsize",
    "maxidletimems",
    "maxconnecting",
    "sockettimeoutms",
    "heartbeatfrequencyms",
    "localthresholdms",
    "serverselectiontimeoutms",
    "serverselectiontryonce",
    "waitqueuetimeoutms",
    "timeoutms",
    "uuidrepresentation",
    "servermonitoringmode",
];

/// Refuses an upstream the proxy cannot serve as asked: an option it cannot honour, or a load
/// balancer (its members or mongos are served instead).
pub fn check(upstream: &ConnString) -> Result<(), ProxyError> {
    let mut allowed = UPSTREAM_OPTIONS.to_vec();
    allowed.extend_from_slice(crate::net::tls::TLS_OPTIONS);
    allowed.extend_from_slice(CLIENT_ONLY_OPTIONS);
    upstream.refuse_options_except(
        &allowed,
        "the proxy cannot honour it (clients negotiate everything else themselves)",
    )?;
    if upstream.load_balanced == Some(true) {
        return Err(NetError::Unsupported {
            option: "loadBalanced".into(),
            why: "point the proxy at the load balancer's members or mongos instead".into(),
        }
        .into());
    }
    Ok(())
}

/// The sentence naming the `--upstream` options and credentials that are the application's
/// (the proxy ignores them), if there are any.
pub fn unused_options(upstream: &ConnString) -> Option<String> {
    let mut what = upstream.options_among(CLIENT_ONLY_OPTIONS);
    if upstream
        .credential
        .as_ref()
        .is_some_and(|c| c.username.is_some())
    {
        what.insert(0, "credentials".into());
    }
    (!what.is_empty()).then(|| {
        format!(
            "--upstream {} are for the application's driver; the proxy does not use them \
             (clients authenticate and choose through it)",
            what.join(", ")
        )
    })
}
