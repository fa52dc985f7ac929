//! Wire compression: a capture recorded with `compressors=...` is replayed compressed. Each replay
//! connection offers the recorded compressor in its hello and, when the target agrees, sends what the
//! client sent compressed as OP_COMPRESSED; the server then reads far fewer bytes.

mod common;

use common::*;

const DB: &str = "bench";

/// Records pymongo running `docsize` (2.4 KB lorem-ipsum documents compress well) through the
/// proxy, with `options` appended to the URI.
fn record(
    dir: &std::path::Path,
    name: &str,
    options: &str,
) -> (std::path::PathBuf, serde_json::Value) {
    let server = Server::start();
    let out = dir.join(format!("{name}.mtape"));
    record_through(&server, &out, |uri| {
        run_client(
            Client::Pymongo,
            "docsize",
            &format!("{uri}{options}"),
            DB,
            0.01,
        )
    });
    (out, dump_db(&server.uri(), DB))
}

fn bytes_in(r: &Replay) -> u64 {
    r.report["server"]["delta"]["network"]["bytesIn"]
        .as_u64()
        .unwrap_or_else(|| panic!("no bytesIn: {}", r.describe()))
}

#[test]
fn compressed_captures_replay_compressed() {
    let dir = tempdir();
    let (plain, plain_db) = record(dir.path(), "plain", "");
    let mut plain_bytes = None;
    for (name, options) in [
        ("plain", ""),
        ("zlib", "&compressors=zlib"),
        ("zstd", "&compressors=zstd"),
    ] {
        let (capture, expected) = if name == "plain" {
            (plain.clone(), plain_db.clone())
        } else {
            record(dir.path(), name, options)
        };
        let target = Server::start();
        let r = replay(&capture, &target.uri(), &["--fast"]);
        assert_eq!(r.divergences(), 0, "{name}: {}", r.describe());
        assert_same_db(&expected, &dump_db(&target.uri(), DB));
        let inserts = r.count("insert");
        let compressed = r.report["compressed"].as_u64().unwrap_or(0);
        let bytes = bytes_in(&r);
        match plain_bytes {
            None => {
                assert_eq!(compressed, 0, "{}", r.describe());
                plain_bytes = Some(bytes);
            }
            Some(plain) => {
                assert!(
                    compressed >= inserts && inserts >= 200,
                    "{name}: {compressed} of {} requests compressed: {}",
                    r.report["sent"],
                    r.describe()
                );
                assert!(
                    bytes * 10 < plain * 7,
                    "{name}: the server read {bytes} bytes, {plain} uncompressed"
                );
            }
        }
    }
}
