//! A packet's TCP segment: the link layer by link type (Ethernet with VLAN tags, Linux cooked SLL
//! and SLL2, BSD NULL/loopback, raw IP), then IPv4/IPv6 and TCP through `etherparse`, leniently:
//! a packet the snaplen cut keeps what was captured, and says how many bytes are missing.

use etherparse::{EtherType, LaxNetSlice, LaxSlicedPacket, TransportSlice};
use std::net::{IpAddr, SocketAddr};

/// Link types (tcpdump.org's LINKTYPE_ numbers).
pub const ETHERNET: i32 = 1;
pub const NULL: i32 = 0;
pub const LOOP: i32 = 108;
pub const RAW: i32 = 101;
pub const RAW_OLD: [i32; 2] = [12, 14];
pub const IPV4: i32 = 228;
pub const IPV6: i32 = 229;
pub const LINUX_SLL: i32 = 113;
pub const LINUX_SLL2: i32 = 276;

/// One TCP segment of a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment<'a> {
    pub src: SocketAddr,
    pub dst: SocketAddr,
    pub seq: u32,
    pub syn: bool,
    pub ack: bool,
    /// The acknowledgement number (meaningful with `ack`): the next byte the sender expects.
    pub ack_number: u32,
    pub fin: bool,
    pub rst: bool,
    /// The payload bytes captured.
    pub payload: &'a [u8],
    /// Payload bytes the packet carried beyond what was captured (cut by the snaplen).
    pub missing: u32,
}

/// Why a packet holds no TCP segment mongotape can use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Skip {
    /// A link type mongotape does not read.
    Linktype,
    /// Not IP, or not TCP (ARP, UDP, ICMP, ...).
    NotTcp,
    /// An IP fragment (TCP over fragmented IP is not reassembled).
    Fragment,
    /// Headers cut or malformed.
    Malformed,
}

/// The TCP segment of a packet captured with link type `linktype`.
pub fn segment(linktype: i32, data: &[u8], orig_len: u32) -> Result<Segment<'_>, Skip> {
    let sliced = match linktype {
        ETHERNET => LaxSlicedPacket::from_ethernet(data).map_err(|_| Skip::Malformed)?,
        LINUX_SLL => {
            let proto = be16(data, 14).ok_or(Skip::Malformed)?;
            LaxSlicedPacket::from_ether_type(EtherType(proto), &data[16..])
        }
        LINUX_SLL2 => {
            let proto = be16(data, 0).ok_or(Skip::Malformed)?;
            let rest = data.get(20..).ok_or(Skip::Malformed)?;
            LaxSlicedPacket::from_ether_type(EtherType(proto), rest)
        }
        NULL | LOOP => {
            let rest = data.get(4..).ok_or(Skip::Malformed)?;
            LaxSlicedPacket::from_ip(rest).map_err(|_| Skip::NotTcp)?
        }
        RAW | IPV4 | IPV6 => LaxSlicedPacket::from_ip(data).map_err(|_| Skip::NotTcp)?,
        l if RAW_OLD.contains(&l) => LaxSlicedPacket::from_ip(data).map_err(|_| Skip::NotTcp)?,
        _ => return Err(Skip::Linktype),
    };
    let (src_ip, dst_ip): (IpAddr, IpAddr) = match &sliced.net {
        Some(LaxNetSlice::Ipv4(ip)) => {
            if ip.is_payload_fragmented() {
                return Err(Skip::Fragment);
            }
            let h = ip.header();
            (h.source_addr().into(), h.destination_addr().into())
        }
        Some(LaxNetSlice::Ipv6(ip)) => {
            if ip.is_payload_fragmented() {
                return Err(Skip::Fragment);
            }
            let h = ip.header();
            (h.source_addr().into(), h.destination_addr().into())
        }
        _ => return Err(Skip::NotTcp),
    };
    let Some(TransportSlice::Tcp(tcp)) = &sliced.transport else {
        return Err(if sliced.stop_err.is_some() {
            Skip::Malformed
        } else {
            Skip::NotTcp
        });
    };
    let missing = cut_bytes(&sliced, data.len(), orig_len);
    Ok(Segment {
        src: SocketAddr::new(src_ip, tcp.source_port()),
        dst: SocketAddr::new(dst_ip, tcp.destination_port()),
        seq: tcp.sequence_number(),
        syn: tcp.syn(),
        ack: tcp.ack(),
        ack_number: tcp.acknowledgment_number(),
        fin: tcp.fin(),
        rst: tcp.rst(),
        payload: tcp.payload(),
        missing,
    })
}

/// Payload bytes the snaplen cut: what the IP header says the packet carried beyond what was
/// captured, never the capture file's word alone (an `orig_len` of 4 GiB on a packet whose IP
/// header says it was captured whole loses nothing). Without a usable IP length (0 under
/// segmentation offload), `orig_len`, within what one IP packet can carry.
fn cut_bytes(sliced: &LaxSlicedPacket<'_>, captured: usize, orig_len: u32) -> u32 {
    let by_file = orig_len.saturating_sub(captured as u32);
    let (payload, claimed) = match &sliced.net {
        Some(LaxNetSlice::Ipv4(ip)) => {
            let h = ip.header();
            let claimed = u32::from(h.total_len()).saturating_sub(u32::from(h.ihl()) * 4);
            (ip.payload(), claimed)
        }
        Some(LaxNetSlice::Ipv6(ip)) => (ip.payload(), u32::from(ip.header().payload_length())),
        _ => return 0,
    };
    if claimed == 0 {
        return by_file.min(u32::from(u16::MAX));
    }
    if !payload.incomplete {
        return 0;
    }
    let held = payload.payload.len() as u32;
    by_file.min(claimed.saturating_sub(held))
}

fn be16(data: &[u8], at: usize) -> Option<u16> {
    let b = data.get(at..at + 2)?;
    Some(u16::from_be_bytes([b[0], b[1]]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use etherparse::PacketBuilder;

    fn tcp_v4(payload: &[u8]) -> Vec<u8> {
        let builder = PacketBuilder::ethernet2([1; 6], [2; 6])
            .single_vlan(etherparse::VlanId::try_new(7).unwrap())
            .ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64)
            .tcp(50000, 27017, 1000, 65535)
            .psh();
        let mut out = Vec::new();
        builder.write(&mut out, payload).unwrap();
        out
    }

    #[test]
    fn vlan_tagged_ethernet_gives_the_segment() {
        let frame = tcp_v4(b"hello");
        let s = segment(ETHERNET, &frame, frame.len() as u32).unwrap();
        assert_eq!(s.src, "10.0.0.1:50000".parse().unwrap());
        assert_eq!(s.dst, "10.0.0.2:27017".parse().unwrap());
        assert_eq!(s.seq, 1000);
        assert_eq!(s.payload, b"hello");
        assert_eq!(s.missing, 0);
    }

    #[test]
    fn a_cut_packet_says_what_is_missing() {
        let frame = tcp_v4(&[7u8; 100]);
        let cut = &frame[..frame.len() - 40];
        let s = segment(ETHERNET, cut, frame.len() as u32).unwrap();
        assert_eq!(s.payload.len(), 60);
        assert_eq!(s.missing, 40);
    }

    #[test]
    fn a_forged_orig_len_loses_no_more_than_the_ip_header_says() {
        let frame = tcp_v4(&[7u8; 100]);
        let whole = segment(ETHERNET, &frame, u32::MAX).unwrap();
        assert_eq!((whole.payload.len(), whole.missing), (100, 0));
        let cut = segment(ETHERNET, &frame[..frame.len() - 40], u32::MAX).unwrap();
        assert_eq!((cut.payload.len(), cut.missing), (60, 40));
    }

    #[test]
    fn sll2_and_null_and_raw_ip_over_ipv6() {
        let mut ip = Vec::new();
        PacketBuilder::ipv6([1; 16], [2; 16], 64)
            .tcp(27017, 40000, 5, 100)
            .write(&mut ip, b"xyz")
            .unwrap();
        let raw = segment(RAW, &ip, ip.len() as u32).unwrap();
        assert_eq!(raw.payload, b"xyz");
        assert_eq!(raw.src.port(), 27017);
        let mut sll2 = vec![0x86, 0xdd];
        sll2.extend_from_slice(&[0; 18]);
        sll2.extend_from_slice(&ip);
        assert_eq!(segment(LINUX_SLL2, &sll2, sll2.len() as u32), Ok(raw));
        let mut null = 30u32.to_le_bytes().to_vec();
        null.extend_from_slice(&ip);
        assert_eq!(segment(NULL, &null, null.len() as u32), Ok(raw));
    }

    #[test]
    fn garbage_is_skipped_not_a_panic() {
        for lt in [ETHERNET, NULL, LINUX_SLL, LINUX_SLL2, RAW, 9999] {
            for n in 0..64 {
                let junk: Vec<u8> = (0..n).map(|i| (i * 37 + lt as usize) as u8).collect();
                let _ = segment(lt, &junk, n as u32 + 3);
            }
        }
    }
}
