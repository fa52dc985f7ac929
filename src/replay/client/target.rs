//! Where to replay: the `--target` URI (a `mongodb://` URI or a bare `host:port`) read into an
//! address and credentials, and redacted for the report. Kept apart from the connection because it is
//! pure string handling, checked before anything connects.

use thiserror::Error;

/// Where to replay: the first host of a `mongodb://` URI (or a bare `host:port`) and its credentials.
#[derive(Clone)]
pub struct Target {
    pub addr: String,
    pub user: Option<String>,
    pub password: Option<String>,
    pub auth_source: String,
    /// `SCRAM-SHA-256` or `SCRAM-SHA-1`; chosen from the server's `saslSupportedMechs` when unset.
    pub mechanism: Option<String>,
    pub app_name: String,
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.display())
    }
}

#[derive(Debug, Error)]
#[error("--target {uri:?}: {detail}")]
pub struct TargetError {
    pub uri: String,
    pub detail: String,
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let hex = |c: u8| (c as char).to_digit(16);
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            if let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

impl Target {
    pub fn parse(uri: &str) -> Result<Target, TargetError> {
        let fail = |detail: &str| TargetError {
            uri: Target::redact(uri),
            detail: detail.to_owned(),
        };
        let rest = match uri.strip_prefix("mongodb://") {
            Some(rest) => rest,
            None if uri.contains("://") => return Err(fail("only mongodb:// URIs are supported")),
            None => uri,
        };
        let (authority, tail) = match rest.find(['/', '?']) {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, ""),
        };
        let (creds, hosts) = match authority.rsplit_once('@') {
            Some((c, h)) => (Some(c), h),
            None => (None, authority),
        };
        let host = hosts.split(',').next().unwrap_or_default();
        if host.is_empty() {
            return Err(fail("no host"));
        }
        let addr = if host.contains(':') && !host.ends_with(']') {
            host.to_owned()
        } else {
            format!("{host}:27017")
        };
        let (path, query) = match tail.split_once('?') {
            Some((p, q)) => (p, q),
            None => (tail, ""),
        };
        let path_db = path.trim_start_matches('/');
        let mut target = Target {
            addr,
            user: None,
            password: None,
            auth_source: if path_db.is_empty() {
                "admin".into()
            } else {
                percent_decode(path_db)
            },
            mechanism: None,
            app_name: "mongotape replay".into(),
        };
        if let Some(c) = creds {
            let (u, p) = c.split_once(':').unwrap_or((c, ""));
            target.user = Some(percent_decode(u));
            target.password = Some(percent_decode(p));
        }
        for kv in query.split('&').filter(|kv| !kv.is_empty()) {
            let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
            match k.to_ascii_lowercase().as_str() {
                "authsource" => target.auth_source = percent_decode(v),
                "authmechanism" => {
                    if v != "SCRAM-SHA-256" && v != "SCRAM-SHA-1" {
                        return Err(fail("authMechanism must be SCRAM-SHA-256 or SCRAM-SHA-1"));
                    }
                    target.mechanism = Some(v.to_owned());
                }
                "appname" => target.app_name = percent_decode(v),
                "tls" | "ssl" if v == "true" => return Err(fail("TLS is not supported")),
                _ => {}
            }
        }
        Ok(target)
    }

    /// The URI with any password replaced by `****`.
    pub fn redact(uri: &str) -> String {
        match (uri.find("://"), uri.rfind('@')) {
            (Some(s), Some(at)) if at > s => {
                let creds = &uri[s + 3..at];
                match creds.split_once(':') {
                    Some((u, _)) => format!("{}{u}:****{}", &uri[..s + 3], &uri[at..]),
                    None => uri.to_owned(),
                }
            }
            _ => uri.to_owned(),
        }
    }

    pub fn display(&self) -> String {
        match &self.user {
            Some(u) => format!("{u}@{}", self.addr),
            None => self.addr.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_uris() {
        let t = Target::parse("mongodb://u%40x:p%3Aw@127.0.0.1:4000,other:1/app?authSource=admin&authMechanism=SCRAM-SHA-1").unwrap();
        assert_eq!(t.addr, "127.0.0.1:4000");
        assert_eq!(t.user.as_deref(), Some("u@x"));
        assert_eq!(t.password.as_deref(), Some("p:w"));
        assert_eq!(t.auth_source, "admin");
        assert_eq!(t.mechanism.as_deref(), Some("SCRAM-SHA-1"));
        let t = Target::parse("127.0.0.1:27017").unwrap();
        assert_eq!(
            (t.addr.as_str(), t.user.is_none()),
            ("127.0.0.1:27017", true)
        );
        let t = Target::parse("mongodb://localhost/?directConnection=true").unwrap();
        assert_eq!(t.addr, "localhost:27017");
        assert!(Target::parse("mongodb+srv://x").is_err());
        assert_eq!(
            Target::redact("mongodb://u:secret@h:1/"),
            "mongodb://u:****@h:1/"
        );
    }
}
