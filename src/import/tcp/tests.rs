use super::frames::{Lost, Out, HOLE};
use super::role::ServerSpec;
use super::*;
use crate::import::pcap::link::Segment;
use crate::wire::op_msg::{MsgFlags, OpMsg};
use bson::rawdoc;

#[derive(Default)]
struct Seen {
    events: Vec<String>,
    messages: Vec<(bool, Vec<u8>)>,
    gaps: Vec<Lost>,
}

impl Events for Seen {
    type Error = ();
    fn message(&mut self, conn: &Conn, from_client: bool, out: Out) -> Result<(), ()> {
        assert_eq!(conn.server.port(), 27017);
        match out {
            Out::Message { bytes, .. } => self.messages.push((from_client, bytes.to_vec())),
            Out::Gap { lost, .. } => self.gaps.push(lost),
        }
        Ok(())
    }
    fn close(&mut self, conn: &Conn, by: Ender, reset: bool, _: u64) -> Result<(), ()> {
        self.events
            .push(format!("close {} {by:?} {reset}", conn.id));
        Ok(())
    }
}

fn msg(id: i32, to: i32) -> Vec<u8> {
    OpMsg::with_body(rawdoc! { "ping": id, "$db": "admin" }, MsgFlags::empty()).encode(id, to)
}

const C: &str = "10.0.0.1:40000";
const S: &str = "10.0.0.2:27017";

fn seg<'a>(from_client: bool, seq: u32, flags: &str, payload: &'a [u8]) -> Segment<'a> {
    let (src, dst) = if from_client { (C, S) } else { (S, C) };
    Segment {
        src: src.parse().unwrap(),
        dst: dst.parse().unwrap(),
        seq,
        syn: flags.contains('S'),
        ack: flags.contains('A'),
        ack_number: 0,
        fin: flags.contains('F'),
        rst: flags.contains('R'),
        payload,
        missing: 0,
    }
}

fn run(segments: &[Segment<'_>]) -> Seen {
    let mut r = Reassembler::new(
        ServerSpec::default(),
        Bounds {
            window: 1 << 20,
            ..Bounds::default()
        },
    );
    let mut seen = Seen::default();
    for (i, s) in segments.iter().enumerate() {
        r.segment(s, i as u64, &mut seen).unwrap();
    }
    r.finish(99, &mut seen).unwrap();
    seen
}

#[test]
fn a_whole_connection_in_order() {
    let (q, a) = (msg(1, 0), msg(2, 1));
    let seen = run(&[
        seg(true, 100, "S", b""),
        seg(false, 500, "SA", b""),
        seg(true, 101, "A", &q),
        seg(false, 501, "A", &a),
        seg(true, 101 + q.len() as u32, "FA", b""),
        seg(false, 501 + a.len() as u32, "FA", b""),
    ]);
    assert_eq!(seen.messages, vec![(true, q), (false, a)]);
    assert!(seen.gaps.is_empty());
    assert_eq!(seen.events, vec!["close 1 Client false"]);
}

#[test]
fn duplicates_are_dropped_and_reordering_undone() {
    let (q1, q2) = (msg(1, 0), msg(3, 0));
    let both = [q1.clone(), q2.clone()].concat();
    let seen = run(&[
        seg(true, 100, "S", b""),
        seg(true, 101 + 30, "A", &both[30..]),
        seg(true, 101, "A", &both[..40]),
        seg(true, 101, "A", &both[..40]),
        seg(true, 101 + 10, "A", &both[10..20]),
    ]);
    assert_eq!(seen.messages, vec![(true, q1), (true, q2)]);
    assert!(seen.gaps.is_empty());
}

#[test]
fn a_missing_segment_is_a_gap_declared_when_the_server_answers() {
    let (q1, q2, a2) = (msg(1, 0), msg(3, 0), msg(4, 3));
    let n = q1.len() as u32;
    let seen = run(&[
        seg(true, 100, "S", b""),
        seg(false, 500, "SA", b""),
        seg(true, 101, "A", &q1[..20]),
        // q1[20..] never captured
        seg(true, 101 + n, "A", &q2),
        seg(false, 501, "A", &a2),
    ]);
    assert_eq!(seen.messages, vec![(true, q2), (false, a2)]);
    assert_eq!(
        seen.gaps,
        vec![Lost {
            messages: 1,
            bytes: u64::from(n),
            reason: HOLE
        }]
    );
    assert_eq!(seen.events, vec!["close 1 Capture false"]);
}

#[test]
fn without_a_syn_the_port_and_the_first_message_tell_the_sides() {
    let (q, a) = (msg(1, 0), msg(2, 1));
    let seen = run(&[
        seg(false, 9, "A", &a[5..]),
        seg(true, 7, "A", &q),
        seg(false, 9 + 29, "RA", b""),
    ]);
    assert_eq!(seen.messages, vec![(true, q)]);
    assert_eq!(seen.events, vec!["close 1 Server true"]);
}

/// The server's reply was never captured, but the client acknowledged its bytes before closing:
/// the capture lacks them, which is a gap, not silence.
#[test]
fn a_reply_acknowledged_but_never_captured_is_a_gap() {
    let (q, a) = (msg(1, 0), msg(2, 1));
    let (nq, na) = (q.len() as u32, a.len() as u32);
    let mut fin = seg(true, 101 + nq, "FA", b"");
    fin.ack_number = 501 + na;
    let mut last = seg(false, 501 + na, "FA", b"");
    last.ack_number = 101 + nq + 1;
    let seen = run(&[
        seg(true, 100, "S", b""),
        seg(false, 500, "SA", b""),
        seg(true, 101, "A", &q),
        // the reply's segment is not in the capture
        fin,
        last,
    ]);
    assert_eq!(seen.messages, vec![(true, q)]);
    assert_eq!(seen.gaps.len(), 1, "{:?}", seen.gaps);
    assert_eq!(seen.gaps[0].bytes, u64::from(na));
    assert_eq!(seen.events, vec!["close 1 Client false"]);
}

/// A segment held early, then overtaken by an in-order one that covers it: the held copy came
/// first and its bytes win.
#[test]
fn a_held_segment_overtaken_in_order_keeps_its_bytes() {
    let q = msg(1, 0);
    let mut other = q.clone();
    let tail = other.len() - 10;
    other[tail..].fill(b'x');
    let seen = run(&[
        seg(true, 100, "S", b""),
        seg(false, 500, "SA", b""),
        seg(true, 101 + 20, "A", &q[20..]),
        seg(true, 101, "A", &other),
    ]);
    assert_eq!(seen.messages, vec![(true, q)]);
    assert!(seen.gaps.is_empty(), "{:?}", seen.gaps);
}

/// A lone segment 2^30 ahead is no loss of 2^30 bytes: nothing confirms the bytes between.
#[test]
fn a_segment_forged_far_ahead_is_dropped_not_a_hole() {
    let (q1, q2) = (msg(1, 0), msg(3, 0));
    let n = q1.len() as u32;
    let mut r = Reassembler::new(ServerSpec::default(), Bounds::default());
    let mut seen = Seen::default();
    let segs = [
        seg(true, 100, "S", b""),
        seg(false, 500, "SA", b""),
        seg(true, 101, "A", &q1),
        seg(true, 101 + (1 << 30), "A", b"forged"),
        seg(true, 101 + n, "A", &q2),
    ];
    for (i, s) in segs.iter().enumerate() {
        r.segment(s, i as u64, &mut seen).unwrap();
    }
    r.finish(99, &mut seen).unwrap();
    assert_eq!(seen.messages, vec![(true, q1), (true, q2)]);
    assert!(seen.gaps.is_empty(), "{:?}", seen.gaps);
    assert_eq!((r.stats().out_of_window, r.stats().missing_bytes), (1, 0));
}

fn client_seg(i: u32, payload: &[u8]) -> Segment<'_> {
    let mut s = seg(true, 7, "A", payload);
    s.src = SocketAddr::new(
        [10, 0, (i >> 8) as u8, i as u8].into(),
        1024 + (i >> 16) as u16,
    );
    s
}

/// Past the bound on connections the oldest are let go, each a counted gap; the bytes held stay
/// within the bound.
#[test]
fn past_the_bounds_the_oldest_connections_are_let_go() {
    let q = msg(1, 0);
    let bounds = Bounds {
        max_flows: 100,
        max_bytes: 1 << 20,
        ..Bounds::default()
    };
    let mut r = Reassembler::new(ServerSpec::default(), bounds);
    let mut seen = Seen::default();
    for i in 0..1000 {
        r.segment(&client_seg(i, &q[..20]), u64::from(i), &mut seen)
            .unwrap();
        assert!(r.open() <= 100);
        assert!(r.held_bytes() <= 1 << 20);
    }
    assert_eq!(r.stats().evicted, 900);
    assert_eq!(seen.gaps.len(), 900);
    assert_eq!(seen.gaps[0].reason, super::frames::LET_GO);
    let idle = Bounds {
        idle_ns: 10,
        ..Bounds::default()
    };
    let mut r = Reassembler::new(ServerSpec::default(), idle);
    r.segment(&client_seg(1, &q), 0, &mut seen).unwrap();
    r.segment(&client_seg(2, &q), 11, &mut seen).unwrap();
    assert_eq!((r.stats().expired, r.open()), (1, 1));
}

/// A connection whose first bytes are a TLS record writes nothing, and is named.
#[test]
fn a_tls_connection_is_left_out_and_named() {
    let hello = [
        0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03, 0, 0, 0, 0, 0,
    ];
    let mut r = Reassembler::new(ServerSpec::default(), Bounds::default());
    let mut seen = Seen::default();
    let segs = [
        seg(true, 100, "S", b""),
        seg(false, 500, "SA", b""),
        seg(true, 101, "A", &hello),
        seg(false, 501, "A", &[0x16, 0x03, 0x03, 0x00, 0x7a, 0x02, 0, 0]),
        seg(true, 101 + 5000, "A", &[0x17; 200]),
        seg(true, 101 + 9000, "FA", b""),
        seg(false, 600, "FA", b""),
    ];
    for (i, s) in segs.iter().enumerate() {
        r.segment(s, i as u64, &mut seen).unwrap();
    }
    r.finish(99, &mut seen).unwrap();
    assert!(seen.messages.is_empty() && seen.gaps.is_empty() && seen.events.is_empty());
    assert_eq!(r.stats().tls_connections, 1);
    assert_eq!(r.stats().tls, vec![format!("{C} -> {S}")]);
}

/// Two segments held early that overlap: the one held first keeps its bytes, whichever starts
/// earlier.
#[test]
fn held_segments_that_overlap_keep_the_first_copy() {
    let q = msg(1, 0);
    let mut other = q.clone();
    other[30..].fill(b'x');
    let seen = run(&[
        seg(true, 100, "S", b""),
        seg(false, 500, "SA", b""),
        seg(true, 101 + 40, "A", &q[40..]),
        seg(true, 101 + 30, "A", &other[30..]),
        seg(true, 101, "A", &q[..30]),
    ]);
    // Bytes 30..40 came only in the second copy; 40.. came first in the first.
    let mut expected = q.clone();
    expected[30..40].fill(b'x');
    assert_eq!(seen.messages, vec![(true, expected)]);
    assert!(seen.gaps.is_empty(), "{:?}", seen.gaps);
}
