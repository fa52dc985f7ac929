//! The topology rewrite: in a reply to `hello` / `isMaster`, the member addresses a server names
//! (`hosts`, `passives`, `arbiters`, `primary`, `me`) become the addresses of the proxy's own
//! listeners, so a driver that discovers the replica set keeps talking through the proxy. Nothing
//! else in the reply changes. This is the one place mongotape forwards bytes it did not receive.
//!
//! Pure and bounded: every input is a whole message already checked by the framer; malformed input
//! is a [`WireError`], never a panic.

use super::bson_raw;
use super::compressed::{self, Compressor};
use super::error::WireError;
use super::header::{MsgHeader, OpCode, HEADER_LEN};
use super::legacy::OpReply;
use super::op_msg::{OpMsg, Section};
use super::op_msg_view::OpMsgView;
use bson::raw::{RawArrayBuf, RawBsonRef, RawDocument, RawDocumentBuf};
use std::collections::HashMap;

/// The commands whose replies describe the topology.
pub const HELLO_COMMANDS: [&str; 3] = ["hello", "isMaster", "ismaster"];
/// Fields holding a list of member addresses.
const LIST_FIELDS: [&str; 3] = ["hosts", "passives", "arbiters"];
/// Fields holding one member address.
const ONE_FIELDS: [&str; 2] = ["primary", "me"];
/// More addresses than any real replica set has (50 members at most): refuse rather than grow.
pub const MAX_ADDRESSES: usize = 1024;

/// Member address (as the server writes it) to the proxy address that serves it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AddressMap {
    map: HashMap<String, String>,
}

/// The form addresses are compared in: lower-case, port always written (27017 by default).
pub fn address_key(address: &str) -> String {
    let lower = address.trim().to_ascii_lowercase();
    let has_port = match lower.rsplit_once(':') {
        Some((host, port)) => {
            (!host.contains(':') || host.ends_with(']')) && port.parse::<u16>().is_ok()
        }
        None => false,
    };
    if has_port {
        lower
    } else if lower.contains(':') && !lower.starts_with('[') {
        format!("[{lower}]:27017")
    } else {
        format!("{lower}:27017")
    }
}

impl AddressMap {
    pub fn new() -> AddressMap {
        AddressMap::default()
    }

    pub fn insert(&mut self, member: &str, proxy: &str) {
        self.map.insert(address_key(member), proxy.to_owned());
    }

    pub fn get(&self, member: &str) -> Option<&str> {
        self.map.get(&address_key(member)).map(String::as_str)
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

/// What [`rewrite_hello_reply`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HelloRewrite {
    /// The message to forward instead of the original; `None` when nothing was mapped.
    pub message: Option<Vec<u8>>,
    /// How many addresses were replaced.
    pub replaced: usize,
    /// Addresses the reply names that the map does not hold (a client could leave the proxy).
    pub unserved: Vec<String>,
}

/// Rewrites the member addresses of a whole hello / isMaster reply (OP_MSG, OP_REPLY, or either
/// inside OP_COMPRESSED, which is recompressed with the same compressor). Flags (moreToCome,
/// checksum), request id and response-to are kept.
pub fn rewrite_hello_reply(reply: &[u8], map: &AddressMap) -> Result<HelloRewrite, WireError> {
    let header = MsgHeader::parse_whole(reply, "hello reply header")?;
    if header.message_length != reply.len() {
        return Err(WireError::LengthMismatch {
            declared: header.message_length,
            actual: reply.len(),
        });
    }
    match header.op_code {
        OpCode::Compressed => {
            let (compressor, inner) = compressed::decompress(reply)?;
            let mut out = rewrite_plain(&inner, map)?;
            if let Some(message) = out.message.take() {
                out.message = Some(recompress(&message, compressor)?);
            }
            Ok(out)
        }
        _ => rewrite_plain(reply, map),
    }
}

fn recompress(message: &[u8], compressor: Compressor) -> Result<Vec<u8>, WireError> {
    compressed::compress(message, compressor)
}

fn rewrite_plain(reply: &[u8], map: &AddressMap) -> Result<HelloRewrite, WireError> {
    let header = MsgHeader::parse_whole(reply, "hello reply header")?;
    match header.op_code {
        OpCode::Msg => {
            let mut msg = OpMsg::parse(reply)?;
            let mut out = HelloRewrite::default();
            for section in &mut msg.sections {
                if let Section::Body(doc) = section {
                    if let Some(new) = rewrite_document(doc, map, &mut out)? {
                        *doc = new;
                    }
                }
            }
            if out.replaced > 0 {
                out.message = Some(msg.encode(header.request_id, header.response_to));
            }
            Ok(out)
        }
        OpCode::Reply => {
            let mut msg = OpReply::parse(reply)?;
            let mut out = HelloRewrite::default();
            if let Some(doc) = msg.documents.first_mut() {
                if let Some(new) = rewrite_document(doc, map, &mut out)? {
                    *doc = new;
                }
            }
            if out.replaced > 0 {
                out.message = Some(msg.encode(header.request_id, header.response_to));
            }
            Ok(out)
        }
        _ => Ok(HelloRewrite::default()),
    }
}

fn invalid(what: &'static str, detail: String) -> WireError {
    WireError::Invalid {
        what,
        offset: HEADER_LEN,
        detail,
    }
}

/// Maps one address, noting it when unserved. Returns the replacement when there is one.
fn map_one<'m>(
    address: &str,
    map: &'m AddressMap,
    out: &mut HelloRewrite,
    seen: &mut usize,
) -> Result<Option<&'m str>, WireError> {
    *seen += 1;
    if *seen > MAX_ADDRESSES {
        return Err(invalid(
            "hello reply",
            format!("more than {MAX_ADDRESSES} member addresses"),
        ));
    }
    match map.get(address) {
        Some(to) => {
            out.replaced += 1;
            Ok(Some(to))
        }
        None => {
            if !out.unserved.iter().any(|a| a == address) {
                out.unserved.push(address.to_owned());
            }
            Ok(None)
        }
    }
}

/// The document with its address fields mapped, or `None` when nothing changed.
fn rewrite_document(
    doc: &RawDocument,
    map: &AddressMap,
    out: &mut HelloRewrite,
) -> Result<Option<RawDocumentBuf>, WireError> {
    let bad = |e: bson::error::Error| invalid("hello reply document", super::bson_error_text(&e));
    let before = out.replaced;
    let mut seen = 0usize;
    let mut new = RawDocumentBuf::new();
    for element in doc.iter() {
        let (key, value) = element.map_err(bad)?;
        let name = key.as_str();
        match value {
            RawBsonRef::Array(list) if LIST_FIELDS.contains(&name) => {
                let mut mapped = RawArrayBuf::new();
                for item in list {
                    match item.map_err(bad)? {
                        RawBsonRef::String(address) => {
                            match map_one(address, map, out, &mut seen)? {
                                Some(to) => mapped.push(to),
                                None => mapped.push(address),
                            }
                        }
                        other => mapped.push(other),
                    }
                }
                new.append(key, mapped);
            }
            RawBsonRef::String(address) if ONE_FIELDS.contains(&name) => {
                match map_one(address, map, out, &mut seen)? {
                    Some(to) => new.append(key, to),
                    None => new.append(key, address),
                }
            }
            other => new.append(key, other),
        }
    }
    Ok((out.replaced > before).then_some(new))
}

/// Whether a whole request is a `hello` / `isMaster` command (OP_MSG, or OP_QUERY on `*.$cmd`).
/// Looks at a few bytes in place and allocates nothing: it runs on every forwarded request.
/// OP_COMPRESSED requests are not opened: the compression spec forbids compressing hello.
pub fn is_hello_request(message: &[u8]) -> bool {
    let Ok(Some(header)) = MsgHeader::parse(message) else {
        return false;
    };
    if header.message_length != message.len() {
        return false;
    }
    match header.op_code {
        OpCode::Msg => op_msg_command(message).is_some_and(is_hello_name),
        OpCode::Query => op_query_command(message).is_some_and(is_hello_name),
        _ => false,
    }
}

fn is_hello_name(name: &[u8]) -> bool {
    HELLO_COMMANDS.iter().any(|c| c.as_bytes() == name)
}

/// The key of a document's first element, and where its value starts.
fn first_key(buf: &[u8], doc_at: usize) -> Option<(u8, &[u8], usize)> {
    let element_type = *buf.get(doc_at.checked_add(4)?)?;
    let key_at = doc_at + 5;
    let rest = buf.get(key_at..)?;
    let end = rest.iter().position(|&b| b == 0)?;
    Some((element_type, &rest[..end], key_at + end + 1))
}

/// The command name of an OP_MSG request: its body's first key, read in place.
pub(super) fn op_msg_command(message: &[u8]) -> Option<&[u8]> {
    let body = OpMsgView::new(message).ok()?.body().ok()?;
    let first = bson_raw::iter(body).ok()?.next()?.ok()?;
    Some(first.key.as_bytes())
}

/// The command name of an OP_QUERY on `*.$cmd` (unwrapping `$query`), read in place.
pub(super) fn op_query_command(message: &[u8]) -> Option<&[u8]> {
    let name_at = HEADER_LEN + 4;
    let rest = message.get(name_at..)?;
    let end = rest.iter().position(|&b| b == 0)?;
    if !rest[..end].ends_with(b".$cmd") {
        return None;
    }
    let doc_at = name_at + end + 1 + 8;
    let (element_type, key, value_at) = first_key(message, doc_at)?;
    // Mongos-style wrapping: {$query: {isMaster: 1}, $readPreference: ...}.
    if element_type == 0x03 && (key == b"$query" || key == b"query") {
        return first_key(message, value_at).map(|(_, key, _)| key);
    }
    Some(key)
}

/// The moreToCome bit of a reply (an OP_COMPRESSED one is opened: this runs on hello replies only).
pub fn reply_more_to_come(frame: &[u8]) -> bool {
    match MsgHeader::parse(frame) {
        Ok(Some(h)) if h.op_code == OpCode::Compressed => compressed::decompress(frame)
            .is_ok_and(|(_, inner)| OpMsgView::new(&inner).is_ok_and(|m| m.more_to_come())),
        Ok(Some(h)) if h.op_code == OpCode::Msg => {
            OpMsgView::new(frame).is_ok_and(|m| m.more_to_come())
        }
        _ => false,
    }
}

/// An OP_COMPRESSED request is opened to read its flags only up to this size: on the forwarding
/// path a small compressed message must not cost a large allocation.
pub const EXPECTS_REPLY_OPEN_LIMIT: usize = 64 * 1024;

/// Whether a request is answered: OP_MSG unless moreToCome is set (an OP_COMPRESSED one is
/// opened when it declares at most [`EXPECTS_REPLY_OPEN_LIMIT`] bytes, and assumed answered
/// above), OP_QUERY and OP_GET_MORE always, the legacy writes and anything else never.
pub fn request_expects_reply(frame: &[u8]) -> bool {
    match MsgHeader::parse(frame) {
        Ok(Some(h)) => match h.op_code {
            OpCode::Msg => !reply_more_to_come(frame),
            OpCode::Compressed => {
                let declared = frame
                    .get(HEADER_LEN + 4..HEADER_LEN + 8)
                    .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize);
                match declared {
                    Some(size) if size <= EXPECTS_REPLY_OPEN_LIMIT => !reply_more_to_come(frame),
                    _ => true,
                }
            }
            OpCode::Query | OpCode::GetMore => true,
            _ => false,
        },
        _ => false,
    }
}

#[cfg(test)]
#[path = "hello_tests.rs"]
mod tests;
