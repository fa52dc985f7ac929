//! What a capture may keep of a message. Runs on the recorder's side of the proxy, never in the
//! forwarding path, on the whole message as it was on the wire.
//!
//! - Credentials are always removed: SCRAM and PLAIN payloads of `saslStart`/`saslContinue` and
//!   their replies, `speculativeAuthenticate` in hello and its reply, `authenticate`'s key, the
//!   `pwd` of `createUser`/`updateUser`, and stored SCRAM credentials wherever they stand
//!   (`usersInfo` with `showCredentials`, reads of `admin.system.users`: [`stored`]). A replay
//!   authenticates by itself and needs none of it.
//! - With [`Redaction::Values`], every string and binary value of the application's data is also
//!   replaced by a keyed hash of the same length and type ([`hash`]), so equal values stay equal:
//!   index selectivity, cardinality and document sizes survive. `document` says what is kept.
//!
//! A message is re-encoded only when something was replaced (and compressed again with its own
//! compressor); otherwise its bytes are kept exactly. A message that cannot be checked is an
//! error, and the recorder leaves it out: a document nested past
//! [`MAX_DEPTH`](crate::wire::depth::MAX_DEPTH) levels, a compressed message that does not
//! inflate to exactly its declared size, or one past its connection's or the recorder's
//! [`InflateBudget`].
//!
//! Layers, bottom up: budget hash < error < stored < document

pub mod budget;
mod document;
mod error;
pub mod hash;
mod stored;

use crate::wire::op_command::{OpCommand, OpCommandReply};
use crate::wire::{compressed, Body, Message, MsgHeader, OpCode, WireError};
use bson::RawDocument;
pub use budget::InflateBudget;
use document::Walker;
pub use error::RedactError;
pub use hash::ValueKey;

/// How much a capture keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Redaction {
    /// Credentials removed, everything else as sent.
    #[default]
    Credentials,
    /// Credentials removed and every string and binary value hashed.
    Values,
}

impl Redaction {
    pub fn name(self) -> &'static str {
        match self {
            Redaction::Credentials => "credentials",
            Redaction::Values => "values",
        }
    }
}

/// Which way a message went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    Request,
    Reply,
}

/// Field names whose presence makes a message worth decoding when only credentials are removed
/// (the last two are [`stored::NEEDLES`]).
const CREDENTIAL_NEEDLES: &[&[u8]] = &[
    b"payload\0",
    b"pwd\0",
    b"key\0",
    b"speculativeAuthenticate\0",
    b"\x03SCRAM-SHA-1\0",
    b"\x03SCRAM-SHA-256\0",
];

#[derive(Debug)]
pub struct Redactor {
    mode: Redaction,
    key: Option<ValueKey>,
}

impl Redactor {
    /// A redactor with a fresh random key for [`Redaction::Values`].
    pub fn new(mode: Redaction) -> Redactor {
        let key = (mode == Redaction::Values).then(ValueKey::random);
        Redactor { mode, key }
    }

    /// The same with a given key, so two redactions can be compared.
    pub fn with_key(mode: Redaction, key: ValueKey) -> Redactor {
        let key = (mode == Redaction::Values).then_some(key);
        Redactor { mode, key }
    }

    pub fn mode(&self) -> Redaction {
        self.mode
    }

    /// The redacted message, or `None` when nothing in it needed to change. Inflates a compressed
    /// message without bound but its declared size: for a message looked at alone.
    pub fn message(
        &self,
        bytes: &[u8],
        direction: Direction,
    ) -> Result<Option<Vec<u8>>, RedactError> {
        self.message_within(bytes, direction, &mut InflateBudget::unlimited())
    }

    /// The same for a message of a connection whose inflation is bounded by `budget`.
    pub fn message_within(
        &self,
        bytes: &[u8],
        direction: Direction,
        budget: &mut InflateBudget,
    ) -> Result<Option<Vec<u8>>, RedactError> {
        self.message_within_both(bytes, direction, budget, &mut InflateBudget::unlimited())
    }

    /// The same, the inflation paid from the connection's `budget` and the recorder's `global` one.
    pub fn message_within_both(
        &self,
        bytes: &[u8],
        direction: Direction,
        budget: &mut InflateBudget,
        global: &mut InflateBudget,
    ) -> Result<Option<Vec<u8>>, RedactError> {
        if let Some(declared) = declared_size(bytes) {
            budget::charge_both(budget, global, bytes.len(), declared?)?;
        }
        if self.key.is_none() && !might_hold_credentials(bytes)? {
            return Ok(None);
        }
        let message = Message::parse(bytes)?;
        let mut walker = Walker::new(self.key.as_ref());
        let Some(plain) = redact_body(&message, direction, &mut walker)? else {
            return Ok(None);
        };
        if walker.replaced == 0 {
            return Ok(None);
        }
        match message.compressor {
            Some(compressor) => Ok(Some(compressed::compress(&plain, compressor)?)),
            None => Ok(Some(plain)),
        }
    }
}

/// A stored document (a snapshot's) with every string and binary value replaced by its keyed hash
/// under `key`, exactly as the same document inserted or returned in a capture redacted with
/// that key: a redacted capture's equality filters find it.
pub fn stored_document(
    key: &ValueKey,
    doc: &RawDocument,
) -> Result<bson::RawDocumentBuf, RedactError> {
    Walker::new(Some(key)).data(doc, false)
}

/// The declared inflated size of an OP_COMPRESSED message, `None` for any other.
fn declared_size(bytes: &[u8]) -> Option<Result<usize, WireError>> {
    match MsgHeader::parse_whole(bytes, "message header") {
        Ok(h) if h.op_code == OpCode::Compressed => {
            Some(compressed::wrapped(bytes).map(|(w, _)| w.declared))
        }
        _ => None,
    }
}

/// Cheap test before decoding: a credential needs one of a few field names in the message. A
/// compressed message is inflated piece by piece up to the first of them; one that cannot be
/// inflated whole to its declared size is an error, since what a reader could inflate of it has
/// not been checked.
fn might_hold_credentials(bytes: &[u8]) -> Result<bool, WireError> {
    if crate::wire::bson_raw::holds_any_key(bytes, CREDENTIAL_NEEDLES) {
        return Ok(true);
    }
    // A message whose header does not decode is no message a server would read: it is kept as
    // it came (for `cat` and `inspect` to report).
    match MsgHeader::parse_whole(bytes, "message header") {
        Ok(h) if h.op_code == OpCode::Compressed => {
            compressed::inflated_contains(bytes, CREDENTIAL_NEEDLES)
        }
        _ => Ok(false),
    }
}

/// The whole uncompressed message re-encoded with its redacted documents.
fn redact_body(
    message: &Message,
    direction: Direction,
    walker: &mut Walker<'_>,
) -> Result<Option<Vec<u8>>, RedactError> {
    let h = &message.header;
    let bytes = match &message.body {
        Body::Msg(msg) => {
            let mut msg = msg.clone();
            for section in &mut msg.sections {
                match section {
                    crate::wire::Section::Body(doc) => {
                        *doc = match direction {
                            Direction::Request => walker.command(doc)?,
                            Direction::Reply => walker.reply(doc)?,
                        }
                    }
                    crate::wire::Section::Sequence {
                        identifier,
                        documents,
                    } => {
                        for doc in documents.iter_mut() {
                            *doc = match identifier.as_str() {
                                "updates" | "deletes" => walker.statement(doc)?,
                                "documents" => walker.data(doc, false)?,
                                _ => walker.data(doc, direction == Direction::Request)?,
                            };
                        }
                    }
                }
            }
            msg.encode(h.request_id, h.response_to)
        }
        Body::Query(query) => {
            let mut query = query.clone();
            query.query = if query.full_collection_name.ends_with(".$cmd") {
                wrapped_command(&query.query, walker)?
            } else {
                walker.data(&query.query, true)?
            };
            if let Some(fields) = &query.return_fields_selector {
                query.return_fields_selector = Some(walker.data(fields, true)?);
            }
            query.encode(h.request_id)
        }
        Body::Reply(reply) => {
            let mut reply = reply.clone();
            for doc in reply.documents.iter_mut() {
                *doc = walker.reply(doc)?;
            }
            reply.encode(h.request_id, h.response_to)
        }
        Body::Insert(insert) => {
            let mut insert = insert.clone();
            for doc in insert.documents.iter_mut() {
                *doc = walker.data(doc, false)?;
            }
            insert.encode(h.request_id)
        }
        Body::Update(update) => {
            let mut update = update.clone();
            update.selector = walker.data(&update.selector, true)?;
            update.update = walker.data(&update.update, true)?;
            update.encode(h.request_id)
        }
        Body::Delete(delete) => {
            let mut delete = delete.clone();
            delete.selector = walker.data(&delete.selector, true)?;
            delete.encode(h.request_id)
        }
        Body::Command(command) => op_command(command, h.request_id, walker)?,
        Body::CommandReply(reply) => op_command_reply(reply, h, walker)?,
        Body::GetMore(_) | Body::KillCursors(_) | Body::Unknown(_) => return Ok(None),
    };
    Ok(Some(bytes))
}

/// OP_COMMAND's two documents read as a command (metadata and command), the input documents as
/// data.
fn op_command(
    command: &OpCommand,
    request_id: i32,
    walker: &mut Walker<'_>,
) -> Result<Vec<u8>, RedactError> {
    let mut command = command.clone();
    for doc in command.documents.iter_mut() {
        *doc = walker.command(doc)?;
    }
    for doc in command.input_docs.iter_mut() {
        *doc = walker.data(doc, false)?;
    }
    Ok(command.encode(request_id))
}

fn op_command_reply(
    reply: &OpCommandReply,
    h: &MsgHeader,
    walker: &mut Walker<'_>,
) -> Result<Vec<u8>, RedactError> {
    let mut reply = reply.clone();
    for doc in reply.documents.iter_mut() {
        *doc = walker.reply(doc)?;
    }
    Ok(reply.encode(h.request_id, h.response_to))
}

/// A legacy command may come wrapped as `{ $query: command, $readPreference: ... }`.
fn wrapped_command(
    doc: &RawDocument,
    walker: &mut Walker<'_>,
) -> Result<bson::RawDocumentBuf, RedactError> {
    let mut first = doc.iter();
    let wrapped = match first.next() {
        Some(Ok((key, bson::RawBsonRef::Document(_)))) => {
            matches!(key.as_str(), "$query" | "query")
        }
        _ => false,
    };
    if !wrapped {
        return walker.command(doc);
    }
    let mut out = bson::RawDocumentBuf::new();
    for element in doc.iter() {
        let (key, value) = element?;
        match value {
            bson::RawBsonRef::Document(inner) if matches!(key.as_str(), "$query" | "query") => {
                out.append(key, walker.command(inner)?)
            }
            _ => out.append(key, value),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
