//! The database mapping of one copy of the traffic: `--db-map`, then a `_K` suffix for clone K. The
//! system databases (`admin`, `config`, `local`) are never mapped.

use std::borrow::Cow;

/// The namespace mapping a copy of the traffic applies.
pub trait DbMap {
    /// The database `db` becomes in this copy.
    fn map_db<'a>(&'a self, db: &'a str) -> Cow<'a, str>;

    /// `db.collection` with its database part mapped.
    fn map_ns(&self, ns: &str) -> String {
        match ns.split_once('.') {
            Some((db, rest)) => format!("{}.{rest}", self.map_db(db)),
            None => self.map_db(ns).into_owned(),
        }
    }
}

/// The database mapping of one copy: `--db-map`, then `_K` for clone K when there are clones.
pub struct CopyDb<'a> {
    pub map: &'a [(String, String)],
    pub clone: Option<u32>,
}

impl DbMap for CopyDb<'_> {
    fn map_db<'a>(&'a self, db: &'a str) -> Cow<'a, str> {
        if matches!(db, "admin" | "config" | "local") || db.is_empty() {
            return Cow::Borrowed(db);
        }
        let base = self
            .map
            .iter()
            .find(|(from, _)| from == db)
            .map_or(db, |(_, to)| to.as_str());
        match self.clone {
            Some(k) => Cow::Owned(format!("{base}_{k}")),
            None => Cow::Borrowed(base),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copy_db_maps_then_suffixes_and_spares_system_databases() {
        let map = vec![("bench".to_string(), "other".to_string())];
        let c = CopyDb {
            map: &map,
            clone: Some(2),
        };
        assert_eq!(c.map_db("bench"), "other_2");
        assert_eq!(c.map_db("x"), "x_2");
        assert_eq!(c.map_db("admin"), "admin");
        assert_eq!(c.map_ns("bench.c"), "other_2.c");
        let c = CopyDb {
            map: &map,
            clone: None,
        };
        assert_eq!(c.map_db("bench"), "other");
    }
}
