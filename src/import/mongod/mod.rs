//! mongod and mongos traffic recordings (`startTrafficRecording`): a recording directory (its
//! `*.bin` files in name order, each checked against `checksum.txt`'s CRC-32C) or a single file
//! of the older single-file layout. Each file is scanned first (`detect`: its layout, how far it
//! fits, its CRC), then read again into the capture; one packet is in memory at a time.
//!
//! [`crate::wire::recording`] parses a packet without I/O, `checksum` reads `checksum.txt`,
//! `internal` tells the deployment's own traffic from its clients'. See `docs/import.md`.
//!
//! Layers, bottom up: checksum internal < detect < read

pub mod checksum;
pub mod detect;
pub mod internal;
mod read;

pub use detect::{Layout, Scan, TimeUnit};
pub use read::{name_ms, read_file, read_packets, refusal, Anchor, Pass, RecordingRead, Session};

use super::error::ImportError;
use super::output::Output;
use crate::wire::recording as packet;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Whether the first bytes are a recording packet's: a plausible length, then (after an event
/// byte or not) a session id and a session text or an address.
pub fn looks_like(head: &[u8]) -> bool {
    if head.len() < 24 {
        return false;
    }
    let prefix = [head[0], head[1], head[2], head[3]];
    if packet::declared_len(prefix, packet::Framing::Addresses).is_err() {
        return false;
    }
    let text_at = |at: usize| head.get(at..).is_some_and(|t| t.starts_with(b"{ id: "));
    let address_at = |at: usize| {
        let t = head.get(at..).unwrap_or_default();
        let end = memchr::memchr(0, t).unwrap_or(t.len());
        std::str::from_utf8(&t[..end]).is_ok_and(|s| s.contains(':') && !s.contains(' ')) && end > 2
    };
    (head[4] <= 3 && text_at(13)) || text_at(12) || address_at(12)
}

/// A directory's `*.bin` files in name order (regular files only).
pub fn bin_files(dir: &Path) -> Result<Vec<PathBuf>, ImportError> {
    let open = |source| ImportError::Open {
        path: dir.to_owned(),
        source,
    };
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(open)? {
        let entry = entry.map_err(open)?;
        let path = entry.path();
        let regular = entry.file_type().map_err(open)?.is_file();
        if regular && path.extension().is_some_and(|e| e == "bin") {
            files.push(path);
        }
    }
    files.sort();
    if files.is_empty() {
        return Err(ImportError::UnknownFormat {
            path: dir.to_owned(),
            what: "a directory without *.bin files: not a traffic recording".into(),
        });
    }
    Ok(files)
}

/// Imports one input (a recording directory or a single file) into `out`, its session ids offset
/// by `key_base`. Damage in a file (a misfit after whole packets, a checksum mismatch) goes to
/// `damaged`, and the import goes on.
pub fn read_input(
    input: &Path,
    out: &mut Output,
    key_base: u64,
    keep_internal: bool,
    read: &mut RecordingRead,
    damaged: &mut Vec<String>,
) -> Result<(), ImportError> {
    let (files, sums) = if input.is_dir() {
        let sums = checksum::read(input)?;
        (bin_files(input)?, sums)
    } else {
        (vec![input.to_owned()], None)
    };
    let mut anchor = Anchor::default();
    let mut sessions = HashMap::new();
    let mut settled = None;
    let mut empty = Vec::new();
    for file in &files {
        let name = file.file_name().unwrap_or_default().to_string_lossy();
        if files.len() > 1 && std::fs::metadata(file).is_ok_and(|m| m.len() == 0) {
            // Said once for all of them below: 100,000 empty files are not 100,000 lines.
            empty.push(name.into_owned());
            continue;
        }
        let scan = match read::scan_file(file) {
            Ok(scan) => scan,
            Err(e) if files.len() > 1 => {
                // One file of a directory that no layout reads: named, and the others read.
                damaged.push(e.to_string());
                read.layouts.push(format!("{name}: none fits"));
                continue;
            }
            Err(e) => return Err(e),
        };
        let scan = note_layout(&name, scan, &mut settled, read);
        verify(&name, &scan, sums.as_ref(), input.is_dir(), read, damaged);
        anchor.learn(file, &scan);
        let pass = Pass {
            key_base,
            keep_internal,
            anchor,
        };
        anchor = read_file(file, &scan, &pass, &mut sessions, out, read)?;
        if let Some((at, what)) = &scan.damage {
            damaged.push(format!(
                "{}: at byte {at}: {what} (layout {}); the packets before it were imported",
                file.display(),
                scan.layout.name()
            ));
        }
    }
    if let Some(line) = empty_files(input, &empty) {
        read.layouts.push(line.clone());
        damaged.push(line);
    }
    out.close_all("still open when the recording ended", anchor.last_ns)
}

/// One line for the empty files of a recording: `DIR: 3 empty files skipped: a.bin, b.bin, c.bin`,
/// with the first two and the last named past three.
fn empty_files(dir: &Path, names: &[String]) -> Option<String> {
    let listed = match names {
        [] => return None,
        [a, b, c] => format!("{a}, {b}, {c}"),
        [first, second, .., last] if names.len() > 3 => format!("{first}, {second}, ..., {last}"),
        _ => names.join(", "),
    };
    let n = names.len();
    let files = if n == 1 { "file" } else { "files" };
    Some(format!(
        "{}: {n} empty {files} skipped: {listed}",
        dir.display()
    ))
}

/// The layout of a file in the summary. A file both code sets read (no reply, no code 1 or 3)
/// takes the codes an earlier file of its recording settled.
fn note_layout(
    name: &str,
    mut scan: Scan,
    settled: &mut Option<packet::Codes>,
    read: &mut RecordingRead,
) -> Scan {
    match (scan.ambiguous_codes, *settled) {
        (true, Some(codes)) if scan.layout.framing == packet::Framing::Events => {
            scan.layout.codes = Some(codes);
            scan.ambiguous_codes = false;
        }
        (false, _) if scan.layout.codes.is_some() => *settled = scan.layout.codes,
        _ => {}
    }
    let note = if scan.ambiguous_codes {
        "; codes not told apart: no reply, no code 1 or 3"
    } else {
        ""
    };
    let (layout, what) = (scan.layout.name(), scan.layout.describe());
    read.layouts
        .push(format!("{name}: {layout} ({what}{note})"));
    scan
}

fn verify(
    name: &str,
    scan: &Scan,
    sums: Option<&HashMap<String, u32>>,
    in_dir: bool,
    read: &mut RecordingRead,
    damaged: &mut Vec<String>,
) {
    match sums.and_then(|s| s.get(name)) {
        Some(&want) if want == scan.crc => read.checksums_verified += 1,
        Some(&want) => {
            let text = format!(
                "{name}: checksum.txt gives CRC-32C {want:08x}, the file's {} bytes have {:08x}",
                scan.file_len, scan.crc
            );
            read.checksum_mismatches.push(text.clone());
            damaged.push(text);
        }
        None if in_dir => read.unverified.push(format!(
            "{name}: {}",
            if sums.is_some() {
                "not in checksum.txt"
            } else {
                "no checksum.txt"
            }
        )),
        None => read
            .unverified
            .push(format!("{name}: a single file (no checksum.txt)")),
    }
}
