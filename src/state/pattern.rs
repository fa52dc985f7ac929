//! Namespace patterns: `shop.*` (every collection of a database) or `shop.orders` (one). The
//! server's own databases (`admin`, `config`, `local`) and every `system.*` collection are never
//! matched, whatever the pattern says: they hold users, credentials and the server's own state.

use super::error::StateError;
use serde::{Deserialize, Serialize};

/// Databases a snapshot never reads.
pub const SERVER_DATABASES: [&str; 3] = ["admin", "config", "local"];

/// One `--ns` pattern.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct NsPattern {
    pub db: String,
    /// `None`: every collection of `db`.
    pub coll: Option<String>,
}

impl NsPattern {
    pub fn parse(text: &str) -> Result<NsPattern, StateError> {
        let bad = |why| StateError::Pattern {
            pattern: text.to_owned(),
            why,
        };
        let (db, coll) = text
            .split_once('.')
            .ok_or_else(|| bad("expected DB.* or DB.COLLECTION"))?;
        if db.is_empty() || db.contains(['/', '\\', ' ', '"', '$', '*', '\0']) {
            return Err(bad("not a database name"));
        }
        if SERVER_DATABASES.contains(&db) {
            return Err(bad(
                "the server's own databases (admin, config, local) are never snapshotted",
            ));
        }
        if coll.is_empty() || coll.contains(['$', '\0']) || (coll.contains('*') && coll != "*") {
            return Err(bad("the collection is a name or *"));
        }
        if coll.starts_with("system.") {
            return Err(bad("system collections are never snapshotted"));
        }
        Ok(NsPattern {
            db: db.to_owned(),
            coll: (coll != "*").then(|| coll.to_owned()),
        })
    }

    /// Whether the collection `db.coll` is one this pattern names.
    pub fn matches(&self, db: &str, coll: &str) -> bool {
        is_user_namespace(db, coll)
            && self.db == db
            && self.coll.as_deref().is_none_or(|c| c == coll)
    }
}

/// Not a server database, not a `system.*` collection.
pub fn is_user_namespace(db: &str, coll: &str) -> bool {
    !SERVER_DATABASES.contains(&db) && !coll.starts_with("system.") && !coll.is_empty()
}

impl std::fmt::Display for NsPattern {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.db, self.coll.as_deref().unwrap_or("*"))
    }
}

impl From<NsPattern> for String {
    fn from(p: NsPattern) -> String {
        p.to_string()
    }
}

impl TryFrom<String> for NsPattern {
    type Error = StateError;
    fn try_from(s: String) -> Result<NsPattern, StateError> {
        NsPattern::parse(&s)
    }
}

/// Whether any of `patterns` names `db.coll`.
pub fn any_matches(patterns: &[NsPattern], db: &str, coll: &str) -> bool {
    patterns.iter().any(|p| p.matches(db, coll))
}

/// The databases the patterns name, each once, in order.
pub fn databases(patterns: &[NsPattern]) -> Vec<String> {
    let mut dbs: Vec<String> = Vec::new();
    for p in patterns {
        if !dbs.contains(&p.db) {
            dbs.push(p.db.clone());
        }
    }
    dbs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_name_collections_and_never_the_servers_own() {
        let all = NsPattern::parse("shop.*").unwrap();
        let one = NsPattern::parse("shop.orders").unwrap();
        assert!(all.matches("shop", "orders") && all.matches("shop", "customers"));
        assert!(!all.matches("shop", "system.views") && !all.matches("other", "orders"));
        assert!(one.matches("shop", "orders") && !one.matches("shop", "customers"));
        assert_eq!(all.to_string(), "shop.*");
        for bad in [
            "admin.*",
            "local.oplog.rs",
            "config.*",
            "shop.system.users",
            "shop",
            ".x",
            "shop.a*",
            "a b.c",
        ] {
            assert!(NsPattern::parse(bad).is_err(), "{bad}");
        }
    }
}
