//! One direction of a connection as whole wire messages: the bytes the sequence tracking hands
//! over in order, and the holes between them. In step, messages are split at their length
//! prefixes (as `wire::FrameSplitter` does). After a hole, or from a connection's middle, the
//! stream is out of step: bytes are skipped until a message boundary that parses (a sane header,
//! a known opcode, a bounded length, and the whole message decoding), and what was skipped is
//! reported as one gap, never glued to what follows.

use crate::wire::{Message, MsgHeader, OpCode, HEADER_LEN};
use bytes::{Buf, Bytes, BytesMut};

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
        }
    }

    /// Bytes held for a message not yet whole.
    pub fn buffered(&self) -> usize {
        self.buf.len()
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
    pub fn finish(&mut self, ts_ns: u64, out: &mut Vec<Out>) {
        let partial = self.buf.len() as u64;
        self.buf.clear();
        self.hunt = Hunt::default();
        let lost = match self.lost.take() {
            Some(mut lost) => {
                lost.bytes += partial;
                lost
            }
            None => Lost {
                messages: u64::from(partial > 0),
                bytes: partial,
                reason: ENDED,
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
    /// candidate are dropped, the rest kept until one becomes whole.
    fn hunt(&mut self, ts_ns: u64, out: &mut Vec<Out>) -> bool {
        if self.hunt.recheck_at.is_some_and(|at| self.buf.len() >= at) {
            self.hunt = Hunt::default();
        }
        let mut found = None;
        let mut first_wait = self.hunt.first_wait;
        let mut recheck_at = self.hunt.recheck_at;
        let mut at = self.hunt.scanned;
        while at + HEADER_LEN <= self.buf.len() {
            match candidate(&self.buf[at..]) {
                Some(len) if at + len > self.buf.len() => {
                    first_wait.get_or_insert(at);
                    let end = at + len;
                    recheck_at = Some(recheck_at.map_or(end, |r| r.min(end)));
                }
                Some(len) if Message::parse(&self.buf[at..at + len]).is_ok() => {
                    found = Some(at);
                    break;
                }
                _ => {}
            }
            at += 1;
        }
        let drop = match found {
            Some(at) => at,
            None => first_wait.unwrap_or(at),
        };
        self.buf.advance(drop);
        let lost = self.lost.get_or_insert(Lost {
            messages: 0,
            bytes: 0,
            reason: GARBAGE,
        });
        lost.bytes += drop as u64;
        if found.is_some() {
            let lost = self.lost.take().expect("set above");
            if lost.bytes > 0 {
                out.push(Out::Gap { lost, ts_ns });
            }
            self.synced = true;
            self.hunt = Hunt::default();
            return true;
        }
        self.hunt = Hunt {
            scanned: at - drop,
            first_wait: first_wait.map(|w| w - drop),
            recheck_at: recheck_at.map(|r| r - drop),
        };
        false
    }
}

/// Where a search for a boundary stands, so each new piece is not searched from the start.
#[derive(Debug, Default, Clone, Copy)]
struct Hunt {
    /// Positions before this were looked at.
    scanned: usize,
    /// The first candidate not yet whole.
    first_wait: Option<usize>,
    /// The buffer length at which a candidate becomes whole: search again from the start.
    recheck_at: Option<usize>,
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
