//! mongoreplay playback files (mongo-tools' `mongoreplay record`): a stream of BSON documents,
//! gzipped or not: a metadata document (`playbackfileversion`), then one `RecordedOp` per message
//! with `rawop.body` the whole wire message, `seen` its time in seconds since January 1 of year 1
//! (`{sec, nsec}`, Go's time origin), `seenconnectionnum` its connection, `srcendpoint` and
//! `dstendpoint` when the writer kept them, and `eof: true` for a connection's end.
//!
//! mongoreplay keeps only the first document of an OP_REPLY: such a reply's length field says
//! more than its body holds, and is set to what the body holds (counted as shortened).

use super::error::ImportError;
use super::output::Output;
use super::tcp::frames::Lost;
use crate::capture::Side;
use crate::wire::bson_error_text;
use crate::wire::bson_raw::declared_doc_len;
use crate::wire::{MsgHeader, HEADER_LEN, MAX_MESSAGE_LEN};
use bson::{RawBsonRef, RawDocument};
use bytes::Bytes;
use std::io::{BufReader, Read};
use std::path::Path;

/// Seconds from January 1 of year 1 to the Unix epoch.
const UNIX_TO_INTERNAL: i64 = (1969 * 365 + 1969 / 4 - 1969 / 100 + 1969 / 400) * 86400;
/// The largest document read: a whole message plus its `RecordedOp` fields.
const MAX_DOC: usize = MAX_MESSAGE_LEN + 64 * 1024;

/// What a playback file held.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct OpsRead {
    /// RecordedOps read.
    pub ops: u64,
    /// Replies mongoreplay shortened to their first document.
    pub shortened_replies: u64,
    /// Operations that were not whole messages, written as gaps.
    pub not_messages: u64,
}

/// Whether the first bytes are a gzip stream or a BSON document naming `playbackfileversion`.
pub fn looks_like(head: &[u8]) -> bool {
    if head.starts_with(&[0x1f, 0x8b]) {
        return true;
    }
    head.len() >= 24 && head[4] != 0 && head[5..].starts_with(b"playbackfileversion\0")
}

/// Reads one playback file into `out`, connection keys offset by `key_base` (several files do not
/// share connections).
pub fn read_file(
    path: &Path,
    out: &mut Output,
    key_base: u64,
    read: &mut OpsRead,
) -> Result<(), ImportError> {
    let open = |source| ImportError::Open {
        path: path.to_owned(),
        source,
    };
    let mut file = BufReader::new(super::input::open(path)?);
    let mut head = [0u8; 2];
    let gz = file.read(&mut head).map_err(open)? == 2 && head == [0x1f, 0x8b];
    let file = BufReader::new(super::input::open(path)?);
    self::read(file, gz, path, out, key_base, read)
}

/// [`read_file`] over any reader (`gz`: a gzip stream); `path` names it in errors.
pub fn read<'a, R: Read + 'a>(
    input: R,
    gz: bool,
    path: &'a Path,
    out: &mut Output,
    key_base: u64,
    read: &mut OpsRead,
) -> Result<(), ImportError> {
    let input: Box<dyn Read + 'a> = if gz {
        Box::new(flate2::read::MultiGzDecoder::new(input))
    } else {
        Box::new(input)
    };
    Reader {
        input,
        path,
        offset: 0,
        buf: Vec::new(),
    }
    .run(out, key_base, read)
}

struct Reader<'a> {
    input: Box<dyn Read + 'a>,
    path: &'a Path,
    /// Bytes into the (uncompressed) stream.
    offset: u64,
    buf: Vec<u8>,
}

impl Reader<'_> {
    fn bad(&self, offset: u64, what: impl Into<String>) -> ImportError {
        ImportError::BadFile {
            path: self.path.to_owned(),
            offset,
            what: what.into(),
        }
    }

    /// Reads the next document into the buffer: its offset, `None` at a clean end.
    fn next_doc(&mut self) -> Result<Option<u64>, ImportError> {
        let at = self.offset;
        let mut len = [0u8; 4];
        match read_full(&mut self.input, &mut len) {
            Ok(0) => return Ok(None),
            Ok(4) => {}
            Ok(_) => return Err(self.bad(at, "the file ends part-way through a document")),
            Err(e) => return Err(self.bad(at, format!("read failed: {e}"))),
        }
        let n = declared_doc_len(len, MAX_DOC)
            .map_err(|n| self.bad(at, format!("a document length of {n} bytes")))?;
        self.buf.clear();
        self.buf.extend_from_slice(&len);
        self.buf.resize(n, 0);
        match read_full(&mut self.input, &mut self.buf[4..]) {
            Ok(k) if k == n - 4 => {}
            Ok(_) => return Err(self.bad(at, "the file ends part-way through a document")),
            Err(e) => return Err(self.bad(at, format!("read failed: {e}"))),
        }
        self.offset += n as u64;
        Ok(Some(at))
    }

    fn doc(&self) -> Result<&RawDocument, String> {
        RawDocument::from_bytes(&self.buf)
            .map_err(|e| format!("not a BSON document: {}", bson_error_text(&e)))
    }

    /// Counts into `read` as it goes: a file damaged part-way still counts what it held.
    fn run(
        mut self,
        out: &mut Output,
        key_base: u64,
        read: &mut OpsRead,
    ) -> Result<(), ImportError> {
        self.next_doc()?
            .ok_or_else(|| self.bad(0, "the file is empty"))?;
        let is_playback = self
            .doc()
            .map(|d| d.get("playbackfileversion").ok().flatten().is_some())
            .unwrap_or(false);
        if !is_playback {
            return Err(self.bad(0, "no playbackfileversion: not a mongoreplay playback file"));
        }
        let mut last_ts = 0;
        while let Some(at) = self.next_doc()? {
            let op = self
                .doc()
                .and_then(RecordedOp::from_doc)
                .map_err(|what| self.bad(at, format!("not a RecordedOp: {what}")))?;
            read.ops += 1;
            last_ts = op.ts_ns;
            op.write(out, key_base, read)?;
        }
        out.close_all("still open when the playback file ended", last_ts)
    }
}

/// A `RecordedOp`'s fields that matter here.
struct RecordedOp {
    body: Vec<u8>,
    ts_ns: u64,
    conn: u64,
    eof: bool,
    src: String,
    dst: String,
}

impl RecordedOp {
    fn from_doc(doc: &RawDocument) -> Result<RecordedOp, String> {
        let rawop = doc
            .get_document("rawop")
            .map_err(|e| format!("rawop: {}", bson_error_text(&e)))?;
        let body = match rawop.get("body") {
            Ok(Some(RawBsonRef::Binary(b))) => b.bytes.to_vec(),
            Ok(None) => Vec::new(),
            _ => return Err("rawop.body is not binary".into()),
        };
        let seen = doc
            .get_document("seen")
            .map_err(|e| format!("seen: {}", bson_error_text(&e)))?;
        let sec = int(seen, "sec").ok_or("seen.sec is not a number")?;
        let nsec = int(seen, "nsec").unwrap_or(0).clamp(0, 999_999_999);
        let unix = sec.saturating_sub(UNIX_TO_INTERNAL).max(0) as u64;
        let ts_ns = unix
            .saturating_mul(1_000_000_000)
            .saturating_add(nsec as u64);
        let conn = int(doc, "seenconnectionnum").ok_or("no seenconnectionnum")?;
        let text = |k| doc.get_str(k).map(str::to_owned).unwrap_or_default();
        Ok(RecordedOp {
            body,
            ts_ns,
            conn: conn as u64,
            eof: doc.get_bool("eof").unwrap_or(false),
            src: text("srcendpoint"),
            dst: text("dstendpoint"),
        })
    }

    fn write(self, out: &mut Output, key_base: u64, read: &mut OpsRead) -> Result<(), ImportError> {
        let key = key_base.wrapping_add(self.conn);
        if self.eof {
            return out.close_conn(key, Side::Client, "closed", self.ts_ns);
        }
        let request = super::tcp::role::looks_like_request(&self.body);
        let (client, server) = match (request, self.src.is_empty()) {
            (_, true) => ("unknown".to_string(), "unknown".to_string()),
            (true, false) => (self.src, self.dst),
            (false, false) => (self.dst, self.src),
        };
        out.open(key, &client, &server, self.ts_ns)?;
        match whole(self.body, read) {
            Ok(message) => out.message_of(key, request, message, self.ts_ns),
            Err(len) => {
                read.not_messages += 1;
                let lost = Lost {
                    messages: 1,
                    bytes: len,
                    reason: "rawop.body is not a whole wire message",
                };
                out.gap_of(key, lost, self.ts_ns)
            }
        }
    }
}

/// The body as a whole message: as it is, or an OP_REPLY mongoreplay shortened with its length
/// set to what it holds. `Err(length)` for anything else.
fn whole(mut body: Vec<u8>, read: &mut OpsRead) -> Result<Bytes, u64> {
    let len = body.len() as u64;
    let Ok(Some(header)) = MsgHeader::parse(&body) else {
        return Err(len);
    };
    if header.message_length == body.len() {
        return Ok(Bytes::from(body));
    }
    let shortened = header.message_length > body.len() && body.len() > HEADER_LEN;
    if shortened && header.op_code == crate::wire::OpCode::Reply {
        read.shortened_replies += 1;
        MsgHeader::write_message_length(&mut body, len as i32);
        return Ok(Bytes::from(body));
    }
    Err(len)
}

fn int(doc: &RawDocument, key: &str) -> Option<i64> {
    match doc.get(key).ok()? {
        Some(RawBsonRef::Int64(v)) => Some(v),
        Some(RawBsonRef::Int32(v)) => Some(i64::from(v)),
        _ => None,
    }
}

/// Reads until `buf` is full or the input ends; the number of bytes read.
fn read_full(input: &mut dyn Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match input.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An OP_REPLY of two documents as mongoreplay stores it: cut after the first.
    #[test]
    fn a_shortened_reply_gets_its_length_and_anything_else_is_refused() {
        let docs = [bson::rawdoc! { "a": 1 }, bson::rawdoc! { "b": "two" }];
        let reply = crate::wire::legacy::OpReply {
            response_flags: 0,
            cursor_id: 0,
            starting_from: 0,
            number_returned: 2,
            documents: docs.to_vec(),
        }
        .encode(7, 3);
        let cut = reply.len() - docs[1].as_bytes().len();
        let mut read = OpsRead::default();
        let kept = whole(reply[..cut].to_vec(), &mut read).unwrap();
        assert_eq!(kept.len(), cut);
        let header = MsgHeader::parse(&kept).unwrap().unwrap();
        assert_eq!(header.message_length, cut);
        assert_eq!(read.shortened_replies, 1);
        assert_eq!(whole(reply.clone(), &mut read).unwrap().to_vec(), reply);
        // A request cut short, or a body too short for a header, is not a message.
        let full_query = crate::wire::legacy::OpQuery {
            flags: 0,
            full_collection_name: "db.$cmd".into(),
            number_to_skip: 0,
            number_to_return: -1,
            query: bson::rawdoc! { "find": "c", "filter": { "a": 1 } },
            return_fields_selector: None,
        }
        .encode(9);
        let query = full_query[..full_query.len() - 4].to_vec();
        let cut = query.len();
        assert_eq!(whole(query, &mut read), Err(cut as u64));
        assert_eq!(whole(vec![1, 2, 3], &mut read), Err(3));
    }
}
