//! Wire compression through the proxy: pymongo with zstd, zlib and snappy, mongosh with zlib. The
//! proxy forwards the compressed bytes untouched; the capture decodes them.

mod common;

use common::*;
use mongotape::report::inspect::inspect_file;

fn compressed(client: Client, compressor: &str) {
    let server = Server::start();
    let suffix = format!("&compressors={compressor}");
    let direct = run_client(
        client,
        "basic",
        &format!("{}{suffix}", server.uri()),
        "bench",
        0.5,
    );
    let dir = tempdir();
    let out = dir.path().join("c.mtape");
    let proxy = Proxy::start_with(server.addr(), &out, &["--quiet"]);
    let proxied = run_client(
        client,
        "basic",
        &format!("{}{suffix}", proxy.uri()),
        "bench",
        0.5,
    );
    proxy.stop();
    assert_eq!(direct.results(), proxied.results());

    let report = inspect_file(&out).unwrap();
    assert!(report.complete && report.error.is_none());
    assert_eq!(
        report.undecodable_messages, 0,
        "every compressed message decodes"
    );
    let used = report
        .compressed_by_compressor
        .get(compressor)
        .unwrap_or_else(|| {
            panic!(
                "no {compressor} messages: {:?}",
                report.compressed_by_compressor
            )
        });
    let requests: u64 = report.requests_by_opcode.values().map(|c| c.messages).sum();
    // After the handshake everything is compressed (both directions).
    assert!(
        used.messages * 2 >= requests,
        "{} {compressor} messages of {requests} requests",
        used.messages
    );
    assert!(report.by_command.contains_key("insert"));
    assert!(report.by_command.contains_key("getMore"));
}

#[test]
fn pymongo_zstd() {
    compressed(Client::Pymongo, "zstd");
}

#[test]
fn pymongo_zlib() {
    compressed(Client::Pymongo, "zlib");
}

#[test]
fn pymongo_snappy() {
    compressed(Client::Pymongo, "snappy");
}

#[test]
fn mongosh_zlib() {
    compressed(Client::Mongosh, "zlib");
}
