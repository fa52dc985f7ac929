//! `--command`, `--namespace` and `--connection` (and their `!=` forms): which recorded requests are
//! replayed. Decided once per recorded request, before it is copied for every clone.

use crate::replay::request::Request;

/// Which recorded requests are replayed. Empty lists accept everything.
#[derive(Debug, Clone, Default)]
pub struct Filters {
    pub commands: Vec<String>,
    pub exclude_commands: Vec<String>,
    /// `db`, `db.collection`, or a pattern ending in `*`.
    pub namespaces: Vec<String>,
    pub exclude_namespaces: Vec<String>,
    pub connections: Vec<u64>,
}

fn ns_matches(pattern: &str, db: &str, ns: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => ns.starts_with(prefix),
        None => pattern == ns || pattern == db,
    }
}

impl Filters {
    pub fn accepts(&self, req: &Request) -> bool {
        let cmd = &*req.command;
        let by_command = (self.commands.is_empty() || self.commands.iter().any(|c| c == cmd))
            && !self.exclude_commands.iter().any(|c| c == cmd)
            && (self.connections.is_empty() || self.connections.contains(&req.conn_id));
        if !by_command || (self.namespaces.is_empty() && self.exclude_namespaces.is_empty()) {
            return by_command;
        }
        let ns = req.namespace();
        (self.namespaces.is_empty() || self.namespaces.iter().any(|p| ns_matches(p, &req.db, &ns)))
            && !self
                .exclude_namespaces
                .iter()
                .any(|p| ns_matches(p, &req.db, &ns))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namespace_patterns() {
        assert!(ns_matches("bench", "bench", "bench.c"));
        assert!(ns_matches("bench.c", "bench", "bench.c"));
        assert!(!ns_matches("bench.d", "bench", "bench.c"));
        assert!(ns_matches("ben*", "bench", "bench.c"));
    }
}
