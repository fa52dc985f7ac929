//! Which reads the shadow mirrors at all: `--sample PERCENT` (a whole connection or none, or
//! request by request, decided by a seeded hash so that a run is reproducible), `--namespace`
//! (the patterns of `record --snapshot`), `--command` and `--app` (the application name of the
//! connection's handshake). A read left out here is counted as filtered, never as shed.

use crate::state::pattern::{self, NsPattern};

/// What `--sample` picks: whole connections, or requests one by one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SampleBy {
    #[default]
    Connection,
    Request,
}

/// The filters of one shadow; the default lets every read through.
#[derive(Debug, Clone)]
pub struct Filter {
    /// `--sample`: the share of connections (or requests) mirrored, 0 to 100.
    pub percent: f64,
    pub by: SampleBy,
    /// `--sample-seed`: the same seed picks the same connections (and requests).
    pub seed: u64,
    /// `--namespace`: any of them (none: every namespace).
    pub namespaces: Vec<NsPattern>,
    /// `--command`: any of them (none: every mirrored read).
    pub commands: Vec<String>,
    /// `--app`: any of them (none: every application, and connections that named none).
    pub apps: Vec<String>,
}

impl Default for Filter {
    fn default() -> Self {
        Filter {
            percent: 100.0,
            by: SampleBy::Connection,
            seed: 1,
            namespaces: Vec::new(),
            commands: Vec::new(),
            apps: Vec::new(),
        }
    }
}

/// One read as the filters see it.
pub struct Read<'a> {
    pub conn_id: u64,
    pub request_id: i32,
    pub command: &'a str,
    /// `db.collection`.
    pub namespace: &'a str,
    /// The application its connection named in its handshake.
    pub app: Option<&'a str>,
}

impl Filter {
    /// Whether the connections' handshakes must be seen (`--app` given).
    pub fn wants_handshakes(&self) -> bool {
        !self.apps.is_empty()
    }

    /// Whether `read` is mirrored.
    pub fn passes(&self, read: &Read<'_>) -> bool {
        self.sampled(read.conn_id, read.request_id)
            && (self.commands.is_empty() || self.commands.iter().any(|c| c == read.command))
            && (self.apps.is_empty() || read.app.is_some_and(|a| self.apps.iter().any(|x| x == a)))
            && (self.namespaces.is_empty() || {
                let (db, coll) = read
                    .namespace
                    .split_once('.')
                    .unwrap_or((read.namespace, ""));
                pattern::any_matches(&self.namespaces, db, coll)
            })
    }

    /// Whether the sample takes this connection (or this request of it).
    pub fn sampled(&self, conn_id: u64, request_id: i32) -> bool {
        if self.percent >= 100.0 {
            return true;
        }
        let mut h = mix(self.seed ^ mix(conn_id));
        if self.by == SampleBy::Request {
            h = mix(h ^ u64::from(request_id as u32));
        }
        ((h % 1_000_000) as f64) < self.percent * 10_000.0
    }
}

/// splitmix64's finalizer: the same value for the same input on every build and platform.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read<'a>(conn_id: u64, namespace: &'a str, app: Option<&'a str>) -> Read<'a> {
        Read {
            conn_id,
            request_id: 1,
            command: "find",
            namespace,
            app,
        }
    }

    #[test]
    fn half_the_connections_by_a_seeded_hash() {
        let f = |seed| Filter {
            percent: 50.0,
            seed,
            ..Filter::default()
        };
        let picked = |seed| {
            (1..=1000)
                .filter(|&c| f(seed).sampled(c, 1))
                .collect::<Vec<_>>()
        };
        let one = picked(1);
        assert!((400..=600).contains(&one.len()), "{}", one.len());
        assert_eq!(one, picked(1));
        assert_ne!(one, picked(2));
        // By connection, every request of a connection goes the same way.
        assert!((1..100).all(|r| f(1).sampled(one[0], r)));
    }

    #[test]
    fn namespaces_commands_and_apps() {
        let f = Filter {
            namespaces: vec![NsPattern::parse("shop.*").unwrap()],
            apps: vec!["web".into()],
            ..Filter::default()
        };
        assert!(f.passes(&read(1, "shop.items", Some("web"))));
        assert!(!f.passes(&read(1, "other.items", Some("web"))));
        assert!(!f.passes(&read(1, "shop.items", Some("batch"))));
        assert!(!f.passes(&read(1, "shop.items", None)));
        let only_count = Filter {
            commands: vec!["count".into()],
            ..Filter::default()
        };
        assert!(!only_count.passes(&read(1, "shop.items", None)));
    }
}
