//! pcap and pcapng files read as a stream of packets (`pcap-parser`: a bounded circular buffer,
//! so a 10 GB file reads in constant memory), each packet's link, IP and TCP layers decoded
//! (`link`), and its timestamp in nanoseconds whatever the file's resolution.
//!
//! Layers, bottom up: link

pub mod link;

use super::error::ImportError;
use pcap_parser::pcapng::Block;
use pcap_parser::{create_reader, Linktype, PcapBlockOwned, PcapError};
use std::io::Read;
use std::path::Path;

/// The reader's buffer: room for many packets; grown up to [`MAX_BLOCK`] for a larger block.
const BUFFER: usize = 1 << 20;
/// The largest block read: a packet of 16 MiB is already far beyond any snaplen in use.
const MAX_BLOCK: usize = 16 << 20;

/// One packet as the file holds it.
#[derive(Debug, Clone, Copy)]
pub struct Packet<'a> {
    pub ts_ns: u64,
    pub linktype: i32,
    /// The bytes captured (at most the snaplen).
    pub data: &'a [u8],
    /// The packet's length on the wire; more than `data.len()` when the snaplen cut it.
    pub orig_len: u32,
}

/// An interface of a pcapng section: its link type and time unit.
#[derive(Debug, Clone, Copy)]
struct Interface {
    linktype: i32,
    /// Units per second of its timestamps.
    units: u64,
    offset_s: i64,
}

/// Where the file's packets get their link type and time unit.
#[derive(Debug, Default)]
struct Format {
    /// pcap: one link type and unit for the whole file.
    legacy: Option<Interface>,
    /// pcapng: the current section's interfaces, by id.
    interfaces: Vec<Interface>,
}

/// Reads every packet of `path` in order, handing each to `each`. Returns the number of packets.
/// A file cut short or damaged part-way ends with an error naming the byte offset, after every
/// packet before it was handed over.
pub fn read_file(
    path: &Path,
    each: &mut dyn FnMut(&Packet<'_>) -> Result<(), ImportError>,
) -> Result<u64, ImportError> {
    if super::input::is_stdin(path) {
        return read(std::io::stdin(), path, each);
    }
    read(super::input::open(path)?, path, each)
}

/// [`read_file`] over any reader (the fuzz target and tests read from memory).
pub fn read<R: Read + Send>(
    input: R,
    path: &Path,
    each: &mut dyn FnMut(&Packet<'_>) -> Result<(), ImportError>,
) -> Result<u64, ImportError> {
    let bad = |offset: u64, what: String| ImportError::BadFile {
        path: path.to_owned(),
        offset,
        what,
    };
    let mut reader = create_reader(BUFFER, input).map_err(|e| match e {
        PcapError::Eof => bad(0, "the file is empty".into()),
        PcapError::HeaderNotRecognized => {
            bad(0, "neither a pcap nor a pcapng file (unknown magic)".into())
        }
        e => bad(0, format!("unreadable file header: {}", said(&e))),
    })?;
    let mut format = Format::default();
    let mut packets = 0u64;
    let mut capacity = BUFFER;
    loop {
        let offset = reader.consumed() as u64;
        match reader.next() {
            Ok((len, block)) => {
                if let Some(packet) = format.packet(&block).map_err(|w| bad(offset, w))? {
                    packets += 1;
                    each(&packet)?;
                }
                reader.consume(len);
            }
            Err(PcapError::Eof) => return Ok(packets),
            Err(PcapError::Incomplete(_)) | Err(PcapError::BufferTooSmall) => {
                if reader.reader_exhausted() {
                    let what = "the file ends part-way through a block (truncated)";
                    return Err(bad(offset, what.into()));
                }
                let before = reader.data().len();
                reader
                    .refill()
                    .map_err(|e| bad(offset, format!("read failed: {}", said(&e))))?;
                // A full buffer that could not take the block: grow it, within bounds.
                if reader.data().len() == before && before >= capacity / 2 {
                    if capacity >= MAX_BLOCK || !reader.grow(capacity * 2) {
                        let what = format!("a block larger than {MAX_BLOCK} bytes");
                        return Err(bad(offset, what));
                    }
                    capacity *= 2;
                }
            }
            Err(e) => return Err(bad(offset, format!("not a valid block: {}", said(&e)))),
        }
    }
}

/// The parser's error in words. Its own text for a damaged block is `Internal parser error
/// Verify, input [10, 13, ...]`: Debug text, followed by every byte left in the buffer.
fn said<I>(e: &PcapError<I>) -> String {
    match e {
        PcapError::Eof | PcapError::UnexpectedEof => "the file ends early".into(),
        PcapError::Incomplete(n) => format!("the file ends {n} bytes before the block does"),
        PcapError::BufferTooSmall => format!("a block larger than {MAX_BLOCK} bytes"),
        PcapError::ReadError => "the file could not be read".into(),
        PcapError::HeaderNotRecognized => "neither a pcap nor a pcapng file header".into(),
        PcapError::NomError(_, kind) | PcapError::OwnedNomError(_, kind) => format!(
            "its lengths or fields are malformed (the {} check failed)",
            kind.description().to_lowercase()
        ),
    }
}

impl Format {
    /// The packet a block holds, or `None` for a block without one (headers, statistics, ...).
    fn packet<'a>(&mut self, block: &PcapBlockOwned<'a>) -> Result<Option<Packet<'a>>, String> {
        match block {
            PcapBlockOwned::LegacyHeader(header) => {
                let units = if header.is_nanosecond_precision() {
                    1_000_000_000
                } else {
                    1_000_000
                };
                self.legacy = Some(Interface {
                    linktype: header.network.0,
                    units,
                    offset_s: 0,
                });
                Ok(None)
            }
            PcapBlockOwned::Legacy(b) => {
                let iface = self.legacy.ok_or("a packet before the file header")?;
                let frac = u64::from(b.ts_usec);
                let ts_ns =
                    u64::from(b.ts_sec) * 1_000_000_000 + frac * 1_000_000_000 / iface.units;
                Ok(Some(Packet {
                    ts_ns,
                    linktype: iface.linktype,
                    data: b.data,
                    orig_len: b.origlen,
                }))
            }
            PcapBlockOwned::NG(block) => self.ng_packet(block),
        }
    }

    fn ng_packet<'a>(&mut self, block: &Block<'a>) -> Result<Option<Packet<'a>>, String> {
        match block {
            Block::SectionHeader(_) => {
                self.interfaces.clear();
                Ok(None)
            }
            Block::InterfaceDescription(idb) => {
                let units = idb.ts_resolution().filter(|u| *u > 0).ok_or_else(|| {
                    format!("interface time resolution {} unknown", idb.if_tsresol)
                })?;
                self.interfaces.push(Interface {
                    linktype: idb.linktype.0,
                    units,
                    offset_s: idb.ts_offset(),
                });
                Ok(None)
            }
            Block::EnhancedPacket(epb) => {
                let iface = *self
                    .interfaces
                    .get(epb.if_id as usize)
                    .ok_or_else(|| format!("a packet of undescribed interface {}", epb.if_id))?;
                let raw = (u64::from(epb.ts_high) << 32) | u64::from(epb.ts_low);
                Ok(Some(Packet {
                    ts_ns: iface.ns(raw),
                    linktype: iface.linktype,
                    data: epb.data.get(..epb.caplen as usize).unwrap_or(epb.data),
                    orig_len: epb.origlen,
                }))
            }
            Block::SimplePacket(spb) => {
                let iface = *self
                    .interfaces
                    .first()
                    .ok_or("a packet before any interface")?;
                Ok(Some(Packet {
                    ts_ns: 0,
                    linktype: iface.linktype,
                    data: spb.data.get(..spb.origlen as usize).unwrap_or(spb.data),
                    orig_len: spb.origlen,
                }))
            }
            _ => Ok(None),
        }
    }
}

impl Interface {
    /// A raw timestamp in this interface's unit, as nanoseconds since the Unix epoch.
    fn ns(&self, raw: u64) -> u64 {
        let units = u128::from(self.units);
        let ns = u128::from(raw) * 1_000_000_000 / units;
        let offset = i128::from(self.offset_s) * 1_000_000_000;
        (ns as i128 + offset).clamp(0, i128::from(u64::MAX)) as u64
    }
}

/// The link type's number as a name for messages (`Linktype`'s own names).
pub fn linktype_name(linktype: i32) -> String {
    format!("{}", Linktype(linktype))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(kind: u32, body: &[u8], trailer: u32) -> Vec<u8> {
        let total = (12 + body.len()) as u32;
        let mut b = kind.to_le_bytes().to_vec();
        b.extend(total.to_le_bytes());
        b.extend(body);
        b.extend(trailer.to_le_bytes());
        b
    }

    #[test]
    fn a_malformed_block_is_said_in_words_not_the_parsers_debug_text() {
        let mut shb = 0x1A2B_3C4Du32.to_le_bytes().to_vec();
        shb.extend([1, 0, 0, 0]);
        shb.extend((-1i64).to_le_bytes());
        let mut idb = 1u16.to_le_bytes().to_vec();
        idb.extend([0, 0]);
        idb.extend(65_535u32.to_le_bytes());
        let mut file = block(0x0A0D_0D0A, &shb, 28);
        file.extend(block(1, &idb, 20));
        // An enhanced packet block whose trailing length disagrees with its leading one.
        file.extend(block(6, &[0u8; 20], 99));
        let e = read(&file[..], Path::new("bad.pcapng"), &mut |_| Ok(()))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("bad.pcapng: at byte 48: not a valid block:"),
            "{e}"
        );
        assert!(e.contains("malformed"), "{e}");
        assert!(
            !e.contains("Internal parser error") && !e.contains('['),
            "{e}"
        );
    }
}
