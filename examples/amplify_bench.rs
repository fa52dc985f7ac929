//! How long the recorder's redaction spends on the amplification attack of docs/reliability.md:
//! N zstd frames of ~1.5 KB on one connection, each declaring (and holding) 47,999,984 bytes.
//! Prints the cost before the inflation budget (each frame inflated whole and searched, as the
//! credential scan did) and with it (`Redactor::message_within` on one connection's budget).
//!
//! `cargo run --example amplify_bench [N]` (default 300). A figure, not a test.

use mongotape::redact::{Direction, InflateBudget, Redaction, Redactor};
use mongotape::wire::{compressed, MsgFlags, OpMsg, Section};
use std::time::Instant;

const DECLARED: usize = 47_999_984;

fn op_msg(body: bson::RawDocumentBuf) -> Vec<u8> {
    OpMsg {
        flags: MsgFlags::empty(),
        sections: vec![Section::Body(body)],
        checksum: None,
    }
    .encode(9, 0)
}

/// An OP_COMPRESSED insert of one 48 MB string of one letter, zstd level 19.
fn frame() -> Vec<u8> {
    let overhead = op_msg(bson::rawdoc! { "insert": "amp", "$db": "hostile", "s": "" }).len() - 16;
    let msg = op_msg(
        bson::rawdoc! { "insert": "amp", "$db": "hostile", "s": "a".repeat(DECLARED - overhead) },
    );
    let packed = zstd::bulk::compress(&msg[16..], 19).expect("zstd");
    let mut f = Vec::with_capacity(25 + packed.len());
    for v in [
        (25 + packed.len()) as i32,
        9,
        0,
        2012,
        2013,
        DECLARED as i32,
    ] {
        f.extend_from_slice(&v.to_le_bytes());
    }
    f.push(3);
    f.extend_from_slice(&packed);
    f
}

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .map_or(300, |a| a.parse().expect("a number of frames"));
    let f = frame();
    println!("{n} frames of {} bytes, each declaring {DECLARED}", f.len());
    let needles: &[&[u8]] = &[
        b"payload\0",
        b"pwd\0",
        b"key\0",
        b"speculativeAuthenticate\0",
    ];
    let t = Instant::now();
    let samples = 3;
    for _ in 0..samples {
        let (_, inner) = compressed::decompress(&f).expect("inflates");
        assert!(!needles
            .iter()
            .any(|nd| memchr::memmem::find(&inner, nd).is_some()));
    }
    let per = t.elapsed().as_secs_f64() / samples as f64;
    println!(
        "before: {per:.3} s a frame (inflated whole, searched), {:.1} s for {n}",
        per * n as f64
    );
    let redactor = Redactor::new(Redaction::Credentials);
    let mut budget = InflateBudget::default();
    let t = Instant::now();
    let refused = (0..n)
        .filter(|_| {
            redactor
                .message_within(&f, Direction::Request, &mut budget)
                .is_err()
        })
        .count();
    println!(
        "after: {:.3} s for {n}: {} inflated, {refused} left out (past the budget)",
        t.elapsed().as_secs_f64(),
        n - refused
    );
}
