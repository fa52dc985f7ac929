//! Query shapes: what a request asks for with its values taken out, so that ten thousand finds
//! on `{status: "A"}`, `{status: "B"}` ... are one line of a report: `find shop.orders {status:
//! ?string}`. The one definition every report uses; `docs/shapes.md` says it in full.
//!
//! - [`Shaper`]: a request ([`Message`], any opcode, compressed or not) to its shape text, read
//!   in place from the decoded message; `command` says which parts of each command count,
//!   `walk` how a value is written (placeholders, kept structure; no recursion, depth capped).
//! - [`hash`]: the stable short hash of a shape's text.
//! - [`table`]: the bounded table of shapes (the rest under `other`) and the map of open cursors
//!   to the shape that opened them, which `getMore` and `killCursors` are charged to.
//! - [`stats`]: the figures kept per shape and their JSON entry, shared by every report.
//! - [`columns`]: the one column list of every shape table, text and HTML.
//!
//! Pure, no I/O, never panics on input. Sits beside `redact` and `metrics`: it reads `wire`
//! and `figures` only.
//!
//! Layers, bottom up: walk < command < mod.rs < table < stats < columns

pub mod columns;
mod command;
pub mod stats;
pub mod table;
pub mod walk;

pub use stats::{ReplyFigures, ShapeFigures, ShapeReport, ShapeStats, ShapesReport};
pub use table::{CursorShapes, ShapeId, ShapeTable, DEFAULT_MAX_SHAPES};

use crate::wire::header::{MsgHeader, OpCode};
use crate::wire::op_msg_view::SectionView;
use crate::wire::{Body, Message, OpMsgView, RequestInfo, Section};
use bson::raw::{RawBsonRef, RawDocument};
use command::Fields;
use sha2::{Digest, Sha256};
use smallvec::SmallVec;

/// A shape's text is cut past this many bytes; what was cut is kept in the hash written after
/// it, so two long shapes that differ only at the end stay apart.
pub const MAX_TEXT: usize = 4096;

/// Hex digits of the short hash.
pub const HASH_HEX: usize = 16;

/// The short hash of a shape: the first 16 hex digits of the SHA-256 of its text (UTF-8). It
/// depends on the text alone, so it is the same on every run, machine and version of mongotape
/// that writes the same text (`printf %s "$shape" | sha256sum | cut -c1-16`).
pub fn hash(text: &str) -> String {
    let digest = Sha256::digest(text.as_bytes());
    let mut out = String::with_capacity(HASH_HEX);
    for b in &digest[..HASH_HEX / 2] {
        out.push_str(&format!("{b:02x}"));
    }
    out
}

/// A shape, owned.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Shape {
    pub command: String,
    /// `db.collection`, or `db` for a command on a database.
    pub namespace: String,
    /// The whole text, `command namespace ...`.
    pub text: String,
}

impl Shape {
    pub fn hash(&self) -> String {
        hash(&self.text)
    }
}

/// A shape as the [`Shaper`] wrote it, borrowed until its next request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShapeView<'s> {
    pub text: &'s str,
    pub command: &'s str,
    pub namespace: &'s str,
}

impl ShapeView<'_> {
    pub fn to_shape(&self) -> Shape {
        Shape {
            command: self.command.to_owned(),
            namespace: self.namespace.to_owned(),
            text: self.text.to_owned(),
        }
    }
}

/// What a request's shape is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Shaped<'s> {
    /// A shape of its own.
    Own(ShapeView<'s>),
    /// `getMore` or `killCursors`: charged to the shape of the (first) cursor it continues,
    /// or to `fallback` (`getMore db.coll`) when that cursor's opening was not seen.
    Continues {
        cursors: Vec<i64>,
        fallback: ShapeView<'s>,
    },
}

impl<'s> Shaped<'s> {
    /// The request's own shape, or its fallback.
    pub fn view(&self) -> ShapeView<'s> {
        match self {
            Shaped::Own(v) => *v,
            Shaped::Continues { fallback, .. } => *fallback,
        }
    }
}

/// Writes the shapes of requests, one at a time, into a buffer it keeps (no allocation per
/// request once warm, apart from the walk's small stack).
#[derive(Debug, Default)]
pub struct Shaper {
    text: String,
    command_end: usize,
    namespace: (usize, usize),
}

impl Shaper {
    pub fn new() -> Shaper {
        Shaper::default()
    }

    /// [`Shaper::request`] for a caller that has read the request's [`RequestInfo`] already:
    /// an OP_MSG `insert`, whose shape is its namespace alone, is written from it without
    /// reading the command again (inserts are most of a write-heavy capture). The same shape.
    pub fn request_with(&mut self, msg: &Message, info: &RequestInfo) -> Option<Shaped<'_>> {
        if !(matches!(msg.body, Body::Msg(_)) && info.command == "insert") {
            return self.request(msg);
        }
        Some(self.insert(info.db.as_deref(), info.collection.as_deref()))
    }

    /// The shape of an OP_MSG `insert` whose `$db` and collection are known: its namespace alone,
    /// the same shape [`Shaper::request_wire`] gives it.
    pub fn insert(&mut self, db: Option<&str>, collection: Option<&str>) -> Shaped<'_> {
        self.reset();
        match (db, collection) {
            (Some(db), Some(c)) => self.head_in("insert", db, c),
            (Some(db), None) => self.head("insert", db),
            (None, Some(c)) => self.head("insert", c),
            (None, None) => self.head("insert", ""),
        }
        self.cap();
        Shaped::Own(self.view())
    }

    fn reset(&mut self) {
        self.text.clear();
        self.command_end = 0;
        self.namespace = (0, 0);
        if self.text.capacity() > 4 * MAX_TEXT {
            // One huge shape does not keep its buffer.
            self.text = String::new();
        }
    }

    /// The shape written, capped, with the cursors a getMore or killCursors continues.
    fn finish(&mut self, cursors: Option<Vec<i64>>) -> Shaped<'_> {
        self.cap();
        let view = self.view();
        match cursors {
            Some(cursors) => Shaped::Continues {
                cursors,
                fallback: view,
            },
            None => Shaped::Own(view),
        }
    }

    fn view(&self) -> ShapeView<'_> {
        ShapeView {
            text: &self.text,
            command: self.text.get(..self.command_end).unwrap_or(""),
            namespace: self
                .text
                .get(self.namespace.0..self.namespace.1)
                .unwrap_or(""),
        }
    }

    /// The shape of a request from its bytes as they were on the wire (any opcode, compressed or
    /// not): an OP_MSG is read in place, without copying its documents; anything else is decoded
    /// first. `None` for a reply, an unknown opcode, or bytes that do not decode.
    pub fn request_wire(&mut self, wire: &[u8]) -> Option<Shaped<'_>> {
        let header = MsgHeader::parse(wire).ok().flatten()?;
        if header.op_code != OpCode::Msg {
            let msg = Message::parse(wire).ok()?;
            return self.request(&msg);
        }
        self.request_view(&OpMsgView::new(wire).ok()?)
    }

    /// The shape of an OP_MSG request already opened (the bytes are not read again): the one
    /// [`Shaper::request_wire`] gives its bytes. `None` for bytes that do not decode.
    pub fn request_view(&mut self, view: &OpMsgView<'_>) -> Option<Shaped<'_>> {
        let body = RawDocument::from_bytes(view.body().ok()?).ok()?;
        // A statement sequence counts by its first document only.
        let mut sequences: SmallVec<[(&str, &RawDocument); 2]> = SmallVec::new();
        for section in view.sections().flatten() {
            if let SectionView::Sequence {
                identifier,
                mut documents,
                ..
            } = section
            {
                if let Some(first) = documents.next().and_then(Result::ok) {
                    sequences.extend(RawDocument::from_bytes(first).ok().map(|d| (identifier, d)));
                }
            }
        }
        self.reset();
        let cursors = self.command(body, None, &sequences, false);
        Some(self.finish(cursors))
    }

    /// The shape of a request; `None` for a reply or an opcode mongotape does not know.
    pub fn request(&mut self, msg: &Message) -> Option<Shaped<'_>> {
        self.reset();
        let cursors = match &msg.body {
            Body::Msg(m) => {
                // A statement sequence counts by its first document only.
                let sequences: SmallVec<[(&str, &RawDocument); 2]> = m
                    .sections
                    .iter()
                    .filter_map(|s| match s {
                        Section::Sequence {
                            identifier,
                            documents,
                        } => Some((identifier.as_str(), documents.first()?.as_ref())),
                        Section::Body(_) => None,
                    })
                    .collect();
                self.command(m.body(), None, &sequences, false)
            }
            Body::Query(q) => self.query(q),
            Body::Insert(i) => {
                self.head("insert", &i.full_collection_name);
                None
            }
            Body::Update(u) => {
                self.head("update", &u.full_collection_name);
                command::legacy_update(
                    &mut self.text,
                    &u.selector,
                    &u.update,
                    u.upsert(),
                    u.multi_update(),
                );
                None
            }
            Body::Delete(d) => {
                self.legacy_delete(d);
                None
            }
            Body::GetMore(g) => {
                self.head("getMore", &g.full_collection_name);
                Some(vec![g.cursor_id])
            }
            Body::KillCursors(k) => {
                self.head("killCursors", "");
                Some(k.cursor_ids.clone())
            }
            Body::Reply(_) | Body::Command(_) | Body::CommandReply(_) | Body::Unknown(_) => {
                return None
            }
        };
        Some(self.finish(cursors))
    }

    /// A legacy OP_QUERY: a command on `db.$cmd` (inside `$query` or not), else a find.
    fn query(&mut self, q: &crate::wire::legacy::OpQuery) -> Option<Vec<i64>> {
        let (db, coll) = match q.full_collection_name.split_once('.') {
            Some((db, coll)) => (db, coll),
            None => (q.full_collection_name.as_str(), ""),
        };
        if coll == "$cmd" {
            let cmd = match q.query.get_document("$query") {
                Ok(inner) => inner,
                Err(_) => &q.query,
            };
            self.command(cmd, Some(db), &[], false)
        } else {
            self.head("find", &q.full_collection_name);
            command::legacy_find(
                &mut self.text,
                &q.query,
                q.return_fields_selector.as_deref(),
                command::LegacyFind {
                    number_to_skip: q.number_to_skip,
                    number_to_return: q.number_to_return,
                    flags: q.flags,
                },
            );
            None
        }
    }

    /// A legacy OP_DELETE: its selector, and `limit 1` for a single remove.
    fn legacy_delete(&mut self, d: &crate::wire::legacy::OpDelete) {
        self.head("delete", &d.full_collection_name);
        self.text.push(' ');
        walk::write(
            &mut self.text,
            RawBsonRef::Document(&d.selector),
            walk::Mode::Doc(walk::Kids::Filter),
        );
        if d.single_remove() {
            self.text.push_str(" limit 1");
        }
    }

    /// `command namespace` at the start of the text (after `explain ` for an explained one).
    fn head(&mut self, command: &str, namespace: &str) {
        if self.text.is_empty() {
            self.command_end = command.len();
        }
        self.text.push_str(command);
        if !namespace.is_empty() {
            self.text.push(' ');
            let start = self.text.len();
            self.text.push_str(namespace);
            self.namespace = (start, self.text.len());
        }
    }

    /// `command db.collection`, written without an intermediate string.
    fn head_in(&mut self, command: &str, db: &str, collection: &str) {
        if self.text.is_empty() {
            self.command_end = command.len();
        }
        self.text.push_str(command);
        self.text.push(' ');
        let start = self.text.len();
        self.text.push_str(db);
        self.text.push('.');
        self.text.push_str(collection);
        self.namespace = (start, self.text.len());
    }

    /// A command document; returns the cursors a getMore or killCursors continues.
    fn command(
        &mut self,
        doc: &RawDocument,
        db: Option<&str>,
        sequences: &[(&str, &RawDocument)],
        nested: bool,
    ) -> Option<Vec<i64>> {
        let f = Fields::of(doc);
        let Some((name, argument)) = f.first() else {
            self.head("?", "");
            return None;
        };
        let db = db.or(match f.get("$db") {
            Some(RawBsonRef::String(s)) => Some(s),
            _ => None,
        });
        let name = match name {
            "findandmodify" => "findAndModify",
            n => n,
        };
        if name == "explain" && !nested {
            if let RawBsonRef::Document(inner) = argument {
                self.command_end = "explain".len();
                self.text.push_str("explain ");
                // An explained getMore is no getMore: the explain is a shape of its own.
                self.command(inner, db, sequences, true);
                return None;
            }
        }
        let collection = match (name, argument) {
            ("getMore", _) => match f.get("collection") {
                Some(RawBsonRef::String(c)) => Some(c),
                _ => None,
            },
            (_, RawBsonRef::String(c)) => Some(c),
            _ => None,
        };
        match (db, collection) {
            (Some(db), Some(c)) => self.head_in(name, db, c),
            (Some(db), None) => self.head(name, db),
            (None, Some(c)) => self.head(name, c),
            (None, None) => self.head(name, ""),
        }
        let out = &mut self.text;
        match name {
            "find" => command::find(out, &f),
            "aggregate" => command::aggregate(out, &f),
            "distinct" => command::distinct(out, &f),
            "count" => command::count(out, &f),
            "findAndModify" => command::find_and_modify(out, &f),
            "update" => {
                if let Some(s) = command::first_statement(&f, "updates", sequences) {
                    command::update_statement(out, &Fields::of(s));
                }
                command::command_let(out, &f);
            }
            "delete" => {
                if let Some(s) = command::first_statement(&f, "deletes", sequences) {
                    command::delete_statement(out, &Fields::of(s));
                }
                command::command_let(out, &f);
            }
            "getMore" => return Some(crate::wire::info::as_i64(argument).into_iter().collect()),
            "killCursors" => return Some(command::cursor_ids(&f)),
            _ => {}
        }
        None
    }

    /// Cuts a text longer than [`MAX_TEXT`], keeping the whole text's SHA-256 after the cut.
    fn cap(&mut self) {
        if self.text.len() <= MAX_TEXT {
            return;
        }
        let digest = Sha256::digest(self.text.as_bytes());
        let mut at = MAX_TEXT;
        while !self.text.is_char_boundary(at) {
            at -= 1;
        }
        self.text.truncate(at);
        self.text.push_str("… sha256:");
        for b in digest {
            self.text.push_str(&format!("{b:02x}"));
        }
        self.command_end = self.command_end.min(at);
        self.namespace = (self.namespace.0.min(at), self.namespace.1.min(at));
    }
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_legacy;
