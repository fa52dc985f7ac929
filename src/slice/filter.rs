//! What a slice selects, without I/O: the time window (`--since`, `--until`), the connections
//! (`--connection`, `--client`, `--app`, `--driver`) and the messages (`--command`,
//! `--namespace`). `replay` and `cat` match commands and namespaces with these same functions.

use std::time::Duration;

/// One end of the time window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bound {
    /// From the capture's first record (`90s`, `5m`, `1h30m`), as `cat`'s `t` counts.
    Offset(Duration),
    /// A wall-clock time, nanoseconds since the Unix epoch (RFC 3339 given).
    At(u64),
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FilterError {
    #[error("{option} {value:?} is neither an offset (90s, 5m, 1h30m) nor an RFC 3339 time (2026-12-01T10:00:00Z): {detail}")]
    BadBound {
        option: &'static str,
        value: String,
        detail: String,
    },
    #[error("{option} {value:?} is before the Unix epoch")]
    BeforeEpoch { option: &'static str, value: String },
    #[error("--since {since:?} is not before --until {until:?}")]
    EmptyWindow { since: String, until: String },
}

impl Bound {
    /// Parses `--since`/`--until` (named by `option` in the error).
    pub fn parse(option: &'static str, value: &str) -> Result<Bound, FilterError> {
        let text = value.trim();
        if let Ok(d) = humantime::parse_duration(text) {
            return Ok(Bound::Offset(d));
        }
        let rfc3339 = &time::format_description::well_known::Rfc3339;
        match time::OffsetDateTime::parse(text, rfc3339) {
            Ok(t) => u64::try_from(t.unix_timestamp_nanos())
                .map(Bound::At)
                .map_err(|_| FilterError::BeforeEpoch {
                    option,
                    value: value.into(),
                }),
            Err(e) => Err(FilterError::BadBound {
                option,
                value: value.into(),
                detail: e.to_string(),
            }),
        }
    }

    /// The bound in nanoseconds since the epoch, for a capture whose first record is at `origin`.
    pub fn resolve(self, origin_ns: u64) -> u64 {
        match self {
            Bound::Offset(d) => {
                origin_ns.saturating_add(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
            }
            Bound::At(ns) => ns,
        }
    }
}

/// `--since` before `--until` when both are of one kind (offsets, or times); mixed kinds are
/// checked against the capture (an empty window keeps nothing).
pub fn check_window(
    since: Option<(Bound, &str)>,
    until: Option<(Bound, &str)>,
) -> Result<(), FilterError> {
    let (Some((s, s_text)), Some((u, u_text))) = (since, until) else {
        return Ok(());
    };
    let empty = match (s, u) {
        (Bound::Offset(a), Bound::Offset(b)) => a >= b,
        (Bound::At(a), Bound::At(b)) => a >= b,
        _ => false,
    };
    if empty {
        return Err(FilterError::EmptyWindow {
            since: s_text.into(),
            until: u_text.into(),
        });
    }
    Ok(())
}

/// A namespace pattern: `db`, `db.collection`, or a prefix ending in `*`.
pub fn ns_matches(pattern: &str, db: &str, ns: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => ns.starts_with(prefix),
        None => pattern == ns || pattern == db,
    }
}

/// A name pattern: the name itself, or a prefix ending in `*`.
pub fn name_matches(pattern: &str, name: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => pattern == name,
    }
}

/// Which messages: by command and namespace. Empty lists accept everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MessageFilter {
    pub commands: Vec<String>,
    pub exclude_commands: Vec<String>,
    /// [`ns_matches`] patterns.
    pub namespaces: Vec<String>,
    pub exclude_namespaces: Vec<String>,
}

impl MessageFilter {
    pub fn is_empty(&self) -> bool {
        self.commands.is_empty()
            && self.exclude_commands.is_empty()
            && self.namespaces.is_empty()
            && self.exclude_namespaces.is_empty()
    }

    pub fn accepts_command(&self, command: &str) -> bool {
        (self.commands.is_empty() || self.commands.iter().any(|c| c == command))
            && !self.exclude_commands.iter().any(|c| c == command)
    }

    /// Whether the namespace filters ask for the namespace at all (it costs a string to build).
    pub fn needs_namespace(&self) -> bool {
        !(self.namespaces.is_empty() && self.exclude_namespaces.is_empty())
    }

    pub fn accepts_namespace(&self, db: &str, ns: &str) -> bool {
        (self.namespaces.is_empty() || self.namespaces.iter().any(|p| ns_matches(p, db, ns)))
            && !self
                .exclude_namespaces
                .iter()
                .any(|p| ns_matches(p, db, ns))
    }

    pub fn accepts(&self, command: &str, db: &str, ns: &str) -> bool {
        self.accepts_command(command) && self.accepts_namespace(db, ns)
    }
}

/// What is known of a connection when one of its messages is judged.
#[derive(Debug, Clone, Copy, Default)]
pub struct ConnFacts<'a> {
    pub id: u64,
    /// The client's address as the open record has it, `ip:port`.
    pub client: Option<&'a str>,
    /// `client.application.name` of the handshake.
    pub app: Option<&'a str>,
    /// `client.driver.name` of the handshake (`PyMongo|c`, `nodejs|mongosh`).
    pub driver: Option<&'a str>,
}

/// Which connections. Values of one option are alternatives; options must all hold.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConnFilter {
    pub connections: Vec<u64>,
    /// An IP (any port) or `ip:port`.
    pub clients: Vec<String>,
    /// [`name_matches`] patterns of the application name.
    pub apps: Vec<String>,
    /// Matched without case against the driver name and each of its `|`-joined parts
    /// (`pymongo`, `mongosh`, `nodejs`).
    pub drivers: Vec<String>,
}

impl ConnFilter {
    pub fn is_empty(&self) -> bool {
        self.connections.is_empty()
            && self.clients.is_empty()
            && self.apps.is_empty()
            && self.drivers.is_empty()
    }

    pub fn accepts(&self, c: &ConnFacts<'_>) -> bool {
        (self.connections.is_empty() || self.connections.contains(&c.id))
            && (self.clients.is_empty()
                || c.client
                    .is_some_and(|a| self.clients.iter().any(|p| client_matches(p, a))))
            && (self.apps.is_empty()
                || c.app
                    .is_some_and(|a| self.apps.iter().any(|p| name_matches(p, a))))
            && (self.drivers.is_empty()
                || c.driver
                    .is_some_and(|d| self.drivers.iter().any(|p| driver_matches(p, d))))
    }
}

/// `127.0.0.1` matches `127.0.0.1:50312`; `[::1]` and `::1` match `[::1]:50312`.
fn client_matches(pattern: &str, addr: &str) -> bool {
    if pattern == addr {
        return true;
    }
    let host = match addr.rsplit_once(':') {
        Some((host, port)) if port.bytes().all(|b| b.is_ascii_digit()) => host,
        _ => addr,
    };
    let bare = |s: &str| s.trim_start_matches('[').trim_end_matches(']').to_owned();
    bare(pattern) == bare(host)
}

fn driver_matches(pattern: &str, name: &str) -> bool {
    let p = pattern.to_ascii_lowercase();
    let name = name.to_ascii_lowercase();
    name == p
        || name
            .split(['|', '/'])
            .map(|part| part.trim().split(':').next().unwrap_or("").trim())
            .any(|part| part == p)
}

/// What a slice keeps. Empty: everything.
#[derive(Debug, Clone, Default)]
pub struct SliceOptions {
    pub since: Option<Bound>,
    pub until: Option<Bound>,
    pub conns: ConnFilter,
    pub messages: MessageFilter,
}

impl SliceOptions {
    pub fn is_empty(&self) -> bool {
        self.since.is_none()
            && self.until.is_none()
            && self.conns.is_empty()
            && self.messages.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_parse_as_offsets_or_times() {
        assert_eq!(
            Bound::parse("--since", "90s").unwrap(),
            Bound::Offset(Duration::from_secs(90))
        );
        assert_eq!(
            Bound::parse("--since", "5m").unwrap(),
            Bound::Offset(Duration::from_secs(300))
        );
        assert_eq!(
            Bound::parse("--since", "1970-01-01T00:00:01.5Z").unwrap(),
            Bound::At(1_500_000_000)
        );
        assert_eq!(
            Bound::parse("--until", "1970-01-01T01:00:02+01:00").unwrap(),
            Bound::At(2_000_000_000)
        );
        let e = Bound::parse("--since", "yesterday")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("--since \"yesterday\" is neither"), "{e}");
        assert!(Bound::parse("--since", "1960-01-01T00:00:00Z").is_err());
        assert_eq!(
            Bound::Offset(Duration::from_secs(2)).resolve(10),
            2_000_000_010
        );
    }

    #[test]
    fn an_empty_window_is_refused_when_it_can_be_told() {
        let b = |s| Bound::parse("--since", s).unwrap();
        assert!(check_window(Some((b("5m"), "5m")), Some((b("90s"), "90s"))).is_err());
        assert!(check_window(Some((b("90s"), "90s")), Some((b("5m"), "5m"))).is_ok());
        let t = "2026-01-01T00:00:00Z";
        assert!(check_window(Some((b("5m"), "5m")), Some((b(t), t))).is_ok());
    }

    #[test]
    fn connections_match_by_client_app_and_driver() {
        let facts = ConnFacts {
            id: 3,
            client: Some("127.0.0.1:50312"),
            app: Some("checkout-7"),
            driver: Some("nodejs|mongosh"),
        };
        let f = |c: ConnFilter| c.accepts(&facts);
        assert!(f(ConnFilter::default()));
        assert!(f(ConnFilter {
            clients: vec!["127.0.0.1".into()],
            apps: vec!["checkout-*".into()],
            drivers: vec!["MongoSH".into()],
            connections: vec![2, 3],
        }));
        assert!(!f(ConnFilter {
            apps: vec!["checkout".into()],
            ..Default::default()
        }));
        assert!(!f(ConnFilter {
            clients: vec!["127.0.0.2".into()],
            ..Default::default()
        }));
        assert!(driver_matches("ext-mongodb", "mongoc / ext-mongodb:PHP "));
        assert!(driver_matches("pymongo", "PyMongo|c"));
        assert!(client_matches("::1", "[::1]:5000"));
        // Unknown facts never match a filter that asks for them.
        let none = ConnFacts::default();
        assert!(!ConnFilter {
            apps: vec!["x".into()],
            ..Default::default()
        }
        .accepts(&none));
    }

    #[test]
    fn namespace_patterns() {
        assert!(ns_matches("bench", "bench", "bench.c"));
        assert!(ns_matches("bench.c", "bench", "bench.c"));
        assert!(!ns_matches("bench.d", "bench", "bench.c"));
        assert!(ns_matches("ben*", "bench", "bench.c"));
    }
}
