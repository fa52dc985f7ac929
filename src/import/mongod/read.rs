//! The second pass over a recording file: its packets, up to where its layout fits, into the
//! capture. A session's `open` is written with its first kept message (so a member's session
//! that is left out writes nothing); a session end closes it.

use super::detect::{self, Scan, TimeUnit};
use super::internal::{Filter, Verdict};
use crate::capture::Side;
use crate::import::error::ImportError;
use crate::import::input;
use crate::import::output::Output;
use crate::wire::recording::{self as packet, Event};
use bytes::Bytes;
use serde::Serialize;
use std::collections::HashMap;
use std::io::{BufReader, Read};
use std::path::Path;

/// What the recordings held.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct RecordingRead {
    pub packets: u64,
    pub messages: u64,
    pub session_events: u64,
    /// Sessions shown to be a member's, and the messages left out as internal traffic.
    pub internal_sessions: u64,
    pub internal_messages: u64,
    /// Per file: `NAME: LAYOUT (what it means)`.
    pub layouts: Vec<String>,
    pub checksums_verified: u64,
    /// Per file whose CRC-32C is not the one `checksum.txt` gives.
    pub checksum_mismatches: Vec<String>,
    /// Files no `checksum.txt` line covers (a recording still running has none for its last).
    pub unverified: Vec<String>,
}

/// Where an input's microsecond offsets start on the wall clock, and its latest time.
#[derive(Debug, Clone, Copy, Default)]
pub struct Anchor {
    start_ns: Option<u64>,
    pub last_ns: u64,
}

impl Anchor {
    /// Learns the start from an input's first file with offsets: its name is the wall-clock
    /// millisecond the server opened it, when its first packet was about due; without such a
    /// name, the file's modification time is taken as its last packet's.
    pub fn learn(&mut self, file: &Path, scan: &Scan) {
        if self.start_ns.is_some() || scan.layout.unit != TimeUnit::OffsetMicros {
            return;
        }
        let first = scan.first_time.saturating_mul(1000);
        let start = match name_ms(file) {
            Some(ms) => ms.saturating_mul(1_000_000).saturating_sub(first),
            None => {
                let modified = std::fs::metadata(file).and_then(|m| m.modified()).ok();
                let ns = modified
                    .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                    .map_or(0, |d| d.as_nanos() as u64);
                ns.saturating_sub(scan.last_time.saturating_mul(1000))
            }
        };
        self.start_ns = Some(start);
    }

    /// A packet's time in nanoseconds since the epoch.
    pub fn ns(&mut self, unit: TimeUnit, time: u64) -> u64 {
        let ns = match unit {
            TimeUnit::WallMillis => time.saturating_mul(1_000_000),
            TimeUnit::OffsetMicros => self
                .start_ns
                .unwrap_or(0)
                .saturating_add(time.saturating_mul(1000)),
        };
        self.last_ns = self.last_ns.max(ns);
        ns
    }
}

/// The time a recording file's name gives: `1700000000000.bin` (milliseconds since the epoch).
pub fn name_ms(path: &Path) -> Option<u64> {
    let stem = path.file_stem()?.to_str()?;
    (stem.len() >= 10 && stem.bytes().all(|b| b.is_ascii_digit()))
        .then(|| stem.parse().ok())
        .flatten()
}

/// How to read a file into the capture.
#[derive(Debug, Clone, Copy)]
pub struct Pass {
    pub key_base: u64,
    pub keep_internal: bool,
    pub anchor: Anchor,
}

/// A session met in the recording.
#[derive(Debug, Default)]
pub struct Session {
    remote: String,
    local: String,
    opened: bool,
    filter: Filter,
}

/// Scans a file (`detect::scan`), its refusal an error that names each layout's misfit.
pub fn scan_file(path: &Path) -> Result<Scan, ImportError> {
    input::open(path)?;
    let open = || std::fs::File::open(path).map(|f| BufReader::with_capacity(256 * 1024, f));
    let io = |source| ImportError::Open {
        path: path.to_owned(),
        source,
    };
    match detect::scan(open, name_ms(path)).map_err(io)? {
        Ok(scan) => Ok(scan),
        Err(misfits) => Err(refusal(path, &misfits)),
    }
}

/// The error for a file no layout reads.
pub fn refusal(path: &Path, misfits: &detect::Refusal) -> ImportError {
    let what = if misfits.is_empty() {
        "the file is empty".to_string()
    } else {
        let each: Vec<String> = misfits
            .iter()
            .map(|(f, at, why)| format!("as {}: at byte {at}: {why}", f.name()))
            .collect();
        format!("no traffic recording layout fits it ({})", each.join("; "))
    };
    ImportError::UnknownFormat {
        path: path.to_owned(),
        what,
    }
}

/// Reads a scanned file into `out`.
pub fn read_file(
    path: &Path,
    scan: &Scan,
    pass: &Pass,
    sessions: &mut HashMap<u64, Session>,
    out: &mut Output,
    read: &mut RecordingRead,
) -> Result<Anchor, ImportError> {
    let file = input::open(path)?;
    read_packets(BufReader::new(file), path, scan, pass, sessions, out, read)
}

/// [`read_file`] over any reader; `path` names it in errors.
pub fn read_packets<R: Read>(
    mut input: R,
    path: &Path,
    scan: &Scan,
    pass: &Pass,
    sessions: &mut HashMap<u64, Session>,
    out: &mut Output,
    read: &mut RecordingRead,
) -> Result<Anchor, ImportError> {
    let mut anchor = pass.anchor;
    let mut buf = Vec::new();
    let mut at = 0u64;
    let bad = |at: u64, what: String| ImportError::BadFile {
        path: path.to_owned(),
        offset: at,
        what,
    };
    while at < scan.end {
        let mut prefix = [0u8; 4];
        let got = detect::read_full(&mut input, &mut prefix).map_err(|e| bad(at, e.to_string()))?;
        let n = match (got, packet::declared_len(prefix, scan.layout.framing)) {
            (4, Ok(n)) => n,
            (_, Err(what)) => return Err(bad(at, what)),
            _ => return Err(bad(at, "the file changed since it was scanned".into())),
        };
        buf.clear();
        buf.resize(n, 0);
        buf[..4].copy_from_slice(&prefix);
        let got =
            detect::read_full(&mut input, &mut buf[4..]).map_err(|e| bad(at, e.to_string()))?;
        if got < n - 4 {
            return Err(bad(at, "the file changed since it was scanned".into()));
        }
        let p = packet::parse(&buf, scan.layout.framing).map_err(|w| bad(at, w))?;
        let event = packet::event_of(&p, scan.layout.codes).map_err(|w| bad(at, w))?;
        let ts = anchor.ns(scan.layout.unit, p.time);
        one(&p, event, ts, pass, sessions, out, read)?;
        at += n as u64;
    }
    Ok(anchor)
}

fn one(
    p: &packet::Packet<'_>,
    event: Event,
    ts: u64,
    pass: &Pass,
    sessions: &mut HashMap<u64, Session>,
    out: &mut Output,
    read: &mut RecordingRead,
) -> Result<(), ImportError> {
    read.packets += 1;
    let key = pass.key_base.wrapping_add(p.id);
    let session = sessions.entry(key).or_insert_with(|| Session {
        remote: p.remote.to_owned(),
        local: p.local.to_owned(),
        ..Session::default()
    });
    let request = match event {
        Event::SessionStart => {
            read.session_events += 1;
            return Ok(());
        }
        Event::SessionEnd => {
            read.session_events += 1;
            sessions.remove(&key);
            return out.close_conn(key, Side::Client, "the session ended", ts);
        }
        Event::Request => true,
        Event::Reply => false,
        Event::Message => packet::is_request(p.message),
    };
    if !pass.keep_internal {
        let was = session.filter.is_internal();
        if let Verdict::Drop { new_session } = session.filter.judge(request, p.message) {
            read.internal_messages += 1;
            read.internal_sessions += u64::from(new_session && !was);
            return Ok(());
        }
    }
    if !session.opened {
        session.opened = true;
        out.open(key, &session.remote, &session.local, ts)?;
    }
    read.messages += 1;
    out.message_of(key, request, Bytes::copy_from_slice(p.message), ts)
}
