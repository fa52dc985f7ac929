//! The application name each recorded connection gave in its handshake (`client.application.name`,
//! kept by the proxy as a client-metadata record), for the slowest requests of the report.

use crate::capture::Record;
use bson::RawDocument;
use std::collections::HashMap;

/// Connections remembered at most; past it, later connections' names are not kept.
pub const MAX_CONNECTIONS: usize = 100_000;

/// A recorded connection's application name, when its handshake gave one.
pub fn application(record: &Record) -> Option<String> {
    let doc = RawDocument::from_bytes(&record.payload).ok()?;
    let app = doc.get_document("application").ok()?;
    app.get_str("name").ok().map(str::to_owned)
}

/// Keeps `record`'s application name under its connection, within [`MAX_CONNECTIONS`].
pub fn remember(apps: &mut HashMap<u64, String>, record: &Record) {
    if apps.len() >= MAX_CONNECTIONS && !apps.contains_key(&record.conn_id) {
        return;
    }
    if let Some(name) = application(record) {
        apps.insert(record.conn_id, name);
    }
}
