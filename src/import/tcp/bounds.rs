//! The reassembly's global bounds: how many connections are followed at once, how many bytes
//! they hold between them, how long one may stay silent. Connections are kept in the order of
//! their last segment (capture time), so that the idle ones expire and, past a bound, the one
//! silent the longest is let go: its partial messages become gaps, counted, and a later segment
//! of it starts a connection joined part-way. Memory is then bounded by these figures for any
//! file and for a sniffer that runs for a month.

use std::collections::BTreeMap;

/// Bytes held per direction while waiting for a missing segment, by default.
pub const DEFAULT_WINDOW: usize = 4 << 20;
/// Connections followed at once, by default.
pub const DEFAULT_MAX_FLOWS: usize = 65_536;
/// Bytes all connections hold between them (segments held, messages being cut), by default.
pub const DEFAULT_MAX_BYTES: usize = 256 << 20;
/// A connection silent this long (capture time) is let go, by default: 30 minutes.
pub const DEFAULT_IDLE_NS: u64 = 30 * 60 * 1_000_000_000;
/// What a connection costs besides the bytes it holds (its state and index entries, measured:
/// about 3-4.5 KiB of resident memory each at 65,536 connections).
pub const FLOW_OVERHEAD: usize = 4096;

/// The bounds of a reassembly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    /// Bytes held per direction while a segment is missing.
    pub window: usize,
    pub max_flows: usize,
    pub max_bytes: usize,
    /// Capture-time nanoseconds after which a silent connection is let go.
    pub idle_ns: u64,
}

impl Default for Bounds {
    fn default() -> Bounds {
        Bounds {
            window: DEFAULT_WINDOW,
            max_flows: DEFAULT_MAX_FLOWS,
            max_bytes: DEFAULT_MAX_BYTES,
            idle_ns: DEFAULT_IDLE_NS,
        }
    }
}

/// Why a connection was let go before its end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LetGo {
    /// Silent longer than the idle timeout.
    Idle,
    /// The oldest when a bound was passed.
    Evicted,
}

/// Connections by last activity, and the bytes they hold.
#[derive(Debug)]
pub struct Ledger<K> {
    /// (last activity, id) -> the connection's key in the flow table.
    order: BTreeMap<(u64, u64), K>,
    bytes: usize,
    /// The latest capture time seen: time never goes back for the bounds.
    now: u64,
}

impl<K: Copy> Default for Ledger<K> {
    fn default() -> Self {
        Ledger {
            order: BTreeMap::new(),
            bytes: 0,
            now: 0,
        }
    }
}

/// A connection as the ledger knows it: its id, when it was last active, the bytes it holds.
#[derive(Debug, Clone, Copy, Default)]
pub struct Entry {
    pub id: u64,
    pub last: Option<u64>,
    pub bytes: usize,
}

impl<K: Copy> Ledger<K> {
    /// Capture time moved on to `ts` (never back).
    pub fn tick(&mut self, ts: u64) {
        self.now = self.now.max(ts);
    }

    /// A connection active now, holding `held` bytes.
    pub fn touch(&mut self, key: K, entry: &mut Entry, held: usize) {
        if let Some(was) = entry.last {
            self.order.remove(&(was, entry.id));
        }
        self.order.insert((self.now, entry.id), key);
        self.bytes = self.bytes - entry.bytes.min(self.bytes) + held;
        *entry = Entry {
            id: entry.id,
            last: Some(self.now),
            bytes: held,
        };
    }

    /// A connection gone.
    pub fn remove(&mut self, entry: &Entry) {
        if let Some(was) = entry.last {
            self.order.remove(&(was, entry.id));
        }
        self.bytes -= entry.bytes.min(self.bytes);
    }

    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// The connection to let go now, if one is: silent past the timeout, or the oldest while
    /// `flows` or the bytes held pass their bound.
    pub fn next_to_let_go(&self, bounds: &Bounds, flows: usize) -> Option<(K, LetGo)> {
        let (&(last, _), &key) = self.order.first_key_value()?;
        if self.now.saturating_sub(last) > bounds.idle_ns {
            return Some((key, LetGo::Idle));
        }
        let over = flows > bounds.max_flows || self.bytes > bounds.max_bytes;
        over.then_some((key, LetGo::Evicted))
    }
}
