//! Which layout a recording file has, told from its bytes alone: each framing is tried over the
//! whole file as a stream (one packet in memory), and the first that reads it to its end is the
//! file's layout. An `events` file's codes are told from what its packets carry (a reply under
//! code 0, or a message under code 1, settles it), its time unit from its values. A file that no
//! layout reads to its end is refused with the byte where each stopped fitting, or, when one read
//! whole packets before it stopped, is imported up to there as a damaged file.

use super::checksum::CrcReader;
use crate::wire::recording::{self as packet, Codes, Framing, Misfit};
use std::io::Read;

/// 2015-01-01 and 2100-01-01 in milliseconds since the Unix epoch: a wall-clock time in
/// milliseconds lies between.
const MS_PLAUSIBLE: std::ops::Range<u64> = 1_420_070_400_000..4_102_444_800_000;
/// How far a wall-clock time may lie from the time in its file's name.
const NAME_SLACK_MS: u64 = 86_400_000;

/// What the times of a file count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeUnit {
    /// Milliseconds since the Unix epoch.
    WallMillis,
    /// Microseconds since the recording started.
    OffsetMicros,
}

/// A file's layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    pub framing: Framing,
    pub codes: Option<Codes>,
    pub unit: TimeUnit,
}

impl Layout {
    /// The short name in import's output and `docs/import.md`.
    pub fn name(&self) -> &'static str {
        match (self.framing, self.codes, self.unit) {
            (Framing::Addresses, ..) => "addresses-ms",
            (Framing::Session, ..) => "session-ms",
            (_, Some(Codes::Three), TimeUnit::OffsetMicros) => "events3-us",
            (_, Some(Codes::Three), TimeUnit::WallMillis) => "events3-ms",
            (_, _, TimeUnit::OffsetMicros) => "events4-us",
            (_, _, TimeUnit::WallMillis) => "events4-ms",
        }
    }

    /// What the name means.
    pub fn describe(&self) -> String {
        let unit = match self.unit {
            TimeUnit::WallMillis => "wall-clock milliseconds",
            TimeUnit::OffsetMicros => "microseconds since the recording started",
        };
        match (self.framing, self.codes) {
            (Framing::Addresses, _) => format!("no event byte, local and remote addresses, {unit}"),
            (Framing::Session, _) => format!("no event byte, session text, {unit}"),
            (_, codes) => format!(
                "event byte ({}), session text, {unit}",
                packet::codes_name(codes.unwrap_or(Codes::Four))
            ),
        }
    }
}

/// What the scan of a file found.
#[derive(Debug, Clone)]
pub struct Scan {
    pub layout: Layout,
    /// Bytes of whole packets that fit; the file's length when it fits to its end.
    pub end: u64,
    pub packets: u64,
    /// Where and why the layout stopped fitting, when it did before the end.
    pub damage: Option<(u64, Misfit)>,
    /// The codes could not be told apart (no reply, no code 1 or 3): the newest were taken.
    pub ambiguous_codes: bool,
    /// The CRC-32C of the whole file, and its length.
    pub crc: u32,
    pub file_len: u64,
    pub first_time: u64,
    pub last_time: u64,
}

/// One framing's run over a file.
#[derive(Debug, Clone, Default)]
struct Run {
    end: u64,
    packets: u64,
    stop: Option<(u64, Misfit)>,
    three: Option<(u64, Misfit)>,
    four: Option<(u64, Misfit)>,
    all_ms: bool,
    first_time: u64,
    last_time: u64,
}

/// Reads `input` as packets of `framing` until the end or the first packet that does not fit.
fn run<R: Read>(input: &mut R, framing: Framing, buf: &mut Vec<u8>) -> std::io::Result<Run> {
    let mut r = Run {
        all_ms: true,
        ..Run::default()
    };
    loop {
        let at = r.end;
        let mut prefix = [0u8; 4];
        let got = read_full(input, &mut prefix)?;
        if got == 0 {
            return Ok(r);
        }
        let fail = |what: String| (at, what);
        if got < 4 {
            r.stop = Some(fail("the file ends inside a packet's length".into()));
            return Ok(r);
        }
        let n = match packet::declared_len(prefix, framing) {
            Ok(n) => n,
            Err(what) => {
                r.stop = Some(fail(what));
                return Ok(r);
            }
        };
        buf.clear();
        buf.extend_from_slice(&prefix);
        buf.resize(n, 0);
        let got = read_full(input, &mut buf[4..])?;
        if got < n - 4 {
            let what = format!(
                "the file ends inside a packet: {} of its {n} bytes",
                got + 4
            );
            r.stop = Some(fail(what));
            return Ok(r);
        }
        if let Err(what) = step(&mut r, framing, buf, at) {
            r.stop = Some(fail(what));
            return Ok(r);
        }
        r.end += n as u64;
        r.packets += 1;
    }
}

/// One whole packet: parsed, its event checked under both code sets, its time noted.
fn step(r: &mut Run, framing: Framing, buf: &[u8], at: u64) -> Result<(), Misfit> {
    let p = packet::parse(buf, framing)?;
    if framing == Framing::Events {
        for (codes, slot) in [(Codes::Three, &mut r.three), (Codes::Four, &mut r.four)] {
            if slot.is_none() {
                if let Err(what) = packet::event_of(&p, Some(codes)) {
                    *slot = Some((at, what));
                }
            }
        }
        if let (Some(_), Some((_, four))) = (&r.three, &r.four) {
            return Err(format!("under codes 0 to 3: {four}"));
        }
    } else {
        packet::event_of(&p, None)?;
    }
    if r.packets == 0 {
        r.first_time = p.time;
    }
    r.last_time = p.time;
    r.all_ms &= MS_PLAUSIBLE.contains(&p.time);
    Ok(())
}

/// What no layout could read: each framing and the byte where it stopped fitting (empty for an
/// empty file).
pub type Refusal = Vec<(Framing, u64, Misfit)>;

/// Scans a file, opened afresh by `open` for each framing tried: its layout, how far it fits, its
/// CRC-32C. `name_ms`: the time its name gives (`1700000000000.bin`), to tell wall-clock
/// milliseconds from microsecond offsets. `Ok(Err(..))` when no layout reads a single packet.
pub fn scan<R: Read>(
    mut open: impl FnMut() -> std::io::Result<R>,
    name_ms: Option<u64>,
) -> std::io::Result<Result<Scan, Refusal>> {
    let mut buf = Vec::new();
    let mut best: Option<(Framing, Run, CrcReader<R>)> = None;
    let mut misfits = Vec::new();
    for framing in Framing::ALL {
        let mut input = CrcReader::new(open()?);
        let r = run(&mut input, framing, &mut buf)?;
        if let Some((at, what)) = &r.stop {
            misfits.push((framing, *at, what.clone()));
        }
        let whole = r.stop.is_none();
        if r.packets > 0 && best.as_ref().is_none_or(|(_, b, _)| r.end > b.end) {
            best = Some((framing, r, input));
        }
        if whole && best.as_ref().is_some_and(|(f, ..)| *f == framing) {
            break;
        }
    }
    let Some((framing, r, mut input)) = best else {
        return Ok(Err(misfits));
    };
    input.drain()?;
    Ok(Ok(decide(framing, r, input.crc, input.bytes, name_ms)))
}

fn decide(framing: Framing, r: Run, crc: u32, file_len: u64, name_ms: Option<u64>) -> Scan {
    let (codes, ambiguous) = match (framing, &r.three, &r.four) {
        (Framing::Events, None, Some(_)) => (Some(Codes::Three), false),
        (Framing::Events, Some(_), None) => (Some(Codes::Four), false),
        (Framing::Events, None, None) => (Some(Codes::Four), true),
        (Framing::Events, Some((a, _)), Some((b, _))) => {
            (Some(if a > b { Codes::Three } else { Codes::Four }), false)
        }
        _ => (None, false),
    };
    let near_name = name_ms.is_none_or(|n| r.first_time.abs_diff(n) <= NAME_SLACK_MS);
    let unit = if framing != Framing::Events || (r.all_ms && r.packets > 0 && near_name) {
        TimeUnit::WallMillis
    } else {
        TimeUnit::OffsetMicros
    };
    Scan {
        layout: Layout {
            framing,
            codes,
            unit,
        },
        end: r.end,
        packets: r.packets,
        damage: r.stop,
        ambiguous_codes: ambiguous,
        crc,
        file_len,
        first_time: r.first_time,
        last_time: r.last_time,
    }
}

/// Reads until `buf` is full or the input ends; the number of bytes read.
pub fn read_full(input: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
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
