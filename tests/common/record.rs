//! Recording through the proxy: one path ([`record_through`]) that starts `mongotape record` in
//! front of a server, lets something talk to it, and stops it cleanly; and the workloads the tests
//! record with it.

use super::clients::{run_client, Client, ClientRun};
use super::proxy::Proxy;
use super::pymongo::python;
use super::server::Server;
use super::tempdir;
use std::path::{Path, PathBuf};

/// Starts a proxy in front of `server` writing `capture`, runs `drive` with the proxy's connection
/// string, then stops the proxy (SIGTERM) and panics unless it exited successfully.
pub fn record_through<T>(server: &Server, capture: &Path, drive: impl FnOnce(&str) -> T) -> T {
    let proxy = Proxy::start(server.addr(), capture);
    let result = drive(&proxy.uri());
    let exit = proxy.stop();
    assert!(exit.status.success(), "proxy: {}", exit.stderr);
    result
}

/// Records `client` running the seed workload `workload` (tools/workloads/) against `server`
/// through the proxy, into `DIR/CLIENT-WORKLOAD.mtape`; returns the capture and the client's run.
pub fn record_workload(
    server: &Server,
    dir: &Path,
    client: Client,
    workload: &str,
    db: &str,
    scale: f64,
) -> (PathBuf, ClientRun) {
    let out = dir.join(format!("{}-{workload}.mtape", client.name()));
    let run = record_through(server, &out, |uri| {
        run_client(client, workload, uri, db, scale)
    });
    (out, run)
}

/// Records an inline pymongo script (`sys.argv[1]` is the URI) through the proxy, into
/// `DIR/NAME.mtape`; returns the capture and the script's stdout.
pub fn record_python(server: &Server, dir: &Path, name: &str, script: &str) -> (PathBuf, String) {
    let out = dir.join(format!("{name}.mtape"));
    let stdout = record_through(server, &out, |uri| python(script, &[uri]));
    (out, stdout)
}

/// A pymongo script: `n` acknowledged inserts, `n` finds by `_id`, one cursor read in batches (so
/// getMores), `w0` unacknowledged inserts; `sleep` seconds between the inserts and finds; an
/// optional fifth argument names the application. Prints the number of documents the cursor
/// returned. Arguments: URI N SLEEP W0 [APPNAME].
pub const INSERTS_FINDS: &str = r#"
import sys, time
from pymongo import MongoClient, WriteConcern
uri, n, sleep, w0 = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
appname = sys.argv[5] if len(sys.argv) > 5 else None
client = MongoClient(uri, serverSelectionTimeoutMS=10000, appname=appname)
db = client.analyze_test
db.c.drop()
for i in range(n):
    db.c.insert_one({'_id': i, 'x': 'a' * 100})
    if sleep:
        time.sleep(sleep)
for i in range(n):
    assert db.c.find_one({'_id': i}) is not None
    if sleep:
        time.sleep(sleep)
print(len(list(db.c.find().batch_size(max(2, n // 5)))))
fire = db.get_collection('w0', write_concern=WriteConcern(w=0))
for i in range(w0):
    fire.insert_one({'i': i})
client.close()
"#;

/// A capture recorded through the proxy, with the temporary directory holding it.
pub struct Recorded {
    pub dir: tempfile::TempDir,
    pub capture: PathBuf,
    pub stdout: String,
}

/// Records [`INSERTS_FINDS`] through a fresh proxy in front of `server`, into a fresh directory.
pub fn record_inserts_finds(
    server: &Server,
    name: &str,
    n: u32,
    sleep_s: f64,
    w0: u32,
) -> Recorded {
    record_inserts_finds_with(server, name, n, sleep_s, w0, "")
}

/// Like [`record_inserts_finds`], with `uri_options` (`&key=value...`) appended to the connection
/// string.
pub fn record_inserts_finds_with(
    server: &Server,
    name: &str,
    n: u32,
    sleep_s: f64,
    w0: u32,
    uri_options: &str,
) -> Recorded {
    let dir = tempdir();
    let capture = dir.path().join(format!("{name}.mtape"));
    let stdout = record_through(server, &capture, |uri| {
        python(
            INSERTS_FINDS,
            &[
                format!("{uri}{uri_options}"),
                n.to_string(),
                sleep_s.to_string(),
                w0.to_string(),
            ],
        )
    });
    Recorded {
        dir,
        capture,
        stdout,
    }
}

/// Every record of a capture (panics on a reading error).
pub fn capture_records(path: &Path) -> Vec<mongotape::capture::Record> {
    mongotape::capture::CaptureReader::open(path)
        .unwrap_or_else(|e| panic!("open {}: {e}", path.display()))
        .map(|r| r.unwrap_or_else(|e| panic!("read {}: {e}", path.display())))
        .collect()
}

/// The close events of a capture, in order.
pub fn capture_closes(path: &Path) -> Vec<mongotape::capture::CloseEvent> {
    capture_records(path)
        .iter()
        .filter(|r| r.kind == mongotape::capture::RecordKind::Close)
        .map(|r| r.event().unwrap())
        .collect()
}
