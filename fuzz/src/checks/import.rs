//! `mongotape import`'s packet path: a pcap or pcapng file read, each packet's layers decoded,
//! TCP put back together and cut into messages.

use super::mode;
use mongotape::import::pcap::{self, link};
use mongotape::import::tcp::frames::Out;
use mongotape::import::tcp::{Bounds, Conn, Ender, Events, Reassembler};
use mongotape::import::{ImportError, ServerSpec};
use mongotape::wire::MsgHeader;
use std::io::Cursor;
use std::path::Path;

/// Checks what the reassembly hands over: whole messages, and gaps that lost something.
struct Check {
    messages: usize,
}

impl Events for Check {
    type Error = ImportError;
    fn message(&mut self, conn: &Conn, _from_client: bool, out: Out) -> Result<(), ImportError> {
        assert_ne!(conn.client, conn.server);
        match out {
            Out::Message { bytes, .. } => {
                let header = MsgHeader::parse(&bytes)
                    .expect("a sane length")
                    .expect("16 bytes");
                assert_eq!(header.message_length, bytes.len(), "a whole message");
                self.messages += 1;
            }
            Out::Gap { lost, .. } => assert!(lost.bytes > 0, "a gap loses bytes: {lost:?}"),
        }
        Ok(())
    }
    fn close(&mut self, _: &Conn, _: Ender, _: bool, _: u64) -> Result<(), ImportError> {
        Ok(())
    }
}

/// An even first byte: the input is the file as it is. Odd: the rest is cut into packets of a
/// pcap file made here (raw IPv4/TCP headers from the input, so the fuzzer reaches the
/// reassembly), each packet's length from one input byte. Either way: no panic, whole messages.
pub fn pcap_import(data: &[u8]) {
    let (m, rest) = mode(data);
    let file = if m & 1 == 0 {
        data.to_vec()
    } else {
        packets_file(m, rest)
    };
    let spec = ServerSpec {
        ports: if m & 2 == 0 { vec![] } else { vec![27017] },
        addrs: vec![],
    };
    // Small bounds, so that the flood and the hold reach them: never passed, whatever the file.
    let bounds = Bounds {
        window: 4096,
        max_flows: 64,
        max_bytes: 1 << 20,
        ..Bounds::default()
    };
    let mut tcp = Reassembler::new(spec, bounds);
    let mut check = Check { messages: 0 };
    let mut last = 0;
    let _ = pcap::read(Cursor::new(file), Path::new("fuzz"), &mut |p| {
        last = p.ts_ns;
        match link::segment(p.linktype, p.data, p.orig_len) {
            Ok(seg) => {
                tcp.segment(&seg, p.ts_ns, &mut check)?;
                assert!(tcp.open() <= bounds.max_flows, "{} connections", tcp.open());
                assert!(
                    tcp.held_bytes() <= bounds.max_bytes,
                    "{} held",
                    tcp.held_bytes()
                );
                Ok(())
            }
            Err(_) => Ok(()),
        }
    });
    tcp.finish(last, &mut check).expect("the check never fails");
}

/// A pcap (raw IP link type) whose packets are IPv4+TCP between two fixed ends, with the TCP
/// sequence number, flags and payload taken from the input.
fn packets_file(m: u8, mut rest: &[u8]) -> Vec<u8> {
    // magic, version 2.4, zone, sigfigs, snaplen, link type
    let mut out = Vec::new();
    out.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
    out.extend_from_slice(&[2, 0, 4, 0]);
    for v in [0u32, 0, 65535, link::RAW as u32] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    let mut ts = 0u32;
    while rest.len() >= 6 {
        let (head, tail) = rest.split_at(6);
        let len = (head[0] as usize).min(tail.len());
        let (payload, next) = tail.split_at(len);
        rest = next;
        let seq = u32::from_le_bytes([head[1], head[2], head[3], 0]);
        let flags = head[4];
        let to_server = head[5] & 1 == 0;
        let cut = u32::from(head[5] >> 4) * u32::from(m >> 4 != 0);
        let packet = tcp_packet(to_server, seq, flags, payload, cut as usize);
        ts += 1;
        let caplen = packet.len() as u32;
        for v in [ts, 0, caplen, caplen + cut] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.extend_from_slice(&packet);
    }
    out
}

/// The IP header says `cut` bytes more than the payload given (the snaplen cut them).
fn tcp_packet(to_server: bool, seq: u32, flags: u8, payload: &[u8], cut: usize) -> Vec<u8> {
    let (client, server) = (([10, 0, 0, 1], 40000u16), ([10, 0, 0, 2], 27017u16));
    let (src, dst) = if to_server {
        (client, server)
    } else {
        (server, client)
    };
    let total = (20 + 20 + payload.len() + cut) as u16;
    let mut p = vec![0x45, 0, 0, 0, 0, 0, 0x40, 0, 64, 6, 0, 0];
    p[2..4].copy_from_slice(&total.to_be_bytes());
    p.extend_from_slice(&src.0);
    p.extend_from_slice(&dst.0);
    p.extend_from_slice(&src.1.to_be_bytes());
    p.extend_from_slice(&dst.1.to_be_bytes());
    p.extend_from_slice(&seq.to_be_bytes());
    p.extend_from_slice(&[0, 0, 0, 0, 0x50, flags & 0x17, 0xff, 0xff, 0, 0, 0, 0]);
    p.extend_from_slice(payload);
    p
}

/// A mongoreplay playback file: the input as it is (an even first byte), or gzipped here (odd),
/// into a capture written to a scratch file. Any outcome but a panic; a capture that was written
/// reads back to its `end` record.
pub fn mongoreplay_import(data: &[u8]) {
    use mongotape::import::output::{Output, OutputSpec};
    use mongotape::redact::Redaction;
    let (m, rest) = mode(data);
    let input = if m & 1 == 0 {
        data.to_vec()
    } else {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut gz, rest).expect("in memory");
        gz.finish().expect("in memory")
    };
    let path = std::env::temp_dir().join(format!("mongotape-fuzz-{}.mtape", std::process::id()));
    let mut out = Output::new(OutputSpec {
        path: path.clone(),
        force: true,
        zstd_level: 1,
        redaction: Redaction::Credentials,
        upstream: String::new(),
        source: "mongoreplay: fuzz".into(),
        skip_probes: false,
    });
    let result = mongotape::import::mongoreplay::read(
        Cursor::new(input),
        m & 1 == 1,
        Path::new("fuzz"),
        &mut out,
        0,
        &mut Default::default(),
    );
    if out.finish(0).is_ok() {
        let records: Vec<_> = mongotape::capture::CaptureReader::open(&path)
            .expect("a capture just written")
            .map(|r| r.expect("a capture just written reads"))
            .collect();
        assert_eq!(
            records.last().map(|r| r.kind),
            Some(mongotape::capture::RecordKind::End)
        );
    }
    let _ = result;
    let _ = std::fs::remove_file(&path);
}

/// A mongod/mongos traffic recording file: scanned for its layout (each framing over the whole
/// input), then read up to where the layout fits into a capture written to a scratch file. Any
/// outcome but a panic; what the scan accepts, the reading accepts too (it never meets a packet
/// the scan refused), and a capture that was written reads back to its `end` record.
pub fn mongod_recording_import(data: &[u8]) {
    use mongotape::import::mongod::{self, Anchor, Pass, RecordingRead};
    use mongotape::import::output::{Output, OutputSpec};
    use mongotape::redact::Redaction;
    let open = || Ok::<_, std::io::Error>(Cursor::new(data));
    let scan = match mongod::detect::scan(open, None).expect("reading memory") {
        Ok(scan) => scan,
        Err(misfits) => {
            let _ = mongod::refusal(Path::new("fuzz"), &misfits).to_string();
            return;
        }
    };
    assert!(scan.end <= data.len() as u64 && scan.packets > 0);
    assert_eq!(scan.file_len, data.len() as u64);
    let mut whole = mongod::checksum::CrcReader::new(data);
    whole.drain().expect("reading memory");
    assert_eq!(scan.crc, whole.crc);
    let path = std::env::temp_dir().join(format!(
        "mongotape-fuzz-mongod-{}.mtape",
        std::process::id()
    ));
    let mut out = Output::new(OutputSpec {
        path: path.clone(),
        force: true,
        zstd_level: 1,
        redaction: Redaction::Credentials,
        upstream: String::new(),
        source: "mongod recording: fuzz".into(),
        skip_probes: false,
    });
    let mut read = RecordingRead::default();
    let mut anchor = Anchor::default();
    anchor.learn(Path::new("fuzz"), &scan);
    let pass = Pass {
        key_base: 0,
        keep_internal: data.first().is_some_and(|b| b & 1 == 1),
        anchor,
    };
    let mut sessions = std::collections::HashMap::new();
    let result = mongod::read_packets(
        Cursor::new(data),
        Path::new("fuzz"),
        &scan,
        &pass,
        &mut sessions,
        &mut out,
        &mut read,
    );
    assert!(
        result.is_ok(),
        "the scan accepted what the reading refused: {result:?}"
    );
    assert_eq!(read.packets, scan.packets);
    if out.close_all("end", 0).is_ok() && out.finish(0).is_ok() {
        let records: Vec<_> = mongotape::capture::CaptureReader::open(&path)
            .expect("a capture just written")
            .map(|r| r.expect("a capture just written reads"))
            .collect();
        assert_eq!(
            records.last().map(|r| r.kind),
            Some(mongotape::capture::RecordKind::End)
        );
    }
    let _ = std::fs::remove_file(&path);
}
