//! An `explain` reply (verbosity `executionStats`) to the plan's fields of a [`PlanEntry`]: the
//! winning plan as one line, the indexes it reads, the totals of `executionStats` and the
//! server's hashes (the shape's fields are the caller's, [`PlanEntry::set`]).
//!
//! Where the plan is, by the reply's form:
//! - `queryPlanner.winningPlan` (find, count, distinct, update, delete, findAndModify, and an
//!   aggregate the server ran as a find), with `winningPlan.queryPlan` when the server nests it
//!   (the slot-based engine), and `executionStats` beside it;
//! - `stages: [{$cursor: {queryPlanner, executionStats}}, {$group: ...}, ...]` (aggregate): the
//!   cursor's plan, then the names of the stages after it;
//! - `winningPlan.shards` (a sharded find) or a top-level `shards` document (a sharded aggregate):
//!   each shard's plan, `SHARD_MERGE(a: ...; b: ...)`.

use super::PlanEntry;
use crate::figures::text::cut_bytes;
use crate::wire::bson_raw::{self, Element, ARRAY, DOCUMENT, STRING};
use crate::wire::reply::ReplyFields;
use thiserror::Error;

/// Plan stages walked at most; a deeper or larger tree is cut with `…`.
const MAX_STAGES: usize = 256;
const MAX_DEPTH: usize = 64;
/// The plan line is cut past this many bytes.
pub const MAX_LINE: usize = 1024;

/// Why an `explain` reply gives no plan.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ExplainError {
    #[error("explain failed: {errmsg}{}", code_suffix(*.code, .code_name.as_deref()))]
    Failed {
        code: Option<i32>,
        code_name: Option<String>,
        errmsg: String,
    },
    #[error("the explain reply is not a valid document: {0}")]
    Malformed(#[from] bson_raw::RawError),
    #[error(
        "the explain reply names no winning plan (no queryPlanner.winningPlan, stages or shards)"
    )]
    NoPlan,
}

fn code_suffix(code: Option<i32>, name: Option<&str>) -> String {
    match (code, name) {
        (Some(c), Some(n)) => format!(" ({n}, code {c})"),
        (Some(c), None) => format!(" (code {c})"),
        (None, Some(n)) => format!(" ({n})"),
        (None, None) => String::new(),
    }
}

/// The top-level element `key` of `doc`, if `doc` is a valid document and has it.
fn get<'a>(doc: &'a [u8], key: &str) -> Option<Element<'a>> {
    bson_raw::iter(doc)
        .ok()?
        .map_while(Result::ok)
        .find(|e| e.key == key)
}

fn get_doc<'a>(doc: &'a [u8], key: &str) -> Option<&'a [u8]> {
    get(doc, key).filter(|e| e.kind == DOCUMENT)?.as_doc()
}

fn get_str<'a>(doc: &'a [u8], key: &str) -> Option<&'a str> {
    get(doc, key)?.as_str()
}

fn get_count(doc: &[u8], key: &str) -> Option<u64> {
    get(doc, key)?.as_i64().and_then(|v| u64::try_from(v).ok())
}

/// The documents of an array (or the values of a document), skipping other values.
fn docs_of(value: &[u8]) -> impl Iterator<Item = (&str, &[u8])> {
    bson_raw::iter(value)
        .ok()
        .into_iter()
        .flatten()
        .map_while(Result::ok)
        .filter(|e| e.kind == DOCUMENT)
        .filter_map(|e| Some((e.key, e.as_doc()?)))
}

/// A hash the server reports as a string (or, leniently, a number).
fn hash_of(doc: &[u8], key: &str) -> Option<String> {
    let e = get(doc, key)?;
    match e.kind {
        STRING => e.as_str().map(str::to_owned),
        _ => e.as_i64().map(|v| v.to_string()),
    }
}

/// Reads an `explain` reply.
pub fn summarize(reply: &[u8]) -> Result<PlanEntry, ExplainError> {
    bson_raw::iter(reply)?;
    let fields = ReplyFields::of(reply)?;
    if !fields.is_ok() {
        return Err(ExplainError::Failed {
            code: fields.code,
            code_name: fields.code_name.map(str::to_owned),
            errmsg: fields
                .errmsg
                .unwrap_or("no errmsg")
                .chars()
                .take(500)
                .collect(),
        });
    }
    let mut out = PlanEntry {
        query_shape_hash: hash_of(reply, "queryShapeHash"),
        ..PlanEntry::default()
    };
    if let Some(planner) = get_doc(reply, "queryPlanner") {
        read_planner(&mut out, planner)?;
        if let Some(stats) = get_doc(reply, "executionStats") {
            read_stats(&mut out, stats);
        }
    } else if let Some(stages) = get(reply, "stages").filter(|e| e.kind == ARRAY) {
        read_stages(&mut out, stages.value)?;
    } else if let Some(shards) = get_doc(reply, "shards") {
        read_shards(&mut out, shards);
    } else {
        return Err(ExplainError::NoPlan);
    }
    out.plan = out.plan.map(|p| cut_bytes(&p, MAX_LINE));
    Ok(out)
}

/// `queryPlanner`: its winning plan and hashes.
fn read_planner(out: &mut PlanEntry, planner: &[u8]) -> Result<(), ExplainError> {
    out.plan_cache_shape_hash = hash_of(planner, "planCacheShapeHash")
        .or_else(|| hash_of(planner, "queryHash"))
        .or(out.plan_cache_shape_hash.take());
    out.plan_cache_key = hash_of(planner, "planCacheKey").or(out.plan_cache_key.take());
    out.query_shape_hash = out
        .query_shape_hash
        .take()
        .or_else(|| hash_of(planner, "queryShapeHash"));
    let winning = get_doc(planner, "winningPlan").ok_or(ExplainError::NoPlan)?;
    out.plan = Some(plan_line(winning, &mut out.indexes));
    Ok(())
}

/// `executionStats`: the totals.
fn read_stats(out: &mut PlanEntry, stats: &[u8]) {
    out.keys_examined = get_count(stats, "totalKeysExamined");
    out.docs_examined = get_count(stats, "totalDocsExamined");
    out.n_returned = get_count(stats, "nReturned");
    out.execution_time_ms = get_count(stats, "executionTimeMillis");
}

/// Aggregate's `stages`: the `$cursor` stage's plan (or the first stage's name), then the name
/// of each later stage.
fn read_stages(out: &mut PlanEntry, stages: &[u8]) -> Result<(), ExplainError> {
    let mut parts: Vec<String> = Vec::new();
    for (_, stage) in docs_of(stages).take(MAX_STAGES) {
        let Some(first) = bson_raw::iter(stage).ok().and_then(|mut i| i.next()?.ok()) else {
            continue;
        };
        let cursor = (first.key == "$cursor").then(|| first.as_doc()).flatten();
        match cursor {
            Some(cursor) => {
                let planner = get_doc(cursor, "queryPlanner").ok_or(ExplainError::NoPlan)?;
                read_planner(out, planner)?;
                if let Some(stats) = get_doc(cursor, "executionStats") {
                    read_stats(out, stats);
                }
                parts.push(out.plan.take().unwrap_or_default());
            }
            None => parts.push(first.key.to_owned()),
        }
    }
    if parts.is_empty() {
        return Err(ExplainError::NoPlan);
    }
    out.plan = Some(parts.join(" -> "));
    Ok(())
}

/// A sharded aggregate's `shards: {name: {queryPlanner | stages ...}}`: each shard's plan, with
/// the totals added up.
fn read_shards(out: &mut PlanEntry, shards: &[u8]) {
    let mut parts = Vec::new();
    for (name, shard) in docs_of(shards).take(MAX_STAGES) {
        let one = match summarize_shard(shard) {
            Ok(s) => s,
            Err(e) => {
                parts.push(format!("{name}: ({e})"));
                continue;
            }
        };
        parts.push(format!("{name}: {}", one.plan.unwrap_or_default()));
        out.indexes.extend(one.indexes);
        add(&mut out.keys_examined, one.keys_examined);
        add(&mut out.docs_examined, one.docs_examined);
        add(&mut out.n_returned, one.n_returned);
        out.plan_cache_shape_hash = out
            .plan_cache_shape_hash
            .take()
            .or(one.plan_cache_shape_hash);
        out.plan_cache_key = out.plan_cache_key.take().or(one.plan_cache_key);
    }
    out.plan = Some(format!("SHARDS({})", parts.join("; ")));
}

/// One shard's part of a sharded aggregate's explain: a reply without `ok`.
fn summarize_shard(shard: &[u8]) -> Result<PlanEntry, ExplainError> {
    let mut one = PlanEntry::default();
    if let Some(planner) = get_doc(shard, "queryPlanner") {
        read_planner(&mut one, planner)?;
        if let Some(stats) = get_doc(shard, "executionStats") {
            read_stats(&mut one, stats);
        }
    } else if let Some(stages) = get(shard, "stages").filter(|e| e.kind == ARRAY) {
        read_stages(&mut one, stages.value)?;
    } else {
        return Err(ExplainError::NoPlan);
    }
    Ok(one)
}

fn add(total: &mut Option<u64>, part: Option<u64>) {
    if let Some(p) = part {
        *total = Some(total.unwrap_or(0).saturating_add(p));
    }
}

/// What a stage leads to once its inputs are written.
enum Todo<'a> {
    /// Write this stage's inputs, then itself.
    Visit(&'a [u8], usize),
    /// The inputs are written: write ` -> NAME` (after a single input) or `NAME(...)` (several).
    Close(&'a [u8], usize),
    /// Between two inputs of a stage with several.
    Comma,
}

/// The plan tree from the leaves up, without recursion: `A -> B` for a chain, `NAME(x, y)` for
/// a stage with several inputs, the shards of a sharded plan as `NAME(shard: ...; ...)`.
pub fn plan_line(root: &[u8], indexes: &mut Vec<String>) -> String {
    line_at(root, indexes, 0)
}

/// [`plan_line`] at `nest` levels of shards (a shard's plan naming shards again is cut).
fn line_at(root: &[u8], indexes: &mut Vec<String>, nest: usize) -> String {
    if nest > 1 {
        return "…".into();
    }
    let root = get_doc(root, "queryPlan").unwrap_or(root);
    let mut line = String::new();
    let mut stack = vec![Todo::Visit(root, 0)];
    let mut seen = 0;
    while let Some(todo) = stack.pop() {
        if line.len() > MAX_LINE {
            break;
        }
        match todo {
            Todo::Comma => line.push_str(", "),
            Todo::Close(stage, inputs) => close(&mut line, stage, inputs, indexes),
            Todo::Visit(stage, depth) => {
                seen += 1;
                if seen > MAX_STAGES || depth > MAX_DEPTH {
                    line.push('…');
                    continue;
                }
                if let Some(shards) = get(stage, "shards").filter(|e| e.kind == ARRAY) {
                    line.push_str(&shards_line(stage, shards.value, indexes, nest));
                    continue;
                }
                let inputs: Vec<&[u8]> = match get_doc(stage, "inputStage") {
                    Some(one) => vec![one],
                    None => get(stage, "inputStages")
                        .filter(|e| e.kind == ARRAY)
                        .map(|e| docs_of(e.value).map(|(_, d)| d).collect())
                        .unwrap_or_default(),
                };
                stack.push(Todo::Close(stage, inputs.len()));
                if inputs.len() > 1 {
                    open_multi(&mut line, stage);
                }
                for (i, input) in inputs.iter().enumerate().rev() {
                    stack.push(Todo::Visit(input, depth + 1));
                    if i > 0 {
                        stack.push(Todo::Comma);
                    }
                }
            }
        }
    }
    line
}

/// A stage with several inputs opens `NAME(` before them.
fn open_multi(line: &mut String, stage: &[u8]) {
    line.push_str(get_str(stage, "stage").unwrap_or("?"));
    line.push('(');
}

/// After a stage's inputs: `)` for several, ` -> NAME` after one, `NAME` for a leaf.
fn close(line: &mut String, stage: &[u8], inputs: usize, indexes: &mut Vec<String>) {
    match inputs {
        0 => {}
        1 => line.push_str(" -> "),
        _ => {
            line.push(')');
            return;
        }
    }
    line.push_str(get_str(stage, "stage").unwrap_or("?"));
    if let Some(pattern) = get_doc(stage, "keyPattern") {
        line.push(' ');
        key_pattern(line, pattern);
    } else if let Some(name) = get_str(stage, "indexName") {
        line.push(' ');
        line.push_str(name);
    }
    if let Some(name) = get_str(stage, "indexName") {
        if indexes.len() < MAX_STAGES && !indexes.iter().any(|i| i == name) {
            indexes.push(name.to_owned());
        }
    }
}

/// `{a: 1, b: -1}`, `{loc: "2dsphere"}`: one level, values as numbers or strings.
fn key_pattern(line: &mut String, pattern: &[u8]) {
    line.push('{');
    let mut first = true;
    for e in bson_raw::iter(pattern)
        .into_iter()
        .flatten()
        .map_while(Result::ok)
    {
        if !first {
            line.push_str(", ");
        }
        first = false;
        line.push_str(e.key);
        line.push_str(": ");
        match (e.as_i64(), e.as_f64(), e.as_str()) {
            (Some(n), _, _) => line.push_str(&n.to_string()),
            (None, Some(f), _) => line.push_str(&f.to_string()),
            (_, _, Some(s)) => {
                line.push('"');
                line.push_str(s);
                line.push('"');
            }
            _ => line.push('?'),
        }
    }
    line.push('}');
}

/// A sharded find's `winningPlan: {stage: SHARD_MERGE, shards: [{shardName, winningPlan}]}`.
fn shards_line(stage: &[u8], shards: &[u8], indexes: &mut Vec<String>, nest: usize) -> String {
    let parts: Vec<String> = docs_of(shards)
        .take(MAX_STAGES)
        .map(|(i, shard)| {
            let name = get_str(shard, "shardName").unwrap_or(i);
            match get_doc(shard, "winningPlan") {
                Some(plan) => format!("{name}: {}", line_at(plan, indexes, nest + 1)),
                None => format!("{name}: ?"),
            }
        })
        .collect();
    format!(
        "{}({})",
        get_str(stage, "stage").unwrap_or("SHARDS"),
        parts.join("; ")
    )
}
