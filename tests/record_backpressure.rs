//! A recorder that cannot keep up never slows or breaks forwarding: messages it cannot take are
//! counted, logged, and marked in the capture with a `gap` record.

mod common;

use common::*;
use mongotape::capture::{CaptureReader, GapEvent, RecordKind};

#[test]
fn a_full_recorder_queue_is_counted_logged_and_marked() {
    let server = Server::start();
    let dir = tempdir();
    let out = dir.path().join("gap.mtape");
    // No room at all in the recorder queue: every message overflows it.
    // Not --quiet: the final status line (which -q drops) says DROPPED.
    let proxy = Proxy::start_with(server.addr(), &out, &["--max-queue-mb", "0"]);
    let direct = run_client(Client::Pymongo, "basic", &server.uri(), "bench", 0.3);
    let proxied = run_client(Client::Pymongo, "basic", &proxy.uri(), "bench", 0.3);
    assert_eq!(
        direct.results(),
        proxied.results(),
        "forwarding is unaffected"
    );
    let exit = proxy.stop();
    assert!(exit.stderr.contains("could not keep up"), "{}", exit.stderr);
    assert!(exit.stderr.contains("DROPPED"), "{}", exit.stderr);

    let records: Vec<_> = CaptureReader::open(&out)
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let dropped: u64 = records
        .iter()
        .filter(|r| r.kind == RecordKind::Gap)
        .map(|r| r.event::<GapEvent>().unwrap().dropped_messages)
        .sum();
    let recorded = records
        .iter()
        .filter(|r| matches!(r.kind, RecordKind::Request | RecordKind::Reply))
        .count();
    assert_eq!(recorded, 0);
    assert!(dropped > 100, "{dropped} dropped");
    let opens = records
        .iter()
        .filter(|r| r.kind == RecordKind::Open)
        .count();
    let closes = records
        .iter()
        .filter(|r| r.kind == RecordKind::Close)
        .count();
    assert!(
        opens >= 2 && opens == closes,
        "connection events are kept: {opens} {closes}"
    );
    let end = records.last().unwrap();
    assert_eq!(end.kind, RecordKind::End);
    let end: mongotape::capture::EndEvent = end.event().unwrap();
    assert_eq!(end.dropped_messages, dropped);
    assert_eq!(end.messages, dropped);
}
