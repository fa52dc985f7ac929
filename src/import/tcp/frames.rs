//! One direction of a connection as whole wire messages: the bytes the sequence tracking hands
//! over in order, and the holes between them. In step, messages are split at their length
//! prefixes (as `wire::FrameSplitter` does). After a hole, or from a connection's middle, the
//! stream is out of step: bytes are skipped until a message boundary that parses (a sane header,
//! a known opcode, a bounded length, and the whole message decoding), and what was skipped is
//! reported as one gap, never glued to what follows.

use crate::wire::{compressed, Message, MsgHeader, OpCode, HEADER_LEN};
use bytes::{Buf, Bytes, BytesMut};
use std::collections::BTreeSet;

/// While hunting for a boundary, a candidate longer than this is not waited for.
pub const HUNT_MAX: usize = 16 << 20;

/// What was lost since the stream went out of step (or in one known message).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lost {
    /// Messages known to be lost, at least one for a hole.
    pub messages: u64,
    pub bytes: u64,
    pub reason: &'static str,
}

/// Why bytes were lost.
pub const HOLE: &str = "packets missing from the capture (TCP sequence hole)";
pub const SNAPLEN: &str = "packet cut by the capture's snaplen";
pub const MIDSTREAM: &str =
    "connection began before the capture: bytes before its first whole message";
pub const GARBAGE: &str = "bytes that are not a MongoDB message";
pub const ENDED: &str = "the capture ended part-way through a message";
pub const LET_GO: &str =
    "connection let go part-way through a message (idle timeout or reassembly bounds)";

/// What a direction yields, in stream order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Out {
    Message { bytes: Bytes, ts_ns: u64 },
    Gap { lost: Lost, ts_ns: u64 },
}

#[derive(Debug)]
pub struct Frames {
    buf: BytesMut,
    /// Message boundaries are known: the buffer starts with one.
    synced: bool,
    /// Bytes still to come of a message already counted as lost.
    discard: u64,
    /// Lost since the stream went out of step, reported once it is back in step.
    lost: Option<Lost>,
    hunt: Hunt,
    /// Bytes of candidates that may still be parsed while hunting (see [`PARSE_PER_BYTE`]).
    budget: u64,
}

impl Frames {
    /// A direction seen from its first byte (`synced`), or joined part-way.
    pub fn new(synced: bool) -> Frames {
        Frames {
            buf: BytesMut::new(),
            synced,
            discard: 0,
            lost: (!synced).then_some(Lost {
                messages: 0,
                bytes: 0,
                reason: MIDSTREAM,
            }),
            hunt: Hunt::default(),
            budget: PARSE_PER_BYTE * HUNT_MAX as u64,
        }
    }

    /// Bytes held for a message not yet whole.
    pub fn buffered(&self) -> usize {
        self.buf.len()
    }

    /// Bytes of memory this direction holds (its buffer and the candidates it waits for).
    pub fn memory(&self) -> usize {
        self.buf.capacity() + 64 * self.hunt.waiting.len()
    }

    /// The next bytes of the stream, received at `ts_ns`.
    pub fn push(&mut self, mut data: &[u8], ts_ns: u64, out: &mut Vec<Out>) {
        if self.discard > 0 {
            let k = (self.discard.min(data.len() as u64)) as usize;
            self.discard -= k as u64;
            data = &data[k..];
        }
        if data.is_empty() {
            return;
        }
        let earned = PARSE_PER_BYTE * data.len() as u64;
        self.budget = (self.budget + earned).min(2 * PARSE_PER_BYTE * HUNT_MAX as u64);
        self.buf.extend_from_slice(data);
        self.split(ts_ns, out);
    }

    /// `n` bytes of the stream that the capture does not hold.
    pub fn hole(&mut self, mut n: u64, reason: &'static str, ts_ns: u64, out: &mut Vec<Out>) {
        if self.discard >= n {
            self.discard -= n;
            return;
        }
        n -= std::mem::take(&mut self.discard);
        if self.synced {
            // Inside a message whose length is known: that one message is lost, and the next
            // starts where it ends.
            if let Ok(Some(len)) = MsgHeader::peek_length(&self.buf) {
                let have = self.buf.len() as u64;
                if have + n <= len as u64 {
                    self.discard = len as u64 - have - n;
                    self.buf.clear();
                    let lost = Lost {
                        messages: 1,
                        bytes: len as u64,
                        reason,
                    };
                    out.push(Out::Gap { lost, ts_ns });
                    return;
                }
            }
            self.synced = false;
            self.lost = Some(Lost {
                messages: 1,
                bytes: self.buf.len() as u64,
                reason,
            });
            self.buf.clear();
        }
        let lost = self.lost.get_or_insert(Lost {
            messages: 1,
            bytes: 0,
            reason,
        });
        lost.bytes += n;
        lost.messages = lost.messages.max(1);
        if lost.reason == MIDSTREAM {
            lost.reason = reason;
        }
        // What is buffered belongs before the hole: it cannot start a whole message any more.
        lost.bytes += self.buf.len() as u64;
        self.buf.clear();
        self.hunt = Hunt::default();
    }

    /// The stream ended: a message begun and never finished is lost, and so is whatever was
    /// skipped without finding a boundary.
    pub fn finish(&mut self, ts_ns: u64, out: &mut Vec<Out>, reason: &'static str) {
        let partial = self.buf.len() as u64;
        self.buf.clear();
        self.hunt = Hunt::default();
        let lost = match self.lost.take() {
            Some(mut lost) => {
                if lost.bytes == 0 && reason != ENDED {
                    // Nothing skipped yet: what is lost is lost for this reason.
                    lost.reason = reason;
                }
                lost.bytes += partial;
                lost
            }
            None => Lost {
                messages: u64::from(partial > 0),
                bytes: partial,
                reason,
            },
        };
        if lost.bytes > 0 {
            out.push(Out::Gap { lost, ts_ns });
        }
        self.synced = true;
    }

    fn split(&mut self, ts_ns: u64, out: &mut Vec<Out>) {
        loop {
            if !self.synced && !self.hunt(ts_ns, out) {
                return;
            }
            match MsgHeader::peek_length(&self.buf) {
                Ok(None) => return,
                Ok(Some(len)) if self.buf.len() < len => return,
                Ok(Some(len)) => {
                    let bytes = self.buf.split_to(len).freeze();
                    out.push(Out::Message { bytes, ts_ns });
                }
                Err(_) => {
                    self.synced = false;
                    self.lost = Some(Lost {
                        messages: 0,
                        bytes: 0,
                        reason: GARBAGE,
                    });
                }
            }
        }
    }

    /// Skips to the first message boundary that parses; true once the stream is back in step
    /// (the gap reported), false when more bytes are needed. A candidate not yet whole does not
    /// stop the search: a later boundary that parses wins over it; bytes before the first such
    /// candidate are dropped, the rest kept until one becomes whole. Each position is looked at
    /// once and each candidate parsed once, within the parse budget: linear in the bytes seen.
    fn hunt(&mut self, ts_ns: u64, out: &mut Vec<Out>) -> bool {
        let h = &mut self.hunt;
        let end = h.base + self.buf.len() as u64;
        let mut found = None;
        while let Some(&(c_end, at)) = h.waiting.first() {
            if c_end > end {
                break;
            }
            h.waiting.pop_first();
            h.starts.remove(&at);
            if found.is_some_and(|f| f < at) {
                continue;
            }
            let i = (at - h.base) as usize;
            if parses(&self.buf[i..(c_end - h.base) as usize], &mut self.budget) {
                found = Some(at);
            }
        }
        let mut i = (h.scanned - h.base) as usize;
        while found.is_none() && i + HEADER_LEN <= self.buf.len() {
            match candidate(&self.buf[i..]) {
                Some(len) if i + len > self.buf.len() => {
                    let at = h.base + i as u64;
                    h.waiting.insert((at + len as u64, at));
                    h.starts.insert(at);
                }
                Some(len) if parses(&self.buf[i..i + len], &mut self.budget) => {
                    found = Some(h.base + i as u64);
                }
                _ => {}
            }
            i += 1;
        }
        h.scanned = h.base + i as u64;
        let keep_from = found
            .or_else(|| h.starts.first().copied())
            .unwrap_or(h.scanned);
        let drop = (keep_from - h.base) as usize;
        self.buf.advance(drop);
        h.base = keep_from;
        let lost = self.lost.get_or_insert(Lost {
            messages: 0,
            bytes: 0,
            reason: GARBAGE,
        });
        lost.bytes += drop as u64;
        if found.is_none() {
            return false;
        }
        let lost = self.lost.take().expect("set above");
        if lost.bytes > 0 {
            out.push(Out::Gap { lost, ts_ns });
        }
        self.synced = true;
        self.hunt = Hunt::default();
        true
    }
}

/// Where a search for a boundary stands, so no byte is searched twice. Positions are offsets
/// from where the search began (the buffer's first byte is at `base`).
#[derive(Debug, Default)]
struct Hunt {
    base: u64,
    /// Positions before this were looked at.
    scanned: u64,
    /// Candidates not yet whole, by where they end.
    waiting: BTreeSet<(u64, u64)>,
    /// The same candidates by where they start.
    starts: BTreeSet<u64>,
}

/// Bytes of parsing allowed per byte received (and up front), so that candidates which overlap
/// (each one up to [`HUNT_MAX`] long) cannot make the search quadratic.
const PARSE_PER_BYTE: u64 = 4;

/// Whether a whole candidate parses, paid from `budget` (its length; a compressed one, its
/// declared inflated size too). A candidate the budget cannot pay is not a boundary.
fn parses(bytes: &[u8], budget: &mut u64) -> bool {
    let mut cost = bytes.len() as u64;
    if let Ok(Some(h)) = MsgHeader::parse(bytes) {
        if h.op_code == OpCode::Compressed {
            let declared = compressed::wrapped(bytes).map_or(0, |(w, _)| w.declared as u64);
            cost = cost.saturating_add(declared);
        }
    }
    if cost > *budget {
        return false;
    }
    *budget -= cost;
    Message::parse(bytes).is_ok()
}

/// The length of the message a buffer would start with, if its header is sane: a length within
/// bounds (at most [`HUNT_MAX`]), a known opcode, and for OP_MSG no flag bit the protocol lacks.
fn candidate(buf: &[u8]) -> Option<usize> {
    let header = MsgHeader::parse(buf).ok()??;
    if header.message_length > HUNT_MAX {
        return None;
    }
    match header.op_code {
        OpCode::Unknown(_) => None,
        OpCode::Msg => crate::wire::op_msg::flags_all_known(buf)?.then_some(header.message_length),
        _ => Some(header.message_length),
    }
}

#[cfg(test)]
#[path = "frames_tests.rs"]
mod tests;
