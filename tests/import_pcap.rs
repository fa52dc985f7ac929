//! `mongotape import` of packet captures taken while a real client ran through the proxy:
//! `tcpdump -i lo` (pcap, Ethernet) and `dumpcap -i any` (pcapng, Linux cooked SLL2) on the
//! proxy's port, so both see exactly the bytes the proxy recorded. The imported captures hold the
//! same connections, commands and counts as the proxy's, and replay into a fresh server to the
//! same database. A pcap edited on purpose (segments removed, duplicated, reordered) imports with
//! its gaps where they were made.

mod common;

use common::*;
use mongotape::capture::{GapEvent, Record, RecordKind};
use std::path::Path;

/// Commands and their request/reply counts, connections, and opcodes: what `inspect` says.
fn inspect_digest(capture: &Path) -> serde_json::Value {
    let j = inspect_json(capture);
    let by_command: serde_json::Map<String, serde_json::Value> = j["by_command"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| {
            let counts = serde_json::json!({
                "requests": v["requests"], "replies": v["replies"], "errors": v["errors"],
                "request_bytes": v["request_bytes"], "reply_bytes": v["reply_bytes"],
            });
            (k.clone(), counts)
        })
        .collect();
    serde_json::json!({
        "connections_total": j["connections_total"],
        "wire_bytes": j["wire_bytes"],
        "requests_by_opcode": j["requests_by_opcode"],
        "replies_by_opcode": j["replies_by_opcode"],
        "by_command": by_command,
        "dropped_messages": j["dropped_messages"],
    })
}

fn import(files: &[&Path], out: &Path, extra: &[&str]) -> CommandOutput {
    let mut args: Vec<String> = vec!["import".into()];
    args.extend(files.iter().map(|f| f.display().to_string()));
    args.extend(["-o".into(), out.display().to_string()]);
    args.extend(extra.iter().map(|s| s.to_string()));
    mongotape(&args)
}

fn messages(records: &[Record]) -> Vec<(RecordKind, Vec<u8>)> {
    records
        .iter()
        .filter(|r| matches!(r.kind, RecordKind::Request | RecordKind::Reply))
        .map(|r| (r.kind, r.payload.to_vec()))
        .collect()
}

fn gaps(records: &[Record]) -> Vec<GapEvent> {
    records
        .iter()
        .filter(|r| r.kind == RecordKind::Gap)
        .map(|r| r.event().unwrap())
        .collect()
}

/// One workload through the proxy with tcpdump and dumpcap on its port; returns the proxy's
/// capture, the two packet captures and the database the workload left.
fn record_three_ways(
    dir: &Path,
    client: Client,
    uri_options: &str,
) -> (
    std::path::PathBuf,
    std::path::PathBuf,
    std::path::PathBuf,
    serde_json::Value,
) {
    let server = Server::start();
    let capture = dir.join("proxy.mtape");
    let proxy = Proxy::start(server.addr(), &capture);
    let pcap = Sniffer::start(Tool::Tcpdump, proxy.port(), &dir.join("lo.pcap"));
    let pcapng = Sniffer::start(Tool::Dumpcap, proxy.port(), &dir.join("any.pcapng"));
    run_client(
        client,
        "basic",
        &format!("{}{uri_options}", proxy.uri()),
        "bench",
        1.0,
    );
    let exit = proxy.stop();
    assert!(exit.status.success(), "proxy: {}", exit.stderr);
    let (pcap, pcapng) = (pcap.stop(), pcapng.stop());
    let db = dump_db(&server.uri(), "bench");
    (capture, pcap, pcapng, db)
}

fn imports_equal(client: Client, uri_options: &str) {
    let dir = tempdir();
    let (capture, pcap, pcapng, expected) = record_three_ways(dir.path(), client, uri_options);
    let want = inspect_digest(&capture);
    let proxy_messages = messages(&capture_records(&capture));
    assert!(proxy_messages.len() > 20, "{want}");
    for (input, name) in [(&pcap, "pcap"), (&pcapng, "pcapng")] {
        let out = dir.path().join(format!("{name}.mtape"));
        let run = import(&[input], &out, &["--server-port", &port_of(&capture)]);
        assert!(
            run.success(),
            "import {name}: {}\n{}",
            run.stderr,
            run.stdout
        );
        assert_eq!(inspect_digest(&out), want, "{name}: {}", run.stdout);
        let records = capture_records(&out);
        assert!(gaps(&records).is_empty(), "{name}: {:?}", gaps(&records));
        // The very bytes, message by message (the order across connections may differ).
        let mut got = messages(&records);
        let mut proxy = proxy_messages.clone();
        got.sort();
        proxy.sort();
        assert!(
            got == proxy,
            "{name}: the imported messages differ from the proxy's"
        );

        let fresh = Server::start();
        let r = replay(&out, &fresh.uri(), &[]);
        assert!(r.ops() > 0, "{}", r.describe());
        assert_eq!(r.divergences(), 0, "{}", r.describe());
        assert_same_db(&expected, &dump_db(&fresh.uri(), "bench"));
    }
}

/// The proxy's listening port, from its capture's metadata.
fn port_of(capture: &Path) -> String {
    let listen = mongotape::capture::CaptureReader::open(capture)
        .unwrap()
        .metadata()
        .listen
        .clone();
    listen.rsplit(':').next().unwrap().to_string()
}

#[test]
fn pymongo_through_tcpdump_and_dumpcap_imports_to_the_proxys_capture() {
    imports_equal(Client::Pymongo, "");
}

#[test]
fn mongosh_with_zstd_wire_compression_imports_equal() {
    imports_equal(Client::Mongosh, "&compressors=zstd");
}
