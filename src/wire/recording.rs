//! One packet of a mongod/mongos traffic recording, parsed without I/O. Every layout the server
//! has written starts a packet with its length (`u32`, little-endian, the length field included)
//! and ends it with the whole wire message; what lies between depends on the layout
//! (`docs/import.md`, "mongod and mongos traffic recordings"):
//!
//! - `addresses`: `u64` session id, the local and the remote address (each NUL-terminated),
//!   `u64` wall-clock milliseconds, `u64` order.
//! - `session`: `u64` session id, the session as text (`{ id: 7, remote: "...", local: "..." }`,
//!   NUL-terminated), `u64` wall-clock milliseconds, `u64` order.
//! - `events`: a `u8` event code, then as `session` but the time is microseconds since the
//!   recording started; session start and end events carry no message.

use crate::wire::{MsgHeader, OpCode, HEADER_LEN, MAX_MESSAGE_LEN};

/// The most a packet's fields other than its message may take (the session text included).
pub const MAX_FIELDS: usize = 64 * 1024;
/// The largest packet read: a whole message plus its fields.
pub const MAX_PACKET: usize = MAX_MESSAGE_LEN + MAX_FIELDS;

/// How the bytes of a packet are laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Framing {
    Addresses,
    Session,
    Events,
}

impl Framing {
    pub const ALL: [Framing; 3] = [Framing::Addresses, Framing::Session, Framing::Events];

    pub fn name(self) -> &'static str {
        match self {
            Framing::Addresses => "addresses",
            Framing::Session => "session",
            Framing::Events => "events",
        }
    }

    /// The fewest bytes a packet of this framing takes (empty strings, no message).
    pub fn min_len(self) -> usize {
        match self {
            Framing::Addresses => 4 + 8 + 2 + 8 + 8,
            Framing::Session => 4 + 8 + 1 + 8 + 8,
            Framing::Events => 4 + 1 + 8 + 1 + 8 + 8,
        }
    }
}

/// What the event codes of an `events` recording mean.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Codes {
    /// 0 a message (request or reply), 1 session start, 2 session end.
    Three,
    /// 0 request, 1 reply, 2 session start, 3 session end.
    Four,
}

/// What a packet is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// A message whose direction the layout does not say (told from its header).
    Message,
    Request,
    Reply,
    SessionStart,
    SessionEnd,
}

impl Codes {
    pub fn event(self, code: u8) -> Option<Event> {
        match (self, code) {
            (Codes::Three, 0) => Some(Event::Message),
            (Codes::Four, 0) => Some(Event::Request),
            (Codes::Three, 1) => Some(Event::SessionStart),
            (Codes::Three, 2) => Some(Event::SessionEnd),
            (Codes::Four, 1) => Some(Event::Reply),
            (Codes::Four, 2) => Some(Event::SessionStart),
            (Codes::Four, 3) => Some(Event::SessionEnd),
            _ => None,
        }
    }
}

/// The packet's fields, borrowed from its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packet<'a> {
    pub code: Option<u8>,
    pub id: u64,
    /// The client's end and the server's end, as the server saw them.
    pub remote: &'a str,
    pub local: &'a str,
    /// Milliseconds since the Unix epoch, or microseconds since the recording started.
    pub time: u64,
    pub order: u64,
    /// The whole wire message, or empty for a session event.
    pub message: &'a [u8],
}

/// Why bytes are not a packet of a framing.
pub type Misfit = String;

/// The length a packet's first four bytes declare, checked against what a packet may be.
pub fn declared_len(prefix: [u8; 4], framing: Framing) -> Result<usize, Misfit> {
    let n = u32::from_le_bytes(prefix) as usize;
    if n < framing.min_len() {
        return Err(format!(
            "a packet length of {n} bytes, shorter than the {} its fields take",
            framing.min_len()
        ));
    }
    if n > MAX_PACKET {
        return Err(format!(
            "a packet length of {n} bytes, more than a message of {MAX_MESSAGE_LEN} bytes and its fields"
        ));
    }
    Ok(n)
}

/// Parses a whole packet (`buf` is exactly the declared length, prefix included).
pub fn parse(buf: &[u8], framing: Framing) -> Result<Packet<'_>, Misfit> {
    let mut at = 4;
    let code = if framing == Framing::Events {
        let c = *buf.get(at).ok_or("no event byte")?;
        if c > 3 {
            return Err(format!("event code {c}, none of 0 to 3"));
        }
        at += 1;
        Some(c)
    } else {
        None
    };
    let id = u64_at(buf, &mut at)?;
    let (remote, local) = match framing {
        Framing::Addresses => {
            let local = cstring(buf, &mut at, "local address")?;
            let remote = cstring(buf, &mut at, "remote address")?;
            if !is_address(local) || !is_address(remote) {
                return Err(format!(
                    "`{local}` and `{remote}` are not HOST:PORT addresses"
                ));
            }
            (remote, local)
        }
        Framing::Session | Framing::Events => {
            let text = cstring(buf, &mut at, "session text")?;
            let s = session_text(text)
                .ok_or_else(|| format!("`{}` is not a session's text", clip(text)))?;
            if s.id != id {
                return Err(format!(
                    "session text of id {} in a packet of id {id}",
                    s.id
                ));
            }
            (s.remote, s.local)
        }
    };
    let time = u64_at(buf, &mut at)?;
    let order = u64_at(buf, &mut at)?;
    if at > MAX_FIELDS {
        return Err(format!("fields of {at} bytes, more than {MAX_FIELDS}"));
    }
    let message = &buf[at..];
    if !message.is_empty() {
        whole_message(message)?;
    }
    Ok(Packet {
        code,
        id,
        remote,
        local,
        time,
        order,
        message,
    })
}

/// The event of a packet under `codes` (`None` for a layout without codes), checked against its
/// message: a session event carries none, a message event one, a request or a reply the right one.
pub fn event_of(p: &Packet<'_>, codes: Option<Codes>) -> Result<Event, Misfit> {
    let event = match (p.code, codes) {
        (None, _) => Event::Message,
        (Some(c), Some(codes)) => codes
            .event(c)
            .ok_or_else(|| format!("event code {c}, not one of {}", codes_name(codes)))?,
        (Some(_), None) => Event::Message,
    };
    let empty = p.message.is_empty();
    let request = is_request(p.message);
    match event {
        Event::SessionStart | Event::SessionEnd if !empty => {
            Err(format!("a session {event:?} event that carries a message"))
        }
        Event::Message | Event::Request | Event::Reply if empty => {
            Err("a message event without a message".into())
        }
        Event::Request if !request => Err("a reply under the request code".into()),
        Event::Reply if request => Err("a request under the reply code".into()),
        _ => Ok(event),
    }
}

pub fn codes_name(codes: Codes) -> &'static str {
    match codes {
        Codes::Three => "0 message, 1 session start, 2 session end",
        Codes::Four => "0 request, 1 reply, 2 session start, 3 session end",
    }
}

/// A message that answers nothing and is not a reply opcode.
pub fn is_request(message: &[u8]) -> bool {
    match MsgHeader::parse(message) {
        Ok(Some(h)) => h.response_to == 0 && h.op_code != OpCode::Reply,
        _ => false,
    }
}

fn whole_message(message: &[u8]) -> Result<(), Misfit> {
    if message.len() < HEADER_LEN {
        return Err(format!(
            "{} bytes after the fields, fewer than a message header",
            message.len()
        ));
    }
    let header = MsgHeader::parse(message)
        .map_err(|e| format!("the message: {e}"))?
        .ok_or("no message header")?;
    if header.message_length != message.len() {
        return Err(format!(
            "a message whose header says {} bytes in the {} left of the packet",
            header.message_length,
            message.len()
        ));
    }
    Ok(())
}

fn u64_at(buf: &[u8], at: &mut usize) -> Result<u64, Misfit> {
    let bytes: [u8; 8] = buf
        .get(*at..*at + 8)
        .and_then(|b| b.try_into().ok())
        .ok_or("the packet ends inside its fields")?;
    *at += 8;
    Ok(u64::from_le_bytes(bytes))
}

fn cstring<'a>(buf: &'a [u8], at: &mut usize, what: &str) -> Result<&'a str, Misfit> {
    let rest = buf.get(*at..).unwrap_or_default();
    let len = memchr::memchr(0, rest).ok_or_else(|| format!("no NUL ends the {what}"))?;
    let text = std::str::from_utf8(&rest[..len]).map_err(|_| format!("the {what} is not UTF-8"))?;
    *at += len + 1;
    Ok(text)
}

/// `HOST:PORT`, the host a name, an IPv4 address or a bracketed IPv6 address.
pub fn is_address(s: &str) -> bool {
    let Some((host, port)) = s.rsplit_once(':') else {
        return false;
    };
    !host.is_empty() && port.parse::<u16>().is_ok()
}

/// A session's text as the server writes it (`Session::toBSON().toString()`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionText<'a> {
    pub id: u64,
    pub remote: &'a str,
    pub local: &'a str,
}

/// Reads `{ id: 7, remote: "127.0.0.1:51234", local: "127.0.0.1:27017" }`: fields in any order,
/// others ignored, `id` a plain or `NumberLong(...)` integer, the addresses quoted.
pub fn session_text(text: &str) -> Option<SessionText<'_>> {
    let inner = text.trim().strip_prefix('{')?.strip_suffix('}')?;
    let (mut id, mut remote, mut local) = (None, None, None);
    let mut rest = inner.trim_start();
    while !rest.is_empty() {
        let (key, after) = rest.split_once(':')?;
        let after = after.trim_start();
        let (value, tail) = if let Some(q) = after.strip_prefix('"') {
            let end = q.find('"')?;
            (&q[..end], &q[end + 1..])
        } else {
            let end = after.find(',').unwrap_or(after.len());
            (after[..end].trim(), &after[end..])
        };
        match key.trim() {
            "id" => id = Some(integer(value)?),
            "remote" => remote = Some(value),
            "local" => local = Some(value),
            _ => {}
        }
        let tail = tail.trim_start();
        if tail.is_empty() {
            break;
        }
        rest = tail.strip_prefix(',')?.trim_start();
    }
    Some(SessionText {
        id: id?,
        remote: remote?,
        local: local?,
    })
}

fn integer(value: &str) -> Option<u64> {
    let v = value.trim();
    let v = v
        .strip_prefix("NumberLong(")
        .and_then(|s| s.strip_suffix(')'))
        .unwrap_or(v);
    v.trim_matches('"').parse().ok()
}

fn clip(s: &str) -> String {
    s.chars().take(80).collect()
}

#[cfg(test)]
#[path = "recording_tests.rs"]
mod tests;
