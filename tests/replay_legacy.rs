//! Legacy opcodes a current server no longer takes, replayed as the commands that replaced them.

mod common;

use common::*;

/// A find (OP_MSG, batch of 2 out of 10) then a legacy OP_KILL_CURSORS of its cursor, from a raw
/// socket. secantusd-rs, like a current mongod, answers OP_KILL_CURSORS by closing the connection,
/// so the recorded cursor stays open; the replay sends `killCursors` on the namespace of the find,
/// with the live cursor id, and the live cursor is gone.
const KILL: &str = r#"
import sys, socket, struct, bson
from pymongo import MongoClient
from urllib.parse import urlparse
uri = sys.argv[1]
db = MongoClient(uri)["legacy"]
db.drop_collection("c")
db.c.insert_many([{"_id": i} for i in range(10)])
host, port = urlparse(uri).netloc.split(":")
s = socket.create_connection((host, int(port)))
body = b"\x00" + bson.encode({"find": "c", "batchSize": 2, "$db": "legacy"})
s.sendall(struct.pack("<iiii", 20 + len(body), 1, 0, 2013) + struct.pack("<I", 0) + body)
head = s.recv(16, socket.MSG_WAITALL)
rest = s.recv(struct.unpack("<i", head[:4])[0] - 16, socket.MSG_WAITALL)
cid = bson.decode(rest[5:])["cursor"]["id"]
s.sendall(struct.pack("<iiii", 16 + 16, 2, 0, 2007) + struct.pack("<iiq", 0, 1, cid))
print(s.recv(1) == b"" and cid != 0)
"#;

fn open_cursors(uri: &str) -> serde_json::Value {
    admin_command(uri, r#"{"serverStatus": 1}"#)["metrics"]["cursor"]["open"]["total"].clone()
}

#[test]
fn op_kill_cursors_becomes_kill_cursors_on_the_live_cursor() {
    let dir = tempdir();
    let a = Server::start_with(&["--standalone"]);
    let (capture, out) = record_python(&a, dir.path(), "killcursors", KILL);
    assert_eq!(out.trim(), "True", "the server closes on OP_KILL_CURSORS");
    assert_eq!(open_cursors(&a.uri()), 1, "the recorded cursor stayed open");
    drop(a);

    // The data is written beforehand: the find's connection is not ordered after the inserts'.
    for args in [&[][..], &["--fast", "--connections", "3"][..]] {
        let b = Server::start_with(&["--standalone"]);
        python(
            "import sys\nfrom pymongo import MongoClient\nMongoClient(sys.argv[1])['legacy'].c.insert_many([{'_id': i} for i in range(10)])\n",
            &[b.uri()],
        );
        let only = ["--command", "find,killCursors"];
        let r = replay(&capture, &b.uri(), &[&only[..], args].concat());
        assert_eq!(r.count("find"), 1, "{}", r.describe());
        assert_eq!(r.count("killCursors"), 1, "{}", r.describe());
        assert_eq!(r.skipped("unsupported_opcode"), 0, "{}", r.describe());
        assert_eq!(r.skipped("cursor_not_found"), 0, "{}", r.describe());
        assert_eq!(r.divergences(), 0, "{}", r.describe());
        assert_eq!(
            r.report["summary"]["overall"]["errors"].as_u64(),
            Some(0),
            "{}",
            r.describe()
        );
        assert_eq!(
            open_cursors(&b.uri()),
            0,
            "{args:?}: the live cursor was killed"
        );
    }
}

/// OP_COMMAND (3.2-4.0's command opcode, written by tools/write_hostile_pcap.py as a shell of
/// then sent it) is never replayed: a current server takes none. The replay says why.
#[test]
fn op_command_is_skipped_with_its_reason() {
    let dir = tempdir();
    let pcap = dir.path().join("opcommand.pcap");
    let status = std::process::Command::new("python3")
        .arg(workspace_root().join("tools/write_hostile_pcap.py"))
        .args(["opcommand", pcap.to_str().unwrap()])
        .status()
        .expect("python3 runs");
    assert!(status.success());
    let capture = dir.path().join("opcommand.mtape");
    let file = |p: &std::path::Path| p.display().to_string();
    let run = mongotape(&["import", &file(&pcap), "-o", &file(&capture)]);
    assert!(run.success(), "{}", run.stderr);
    let b = Server::start_with(&["--standalone"]);
    let uri = b.uri();
    let report = dir.path().join("replay.json");
    let run = mongotape(&[
        "replay",
        &file(&capture),
        "--target",
        &uri,
        "-o",
        &file(&report),
    ]);
    assert_eq!(
        run.status.code(),
        Some(5),
        "nothing replayed: {}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("2 OP_COMMAND (3.2-4.0's command opcode"),
        "{}",
        run.stderr
    );
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&report).unwrap()).expect("replay JSON");
    assert_eq!(report["skipped"]["op_command"], 2, "{report}");
    assert_eq!(report["sent"], 0, "{report}");
}
