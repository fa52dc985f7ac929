//! A MongoDB connection string, read by the official driver's parser (`mongodb` crate) and turned
//! into what a tool that opens its own sockets needs: the hosts (an SRV name resolved, TXT options
//! merged), the replica-set name, TLS settings, credentials, and the option keys that were written,
//! so a caller can refuse the ones it cannot honour instead of dropping them.

use super::error::NetError;
use super::tls::ClientTls;
use mongodb::options::{
    ClientOptions, ConnectionString as DriverConnString, Credential, HostInfo, ReadPreference,
    ServerAddress, Tls,
};
use std::fmt;
use std::time::Duration;

pub const DEFAULT_PORT: u16 = 27017;

/// A TCP address as MongoDB writes it (`host:port`, `[::1]:port`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct HostPort {
    pub host: String,
    pub port: u16,
}

impl HostPort {
    /// Reads `host`, `host:port` or `[v6]:port`; `None` when the port is not a number.
    pub fn parse(s: &str) -> Option<HostPort> {
        let s = s.trim();
        if s.is_empty() {
            return None;
        }
        let (host, port) = if let Some(rest) = s.strip_prefix('[') {
            let (host, after) = rest.split_once(']')?;
            match after.strip_prefix(':') {
                Some(p) => (host, p.parse().ok()?),
                None if after.is_empty() => (host, DEFAULT_PORT),
                None => return None,
            }
        } else {
            match s.rsplit_once(':') {
                Some((h, p)) if !h.contains(':') => (h, p.parse().ok()?),
                Some(_) => (s, DEFAULT_PORT), // a bare IPv6 address
                None => (s, DEFAULT_PORT),
            }
        };
        if host.is_empty() {
            return None;
        }
        Some(HostPort {
            host: host.to_owned(),
            port,
        })
    }

    /// The form used to compare addresses: host lower-cased, port always written.
    pub fn key(&self) -> String {
        self.to_string().to_ascii_lowercase()
    }
}

impl fmt::Display for HostPort {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.host.contains(':') {
            write!(f, "[{}]:{}", self.host, self.port)
        } else {
            write!(f, "{}:{}", self.host, self.port)
        }
    }
}

/// A connection string, parsed and (for `mongodb+srv://`) resolved.
#[derive(Clone)]
pub struct ConnString {
    /// The string as given with its password masked: safe to log and to keep in a capture.
    pub display: String,
    pub hosts: Vec<HostPort>,
    /// The SRV name the hosts were resolved from.
    pub srv: Option<String>,
    pub replica_set: Option<String>,
    pub direct_connection: Option<bool>,
    pub load_balanced: Option<bool>,
    pub credential: Option<Credential>,
    pub read_preference: Option<ReadPreference>,
    pub tls: Option<ClientTls>,
    pub connect_timeout: Option<Duration>,
    /// The database named after the hosts (`mongodb://h/DB`), the default `authSource`.
    pub default_database: Option<String>,
    /// The option keys the string holds, as written, in order (TXT-record options included).
    pub options: Vec<String>,
}

impl fmt::Debug for ConnString {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConnString")
            .field("display", &self.display)
            .field("hosts", &self.hosts)
            .field("replica_set", &self.replica_set)
            .field("direct_connection", &self.direct_connection)
            .field("tls", &self.tls)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

/// Options a TXT record added (`mongodb+srv://`) count as written options.
fn add_txt_options(options: &mut Vec<String>, resolved: &ClientOptions) {
    for (key, set) in [
        ("replicaSet", resolved.repl_set_name.is_some()),
        ("loadBalanced", resolved.load_balanced.is_some()),
        (
            "authSource",
            resolved
                .credential
                .as_ref()
                .is_some_and(|c| c.source.is_some()),
        ),
    ] {
        if set && !options.iter().any(|k| k.eq_ignore_ascii_case(key)) {
            options.push(key.to_owned());
        }
    }
}

/// The hosts, resolved; only TCP addresses are supported.
fn tcp_hosts(resolved: &ClientOptions) -> Result<Vec<HostPort>, NetError> {
    let mut hosts = Vec::with_capacity(resolved.hosts.len());
    for address in &resolved.hosts {
        match address {
            ServerAddress::Tcp { host, port } => hosts.push(HostPort {
                host: host.clone(),
                port: port.unwrap_or(DEFAULT_PORT),
            }),
            #[allow(unreachable_patterns)]
            other => {
                return Err(NetError::Unsupported {
                    option: format!("host {other}"),
                    why: "only TCP addresses are supported (no Unix domain sockets)".into(),
                })
            }
        }
    }
    Ok(hosts)
}

impl ConnString {
    /// Parses `mongodb://...`, `mongodb+srv://...` (SRV and TXT records are looked up) or a plain
    /// `host:port` / `host1:port,host2:port`.
    pub async fn parse(input: &str) -> Result<ConnString, NetError> {
        let written = normalize(input);
        let display = mask_password(input.trim());
        let bad = |detail: String| NetError::ConnString {
            uri: display.clone(),
            detail,
        };
        // The driver's rustls build refuses tlsAllowInvalidHostnames (only its OpenSSL build has
        // it); rustls can honour it, so it is read here and kept from the driver.
        options_after_slash(&written).map_err(bad)?;
        let (uri, allow_invalid_hostnames) =
            take_option(&written, "tlsallowinvalidhostnames").map_err(bad)?;
        // The synchronous parse validates without touching the network.
        let parsed = DriverConnString::parse(&uri).map_err(|e| bad(e.kind.to_string()))?;
        let srv = match &parsed.host_info {
            HostInfo::DnsRecord(name) => Some(name.clone()),
            _ => None,
        };
        let mut options = option_keys(&written);
        // The resolving parse follows SRV and TXT records for `mongodb+srv://`.
        let resolved = ClientOptions::parse(&uri)
            .await
            .map_err(|e| NetError::Resolve {
                uri: display.clone(),
                detail: e.kind.to_string(),
            })?;
        if srv.is_some() {
            add_txt_options(&mut options, &resolved);
        }
        let hosts = tcp_hosts(&resolved)?;
        let insecure = raw_bool(&uri, "tlsinsecure");
        let tls = match &resolved.tls {
            Some(Tls::Enabled(t)) => Some(ClientTls {
                ca_file: t.ca_file_path.clone(),
                cert_key_file: t.cert_key_file_path.clone(),
                allow_invalid_certificates: t.allow_invalid_certificates.unwrap_or(false),
                // The driver keeps this one only in its OpenSSL build: read it from the string.
                allow_invalid_hostnames: allow_invalid_hostnames.or(insecure).unwrap_or(false),
            }),
            _ if allow_invalid_hostnames.is_some() => {
                return Err(bad("tlsAllowInvalidHostnames is set but TLS is off".into()))
            }
            _ => None,
        };
        Ok(ConnString {
            display,
            hosts,
            srv,
            replica_set: resolved.repl_set_name.clone(),
            direct_connection: resolved.direct_connection,
            load_balanced: resolved.load_balanced,
            credential: resolved.credential.clone(),
            read_preference: parsed.read_preference.clone(),
            tls,
            connect_timeout: resolved.connect_timeout,
            default_database: resolved.default_database.clone(),
            options,
        })
    }

    /// The first written option not in `allowed` (lower-case keys), as an error naming it.
    pub fn refuse_options_except(&self, allowed: &[&str], why: &str) -> Result<(), NetError> {
        let listed = |k: &String| allowed.contains(&k.to_ascii_lowercase().as_str());
        match self.options.iter().find(|k| !listed(k)) {
            Some(option) => Err(NetError::Unsupported {
                option: option.clone(),
                why: why.to_owned(),
            }),
            None => Ok(()),
        }
    }

    /// The written options that are in `keys`, for telling the user what will not be used.
    pub fn options_among(&self, keys: &[&str]) -> Vec<String> {
        self.options
            .iter()
            .filter(|k| keys.contains(&k.to_ascii_lowercase().as_str()))
            .cloned()
            .collect()
    }
}

/// A bare `host:port` list gets the `mongodb://` scheme.
fn normalize(input: &str) -> String {
    let input = input.trim();
    if input.contains("://") {
        input.to_owned()
    } else {
        format!("mongodb://{input}")
    }
}

/// The connection-string specification puts a `/` between the hosts and the options
/// (`mongodb://h/?w=1`); the driver's parser lets `mongodb://h?w=1` through.
fn options_after_slash(uri: &str) -> Result<(), String> {
    let rest = uri.split_once("://").map(|(_, r)| r).unwrap_or(uri);
    let hosts = rest.split('/').next().unwrap_or(rest);
    let hosts = hosts.rsplit_once('@').map_or(hosts, |(_, h)| h);
    match hosts.split_once('?') {
        // Only the hosts are named: never the credentials before them.
        Some((hosts, _)) => Err(format!(
            "the options must follow a `/` after the hosts (`{hosts}/?...`), as the \
             connection-string specification requires"
        )),
        None => Ok(()),
    }
}

/// The query part of the string (after the host list), if any.
fn query(uri: &str) -> &str {
    let rest = uri.split_once("://").map(|(_, r)| r).unwrap_or(uri);
    rest.split_once('?').map(|(_, q)| q).unwrap_or("")
}

/// The string without option `key` (lower-case), and that option's boolean value if present.
fn take_option(uri: &str, key: &str) -> Result<(String, Option<bool>), String> {
    let Some((head, query)) = uri.split_once('?') else {
        return Ok((uri.to_owned(), None));
    };
    let mut value = None;
    let mut kept = Vec::new();
    for pair in query.split('&') {
        match pair.split_once('=') {
            Some((k, v)) if k.eq_ignore_ascii_case(key) => {
                value = Some(match v.to_ascii_lowercase().as_str() {
                    "true" => true,
                    "false" => false,
                    _ => return Err(format!("{k}={v}: expected true or false")),
                });
            }
            _ => kept.push(pair),
        }
    }
    Ok((format!("{head}?{}", kept.join("&")), value))
}

fn option_keys(uri: &str) -> Vec<String> {
    let mut keys: Vec<String> = Vec::new();
    for pair in query(uri).split('&').filter(|p| !p.is_empty()) {
        let key = pair.split('=').next().unwrap_or("");
        if !key.is_empty() && !keys.iter().any(|k| k.eq_ignore_ascii_case(key)) {
            keys.push(key.to_owned());
        }
    }
    keys
}

/// A boolean option's value as written (the driver has already checked it is `true`/`false`).
fn raw_bool(uri: &str, key: &str) -> Option<bool> {
    query(uri).split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=')?;
        k.eq_ignore_ascii_case(key)
            .then(|| v.eq_ignore_ascii_case("true"))
    })
}

/// `scheme://user:secret@hosts/...` becomes `scheme://user:***@hosts/...`.
pub fn mask_password(uri: &str) -> String {
    let Some((scheme, rest)) = uri.split_once("://") else {
        return uri.to_owned();
    };
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let Some(at) = rest[..authority_end].rfind('@') else {
        return uri.to_owned();
    };
    let userinfo = &rest[..at];
    let user = userinfo.split_once(':').map(|(u, _)| u).unwrap_or(userinfo);
    let masked = if userinfo.contains(':') {
        format!("{user}:***")
    } else {
        user.to_owned()
    };
    format!("{scheme}://{masked}{}", &rest[at..])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hp(s: &str) -> HostPort {
        HostPort::parse(s).unwrap()
    }

    #[test]
    fn host_port_forms() {
        assert_eq!(hp("a:1").to_string(), "a:1");
        assert_eq!(hp("A.Example").key(), "a.example:27017");
        assert_eq!(hp("[::1]:5").to_string(), "[::1]:5");
        assert_eq!(hp("::1").port, DEFAULT_PORT);
        assert!(HostPort::parse("a:x").is_none());
        assert!(HostPort::parse("").is_none());
        assert!(HostPort::parse(":5").is_none());
    }

    #[tokio::test]
    async fn plain_host_port_and_full_uri() {
        let c = ConnString::parse("127.0.0.1:27017").await.unwrap();
        assert_eq!(c.display, "127.0.0.1:27017");
        assert_eq!(c.hosts, vec![hp("127.0.0.1:27017")]);
        assert!(c.tls.is_none() && c.options.is_empty());
        let c = ConnString::parse(
            "mongodb://u:p%40ss@h1:1,h2:2/db?replicaSet=rs0&authSource=admin&authMechanism=SCRAM-SHA-256\
             &readPreference=secondaryPreferred&tls=true&tlsCAFile=/ca.pem&tlsAllowInvalidHostnames=true",
        )
        .await
        .unwrap();
        assert_eq!(c.hosts, vec![hp("h1:1"), hp("h2:2")]);
        assert_eq!(c.replica_set.as_deref(), Some("rs0"));
        assert!(c.display.contains("u:***@h1:1") && !c.display.contains("p%40ss"));
        let tls = c.tls.as_ref().unwrap();
        assert_eq!(
            tls.ca_file.as_deref(),
            Some(std::path::Path::new("/ca.pem"))
        );
        assert!(tls.allow_invalid_hostnames && !tls.allow_invalid_certificates);
        let cred = c.credential.as_ref().unwrap();
        assert_eq!(cred.password.as_deref(), Some("p@ss"));
        assert_eq!(cred.source.as_deref(), Some("admin"));
        assert!(c.read_preference.is_some());
        assert_eq!(
            c.options,
            [
                "replicaSet",
                "authSource",
                "authMechanism",
                "readPreference",
                "tls",
                "tlsCAFile",
                "tlsAllowInvalidHostnames"
            ]
        );
        let err = c
            .refuse_options_except(&["replicaset"], "not here")
            .unwrap_err();
        assert!(err.to_string().contains("authSource"), "{err}");
    }

    #[tokio::test]
    async fn bad_strings_are_errors_naming_the_problem() {
        for bad in [
            "mongodb://h:1/?replicaSet=a&directConnection=maybe",
            "mongodb://h:notaport",
            "mongodb://h:1/?tls=false&tlsCAFile=x.pem",
            "mongodb://example.com?w=1",
            "mongodb+srv://cluster0.example.com?w=1",
            "h:1?w=1",
        ] {
            let err = ConnString::parse(bad).await.unwrap_err();
            assert!(matches!(err, NetError::ConnString { .. }), "{bad}: {err}");
        }
        let err = ConnString::parse("mongodb://example.com?w=1")
            .await
            .unwrap_err();
        assert!(err.to_string().contains("`example.com/?...`"), "{err}");
        let err = ConnString::parse("mongodb://u:secret@h:1?w=1")
            .await
            .unwrap_err();
        assert!(!err.to_string().contains("secret"), "{err}");
        let err = ConnString::parse("mongodb://u:secret@h:1/?w=banana&wtimeoutMS=-5")
            .await
            .unwrap_err();
        assert!(!err.to_string().contains("secret"), "{err}");
    }
}
