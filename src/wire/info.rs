//! What a report or a replayer wants to know of a message without walking its BSON again: the command,
//! its namespace, its session, and whether a reply will come; for replies, the outcome.

use super::legacy::OpQuery;
use super::message::{Body, Message};
use super::op_msg::Section;
use super::reply::ReplyBody;
use bson::{RawBsonRef, RawDocument, RawDocumentBuf};

/// Commands that belong to connection set-up, monitoring or authentication rather than the workload.
pub const HANDSHAKE_COMMANDS: &[&str] = &[
    "hello",
    "isMaster",
    "ismaster",
    "saslStart",
    "saslContinue",
    "authenticate",
    "getnonce",
    "endSessions",
    "ping",
    "buildInfo",
    "buildinfo",
    "getLastError",
    "getFreeMonitoringStatus",
    "getParameter",
    "atlasVersion",
    "connectionStatus",
];

pub fn is_handshake_command(name: &str) -> bool {
    HANDSHAKE_COMMANDS.contains(&name)
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct RequestInfo {
    /// The command name (`find`, `insert`, ...); legacy writes are named after their command equivalent.
    pub command: String,
    pub db: Option<String>,
    pub collection: Option<String>,
    pub lsid: Option<RawDocumentBuf>,
    pub txn_number: Option<i64>,
    /// False for OP_MSG with moreToCome and for the legacy fire-and-forget writes.
    pub expects_reply: bool,
    /// The cursor a getMore continues.
    pub cursor_id: Option<i64>,
    /// The cursors a killCursors (command or legacy opcode) closes.
    pub killed_cursors: Vec<i64>,
    /// `autocommit` as sent: `Some(false)` on every statement of a multi-document transaction,
    /// commit and abort included.
    pub autocommit: Option<bool>,
    /// `startTransaction: true`: the transaction's first statement.
    pub start_transaction: bool,
    /// Documents carried (inserts, updates, deletes), from the body array or a document sequence.
    pub documents: usize,
}

impl RequestInfo {
    pub fn namespace(&self) -> String {
        match (&self.db, &self.collection) {
            (Some(db), Some(c)) => format!("{db}.{c}"),
            (Some(db), None) => db.clone(),
            (None, Some(c)) => c.clone(),
            (None, None) => String::new(),
        }
    }

    pub fn of(msg: &Message) -> RequestInfo {
        match &msg.body {
            Body::Msg(m) => {
                let mut info = from_command(m.body());
                info.expects_reply = !m.more_to_come();
                for s in &m.sections {
                    if let Section::Sequence { documents, .. } = s {
                        info.documents += documents.len();
                    }
                }
                info
            }
            Body::Query(q) => from_query(q),
            Body::Insert(i) => legacy("insert", &i.full_collection_name, i.documents.len()),
            Body::Update(u) => legacy("update", &u.full_collection_name, 1),
            Body::Delete(d) => legacy("delete", &d.full_collection_name, 1),
            Body::GetMore(g) => RequestInfo {
                cursor_id: Some(g.cursor_id),
                expects_reply: true,
                ..legacy("getMore", &g.full_collection_name, 0)
            },
            Body::KillCursors(k) => RequestInfo {
                command: "killCursors".into(),
                killed_cursors: k.cursor_ids.clone(),
                ..Default::default()
            },
            Body::Command(c) => {
                let mut info = from_command(c.command());
                info.command = c.command_name.clone();
                info.db = Some(c.database.clone());
                info.expects_reply = true;
                info
            }
            Body::Reply(_) | Body::CommandReply(_) => RequestInfo {
                command: "reply".into(),
                ..Default::default()
            },
            Body::Unknown(_) => RequestInfo {
                command: msg.op_code().name(),
                expects_reply: false,
                ..Default::default()
            },
        }
    }
}

fn split_namespace(ns: &str) -> (Option<String>, Option<String>) {
    match ns.split_once('.') {
        Some((db, coll)) => (Some(db.to_owned()), Some(coll.to_owned())),
        None => (Some(ns.to_owned()), None),
    }
}

fn legacy(command: &str, ns: &str, documents: usize) -> RequestInfo {
    let (db, collection) = split_namespace(ns);
    RequestInfo {
        command: command.into(),
        db,
        collection,
        documents,
        expects_reply: false,
        ..Default::default()
    }
}

fn from_query(q: &OpQuery) -> RequestInfo {
    let (db, coll) = split_namespace(&q.full_collection_name);
    if coll.as_deref() == Some("$cmd") {
        // A command over OP_QUERY, possibly wrapped as {$query: {...}, $readPreference: ...}.
        let cmd = match q.query.get_document("$query") {
            Ok(inner) => inner,
            Err(_) => &q.query,
        };
        let mut info = from_command(cmd);
        info.db = db;
        info.expects_reply = true;
        return info;
    }
    RequestInfo {
        command: "find".into(),
        db,
        collection: coll,
        expects_reply: true,
        ..Default::default()
    }
}

fn from_command(body: &RawDocument) -> RequestInfo {
    let mut info = RequestInfo {
        expects_reply: true,
        ..Default::default()
    };
    let mut first = true;
    for elem in body.iter().flatten() {
        let (key, value) = elem;
        let key = key.as_str();
        if first {
            first = false;
            info.command = key.to_owned();
            if let RawBsonRef::String(c) = value {
                info.collection = Some(c.to_owned());
            }
            if key == "getMore" {
                info.cursor_id = as_i64(value);
            }
            continue;
        }
        match key {
            "$db" => info.db = value.as_str().map(str::to_owned),
            "collection" if info.command == "getMore" => {
                info.collection = value.as_str().map(str::to_owned)
            }
            "lsid" => info.lsid = value.as_document().map(|d| d.to_owned()),
            "txnNumber" => info.txn_number = as_i64(value),
            "autocommit" => info.autocommit = value.as_bool(),
            "startTransaction" => info.start_transaction = value.as_bool() == Some(true),
            "cursors" if info.command == "killCursors" => {
                if let Some(arr) = value.as_array() {
                    info.killed_cursors = arr.into_iter().flatten().filter_map(as_i64).collect();
                }
            }
            "documents" | "updates" | "deletes" => {
                if let Some(arr) = value.as_array() {
                    info.documents += arr.into_iter().count();
                }
            }
            _ => {}
        }
    }
    info
}

pub fn as_i64(value: RawBsonRef<'_>) -> Option<i64> {
    match value {
        RawBsonRef::Int32(v) => Some(v as i64),
        RawBsonRef::Int64(v) => Some(v),
        RawBsonRef::Double(v) if v.fract() == 0.0 => Some(v as i64),
        _ => None,
    }
}

/// What a decoded reply ([`Message`]) says, owned: [`super::reply::ReplyFields`] copied out of
/// the message with the reply's `moreToCome`. Not the same type as `ReplyFields`, which borrows
/// its strings from a body that may have been inflated only for the time of the call; the report
/// readers (`inspect`, `analyze`, `cat`, `slice`) keep this past the message. Not the replayer's
/// `Outcome` (`replay/measure/outcome.rs`) either: that one is a per-request result that is
/// compared and serialized, with `ok` already judged; this one keeps `ok` as the number the server
/// sent and the `codeName` the readers print.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ReplyInfo {
    pub ok: Option<f64>,
    pub code: Option<i32>,
    pub code_name: Option<String>,
    pub errmsg: Option<String>,
    pub n: Option<i64>,
    pub n_modified: Option<i64>,
    pub upserted: usize,
    pub write_errors: usize,
    /// The cursor id the reply hands out (0 when the cursor is exhausted).
    pub cursor_id: Option<i64>,
    /// Documents in `firstBatch`/`nextBatch`, or in an OP_REPLY to a legacy query.
    pub batch_len: Option<usize>,
    /// `operationTime` as `(t, i)` ([`super::reply::ReplyFields::operation_time`]).
    pub operation_time: Option<(u32, u32)>,
    pub more_to_come: bool,
}

impl ReplyInfo {
    pub fn of(msg: &Message) -> ReplyInfo {
        let Some(body) = ReplyBody::of_message(msg) else {
            return ReplyInfo::default();
        };
        let Ok(f) = body.fields() else {
            return ReplyInfo {
                more_to_come: body.more_to_come,
                ..ReplyInfo::default()
            };
        };
        ReplyInfo {
            ok: f.ok,
            code: f.code,
            code_name: f.code_name.map(str::to_owned),
            errmsg: f.errmsg.map(str::to_owned),
            n: f.n,
            n_modified: f.n_modified,
            upserted: f.upserted,
            write_errors: f.write_errors,
            cursor_id: f.cursor_id,
            batch_len: f.batch_len,
            operation_time: f.operation_time,
            more_to_come: body.more_to_come,
        }
    }

    /// The reply succeeded, by [`super::reply::ok_means_success`].
    pub fn is_ok(&self) -> bool {
        super::reply::ok_means_success(self.ok)
    }
}

/// The application name the proxy's own topology probes (the `hello`s it sends the upstream on
/// connections of its own) give in their client metadata: a packet capture taken on the proxy's
/// host sees them beside the clients' connections.
pub const TOPOLOGY_PROBE_APP: &str = "mongotape topology probe";

/// Whether `msg`, the first request of a connection, is a topology probe's: a hello naming
/// [`TOPOLOGY_PROBE_APP`], or exactly `{hello: 1, $db: "admin"}`, what the proxies of earlier
/// versions sent (a driver's first hello always carries client metadata).
pub fn is_topology_probe(msg: &Message) -> bool {
    let Body::Msg(m) = &msg.body else {
        return false;
    };
    let body = m.body();
    if body.get("hello").ok().flatten().is_none() {
        return false;
    }
    match body.get_document("client") {
        Ok(client) => client
            .get_document("application")
            .and_then(|a| a.get_str("name"))
            .is_ok_and(|name| name == TOPOLOGY_PROBE_APP),
        Err(_) => body.iter().count() == 2 && body.get_str("$db").is_ok_and(|db| db == "admin"),
    }
}

/// The handshake's `client` metadata document, when `msg` is a hello/isMaster that carries one.
pub fn client_metadata(msg: &Message) -> Option<RawDocumentBuf> {
    let doc: &RawDocument = match &msg.body {
        Body::Msg(m) => m.body(),
        Body::Query(q) => match q.query.get_document("$query") {
            Ok(inner) => inner,
            Err(_) => &q.query,
        },
        _ => return None,
    };
    let (first, _) = doc.iter().next()?.ok()?;
    if !matches!(first.as_str(), "hello" | "isMaster" | "ismaster") {
        return None;
    }
    doc.get_document("client").ok().map(|d| d.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::op_msg::{MsgFlags, OpMsg};
    use bson::rawdoc;

    fn msg(flags: MsgFlags, sections: Vec<Section>) -> Message {
        Message::parse(
            &OpMsg {
                flags,
                sections,
                checksum: None,
            }
            .encode(1, 0),
        )
        .unwrap()
    }

    #[test]
    fn insert_with_sequence_and_session() {
        let m = msg(
            MsgFlags::MORE_TO_COME,
            vec![
                Section::Body(rawdoc! {
                    "insert": "c", "ordered": true, "lsid": { "id": 1 }, "txnNumber": 5i64, "$db": "bench"
                }),
                Section::Sequence {
                    identifier: "documents".into(),
                    documents: vec![rawdoc! {"_id": 1}, rawdoc! {"_id": 2}],
                },
            ],
        );
        let info = RequestInfo::of(&m);
        assert_eq!(info.command, "insert");
        assert_eq!(info.namespace(), "bench.c");
        assert_eq!(info.txn_number, Some(5));
        assert!(info.lsid.is_some());
        assert!(!info.expects_reply);
        assert_eq!(info.documents, 2);
    }

    #[test]
    fn a_topology_probe_is_the_proxys_hello_or_a_bare_one() {
        let body = |doc| msg(MsgFlags::empty(), vec![Section::Body(doc)]);
        let named = rawdoc! {
            "hello": 1, "client": { "application": { "name": TOPOLOGY_PROBE_APP } }, "$db": "admin"
        };
        assert!(is_topology_probe(&body(named)));
        assert!(is_topology_probe(&body(
            rawdoc! { "hello": 1, "$db": "admin" }
        )));
        let driver = rawdoc! {
            "hello": 1, "client": { "driver": { "name": "PyMongo" } }, "$db": "admin"
        };
        assert!(!is_topology_probe(&body(driver)));
        let more = rawdoc! { "hello": 1, "helloOk": true, "$db": "admin" };
        assert!(!is_topology_probe(&body(more)));
        assert!(!is_topology_probe(&body(
            rawdoc! { "ping": 1, "$db": "admin" }
        )));
    }

    #[test]
    fn get_more_names_its_collection_and_cursor() {
        let m = msg(
            MsgFlags::empty(),
            vec![Section::Body(
                rawdoc! { "getMore": 991i64, "collection": "c", "$db": "bench" },
            )],
        );
        let info = RequestInfo::of(&m);
        assert_eq!(
            (
                info.command.as_str(),
                info.cursor_id,
                info.namespace().as_str()
            ),
            ("getMore", Some(991), "bench.c")
        );
    }

    #[test]
    fn transaction_fields_and_killed_cursors() {
        let m = msg(
            MsgFlags::empty(),
            vec![Section::Body(rawdoc! {
                "find": "c", "lsid": { "id": 1 }, "txnNumber": 3i64, "startTransaction": true,
                "autocommit": false, "$db": "bench"
            })],
        );
        let info = RequestInfo::of(&m);
        assert_eq!(
            (info.autocommit, info.start_transaction),
            (Some(false), true)
        );
        let m = msg(
            MsgFlags::empty(),
            vec![Section::Body(
                rawdoc! { "killCursors": "c", "cursors": [5i64, 6i64], "$db": "bench" },
            )],
        );
        let info = RequestInfo::of(&m);
        assert_eq!(info.killed_cursors, vec![5, 6]);
        assert_eq!(info.namespace(), "bench.c");
    }

    #[test]
    fn reply_outcome() {
        let m = msg(
            MsgFlags::empty(),
            vec![Section::Body(rawdoc! {
                "cursor": { "id": 12i64, "ns": "bench.c", "firstBatch": [{"_id": 1}, {"_id": 2}] },
                "n": 3, "nModified": 2, "ok": 1.0
            })],
        );
        let info = ReplyInfo::of(&m);
        assert_eq!(info.cursor_id, Some(12));
        assert_eq!(info.batch_len, Some(2));
        assert_eq!((info.n, info.n_modified), (Some(3), Some(2)));
        assert!(info.is_ok());
    }
}
