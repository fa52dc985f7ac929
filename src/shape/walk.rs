//! One BSON value written as shape text: literals as type placeholders, field names, operators
//! and what a query needs as it is (sort orders, hints, field paths) kept. How each value is read
//! depends on where it stands ([`Mode`]): a filter's field values, a pipeline's stages, an
//! update's operators. The walk keeps its own stack (never the thread's) and stops at
//! [`MAX_DEPTH`]; malformed bytes become `?invalid`, never a panic.

use crate::wire::depth::MAX_DEPTH;
use bson::raw::{RawBsonRef, RawDocument, RawIter};
use smallvec::SmallVec;

/// How a value is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// A placeholder for its type (`?number`, `?array<?string>`, `?object`).
    Literal,
    /// As it is: numbers, strings, booleans and the documents and arrays that hold them.
    Keep,
    /// A document whose elements are read by [`Kids`]; anything else is a placeholder.
    Doc(Kids),
    /// The value of a field in a filter: an operator document (`{$gt: ...}`) is walked, anything
    /// else (a value compared for equality, `{a: {b: 1}}` included) is a placeholder.
    FieldValue,
    /// An array of filters (`$and`, `$or`, `$nor`, `arrayFilters`).
    Filters,
    /// An aggregation expression: `$field` paths and `$$variables` kept, constants replaced.
    Expr,
    /// A projection: inclusion and exclusion as `true` / `false`, expressions walked.
    Projection,
    /// An aggregation pipeline: an array of stages.
    Pipeline,
    /// `$unionWith`: a collection name, or a document with one and a pipeline.
    UnionWith,
    /// An update's `u`: operators walked, a replacement document `?object`, a pipeline walked.
    Update,
    /// A field's value inside an update operator: modifiers (`$each`, `$slice`) walked.
    UpdateValue,
}

/// How the elements of a document are read, by their key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kids {
    Keep,
    /// Keys kept, every value a placeholder (`min`, `max`).
    Values,
    Filter,
    /// `{$gt: ..., $in: [...]}` of a field in a filter.
    Operators,
    /// An expression object or operator (`{$add: [...]}`, `{total: {$sum: ...}}`).
    Expr,
    Projection,
    /// A projection operator (`$slice`, `$elemMatch`, `$meta`) or expression.
    ProjectionOp,
    /// One pipeline stage, `{$name: spec}`.
    Stage,
    /// The spec of `$lookup`, `$graphLookup`, `$unionWith`.
    Lookup,
    /// `$facet`: each key a pipeline.
    Facet,
    /// `{$set: {...}, $inc: {...}}`.
    UpdateOps,
    /// `{field: value}` inside an update operator.
    UpdateFields,
    /// `{$each: [...], $slice: ...}`.
    Modifiers,
}

fn child(kids: Kids, key: &str) -> Mode {
    match kids {
        Kids::Keep => Mode::Keep,
        Kids::Values | Kids::Modifiers => Mode::Literal,
        Kids::Filter => match key {
            "$and" | "$or" | "$nor" => Mode::Filters,
            "$expr" => Mode::Expr,
            "$text" => Mode::Doc(Kids::Expr),
            k if k.starts_with('$') => Mode::Literal,
            _ => Mode::FieldValue,
        },
        Kids::Operators => match key {
            "$elemMatch" => Mode::Doc(Kids::Filter),
            "$not" => Mode::FieldValue,
            _ => Mode::Literal,
        },
        Kids::Expr => match key {
            "$literal" => Mode::Literal,
            _ => Mode::Expr,
        },
        Kids::Projection => Mode::Projection,
        Kids::ProjectionOp => match key {
            "$elemMatch" => Mode::Doc(Kids::Filter),
            "$meta" => Mode::Keep,
            _ => Mode::Expr,
        },
        Kids::Stage => stage(key),
        Kids::Lookup => match key {
            "from" | "as" | "localField" | "foreignField" | "coll" | "connectFromField"
            | "connectToField" | "depthField" => Mode::Keep,
            "pipeline" => Mode::Pipeline,
            "restrictSearchWithMatch" => Mode::Doc(Kids::Filter),
            _ => Mode::Expr,
        },
        Kids::Facet => Mode::Pipeline,
        Kids::UpdateOps => Mode::Doc(Kids::UpdateFields),
        Kids::UpdateFields => Mode::UpdateValue,
    }
}

/// How a stage's spec is read, by the stage's name.
fn stage(name: &str) -> Mode {
    match name {
        "$match" => Mode::Doc(Kids::Filter),
        "$project" => Mode::Projection,
        "$lookup" | "$graphLookup" => Mode::Doc(Kids::Lookup),
        "$unionWith" => Mode::UnionWith,
        "$facet" => Mode::Doc(Kids::Facet),
        "$limit" | "$skip" | "$documents" => Mode::Literal,
        // Field names, sort orders, output collections and options: structure, not values.
        "$sort" | "$unset" | "$count" | "$unwind" | "$out" | "$merge" | "$collStats"
        | "$indexStats" | "$currentOp" | "$listSessions" | "$listLocalSessions"
        | "$planCacheStats" | "$changeStream" => Mode::Keep,
        _ => Mode::Expr,
    }
}

/// Writes `value` read in `mode` at the end of `out`.
pub fn write(out: &mut String, value: RawBsonRef<'_>, mode: Mode) {
    let mut stack: Stack<'_> = Stack::new();
    value_or_open(out, &mut stack, value, mode);
    while let Some(top) = stack.last_mut() {
        let Some(next) = top.elements.next() else {
            out.push(if top.array { ']' } else { '}' });
            stack.pop();
            continue;
        };
        if top.first {
            top.first = false;
        } else {
            out.push_str(", ");
        }
        let element = match next {
            Ok(e) => e,
            Err(_) => {
                // The iterator ends after an error: the frame closes on the next turn.
                out.push_str("?invalid");
                continue;
            }
        };
        let mode = match top.kids {
            Some(kids) => {
                let key = element.key().as_str();
                write_key(out, key);
                out.push_str(": ");
                child(kids, key)
            }
            None => top.elements_mode,
        };
        match element.value() {
            Ok(v) => value_or_open(out, &mut stack, v, mode),
            Err(_) => out.push_str("?invalid"),
        }
    }
}

/// The documents and arrays open during a walk: inline for the usual few levels, so shaping a
/// request allocates nothing.
type Stack<'a> = SmallVec<[Frame<'a>; 8]>;

/// A document or array being written: its remaining elements and how to read them.
struct Frame<'a> {
    elements: RawIter<'a>,
    array: bool,
    /// How a document's elements are read; `None` for an array.
    kids: Option<Kids>,
    /// How an array's elements are read.
    elements_mode: Mode,
    first: bool,
}

/// Writes a value that needs no walk, or opens the document or array to walk.
fn value_or_open<'a>(out: &mut String, stack: &mut Stack<'a>, value: RawBsonRef<'a>, mode: Mode) {
    let open_doc = |out: &mut String, stack: &mut Stack<'a>, d: &'a RawDocument, kids| {
        open(out, stack, d.iter_elements(), false, Some(kids), Mode::Keep)
    };
    match (mode, value) {
        (Mode::Literal, v) => out.push_str(placeholder(v)),
        (Mode::Keep, RawBsonRef::Document(d)) => open_doc(out, stack, d, Kids::Keep),
        (Mode::Keep, RawBsonRef::Array(a)) => {
            open(out, stack, a.iter_elements(), true, None, Mode::Keep)
        }
        (Mode::Keep, v) => verbatim(out, v),
        (Mode::Doc(kids), RawBsonRef::Document(d)) => open_doc(out, stack, d, kids),
        (Mode::FieldValue, RawBsonRef::Document(d)) if first_key_is_operator(d) => {
            open_doc(out, stack, d, Kids::Operators)
        }
        (Mode::Filters, RawBsonRef::Array(a)) => open(
            out,
            stack,
            a.iter_elements(),
            true,
            None,
            Mode::Doc(Kids::Filter),
        ),
        (Mode::Pipeline, RawBsonRef::Array(a)) => open(
            out,
            stack,
            a.iter_elements(),
            true,
            None,
            Mode::Doc(Kids::Stage),
        ),
        (Mode::Expr, RawBsonRef::String(s)) if s.starts_with('$') => verbatim(out, value),
        (Mode::Expr, RawBsonRef::Array(a)) if !all_constants(a) => {
            open(out, stack, a.iter_elements(), true, None, Mode::Expr)
        }
        (Mode::Expr, RawBsonRef::Document(d)) => open_doc(out, stack, d, Kids::Expr),
        (Mode::Projection, RawBsonRef::Int32(n)) => out.push_str(inclusion(n != 0)),
        (Mode::Projection, RawBsonRef::Int64(n)) => out.push_str(inclusion(n != 0)),
        (Mode::Projection, RawBsonRef::Double(n)) => out.push_str(inclusion(n != 0.0)),
        (Mode::Projection, RawBsonRef::Boolean(b)) => out.push_str(inclusion(b)),
        (Mode::Projection, RawBsonRef::String(s)) if s.starts_with('$') => verbatim(out, value),
        (Mode::Projection, RawBsonRef::Document(d)) => {
            let kids = if first_key_is_operator(d) {
                Kids::ProjectionOp
            } else {
                Kids::Projection
            };
            open_doc(out, stack, d, kids)
        }
        (Mode::UnionWith, RawBsonRef::String(_)) => verbatim(out, value),
        (Mode::UnionWith, RawBsonRef::Document(d)) => open_doc(out, stack, d, Kids::Lookup),
        (Mode::Update, RawBsonRef::Document(d)) if first_key_is_operator(d) => {
            open_doc(out, stack, d, Kids::UpdateOps)
        }
        (Mode::Update, RawBsonRef::Array(_)) => value_or_open(out, stack, value, Mode::Pipeline),
        (Mode::UpdateValue, RawBsonRef::Document(d)) if first_key_is_operator(d) => {
            open_doc(out, stack, d, Kids::Modifiers)
        }
        (_, v) => out.push_str(placeholder(v)),
    }
}

fn open<'a>(
    out: &mut String,
    stack: &mut Stack<'a>,
    elements: RawIter<'a>,
    array: bool,
    kids: Option<Kids>,
    elements_mode: Mode,
) {
    // The top-level value is level 1, as in `wire::depth`.
    if stack.len() >= MAX_DEPTH {
        out.push_str("?tooDeep");
        return;
    }
    out.push(if array { '[' } else { '{' });
    stack.push(Frame {
        elements,
        array,
        kids,
        elements_mode,
        first: true,
    });
}

fn inclusion(included: bool) -> &'static str {
    if included {
        "true"
    } else {
        "false"
    }
}

fn first_key_is_operator(d: &RawDocument) -> bool {
    match d.iter_elements().next() {
        Some(Ok(e)) => e.key().as_str().starts_with('$'),
        _ => false,
    }
}

/// An array of constants only (no field path, document or array): one placeholder in an
/// expression, as the server folds it.
fn all_constants(a: &bson::RawArray) -> bool {
    a.into_iter().all(|v| match v {
        Ok(RawBsonRef::String(s)) => !s.starts_with('$'),
        Ok(RawBsonRef::Document(_) | RawBsonRef::Array(_)) => false,
        Ok(_) => true,
        Err(_) => false,
    })
}

/// The placeholder of a value's type. Every number is `?number` (a driver's choice of int32,
/// int64 or double does not split a shape); an array says the type of its elements when they
/// share one (`?array<?string>`), `?array<>` when they are mixed and `[]` when it is empty.
pub fn placeholder(v: RawBsonRef<'_>) -> &'static str {
    match v {
        RawBsonRef::Array(a) => {
            let mut one: Option<&'static str> = None;
            for e in a {
                let t = match e {
                    Ok(e) => type_name(e),
                    Err(_) => return "?array<>",
                };
                match one {
                    None => one = Some(t),
                    Some(o) if o == t => {}
                    Some(_) => return "?array<>",
                }
            }
            match one {
                None => "[]",
                Some(t) => array_of(t),
            }
        }
        v => type_name(v),
    }
}

fn type_name(v: RawBsonRef<'_>) -> &'static str {
    match v {
        RawBsonRef::Double(_)
        | RawBsonRef::Int32(_)
        | RawBsonRef::Int64(_)
        | RawBsonRef::Decimal128(_) => "?number",
        RawBsonRef::String(_) | RawBsonRef::Symbol(_) => "?string",
        RawBsonRef::Document(_) => "?object",
        RawBsonRef::Array(_) => "?array",
        RawBsonRef::Binary(_) => "?binData",
        RawBsonRef::ObjectId(_) => "?objectId",
        RawBsonRef::Boolean(_) => "?bool",
        RawBsonRef::DateTime(_) => "?date",
        RawBsonRef::Null => "?null",
        RawBsonRef::Undefined => "?undefined",
        RawBsonRef::RegularExpression(_) => "?regex",
        RawBsonRef::DbPointer(_) => "?dbPointer",
        RawBsonRef::JavaScriptCode(_) => "?javascript",
        RawBsonRef::JavaScriptCodeWithScope(_) => "?javascriptWithScope",
        RawBsonRef::Timestamp(_) => "?timestamp",
        RawBsonRef::MinKey => "?minKey",
        RawBsonRef::MaxKey => "?maxKey",
    }
}

fn array_of(t: &'static str) -> &'static str {
    match t {
        "?number" => "?array<?number>",
        "?string" => "?array<?string>",
        "?object" => "?array<?object>",
        "?array" => "?array<?array>",
        "?binData" => "?array<?binData>",
        "?objectId" => "?array<?objectId>",
        "?bool" => "?array<?bool>",
        "?date" => "?array<?date>",
        "?null" => "?array<?null>",
        "?undefined" => "?array<?undefined>",
        "?regex" => "?array<?regex>",
        "?dbPointer" => "?array<?dbPointer>",
        "?javascript" => "?array<?javascript>",
        "?javascriptWithScope" => "?array<?javascriptWithScope>",
        "?timestamp" => "?array<?timestamp>",
        "?minKey" => "?array<?minKey>",
        "?maxKey" => "?array<?maxKey>",
        _ => "?array<>",
    }
}

/// A value kept as it is. Numbers are written as numbers whatever their BSON type (`-1` for
/// int32 -1 and double -1.0); types without a plain text form stay placeholders.
fn verbatim(out: &mut String, v: RawBsonRef<'_>) {
    use std::fmt::Write;
    match v {
        RawBsonRef::Int32(n) => {
            let _ = write!(out, "{n}");
        }
        RawBsonRef::Int64(n) => {
            let _ = write!(out, "{n}");
        }
        RawBsonRef::Double(n) if n.fract() == 0.0 && n.abs() < 1e15 => {
            let _ = write!(out, "{}", n as i64);
        }
        RawBsonRef::Double(n) => {
            let _ = write!(out, "{n}");
        }
        RawBsonRef::String(s) => quoted(out, s),
        RawBsonRef::Boolean(b) => out.push_str(if b { "true" } else { "false" }),
        RawBsonRef::Null => out.push_str("null"),
        v => out.push_str(placeholder(v)),
    }
}

/// A key as it is when it reads unambiguously, JSON-quoted otherwise.
pub fn write_key(out: &mut String, key: &str) {
    let plain = !key.is_empty()
        && key.chars().all(|c| {
            !c.is_control() && !matches!(c, ' ' | ',' | ':' | '{' | '}' | '[' | ']' | '"' | '\\')
        });
    if plain {
        out.push_str(key);
    } else {
        quoted(out, key);
    }
}

/// `s` as a JSON string.
pub fn quoted(out: &mut String, s: &str) {
    use std::fmt::Write;
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}
