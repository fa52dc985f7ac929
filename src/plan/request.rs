//! The `explain` command for a request: `{explain: <the command>, verbosity: "executionStats",
//! $db}`, built from the request's OP_MSG as it goes to the server (a replay's copy already has its
//! database mapped and its `_id`s renewed). Writes explained this way are planned and counted by
//! the server but not applied.

use crate::wire::bson_raw::{self, DocWriter, ARRAY, DOCUMENT, STRING};
use crate::wire::op_msg_view::SectionView;
use crate::wire::OpMsgView;
use bson::RawDocumentBuf;
use thiserror::Error;

/// Commands that change a collection's indexes or options: a plan explained before one of them
/// may not be the plan after it (replay's explains count them, `docs/shapes.md`, "Plans").
pub const SCHEMA_CHANGES: &[&str] = &["create", "createIndexes", "drop", "dropIndexes", "collMod"];

/// The commands `explain` runs (aggregate only without `$out`/`$merge`).
pub const EXPLAINABLE: &[&str] = &[
    "find",
    "aggregate",
    "count",
    "distinct",
    "update",
    "delete",
    "findAndModify",
    "findandmodify",
];

/// Fields of the request left out of the explained command: the session and transaction, the
/// cluster's clock, read and write concern (an explain takes neither inside), the read
/// preference and the API version.
const LEFT_OUT: &[&str] = &[
    "$db",
    "lsid",
    "txnNumber",
    "autocommit",
    "startTransaction",
    "$clusterTime",
    "readConcern",
    "writeConcern",
    "$readPreference",
    "apiVersion",
    "apiStrict",
    "apiDeprecationErrors",
];

/// Why a request gets no `explain`.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum RequestError {
    #[error("the request is not a valid OP_MSG: {0}")]
    Malformed(String),
    #[error("{0} is not explained (only find, aggregate without $out/$merge, count, distinct, update, delete, findAndModify)")]
    NotExplainable(String),
    #[error("the request names no database ($db)")]
    NoDatabase,
}

/// Whether a command with this body is explained: its name is in [`EXPLAINABLE`], and an
/// aggregate writes nothing (no `$out` or `$merge` stage).
pub fn explainable(command: &str, body: &[u8]) -> bool {
    if !EXPLAINABLE.contains(&command) {
        return false;
    }
    command != "aggregate" || !writes(body)
}

/// An aggregate's pipeline has a `$out` or `$merge` stage.
fn writes(body: &[u8]) -> bool {
    let Some(pipeline) = bson_raw::iter(body)
        .ok()
        .and_then(|mut els| els.find_map(|e| e.ok().filter(|e| e.key == "pipeline")))
        .and_then(|e| e.as_doc())
    else {
        return false;
    };
    bson_raw::iter(pipeline)
        .into_iter()
        .flatten()
        .map_while(Result::ok)
        .filter_map(|stage| stage.as_doc())
        .filter_map(|stage| bson_raw::iter(stage).ok()?.next()?.ok())
        .any(|first| matches!(first.key, "$out" | "$merge"))
}

/// The `explain` command for the OP_MSG `msg`. Document sequences (`updates`, `deletes`) become
/// the arrays they stand for; an update or delete keeps its first statement only (explain takes
/// one).
pub fn explain_request(msg: &[u8]) -> Result<RawDocumentBuf, RequestError> {
    let malformed = |e: &dyn std::fmt::Display| RequestError::Malformed(e.to_string());
    let view = OpMsgView::new(msg).map_err(|e| malformed(&e))?;
    let body = view.body().map_err(|e| malformed(&e))?;
    let elements = bson_raw::elements(body).map_err(|e| malformed(&e))?;
    let command = elements
        .first()
        .map(|e| e.key)
        .ok_or_else(|| RequestError::Malformed("empty command document".into()))?;
    if !explainable(command, body) {
        return Err(RequestError::NotExplainable(command.to_owned()));
    }
    let db = elements
        .iter()
        .find(|e| e.key == "$db")
        .and_then(|e| e.as_str())
        .ok_or(RequestError::NoDatabase)?;
    let statements = match command {
        "update" => Some("updates"),
        "delete" => Some("deletes"),
        _ => None,
    };
    let mut sequences = Vec::new();
    for section in view.sections() {
        if let SectionView::Sequence {
            identifier,
            documents,
            ..
        } = section.map_err(|e| malformed(&e))?
        {
            let first = documents.take(1).collect::<Result<Vec<_>, _>>();
            sequences.push((identifier, first.map_err(|e| malformed(&e))?));
        }
    }
    let mut out = Vec::with_capacity(body.len() + 64);
    let mut w = DocWriter::new(&mut out);
    w.sub(DOCUMENT, "explain", |inner| {
        for e in &elements {
            if LEFT_OUT.contains(&e.key) {
                continue;
            }
            match statements.filter(|s| *s == e.key) {
                Some(_) => first_statement(inner, e.key, e.value),
                None => inner.raw(e.raw),
            }
        }
        for (identifier, docs) in &sequences {
            // A sequence stands for a field of the body: left out as that field would be.
            if LEFT_OUT.contains(identifier) || elements.iter().any(|e| e.key == *identifier) {
                continue;
            }
            inner.sub(ARRAY, identifier, |arr| {
                for (i, d) in docs.iter().enumerate() {
                    arr.doc(DOCUMENT, &i.to_string(), d);
                }
            });
        }
    });
    w.str("verbosity", "executionStats");
    w.str("$db", db);
    w.finish();
    RawDocumentBuf::from_bytes(out)
        .map_err(|e| RequestError::Malformed(crate::wire::bson_error_text(&e)))
}

/// An `updates` or `deletes` array cut to its first statement.
fn first_statement(w: &mut DocWriter<'_>, key: &str, array: &[u8]) {
    let first = bson_raw::iter(array)
        .ok()
        .and_then(|mut els| els.next()?.ok())
        .filter(|e| e.kind == DOCUMENT);
    w.sub(ARRAY, key, |arr| {
        if let Some(first) = first {
            arr.doc(DOCUMENT, "0", first.value);
        }
    });
}

/// The command name and `$db` of an OP_MSG request, for the callers that decide first.
pub fn command_of(msg: &[u8]) -> Option<(String, String)> {
    let view = OpMsgView::new(msg).ok()?;
    let body = view.body().ok()?;
    let mut els = bson_raw::iter(body).ok()?.map_while(Result::ok);
    let first = els.next()?;
    let db = els
        .find(|e| e.key == "$db" && e.kind == STRING)
        .and_then(|e| e.as_str())?;
    Some((first.key.to_owned(), db.to_owned()))
}
