//! What is redacted inside a command, a reply or a document, by where it stands.
//!
//! Credentials are always removed. With values on, every string and binary value is replaced by
//! its keyed hash except what a replay needs to send the same command to the same place: the
//! command's argument (the collection), session and transaction fields, read and write concerns,
//! index names and keys, and the names of collections and fields inside aggregation stages.
//! Strings starting with `$` (field paths, `$$` variables) are kept in queries, updates and
//! pipelines, where they are expressions, but not in inserted or returned documents.

use super::error::RedactError;
use super::hash::ValueKey;
use crate::wire::depth;
use bson::raw::{
    CStr, RawArray, RawArrayBuf, RawBinaryRef, RawBson, RawBsonRef, RawDocument,
    RawJavaScriptCodeWithScope,
};
use bson::{Binary, RawDocumentBuf, Regex};

type Result<T> = std::result::Result<T, RedactError>;

/// Top-level request fields a replay needs as they are.
const KEEP_IN_COMMAND: &[&str] = &[
    "$db",
    "lsid",
    "txnNumber",
    "autocommit",
    "startTransaction",
    "$clusterTime",
    "$readPreference",
    "readConcern",
    "writeConcern",
    "apiVersion",
    "apiStrict",
    "apiDeprecationErrors",
    "hint",
    "collation",
    "collection",
    "cursor",
    "indexes",
    "index",
    "key",
    "to",
    "viewOn",
    "client",
    "compression",
    "saslSupportedMechs",
    "mechanism",
];

/// Top-level reply fields that carry no application data.
const KEEP_IN_REPLY: &[&str] = &[
    "codeName",
    "errorLabels",
    "$clusterTime",
    "operationTime",
    "electionId",
    "opTime",
    "topologyVersion",
    "$gleStats",
];

/// Inside an aggregation stage: names of collections and fields, not values.
const KEEP_IN_STAGE: &[&str] = &[
    "from",
    "localField",
    "foreignField",
    "as",
    "into",
    "coll",
    "db",
    "path",
    "includeArrayIndex",
    "on",
    "connectFromField",
    "connectToField",
    "depthField",
];

/// Commands whose body carries a credential, lower-cased.
fn credential_field(command: &str) -> Option<&'static str> {
    match command {
        "saslstart" | "saslcontinue" => Some("payload"),
        "authenticate" => Some("key"),
        "createuser" | "updateuser" => Some("pwd"),
        _ => None,
    }
}

fn is_hello(command: &str) -> bool {
    matches!(command, "hello" | "ismaster")
}

/// Walks documents and builds their redacted copies, counting what it replaced. Each public entry
/// takes a whole document from a message and first checks its depth ([`depth::check`]), so the
/// recursion below never goes deeper than [`depth::MAX_DEPTH`] levels.
pub(crate) struct Walker<'k> {
    /// `Some` when values are redacted, not only credentials.
    values: Option<&'k ValueKey>,
    pub replaced: usize,
}

impl<'k> Walker<'k> {
    pub fn new(values: Option<&'k ValueKey>) -> Walker<'k> {
        Walker {
            values,
            replaced: 0,
        }
    }

    /// A command as a client sends it (OP_MSG body, or OP_QUERY on `$cmd`).
    pub fn command(&mut self, doc: &RawDocument) -> Result<RawDocumentBuf> {
        self.whole(doc, Self::command_fields)
    }

    /// A server reply (OP_MSG body or an OP_REPLY document).
    pub fn reply(&mut self, doc: &RawDocument) -> Result<RawDocumentBuf> {
        self.whole(doc, Self::reply_fields)
    }

    /// A document whose every value is data: an inserted or returned document (`expressions`
    /// false) or a query, update or projection (`expressions` true).
    pub fn data(&mut self, doc: &RawDocument, expressions: bool) -> Result<RawDocumentBuf> {
        self.whole(doc, |w, d| w.fields(d, expressions))
    }

    /// An element of `updates` or `deletes`.
    pub fn statement(&mut self, doc: &RawDocument) -> Result<RawDocumentBuf> {
        self.whole(doc, Self::statement_fields)
    }

    /// A whole document of a message: refused past the depth limit, walked by `walk`, then rid of
    /// stored credentials wherever they stand.
    fn whole(
        &mut self,
        doc: &RawDocument,
        walk: impl FnOnce(&mut Self, &RawDocument) -> Result<RawDocumentBuf>,
    ) -> Result<RawDocumentBuf> {
        depth::check(doc.as_bytes())?;
        let out = walk(self, doc)?;
        if !super::stored::present(out.as_bytes()) {
            return Ok(out);
        }
        let (out, emptied) = super::stored::remove(&out)?;
        self.replaced += emptied;
        Ok(out)
    }

    fn command_fields(&mut self, doc: &RawDocument) -> Result<RawDocumentBuf> {
        let mut command = String::new();
        let mut out = RawDocumentBuf::new();
        for (i, element) in doc.iter().enumerate() {
            let (key, value) = element?;
            let name = key.as_str();
            if i == 0 {
                command = name.to_ascii_lowercase();
                out.append(key, value);
                continue;
            }
            if credential_field(&command) == Some(name) {
                self.credential(&mut out, key, value);
            } else if name == "speculativeAuthenticate" {
                self.speculative(&mut out, key, value)?;
            } else if self.values.is_none()
                || is_hello(&command)
                || KEEP_IN_COMMAND.contains(&name)
                || is_step_comment(name, value)
            {
                out.append(key, value);
            } else {
                match (name, value) {
                    ("pipeline", RawBsonRef::Array(stages)) => {
                        let stages = self.pipeline(stages)?;
                        out.append(key, stages);
                    }
                    ("updates" | "deletes", RawBsonRef::Array(statements)) => {
                        let mut list = RawArrayBuf::new();
                        for statement in statements {
                            match statement? {
                                RawBsonRef::Document(d) => list.push(self.statement_fields(d)?),
                                other => self.push_value(&mut list, other, true)?,
                            }
                        }
                        out.append(key, list);
                    }
                    ("documents", other) => self.append_value(&mut out, key, other, false)?,
                    (_, other) => self.append_value(&mut out, key, other, true)?,
                }
            }
        }
        Ok(out)
    }

    fn reply_fields(&mut self, doc: &RawDocument) -> Result<RawDocumentBuf> {
        let auth_reply = doc.get("conversationId")?.is_some();
        let hello_reply = doc.get("isWritablePrimary")?.is_some() || doc.get("ismaster")?.is_some();
        let mut out = RawDocumentBuf::new();
        for element in doc.iter() {
            let (key, value) = element?;
            let name = key.as_str();
            if name == "payload" && auth_reply {
                self.credential(&mut out, key, value);
            } else if name == "speculativeAuthenticate" {
                self.speculative(&mut out, key, value)?;
            } else if self.values.is_none() || hello_reply || KEEP_IN_REPLY.contains(&name) {
                out.append(key, value);
            } else if let ("cursor", RawBsonRef::Document(cursor)) = (name, value) {
                let cursor = self.cursor(cursor)?;
                out.append(key, cursor);
            } else {
                self.append_value(&mut out, key, value, false)?;
            }
        }
        Ok(out)
    }

    fn fields(&mut self, doc: &RawDocument, expressions: bool) -> Result<RawDocumentBuf> {
        let mut out = RawDocumentBuf::new();
        for element in doc.iter() {
            let (key, value) = element?;
            self.append_value(&mut out, key, value, expressions)?;
        }
        Ok(out)
    }

    fn statement_fields(&mut self, doc: &RawDocument) -> Result<RawDocumentBuf> {
        let mut out = RawDocumentBuf::new();
        for element in doc.iter() {
            let (key, value) = element?;
            if matches!(key.as_str(), "hint" | "collation") {
                out.append(key, value);
            } else {
                self.append_value(&mut out, key, value, true)?;
            }
        }
        Ok(out)
    }

    fn cursor(&mut self, cursor: &RawDocument) -> Result<RawDocumentBuf> {
        let mut out = RawDocumentBuf::new();
        for element in cursor.iter() {
            let (key, value) = element?;
            if matches!(key.as_str(), "ns" | "id") {
                out.append(key, value);
            } else {
                self.append_value(&mut out, key, value, false)?;
            }
        }
        Ok(out)
    }

    fn pipeline(&mut self, stages: &RawArray) -> Result<RawArrayBuf> {
        let mut out = RawArrayBuf::new();
        for stage in stages {
            match stage? {
                RawBsonRef::Document(stage) => out.push(self.stage(stage)?),
                other => self.push_value(&mut out, other, true)?,
            }
        }
        Ok(out)
    }

    /// One stage, `{ $name: spec }`: a string spec names a collection or field (`$out`, `$count`,
    /// `$unwind`); inside a document spec collection and field names are kept.
    fn stage(&mut self, stage: &RawDocument) -> Result<RawDocumentBuf> {
        let mut out = RawDocumentBuf::new();
        for element in stage.iter() {
            let (key, spec) = element?;
            match spec {
                RawBsonRef::String(_) => out.append(key, spec),
                RawBsonRef::Document(spec) if key.as_str() == "$facet" => {
                    let mut facets = RawDocumentBuf::new();
                    for facet in spec.iter() {
                        let (name, facet) = facet?;
                        match facet {
                            RawBsonRef::Array(p) => facets.append(name, self.pipeline(p)?),
                            other => self.append_value(&mut facets, name, other, true)?,
                        }
                    }
                    out.append(key, facets);
                }
                RawBsonRef::Document(spec) => {
                    let mut body = RawDocumentBuf::new();
                    for field in spec.iter() {
                        let (name, value) = field?;
                        match value {
                            RawBsonRef::String(_) if KEEP_IN_STAGE.contains(&name.as_str()) => {
                                body.append(name, value)
                            }
                            RawBsonRef::Array(p) if name.as_str() == "pipeline" => {
                                body.append(name, self.pipeline(p)?)
                            }
                            other => self.append_value(&mut body, name, other, true)?,
                        }
                    }
                    out.append(key, body);
                }
                other => self.append_value(&mut out, key, other, true)?,
            }
        }
        Ok(out)
    }

    fn credential(&mut self, out: &mut RawDocumentBuf, key: &CStr, value: RawBsonRef<'_>) {
        self.replaced += 1;
        match value {
            RawBsonRef::Binary(b) => out.append(
                key,
                RawBsonRef::Binary(RawBinaryRef {
                    subtype: b.subtype,
                    bytes: &[],
                }),
            ),
            _ => out.append(key, ""),
        }
    }

    /// `speculativeAuthenticate` in hello and its reply: the SCRAM or X.509 first message.
    fn speculative(
        &mut self,
        out: &mut RawDocumentBuf,
        key: &CStr,
        value: RawBsonRef<'_>,
    ) -> Result<()> {
        let RawBsonRef::Document(spec) = value else {
            out.append(key, value);
            return Ok(());
        };
        let mut inner = RawDocumentBuf::new();
        for element in spec.iter() {
            let (name, v) = element?;
            if name.as_str() == "payload" {
                self.credential(&mut inner, name, v);
            } else {
                inner.append(name, v);
            }
        }
        out.append(key, inner);
        Ok(())
    }

    fn append_value(
        &mut self,
        out: &mut RawDocumentBuf,
        key: &CStr,
        value: RawBsonRef<'_>,
        expressions: bool,
    ) -> Result<()> {
        match self.value(value, expressions)? {
            Redacted::Same => out.append(key, value),
            Redacted::New(new) => out.append(key, new),
        }
        Ok(())
    }

    fn push_value(
        &mut self,
        out: &mut RawArrayBuf,
        value: RawBsonRef<'_>,
        expressions: bool,
    ) -> Result<()> {
        match self.value(value, expressions)? {
            Redacted::Same => out.push(value),
            Redacted::New(new) => out.push(new),
        }
        Ok(())
    }

    fn value(&mut self, value: RawBsonRef<'_>, expressions: bool) -> Result<Redacted> {
        let Some(hash) = self.values else {
            return Ok(Redacted::Same);
        };
        let new = match value {
            RawBsonRef::String(s) if expressions && s.starts_with('$') => {
                return Ok(Redacted::Same)
            }
            RawBsonRef::String(s) => RawBson::String(hash.string(s)),
            RawBsonRef::Symbol(s) => RawBson::Symbol(hash.string(s)),
            RawBsonRef::JavaScriptCode(s) => RawBson::JavaScriptCode(hash.string(s)),
            RawBsonRef::Binary(b) => RawBson::Binary(Binary {
                subtype: b.subtype,
                bytes: hash.bytes(b.bytes),
            }),
            RawBsonRef::RegularExpression(re) => {
                let pattern = hash.string(re.pattern.as_str());
                RawBson::RegularExpression(Regex {
                    pattern: pattern.try_into().expect("letters and digits hold no NUL"),
                    options: re.options.into(),
                })
            }
            RawBsonRef::JavaScriptCodeWithScope(code) => {
                RawBson::JavaScriptCodeWithScope(RawJavaScriptCodeWithScope {
                    code: hash.string(code.code),
                    scope: self.fields(code.scope, expressions)?,
                })
            }
            RawBsonRef::Document(d) => RawBson::Document(self.fields(d, expressions)?),
            RawBsonRef::Array(a) => {
                let mut out = RawArrayBuf::new();
                for item in a {
                    self.push_value(&mut out, item?, expressions)?;
                }
                RawBson::Array(out)
            }
            _ => return Ok(Redacted::Same),
        };
        if !matches!(value, RawBsonRef::Document(_) | RawBsonRef::Array(_)) {
            self.replaced += 1;
        }
        Ok(Redacted::New(new))
    }
}

/// A value as it was, or its replacement.
pub(crate) enum Redacted {
    Same,
    New(RawBson),
}

/// mongotape's own step markers (`comment: "mongotape:step:NAME"`) stay readable.
fn is_step_comment(name: &str, value: RawBsonRef<'_>) -> bool {
    name == "comment" && matches!(value, RawBsonRef::String(s) if s.starts_with("mongotape:"))
}
