use super::*;
use crate::wire::op_msg::{MsgFlags, OpMsg};
use bson::rawdoc;

fn msg(i: i32) -> Vec<u8> {
    OpMsg::with_body(rawdoc! { "ping": i, "$db": "admin" }, MsgFlags::empty()).encode(i, 0)
}

fn messages(out: &[Out]) -> Vec<Vec<u8>> {
    out.iter()
        .filter_map(|o| match o {
            Out::Message { bytes, .. } => Some(bytes.to_vec()),
            _ => None,
        })
        .collect()
}

fn gaps(out: &[Out]) -> Vec<Lost> {
    out.iter()
        .filter_map(|o| match o {
            Out::Gap { lost, .. } => Some(*lost),
            _ => None,
        })
        .collect()
}

#[test]
fn in_step_every_split_yields_the_messages() {
    let all: Vec<u8> = (0..3).flat_map(msg).collect();
    for cut in 0..all.len() {
        let mut f = Frames::new(true);
        let mut out = Vec::new();
        f.push(&all[..cut], 1, &mut out);
        f.push(&all[cut..], 2, &mut out);
        assert_eq!(
            messages(&out),
            (0..3).map(msg).collect::<Vec<_>>(),
            "cut {cut}"
        );
        assert!(gaps(&out).is_empty());
    }
}

#[test]
fn joined_midstream_starts_at_the_first_boundary_that_parses() {
    let all: Vec<u8> = (0..3).flat_map(msg).collect();
    let first = msg(0).len();
    let mut f = Frames::new(false);
    let mut out = Vec::new();
    f.push(&all[7..], 1, &mut out);
    assert_eq!(messages(&out), vec![msg(1), msg(2)]);
    let g = gaps(&out);
    assert_eq!(g.len(), 1);
    assert_eq!(g[0].bytes, (first - 7) as u64);
    assert_eq!(g[0].reason, MIDSTREAM);
}

#[test]
fn a_hole_inside_a_known_message_loses_that_one_only() {
    let (a, b) = (msg(1), msg(2));
    let mut f = Frames::new(true);
    let mut out = Vec::new();
    f.push(&a[..20], 1, &mut out);
    f.hole(10, HOLE, 2, &mut out);
    f.push(&a[30..], 3, &mut out);
    f.push(&b, 4, &mut out);
    assert_eq!(messages(&out), vec![b]);
    assert_eq!(
        gaps(&out),
        vec![Lost {
            messages: 1,
            bytes: a.len() as u64,
            reason: HOLE
        }]
    );
}

#[test]
fn a_hole_across_a_boundary_resyncs_and_reports_once() {
    let all: Vec<u8> = (0..4).flat_map(msg).collect();
    let n = msg(0).len();
    let mut f = Frames::new(true);
    let mut out = Vec::new();
    f.push(&all[..n - 5], 1, &mut out);
    f.hole(20, HOLE, 2, &mut out);
    f.push(&all[n + 15..], 3, &mut out);
    assert_eq!(messages(&out), vec![msg(2), msg(3)]);
    let g = gaps(&out);
    assert_eq!(g.len(), 1);
    assert_eq!(g[0].bytes, (2 * n) as u64);
    assert_eq!(g[0].reason, HOLE);
}

#[test]
fn garbage_is_a_gap_then_the_stream_goes_on() {
    let mut f = Frames::new(true);
    let mut out = Vec::new();
    f.push(&[0xff; 40], 1, &mut out);
    f.push(&msg(5), 2, &mut out);
    assert_eq!(messages(&out), vec![msg(5)]);
    assert_eq!(gaps(&out)[0].bytes, 40);
    assert_eq!(gaps(&out)[0].reason, GARBAGE);
}

#[test]
fn a_message_cut_by_the_end_is_reported() {
    let mut f = Frames::new(true);
    let mut out = Vec::new();
    f.push(&msg(1)[..25], 1, &mut out);
    f.finish(2, &mut out, ENDED);
    assert_eq!(
        gaps(&out),
        vec![Lost {
            messages: 1,
            bytes: 25,
            reason: ENDED
        }]
    );
}

/// After garbage, every piece begins with a header declaring 16 MiB: each position is looked at
/// once and each candidate parsed once (it was the whole buffer again per piece).
#[test]
fn overlapping_long_candidates_are_searched_in_linear_time() {
    let mut f = Frames::new(true);
    let mut out = Vec::new();
    f.push(&[0xff; 100], 1, &mut out);
    let mut piece = vec![0u8; 1448];
    piece[..4].copy_from_slice(&(16i32 << 20).to_le_bytes());
    piece[12..16].copy_from_slice(&2013i32.to_le_bytes());
    let started = std::time::Instant::now();
    let pieces = (24 << 20) / piece.len();
    for _ in 0..pieces {
        f.push(&piece, 2, &mut out);
    }
    f.push(&msg(9), 3, &mut out);
    assert!(started.elapsed().as_secs() < 20, "{:?}", started.elapsed());
    assert_eq!(messages(&out), vec![msg(9)]);
    let lost: u64 = gaps(&out).iter().map(|g| g.bytes).sum();
    assert_eq!(lost, 100 + (pieces * piece.len()) as u64);
    assert!(f.memory() < 1 << 20, "{}", f.memory());
}
