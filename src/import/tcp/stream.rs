//! One direction of a TCP connection put back in order: per-direction sequence tracking,
//! retransmissions and overlaps dropped (the first copy of a byte wins), segments that arrive
//! early held until the bytes before them come, within a bounded window. A hole is declared (and
//! handed to [`Frames`] as one) when the window fills, when the other side sends (it received
//! what the capture lacks), or when the connection ends.

use super::frames::{Frames, Out, HOLE, SNAPLEN};
use serde::Serialize;
use std::collections::BTreeMap;

/// What the reassembly counted.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct TcpStats {
    /// TCP connections seen.
    pub connections: u64,
    /// Connections whose ends match no server (`--server-port`/`--server`), left out.
    pub ignored_connections: u64,
    pub retransmitted: u64,
    pub overlapping: u64,
    pub out_of_order: u64,
    /// Sequence holes: bytes the capture does not hold.
    pub holes: u64,
    /// Segments cut by the snaplen.
    pub truncated: u64,
    pub missing_bytes: u64,
    /// Segments further ahead than the window that nothing confirmed (no acknowledgement, no
    /// segment after them): dropped, not counted as a loss.
    pub out_of_window: u64,
    /// Connections silent longer than the idle timeout, let go.
    pub expired: u64,
    /// Connections let go, the oldest first, when the bounds on connections or bytes held were
    /// passed; what they held is a gap.
    pub evicted: u64,
    /// Connections that speak TLS: left out, nothing of them written.
    pub tls_connections: u64,
    /// The first of them, `client -> server` (at most [`TLS_NAMED`]).
    pub tls: Vec<String>,
}

/// TLS connections named one by one in the summary and the log; the rest are counted.
pub const TLS_NAMED: usize = 20;

impl TcpStats {
    /// A connection found to speak TLS, said once (named while few, counted always).
    pub(super) fn tls(&mut self, client: std::net::SocketAddr, server: std::net::SocketAddr) {
        self.tls_connections += 1;
        if self.tls.len() < TLS_NAMED {
            tracing::warn!(
                "connection {client} -> {server} speaks TLS: its traffic cannot be read and is \
                 left out"
            );
            self.tls.push(format!("{client} -> {server}"));
        }
    }
}

/// The reassembly's output buffer and counters, lent to each direction.
#[derive(Debug, Default)]
pub struct Io {
    pub stats: TcpStats,
    pub out: Vec<Out>,
}

/// The payload of one segment: `data` captured, `missing` more bytes the snaplen cut.
#[derive(Debug, Clone, Copy)]
pub struct Piece<'a> {
    pub seq: u32,
    pub data: &'a [u8],
    pub missing: u32,
    pub ts_ns: u64,
}

/// A segment that came before its turn.
#[derive(Debug)]
struct Held {
    data: Vec<u8>,
    missing: u32,
    ts_ns: u64,
}

#[derive(Debug)]
pub struct Stream {
    /// The sequence number of the next byte expected; `None` before the first segment.
    next: Option<u32>,
    /// Bytes of the stream passed (delivered or declared missing): the stream offset of `next`.
    pos: u64,
    /// Early segments by stream offset.
    held: BTreeMap<u64, Held>,
    held_bytes: usize,
    /// The most bytes held.
    window: usize,
    pub frames: Frames,
    /// A FIN was seen from this side.
    pub fin: bool,
    /// The furthest the other side acknowledged: bytes of this side it received.
    peer_ack: Option<u32>,
    /// The sequence number of this side's FIN, once seen: its data ends there.
    fin_seq: Option<u32>,
    /// The sequence number right after a segment dropped for being too far ahead.
    far_next: Option<u32>,
}

/// The most acknowledged-but-unseen bytes believed at a stream's end (a larger distance is a
/// bogus acknowledgement number, not a loss).
const MAX_UNSEEN: i32 = 64 << 20;

impl Stream {
    /// A direction whose SYN was seen (`Some(isn)`: in step from its first byte) or not.
    pub fn new(syn: Option<u32>, window: usize) -> Stream {
        Stream {
            next: syn.map(|isn| isn.wrapping_add(1)),
            pos: 0,
            held: BTreeMap::new(),
            held_bytes: 0,
            window,
            frames: Frames::new(syn.is_some()),
            fin: false,
            peer_ack: None,
            fin_seq: None,
            far_next: None,
        }
    }

    /// Whether a SYN with this sequence number is the one this stream began with.
    pub fn began_with(&self, isn: u32) -> bool {
        self.pos == 0 && self.next == Some(isn.wrapping_add(1))
    }

    /// No segment of this side seen yet.
    pub fn untouched(&self) -> bool {
        self.next.is_none()
    }

    /// Bytes of memory this direction holds (held segments and the message being cut).
    pub fn memory(&self) -> usize {
        self.held_bytes + 64 * self.held.len() + self.frames.memory()
    }

    pub fn has_held(&self) -> bool {
        !self.held.is_empty()
    }

    /// A segment's payload.
    pub fn segment(&mut self, piece: Piece<'_>, io: &mut Io) {
        let Piece {
            seq,
            data,
            missing,
            ts_ns,
        } = piece;
        let window = self.window;
        let len = data.len() as i64 + i64::from(missing);
        if len == 0 {
            return;
        }
        let next = *self.next.get_or_insert(seq);
        let rel = i64::from(seq.wrapping_sub(next) as i32);
        if rel + len <= 0 {
            io.stats.retransmitted += 1;
            return;
        }
        if rel > window as i64 {
            self.far(seq, rel as u64, len as u64, ts_ns, io);
            return;
        }
        if rel > 0 {
            let at = self.pos + rel as u64;
            self.hold(at, data, missing, ts_ns, io);
            return;
        }
        // Starts at or before `next`: `-rel` bytes of it were already passed.
        if rel < 0 {
            io.stats.overlapping += 1;
        }
        let (data, missing) = cut_front(data, missing, rel.unsigned_abs());
        self.deliver_between_held(data, missing, ts_ns, io);
    }

    /// A segment further ahead than the window: the bytes between are a hole only when the
    /// receiver acknowledged past them, or when the sender goes on from there (a second segment
    /// right after this one); a lone segment far ahead (forged, or from another connection) is
    /// dropped, so that a loss is never more than the flow could have carried.
    fn far(&mut self, seq: u32, rel: u64, len: u64, ts_ns: u64, io: &mut Io) {
        let acked = self
            .peer_ack
            .is_some_and(|a| (a.wrapping_sub(seq) as i32) > 0);
        let continued = self.far_next == Some(seq) && rel <= MAX_UNSEEN as u64;
        // Believed: the bytes up to this segment (the dropped one among them) are a hole.
        if !acked && !continued {
            io.stats.out_of_window += 1;
            self.far_next = Some(seq.wrapping_add(len as u32));
            return;
        }
        io.stats.out_of_order += 1;
        self.far_next = None;
        self.skip(rel, ts_ns, io);
    }

    /// Holds a segment that came before its turn, without the bytes of segments held already
    /// (the first copy of a byte wins).
    fn hold(&mut self, at: u64, data: &[u8], missing: u32, ts_ns: u64, io: &mut Io) {
        let end = at + data.len() as u64 + u64::from(missing);
        let (mut start, mut stored) = (at, false);
        while start < end {
            // A segment held already that covers `start`: its copy came first.
            if let Some((&p, h)) = self.held.range(..=start).next_back() {
                let p_end = p + h.data.len() as u64 + u64::from(h.missing);
                if p_end > start {
                    start = p_end;
                    continue;
                }
            }
            let (rest, rest_missing) = cut_front(data, missing, start - at);
            let next = self.held.range(start + 1..).next().map(|(&n, _)| n);
            let (part, part_missing) = match next.filter(|&n| n < end) {
                Some(n) => cut_back(rest, rest_missing, n - start),
                None => (rest, rest_missing),
            };
            self.held_bytes += part.len();
            let held = Held {
                data: part.to_vec(),
                missing: part_missing,
                ts_ns,
            };
            self.held.insert(start, held);
            stored = true;
            start += part.len() as u64 + u64::from(part_missing);
        }
        if stored {
            io.stats.out_of_order += 1;
        } else {
            io.stats.retransmitted += 1;
        }
        while self.held_bytes > self.window {
            self.declare_hole(io);
        }
    }

    /// Passes a segment that starts at `pos`, cut where a held segment begins: what was held
    /// came first and wins over this later copy of its bytes.
    fn deliver_between_held(&mut self, data: &[u8], missing: u32, ts_ns: u64, io: &mut Io) {
        let start = self.pos;
        let end = start + data.len() as u64 + u64::from(missing);
        while self.pos < end {
            let (rest, rest_missing) = cut_front(data, missing, self.pos - start);
            match self.held.keys().next().copied().filter(|&at| at < end) {
                None => {
                    self.deliver(0, rest, rest_missing, ts_ns, io);
                    self.drain(io);
                    return;
                }
                Some(at) if at > self.pos => {
                    let (part, part_missing) = cut_back(rest, rest_missing, at - self.pos);
                    self.deliver(0, part, part_missing, ts_ns, io);
                }
                Some(_) => {}
            }
            self.drain(io);
        }
    }

    /// Gives up waiting for the bytes before the earliest held segment: a hole, then what is held.
    pub fn declare_hole(&mut self, io: &mut Io) {
        let Some((&at, first)) = self.held.iter().next() else {
            return;
        };
        let ts_ns = first.ts_ns;
        if at > self.pos {
            self.skip(at - self.pos, ts_ns, io);
        }
        self.drain(io);
    }

    /// This side's FIN, carried by a segment at `seq` with `len` bytes of payload.
    pub fn fin_at(&mut self, seq: u32, len: u32) {
        self.fin = true;
        self.fin_seq.get_or_insert(seq.wrapping_add(len));
    }

    /// The other side acknowledged up to `ack`.
    pub fn acked(&mut self, ack: u32) {
        let further = match self.peer_ack {
            Some(prev) => (ack.wrapping_sub(prev) as i32) > 0,
            None => true,
        };
        if further {
            self.peer_ack = Some(ack);
        }
    }

    /// The connection ended: every hole declared, bytes the other side acknowledged but the
    /// capture never held (the tail of a stream, missed) a hole too, the last message's fate
    /// said.
    pub fn finish(&mut self, ts_ns: u64, io: &mut Io, reason: &'static str) {
        while self.has_held() {
            self.declare_hole(io);
        }
        if let (Some(next), Some(ack)) = (self.next, self.peer_ack) {
            // The data ends at the FIN when it was seen; else an acknowledged FIN that was not
            // captured takes one sequence number, which is no loss.
            let end = match self.fin_seq {
                Some(fin) if (ack.wrapping_sub(fin) as i32) > 0 => fin,
                _ => ack,
            };
            let beyond = end.wrapping_sub(next) as i32;
            if beyond > 1 && beyond <= MAX_UNSEEN {
                self.skip(beyond as u64, ts_ns, io);
            }
        }
        self.frames.finish(ts_ns, &mut io.out, reason);
    }

    fn skip(&mut self, n: u64, ts_ns: u64, io: &mut Io) {
        io.stats.holes += 1;
        io.stats.missing_bytes += n;
        self.frames.hole(n, HOLE, ts_ns, &mut io.out);
        self.advance(n);
    }

    fn advance(&mut self, n: u64) {
        self.pos += n;
        self.next = self.next.map(|s| s.wrapping_add(n as u32));
    }

    /// A segment that starts at or before `next`: its first `trim` bytes were already passed.
    fn deliver(&mut self, trim: usize, data: &[u8], missing: u32, ts_ns: u64, io: &mut Io) {
        if trim > 0 {
            io.stats.overlapping += 1;
        }
        if trim < data.len() {
            self.frames.push(&data[trim..], ts_ns, &mut io.out);
            self.advance((data.len() - trim) as u64);
        }
        let cut = (trim.saturating_sub(data.len())) as u64;
        let missing = u64::from(missing).saturating_sub(cut);
        if missing > 0 {
            io.stats.truncated += 1;
            io.stats.missing_bytes += missing;
            self.frames.hole(missing, SNAPLEN, ts_ns, &mut io.out);
            self.advance(missing);
        }
    }

    /// Hands over the held segments whose turn has come.
    fn drain(&mut self, io: &mut Io) {
        while let Some(entry) = self.held.first_entry() {
            if *entry.key() > self.pos {
                return;
            }
            let at = *entry.key();
            let held = entry.remove();
            self.held_bytes -= held.data.len();
            let end = at + held.data.len() as u64 + u64::from(held.missing);
            if end <= self.pos {
                io.stats.retransmitted += 1;
                continue;
            }
            let trim = (self.pos - at) as usize;
            self.deliver(trim, &held.data, held.missing, held.ts_ns, io);
        }
    }
}

/// A piece without its first `n` bytes (captured ones first, then the missing ones).
fn cut_front(data: &[u8], missing: u32, n: u64) -> (&[u8], u32) {
    let k = n.min(data.len() as u64) as usize;
    let rest = u64::from(missing).saturating_sub(n - k as u64);
    (&data[k..], rest as u32)
}

/// The first `n` bytes of a piece.
fn cut_back(data: &[u8], missing: u32, n: u64) -> (&[u8], u32) {
    let k = n.min(data.len() as u64) as usize;
    let rest = u64::from(missing).min(n - k as u64);
    (&data[..k], rest as u32)
}
