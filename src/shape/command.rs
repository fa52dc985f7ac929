//! Which parts of each command make its shape, in which order (`docs/shapes.md`): the text
//! after `command namespace`. Every opcode that carries a command lands here: OP_MSG's body
//! (and its document sequences), a command sent over OP_QUERY to `db.$cmd`, and the legacy
//! query and write opcodes, so one logical operation has one shape whichever way it came.

use super::walk::{write, Kids, Mode};
use bson::raw::{RawBsonRef, RawDocument, RawElement};
use smallvec::SmallVec;

/// The top-level fields of a command, looked up by name (a command has a dozen at most: kept
/// inline, no allocation per request). A value is read only when its field is looked up: most
/// of a command's fields (lsid, `$clusterTime`, write concern ...) are no part of its shape.
pub(super) struct Fields<'a>(SmallVec<[(&'a str, RawElement<'a>); 16]>);

impl<'a> Fields<'a> {
    pub(super) fn of(doc: &'a RawDocument) -> Fields<'a> {
        Fields(
            doc.iter_elements()
                .map_while(Result::ok)
                .map(|e| (e.key().as_str(), e))
                .collect(),
        )
    }

    pub(super) fn get(&self, name: &str) -> Option<RawBsonRef<'a>> {
        self.0
            .iter()
            .filter(|(k, _)| *k == name)
            .find_map(|(_, e)| e.value().ok())
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
        self.0.iter().find_map(|(k, e)| Some((*k, e.value().ok()?)))
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
    numbers: LegacyFind,
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
    if numbers.number_to_return != 0 {
        out.push_str(" limit");
    }
    if numbers.number_to_skip != 0 {
        out.push_str(" skip");
    }
    legacy_find_flags(out, &f, wrapped, numbers);
}

/// The numbers and flags of a legacy OP_QUERY on a collection.
#[derive(Clone, Copy, Debug)]
pub(super) struct LegacyFind {
    pub number_to_skip: i32,
    pub number_to_return: i32,
    pub flags: i32,
}

/// OP_QUERY flag bits (the wire protocol's numbering) and the find flag each stands for.
const LEGACY_QUERY_FLAGS: &[(u32, &str)] = &[
    (1, "tailable"),
    (5, "awaitData"),
    (3, "oplogReplay"),
    (4, "noCursorTimeout"),
    (7, "allowPartialResults"),
];

/// The find flags of a legacy query, in [`FIND_FLAGS`]' order, as the server reads them when it
/// turns the query into a `find`: a negative `numberToReturn`, and 1, close the cursor after the
/// first batch (`singleBatch`, a legacy findOne); `$returnKey` and `$showDiskLoc` of a wrapped
/// query are `returnKey` and `showRecordId`; the flag bits the other flags.
fn legacy_find_flags(out: &mut String, f: &Fields<'_>, wrapped: bool, numbers: LegacyFind) {
    if numbers.number_to_return < 0 || numbers.number_to_return == 1 {
        out.push_str(" singleBatch");
    }
    if wrapped {
        for (modifier, name) in [
            ("$returnKey", "returnKey"),
            ("$showDiskLoc", "showRecordId"),
        ] {
            if f.is_true(modifier) {
                out.push(' ');
                out.push_str(name);
            }
        }
    }
    for (bit, name) in LEGACY_QUERY_FLAGS {
        if numbers.flags & (1 << bit) != 0 {
            out.push(' ');
            out.push_str(name);
        }
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
