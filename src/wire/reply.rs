//! The one reader of replies. Everything above `wire/` that needs what a reply says asks here:
//! the body document of an OP_MSG, OP_REPLY or OP_COMPRESSED reply ([`body`], or [`body_in_place`]
//! where nothing may be inflated), and what that document says ([`ReplyFields`]: `ok`, `code`,
//! `codeName`, `errmsg`, write errors, counts, cursor), read in place without copying a document.
//!
//! One rule says whether a reply succeeded, the server's own ([`ok_means_success`]).
//!
//! OP_REPLY answers both commands and legacy queries: a single document with an `ok` field is a
//! command's reply; otherwise the documents are query results, which succeeded unless
//! [`ReplyFlags::QUERY_FAILURE`] is set (then the document is `{$err, code}`).

use super::bson_raw::{self, Element, RawError};
use super::compressed;
use super::header::{MsgHeader, OpCode};
use super::legacy::OpReplyView;
pub use super::legacy::ReplyFlags;
use super::message::{Body, Message};
use super::op_msg_view::OpMsgView;
use super::WireError;
use std::borrow::Cow;

/// The head of an OP_REPLY: what says whether its documents are a command's reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LegacyHead {
    pub flags: ReplyFlags,
    pub cursor_id: i64,
    pub number_returned: i32,
}

/// A reply's body: the OP_MSG body section, or the first document of an OP_REPLY (none when it
/// returned no document), inflated first when the reply came compressed.
#[derive(Debug, Clone)]
pub struct ReplyBody<'a> {
    /// The opcode of the reply itself (inside OP_COMPRESSED when it was compressed).
    pub op_code: OpCode,
    pub doc: Option<Cow<'a, [u8]>>,
    /// OP_REPLY's head; `None` for OP_MSG.
    pub legacy: Option<LegacyHead>,
    pub more_to_come: bool,
}

impl ReplyBody<'_> {
    /// What the body says, by the rules of its opcode (see the module's note on OP_REPLY).
    pub fn fields(&self) -> Result<ReplyFields<'_>, WireError> {
        let doc = self.doc.as_deref();
        let Some(head) = self.legacy else {
            let doc = doc.ok_or_else(|| invalid("OP_MSG reply", 0, "no body section"))?;
            return ReplyFields::of(doc).map_err(document_error);
        };
        let failed = head.flags.contains(ReplyFlags::QUERY_FAILURE);
        if let Some(doc) = doc {
            let fields = ReplyFields::of(doc).map_err(document_error)?;
            if failed {
                return Ok(ReplyFields {
                    ok: Some(0.0),
                    ..fields
                });
            }
            if fields.ok.is_some() && head.cursor_id == 0 && head.number_returned == 1 {
                return Ok(fields);
            }
        }
        Ok(ReplyFields {
            ok: Some(if failed { 0.0 } else { 1.0 }),
            cursor_id: Some(head.cursor_id),
            batch_len: usize::try_from(head.number_returned).ok(),
            ..ReplyFields::default()
        })
    }
}

impl<'a> ReplyBody<'a> {
    /// The body of a reply already decoded ([`Message`]); `None` for a message that is no reply.
    pub fn of_message(msg: &'a Message) -> Option<ReplyBody<'a>> {
        match &msg.body {
            Body::Msg(m) => Some(ReplyBody {
                op_code: OpCode::Msg,
                doc: Some(Cow::Borrowed(m.body().as_bytes())),
                legacy: None,
                more_to_come: m.more_to_come(),
            }),
            Body::Reply(r) => Some(ReplyBody {
                op_code: OpCode::Reply,
                doc: r.documents.first().map(|d| Cow::Borrowed(d.as_bytes())),
                legacy: Some(LegacyHead {
                    flags: r.flags(),
                    cursor_id: r.cursor_id,
                    number_returned: i32::try_from(r.documents.len()).unwrap_or(i32::MAX),
                }),
                more_to_come: false,
            }),
            Body::CommandReply(r) => Some(ReplyBody {
                op_code: OpCode::CommandReply,
                doc: Some(Cow::Borrowed(r.reply().as_bytes())),
                legacy: None,
                more_to_come: false,
            }),
            _ => None,
        }
    }
}

/// The body of a whole reply frame, inflating an OP_COMPRESSED one.
pub fn body(frame: &[u8]) -> Result<ReplyBody<'_>, WireError> {
    if let Some(body) = body_in_place(frame)? {
        return Ok(body);
    }
    let (_, inner) = compressed::decompress(frame)?;
    let inner_body = body_in_place(&inner)?
        .ok_or_else(|| invalid("reply opcode", 12, "OP_COMPRESSED inside OP_COMPRESSED"))?;
    let ReplyBody {
        op_code,
        doc,
        legacy,
        more_to_come,
    } = inner_body;
    let doc = doc.map(|d| Cow::Owned(d.into_owned()));
    Ok(ReplyBody {
        op_code,
        doc,
        legacy,
        more_to_come,
    })
}

/// The body of a whole reply frame read where it lies; `None` for OP_COMPRESSED, which is not
/// opened (the proxy's live metrics run this on every forwarded reply and never inflate).
pub fn body_in_place(frame: &[u8]) -> Result<Option<ReplyBody<'_>>, WireError> {
    let header = MsgHeader::parse_whole(frame, "reply header")?;
    let body = match header.op_code {
        OpCode::Compressed => return Ok(None),
        OpCode::Msg => {
            let view = OpMsgView::new(frame)?;
            ReplyBody {
                op_code: OpCode::Msg,
                doc: Some(Cow::Borrowed(view.body()?)),
                legacy: None,
                more_to_come: view.more_to_come(),
            }
        }
        OpCode::Reply => {
            let view = OpReplyView::new(frame)?;
            let first = bson_raw::doc_len(view.documents).and_then(|n| view.documents.get(..n));
            ReplyBody {
                op_code: OpCode::Reply,
                doc: first.map(Cow::Borrowed),
                legacy: Some(LegacyHead {
                    flags: view.flags,
                    cursor_id: view.cursor_id,
                    number_returned: view.number_returned,
                }),
                more_to_come: false,
            }
        }
        OpCode::CommandReply => {
            let reply = super::op_command::OpCommandReply::parse(frame)?;
            ReplyBody {
                op_code: OpCode::CommandReply,
                doc: Some(Cow::Owned(reply.reply().as_bytes().to_vec())),
                legacy: None,
                more_to_come: false,
            }
        }
        other => {
            return Err(invalid(
                "reply opcode",
                12,
                format!("{} is not a reply", other.name()),
            ))
        }
    };
    Ok(Some(body))
}

/// The first write error of a reply (`writeErrors[0]`), or its `writeConcernError`.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct WriteError<'a> {
    pub code: Option<i32>,
    pub code_name: Option<&'a str>,
    pub errmsg: Option<&'a str>,
}

/// What a reply document says, as far as mongotape reads it: the one reading of a reply, a view
/// borrowed from the document (no string is copied; the replay's lanes read every reply with it).
/// [`super::ReplyInfo`] (an owned copy for the readers of decoded messages) and the replayer's
/// `Outcome` (a compared, serialized per-request result) are made from it, never read apart.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReplyFields<'a> {
    /// `ok` as a number (`true` is 1); `None` when the document has none.
    pub ok: Option<f64>,
    pub code: Option<i32>,
    pub code_name: Option<&'a str>,
    /// `errmsg`, or a legacy query failure's `$err`.
    pub errmsg: Option<&'a str>,
    pub n: Option<i64>,
    pub n_modified: Option<i64>,
    pub upserted: usize,
    pub write_errors: usize,
    /// The first entry of `writeErrors`, else `writeConcernError`.
    pub write_error: Option<WriteError<'a>>,
    /// The cursor id the reply hands out (0 when the cursor is exhausted).
    pub cursor_id: Option<i64>,
    /// Documents in `firstBatch`/`nextBatch`, or returned by a legacy query.
    pub batch_len: Option<usize>,
    /// `operationTime` as `(t, i)`: a replica set's or mongos's; none from a standalone.
    pub operation_time: Option<(u32, u32)>,
}

impl<'a> ReplyFields<'a> {
    /// Reads a reply document's top-level fields (and the cursor's and first write error's).
    pub fn of(doc: &'a [u8]) -> Result<ReplyFields<'a>, RawError> {
        let mut f = ReplyFields::default();
        for e in bson_raw::iter(doc)? {
            let e = e?;
            match e.key {
                "ok" => f.ok = number(&e),
                "code" => f.code = code(&e),
                "codeName" => f.code_name = e.as_str(),
                "errmsg" | "$err" => f.errmsg = f.errmsg.or(e.as_str()),
                "n" => f.n = e.as_i64(),
                "nModified" => f.n_modified = e.as_i64(),
                "upserted" => f.upserted = count(&e),
                "operationTime" => f.operation_time = e.as_timestamp(),
                "writeErrors" => {
                    f.write_errors = count(&e);
                    f.write_error = first(&e).map(write_error).or(f.write_error);
                }
                "writeConcernError" if f.write_error.is_none() => {
                    f.write_error = e.as_doc().map(write_error)
                }
                "cursor" => {
                    let Some(cursor) = e.as_doc().and_then(|d| bson_raw::iter(d).ok()) else {
                        continue;
                    };
                    for c in cursor.flatten() {
                        match c.key {
                            "id" => f.cursor_id = c.as_i64(),
                            "firstBatch" | "nextBatch" => f.batch_len = Some(count(&c)),
                            _ => {}
                        }
                    }
                }
                _ => {}
            }
        }
        Ok(f)
    }

    /// The reply succeeded, by [`ok_means_success`].
    pub fn is_ok(&self) -> bool {
        ok_means_success(self.ok)
    }

    /// A failed command's `errmsg (code N)`, for an error message.
    pub fn error_text(&self) -> String {
        let msg = self.errmsg.unwrap_or("no errmsg");
        match self.code {
            Some(code) => format!("{msg} (code {code})"),
            None => msg.to_owned(),
        }
    }

    /// The error code a report counts the reply under: its own, else its first write error's.
    pub fn error_code(&self) -> Option<i32> {
        self.code.or(self.write_error.and_then(|w| w.code))
    }
}

/// The one rule for `ok`, the server's (`getStatusFromCommandResult` reads `ok.trueValue()`; pymongo
/// tests `not reply["ok"]` alike): a reply succeeded when its `ok` is a number other than 0 (int32,
/// int64 or double, NaN included) or `true`. Drivers that compare with 1 agree on every reply a
/// server sends (1 or 0). A reply without a numeric or boolean `ok` did not succeed: the server calls
/// a missing `ok` a schema violation. `ok` is read as [`ReplyFields::ok`].
pub fn ok_means_success(ok: Option<f64>) -> bool {
    ok.is_some_and(|ok| ok != 0.0)
}

/// A command's reply document by the rule for `ok`: `Err` with its `errmsg (code N)` when it failed,
/// or what is wrong with it when it does not read.
pub fn check_command(doc: &[u8]) -> Result<(), String> {
    match ReplyFields::of(doc) {
        Ok(f) if f.is_ok() => Ok(()),
        Ok(f) => Err(f.error_text()),
        Err(e) => Err(e.to_string()),
    }
}

fn number(e: &Element<'_>) -> Option<f64> {
    e.as_f64()
        .or_else(|| e.as_bool().map(|b| if b { 1.0 } else { 0.0 }))
}

fn code(e: &Element<'_>) -> Option<i32> {
    e.as_i64().and_then(|c| i32::try_from(c).ok())
}

fn count(e: &Element<'_>) -> usize {
    e.as_doc()
        .and_then(|d| bson_raw::iter(d).ok())
        .map_or(0, |els| els.filter(Result::is_ok).count())
}

fn first<'a>(e: &Element<'a>) -> Option<&'a [u8]> {
    let mut items = bson_raw::iter(e.as_doc()?).ok()?;
    items.next()?.ok()?.as_doc()
}

/// Every entry of a reply document's `writeErrors`, in order (none when it has none).
pub fn write_errors(doc: &[u8]) -> impl Iterator<Item = WriteError<'_>> {
    let array = bson_raw::iter(doc)
        .into_iter()
        .flatten()
        .flatten()
        .find(|e| e.key == "writeErrors")
        .and_then(|e| e.as_doc());
    array
        .and_then(|a| bson_raw::iter(a).ok())
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.as_doc().map(write_error))
}

fn write_error(doc: &[u8]) -> WriteError<'_> {
    let mut w = WriteError::default();
    for e in bson_raw::iter(doc).into_iter().flatten().flatten() {
        match e.key {
            "code" => w.code = code(&e),
            "codeName" => w.code_name = e.as_str(),
            "errmsg" => w.errmsg = e.as_str(),
            _ => {}
        }
    }
    w
}

fn invalid(what: &'static str, offset: usize, detail: impl Into<String>) -> WireError {
    WireError::Invalid {
        what,
        offset,
        detail: detail.into(),
    }
}

fn document_error(e: RawError) -> WireError {
    invalid("reply document", e.offset, e.detail)
}

#[cfg(test)]
#[path = "reply_tests.rs"]
mod tests;
