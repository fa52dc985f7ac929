//! Errors explained: every failed reply counted by the command it answered and the error code it
//! gave (its own `code`, else its first write error's), with the server's `codeName`, one
//! `errmsg` example and the query shapes the errors came from. Shared by `analyze`, `replay`, the
//! A/B report, `merge` and `compare` (`errors_by_code`).
//!
//! Memory is bounded: at most `cap` distinct (command, code) entries, the errors past it counted
//! in `errors_by_code_other`; at most [`MAX_SHAPES_PER_ERROR`] shapes and one message each.

use super::table::{Column, Field, Table};
use super::text::cut_bytes;
use super::units;
use crate::wire::codes;
use crate::wire::reply::{ReplyFields, WriteError};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// Distinct (command, code) entries kept by default.
pub const DEFAULT_MAX_ERROR_ENTRIES: usize = 1_000;
/// Shapes named per entry.
pub const MAX_SHAPES_PER_ERROR: usize = 3;
/// Distinct write-error codes counted from one reply (the rest of its entries are not counted).
const MAX_CODES_PER_REPLY: usize = 16;
/// An `errmsg` example is cut past this many bytes.
pub const MAX_ERRMSG: usize = 300;
/// Errors of an entry whose shape is looked up before it stops trying (its shapes are then the
/// ones found so far): a shape costs a pass over the request.
const SHAPE_TRIES: u32 = 64;

/// A query shape an error came from.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ErrorShape {
    #[schemars(pattern(r"^[0-9a-f]{16}$"))]
    pub hash: String,
    pub shape: String,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The errors of one command with one code.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[schemars(deny_unknown_fields)]
#[serde(default)]
pub struct ErrorByCode {
    pub command: String,
    /// The server's error code; `None` (null) when the reply failed without one (`ok: 0` alone).
    pub code: Option<i32>,
    /// The reply's own name for the code, else the server's name as mongotape knows it
    /// (`wire::codes`); null when neither is known.
    #[serde(rename = "codeName")]
    pub code_name: Option<String>,
    /// The code came from `writeErrors` (or `writeConcernError`), the reply itself being `ok: 1`.
    pub write_error: bool,
    /// Replies that failed this way.
    pub count: u64,
    /// Of a write error: the `writeErrors` entries with this code in those replies (an unordered
    /// insert of 1,000 documents the target holds: count 1, statements 1,000); absent for command
    /// errors.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub statements: u64,
    /// The first error's message, cut at [`MAX_ERRMSG`] (300) bytes. A `--redact values` capture's
    /// recorded messages are hashed; a replay of one keeps a live message only up to its first
    /// quoted or structured value.
    pub errmsg: Option<String>,
    /// Up to [`MAX_SHAPES_PER_ERROR`] (3) query shapes of the requests that failed
    /// (docs/shapes.md).
    #[schemars(length(max = MAX_SHAPES_PER_ERROR))]
    pub shapes: Vec<ErrorShape>,
}

impl ErrorByCode {
    /// `DuplicateKey (11000)`, or `no code` when the reply gave none.
    pub fn name(&self) -> String {
        match (&self.code_name, self.code) {
            (Some(n), Some(c)) => format!("{n} ({c})"),
            (None, Some(c)) => format!("code {c}"),
            (Some(n), None) => n.clone(),
            (None, None) => "no code".into(),
        }
    }
}

/// The `errors_by_code` part of a report.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default)]
pub struct ErrorsReport {
    /// Failed replies counted by the command they answered and the code they gave (their own
    /// `code`, else the first write error's), most frequent first; at most 1,000 entries.
    pub errors_by_code: Vec<ErrorByCode>,
    /// Errors of (command, code) pairs past the cap on distinct entries, added up.
    pub errors_by_code_other: u64,
}

/// A failed reply as [`ErrorTally::add`] counts it, read from the reply's fields.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ErrorSeen<'a> {
    pub code: Option<i32>,
    pub code_name: Option<&'a str>,
    pub errmsg: Option<&'a str>,
    pub write_error: bool,
    /// The `writeErrors` entries of the reply with this code (0 for a command error).
    pub statements: u64,
}

impl<'a> ErrorSeen<'a> {
    /// The error a reply reports; `None` when it succeeded with no write error.
    pub fn of(f: &ReplyFields<'a>) -> Option<ErrorSeen<'a>> {
        if !f.is_ok() {
            return Some(ErrorSeen {
                code: f.code,
                code_name: f.code_name,
                errmsg: f.errmsg,
                write_error: false,
                statements: 0,
            });
        }
        let w = f.write_error.filter(|_| f.write_errors > 0)?;
        Some(ErrorSeen {
            code: w.code,
            code_name: w.code_name,
            errmsg: w.errmsg,
            write_error: true,
            statements: f.write_errors as u64,
        })
    }

    /// The error a whole reply frame reports (read again only for a reply already known to
    /// have failed: the hot path never pays for it).
    /// A reply whose write errors have several codes gives one error per code, each with its
    /// own entries counted.
    pub fn of_frame(frame: &'a [u8], mut keep: impl FnMut(ErrorSeen<'_>)) {
        let Ok(body) = crate::wire::reply::body(frame) else {
            return;
        };
        let Ok(fields) = body.fields() else {
            return;
        };
        let Some(seen) = ErrorSeen::of(&fields) else {
            return;
        };
        let doc = body.doc.as_deref().unwrap_or_default();
        if !seen.write_error || fields.write_errors < 2 {
            return keep(seen);
        }
        // Each code once, in the order first seen, with its first entry's name and message.
        let mut codes: Vec<(WriteError<'_>, u64)> = Vec::new();
        for w in crate::wire::reply::write_errors(doc) {
            match codes.iter().position(|(c, _)| c.code == w.code) {
                Some(i) => codes[i].1 += 1,
                None if codes.len() < MAX_CODES_PER_REPLY => codes.push((w, 1)),
                None => {}
            }
        }
        for (w, statements) in codes {
            keep(ErrorSeen {
                code: w.code,
                code_name: w.code_name,
                errmsg: w.errmsg,
                write_error: true,
                statements,
            });
        }
    }
}

#[derive(Debug)]
struct Entry {
    report: ErrorByCode,
    shape_tries: u32,
}

/// The errors of one report, counted as they come.
#[derive(Debug)]
pub struct ErrorTally {
    index: HashMap<(String, Option<i32>, bool), usize>,
    entries: Vec<Entry>,
    other: u64,
    cap: usize,
    /// The capture was recorded with `--redact values`: messages this process receives are cut
    /// before their first quoted or structured value ([`redacted_errmsg`]).
    redact: bool,
}

impl Default for ErrorTally {
    fn default() -> Self {
        ErrorTally::new(DEFAULT_MAX_ERROR_ENTRIES, false)
    }
}

impl ErrorTally {
    pub fn new(cap: usize, redact: bool) -> ErrorTally {
        ErrorTally {
            index: HashMap::new(),
            entries: Vec::new(),
            other: 0,
            cap,
            redact,
        }
    }

    /// Counts one failed reply to `command`. `shape` is asked only while the entry names fewer
    /// than [`MAX_SHAPES_PER_ERROR`] shapes: (hash, text).
    pub fn add(
        &mut self,
        command: &str,
        seen: &ErrorSeen<'_>,
        shape: impl FnOnce() -> Option<(String, String)>,
    ) {
        let code_name = seen
            .code_name
            .map(str::to_owned)
            .or_else(|| seen.code.and_then(codes::name).map(str::to_owned));
        let key = (command.to_owned(), seen.code, seen.write_error);
        let at = match self.index.get(&key) {
            Some(&at) => at,
            None if self.entries.len() >= self.cap => {
                self.other += 1;
                return;
            }
            None => {
                let errmsg = seen.errmsg.map(|m| match self.redact {
                    true => redacted_errmsg(m),
                    false => cut_bytes(m, MAX_ERRMSG),
                });
                self.entries.push(Entry {
                    report: ErrorByCode {
                        command: command.to_owned(),
                        code: seen.code,
                        code_name,
                        write_error: seen.write_error,
                        count: 0,
                        statements: 0,
                        errmsg,
                        shapes: Vec::new(),
                    },
                    shape_tries: 0,
                });
                self.index.insert(key, self.entries.len() - 1);
                self.entries.len() - 1
            }
        };
        let e = &mut self.entries[at];
        e.report.count += 1;
        e.report.statements += seen.statements;
        if e.report.shapes.len() < MAX_SHAPES_PER_ERROR && e.shape_tries < SHAPE_TRIES {
            e.shape_tries += 1;
            if let Some((hash, text)) = shape() {
                if !e.report.shapes.iter().any(|s| s.hash == hash) {
                    e.report.shapes.push(ErrorShape { hash, shape: text });
                }
            }
        }
    }

    /// Errors counted so far.
    pub fn total(&self) -> u64 {
        self.entries.iter().map(|e| e.report.count).sum::<u64>() + self.other
    }

    pub fn report(&self) -> ErrorsReport {
        let mut errors_by_code: Vec<ErrorByCode> =
            self.entries.iter().map(|e| e.report.clone()).collect();
        sort(&mut errors_by_code);
        ErrorsReport {
            errors_by_code,
            errors_by_code_other: self.other,
        }
    }
}

fn sort(entries: &mut [ErrorByCode]) {
    entries.sort_by(|a, b| {
        b.count
            .cmp(&a.count)
            .then_with(|| a.command.cmp(&b.command))
            .then_with(|| a.code.cmp(&b.code))
    });
}

impl ErrorsReport {
    /// Errors in all, the ones past the cap included.
    pub fn total(&self) -> u64 {
        self.errors_by_code.iter().map(|e| e.count).sum::<u64>() + self.errors_by_code_other
    }

    /// Adds another report's errors (the shards of one replay, or a sum of runs): counts add up
    /// per (command, code), the first message and the first shapes are kept, at most `cap`
    /// entries (the rest in `errors_by_code_other`).
    pub fn add(&mut self, other: &ErrorsReport, cap: usize) {
        self.errors_by_code_other += other.errors_by_code_other;
        for e in &other.errors_by_code {
            let full = self.errors_by_code.len() >= cap;
            let mine = self.errors_by_code.iter_mut().find(|m| {
                m.command == e.command && m.code == e.code && m.write_error == e.write_error
            });
            match mine {
                Some(m) => {
                    m.count += e.count;
                    m.statements += e.statements;
                    m.errmsg = m.errmsg.take().or_else(|| e.errmsg.clone());
                    m.code_name = m.code_name.take().or_else(|| e.code_name.clone());
                    for s in &e.shapes {
                        if m.shapes.len() < MAX_SHAPES_PER_ERROR && !m.shapes.contains(s) {
                            m.shapes.push(s.clone());
                        }
                    }
                }
                None if full => self.errors_by_code_other += e.count,
                None => self.errors_by_code.push(e.clone()),
            }
        }
        sort(&mut self.errors_by_code);
    }

    /// The text summary's line: `errors 1,600: DuplicateKey (11000) 1,600 on insert`, the three
    /// most frequent entries; `None` without errors.
    pub fn line(&self) -> Option<String> {
        let total = self.total();
        if total == 0 {
            return None;
        }
        let top: Vec<String> = self
            .errors_by_code
            .iter()
            .take(3)
            .map(|e| {
                let what = match (e.write_error, e.statements > e.count) {
                    (true, true) => format!(" ({} write errors)", grouped(e.statements)),
                    (true, false) => " (write error)".to_owned(),
                    _ => String::new(),
                };
                format!("{} {} on {}{what}", e.name(), grouped(e.count), e.command)
            })
            .collect();
        let more = self.errors_by_code.len().saturating_sub(3);
        let mut line = format!("errors {}: {}", grouped(total), top.join(", "));
        if more > 0 {
            line.push_str(&format!(" and {more} more (errors_by_code)"));
        }
        Some(line)
    }

    /// The table of errors by command and code (the page's): each entry with its first message
    /// and the shapes it came from.
    pub fn table(&self) -> Table {
        let fields: [Field<ErrorByCode>; 6] = [
            (Column::new("command"), |e| e.command.clone()),
            (Column::new("code"), |e| match (e.code, &e.code_name) {
                (Some(c), Some(n)) => format!("{n} ({c})"),
                (Some(c), None) => c.to_string(),
                (None, Some(n)) => n.clone(),
                (None, None) => "-".into(),
            }),
            (Column::new("as"), |e| {
                if e.write_error {
                    "write error"
                } else {
                    "reply"
                }
                .into()
            }),
            (Column::new("count"), |e| units::count(e.count as f64)),
            (Column::new("errmsg"), |e| {
                e.errmsg.clone().unwrap_or_default()
            }),
            (Column::new("shapes"), |e| {
                let shapes: Vec<&str> = e.shapes.iter().map(|s| s.shape.as_str()).collect();
                shapes.join("; ")
            }),
        ];
        Table::of(&fields, &self.errors_by_code)
    }

    /// When most errors of a replay are DuplicateKey: what that usually means, in one line.
    pub fn duplicate_key_hint(&self) -> Option<String> {
        let total = self.total();
        let dup: u64 = self
            .errors_by_code
            .iter()
            .filter(|e| e.code == Some(codes::DUPLICATE_KEY))
            .map(|e| e.count)
            .sum();
        (total > 0 && dup * 2 > total).then(|| {
            "most errors are DuplicateKey (11000): the target usually already holds the data the \
             capture inserts; restore a snapshot taken when the recording started before \
             replaying (docs/production.md, \"A consistent starting point for replay\")"
                .to_owned()
        })
    }
}

/// `1600` as `1,600`.
pub fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A server's message about a request of a `--redact values` capture, without the values it
/// may quote: the text before the first `{`, `"` or `'` (a duplicate key's `dup key: { _id:
/// ... }`, a validation failure's document), then `…`. The capture's values are hashed already;
/// the server's message may also quote the data the target held.
pub fn redacted_errmsg(m: &str) -> String {
    match m.find(['{', '"', '\'']) {
        Some(at) => format!("{}…", cut_bytes(m[..at].trim_end(), MAX_ERRMSG)),
        None => cut_bytes(m, MAX_ERRMSG),
    }
}

#[cfg(test)]
mod tests;
