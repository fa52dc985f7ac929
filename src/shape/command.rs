//! Which parts of each command make its shape, in which order (`docs/shapes.md`): the text
//! after `command namespace`. Every opcode that carries a command lands here: OP_MSG's body
//! (and its document sequences), a command sent over OP_QUERY to `db.$cmd`, and the legacy
//! query and write opcodes, so one logical operation has one shape whichever way it came.

use super::walk::{write, Kids, Mode};
use bson::raw::{RawBsonRef, RawDocument};

/// The top-level fields of a command, looked up by name (a command has a dozen at most).
pub(super) struct Fields<'a>(Vec<(&'a str, RawBsonRef<'a>)>);

impl<'a> Fields<'a> {
    pub(super) fn of(doc: &'a RawDocument) -> Fields<'a> {
        Fields(
            doc.iter_elements()
                .map_while(Result::ok)
                .filter_map(|e| Some((e.key().as_str(), e.value().ok()?)))
                .collect(),
        )
    }

    pub(super) fn get(&self, name: &str) -> Option<RawBsonRef<'a>> {
        self.0.iter().find(|(k, _)| *k == name).map(|(_, v)| *v)
    }

    fn is_true(&self, name: &str) -> bool {
        match self.get(name) {
            Some(RawBsonRef::Boolean(b)) => b,
            Some(RawBsonRef::Int32(n)) => n != 0,
            Some(RawBsonRef::Int64(n)) => n != 0,
            Some(RawBsonRef::Double(n)) => n != 0.0,
            _ => false,
        }
    }

    /// The command's name (its first key) and its argument.
    pub(super) fn first(&self) -> Option<(&'a str, RawBsonRef<'a>)> {
        self.0.first().copied()
    }
}

/// ` name value`, when the field is there.
fn part(out: &mut String, f: &Fields<'_>, name: &str, mode: Mode) {
    part_as(out, f, name, name, mode);
}

/// ` label value` for the field `name`, when it is there.
fn part_as(out: &mut String, f: &Fields<'_>, name: &str, label: &str, mode: Mode) {
    if let Some(v) = f.get(name) {
        out.push(' ');
        out.push_str(label);
        out.push(' ');
        write(out, v, mode);
    }
}

/// ` name`, when the field is there (its value is no part of the shape).
fn present(out: &mut String, f: &Fields<'_>, name: &str) {
    if f.get(name).is_some() {
        out.push(' ');
        out.push_str(name);
    }
}

/// ` name`, when the flag is set (false and absent are the same shape).
fn flag(out: &mut String, f: &Fields<'_>, name: &str) {
    if f.is_true(name) {
        out.push(' ');
        out.push_str(name);
    }
}

/// A filter, `{}` when there is none.
fn filter(out: &mut String, v: Option<RawBsonRef<'_>>) {
    out.push(' ');
    match v {
        Some(v) => write(out, v, Mode::Doc(Kids::Filter)),
        None => out.push_str("{}"),
    }
}

const FIND_FLAGS: &[&str] = &[
    "singleBatch",
    "allowDiskUse",
    "returnKey",
    "showRecordId",
    "tailable",
    "awaitData",
    "oplogReplay",
    "noCursorTimeout",
    "allowPartialResults",
];

/// The common tail: collation, `let`, hint.
fn options(out: &mut String, f: &Fields<'_>) {
    part(out, f, "collation", Mode::Keep);
    part(out, f, "let", Mode::Doc(Kids::Expr));
    part(out, f, "hint", Mode::Keep);
}

pub(super) fn find(out: &mut String, f: &Fields<'_>) {
    filter(out, f.get("filter"));
    part(out, f, "projection", Mode::Projection);
    part(out, f, "sort", Mode::Keep);
    options(out, f);
    part(out, f, "min", Mode::Doc(Kids::Values));
    part(out, f, "max", Mode::Doc(Kids::Values));
    present(out, f, "limit");
    present(out, f, "skip");
    for name in FIND_FLAGS {
        flag(out, f, name);
    }
}

pub(super) fn aggregate(out: &mut String, f: &Fields<'_>) {
    out.push(' ');
    match f.get("pipeline") {
        Some(p) => write(out, p, Mode::Pipeline),
        None => out.push_str("[]"),
    }
    options(out, f);
    flag(out, f, "explain");
}

pub(super) fn distinct(out: &mut String, f: &Fields<'_>) {
    part(out, f, "key", Mode::Keep);
    filter(out, f.get("query"));
    options(out, f);
}

pub(super) fn count(out: &mut String, f: &Fields<'_>) {
    filter(out, f.get("query"));
    present(out, f, "limit");
    present(out, f, "skip");
    options(out, f);
}

/// An update statement: `{q, u, upsert, multi, arrayFilters, collation, hint}`.
pub(super) fn update_statement(out: &mut String, s: &Fields<'_>) {
    filter(out, s.get("q"));
    part(out, s, "u", Mode::Update);
    flag(out, s, "upsert");
    flag(out, s, "multi");
    part(out, s, "arrayFilters", Mode::Filters);
    part(out, s, "collation", Mode::Keep);
    part(out, s, "hint", Mode::Keep);
}

/// A delete statement: `{q, limit, collation, hint}`; `limit: 1` (deleteOne) is ` limit 1`,
/// `limit: 0` (deleteMany) nothing.
pub(super) fn delete_statement(out: &mut String, s: &Fields<'_>) {
    filter(out, s.get("q"));
    if s.is_true("limit") {
        out.push_str(" limit 1");
    }
    part(out, s, "collation", Mode::Keep);
    part(out, s, "hint", Mode::Keep);
}

/// The first statement of an update or delete: from the body's array, or the OP_MSG document
/// sequence of that name.
pub(super) fn first_statement<'a>(
    f: &Fields<'a>,
    field: &str,
    sequences: &'a [(&'a str, &'a RawDocument)],
) -> Option<&'a RawDocument> {
    if let Some(RawBsonRef::Array(a)) = f.get(field) {
        if let Some(Ok(RawBsonRef::Document(d))) = a.into_iter().next() {
            return Some(d);
        }
    }
    sequences
        .iter()
        .find(|(id, _)| *id == field)
        .map(|(_, first)| *first)
}

pub(super) fn find_and_modify(out: &mut String, f: &Fields<'_>) {
    filter(out, f.get("query"));
    part(out, f, "sort", Mode::Keep);
    part_as(out, f, "fields", "projection", Mode::Projection);
    part_as(out, f, "update", "u", Mode::Update);
    flag(out, f, "remove");
    flag(out, f, "new");
    flag(out, f, "upsert");
    part(out, f, "arrayFilters", Mode::Filters);
    options(out, f);
}

/// The `let` of an update or delete command (its statements carry the rest).
pub(super) fn command_let(out: &mut String, f: &Fields<'_>) {
    part(out, f, "let", Mode::Doc(Kids::Expr));
}

/// A legacy OP_QUERY on a collection: a find, its query either the filter itself or wrapped as
/// `{$query: filter, $orderby: sort, $hint, $min, $max}`.
pub(super) fn legacy_find(
    out: &mut String,
    query: &RawDocument,
    projection: Option<&RawDocument>,
    skip: bool,
    limit: bool,
) {
    let f = Fields::of(query);
    let wrapped = f.get("$query").is_some() || f.get("query").is_some();
    if wrapped {
        filter(out, f.get("$query").or_else(|| f.get("query")));
    } else {
        filter(out, Some(RawBsonRef::Document(query)));
    }
    if let Some(p) = projection {
        out.push_str(" projection ");
        write(out, RawBsonRef::Document(p), Mode::Projection);
    }
    if wrapped {
        part_as(out, &f, "$orderby", "sort", Mode::Keep);
        part_as(out, &f, "orderby", "sort", Mode::Keep);
        part_as(out, &f, "$hint", "hint", Mode::Keep);
        part_as(out, &f, "$min", "min", Mode::Doc(Kids::Values));
        part_as(out, &f, "$max", "max", Mode::Doc(Kids::Values));
    }
    if limit {
        out.push_str(" limit");
    }
    if skip {
        out.push_str(" skip");
    }
}

/// A legacy OP_UPDATE: the statement its selector, update and flags make.
pub(super) fn legacy_update(
    out: &mut String,
    selector: &RawDocument,
    update: &RawDocument,
    upsert: bool,
    multi: bool,
) {
    filter(out, Some(RawBsonRef::Document(selector)));
    out.push_str(" u ");
    write(out, RawBsonRef::Document(update), Mode::Update);
    if upsert {
        out.push_str(" upsert");
    }
    if multi {
        out.push_str(" multi");
    }
}

/// The cursor ids of a killCursors command.
pub(super) fn cursor_ids(f: &Fields<'_>) -> Vec<i64> {
    match f.get("cursors") {
        Some(RawBsonRef::Array(a)) => a
            .into_iter()
            .filter_map(|v| crate::wire::info::as_i64(v.ok()?))
            .collect(),
        _ => Vec::new(),
    }
}
