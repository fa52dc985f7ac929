//! Production-safe recording against the real server and pymongo: a capture is never replaced
//! without --force, a recording ends by time or size while forwarding goes on, a full disk closes
//! the capture and forwarding goes on, rotated segments replay like one capture, credentials never
//! reach a capture, and `--redact values` keeps what a replay and an index need.

mod common;
use common::*;
use mongotape::capture::{CaptureSet, Record, RecordKind};
use std::path::{Path, PathBuf};

/// Every record of a capture (a file, or a folder of segments).
fn records(inputs: &[PathBuf]) -> Vec<Record> {
    let mut set = CaptureSet::open(inputs).unwrap_or_else(|e| panic!("{inputs:?}: {e}"));
    let mut out = Vec::new();
    while let Some(r) = set.next_record() {
        out.push(r.unwrap_or_else(|e| panic!("{inputs:?}: {e}")));
    }
    out
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// Requests whose command is `insert`, as `cat` sees them.
fn insert_requests(capture: &Path) -> usize {
    let out = mongotape(&[
        "cat".to_string(),
        capture.display().to_string(),
        "--command".into(),
        "insert".into(),
        "--no-body".into(),
    ]);
    assert!(out.success(), "cat: {}", out.stderr);
    out.stdout
        .lines()
        .filter(|l| l.contains("\"request\""))
        .count()
}

#[test]
fn an_existing_capture_is_never_replaced_without_force() {
    let server = Server::start();
    let dir = tempdir();
    let out = dir.path().join("precious.mtape");
    std::fs::write(&out, b"an earlier recording").unwrap();
    let refused = mongotape(&[
        "record",
        "--listen",
        "127.0.0.1:0",
        "--upstream",
        server.addr(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(
        !refused.success(),
        "record replaced a capture: {}",
        refused.stderr
    );
    assert!(
        refused.stderr.contains("precious.mtape exists") && refused.stderr.contains("--force"),
        "{}",
        refused.stderr
    );
    assert_eq!(std::fs::read(&out).unwrap(), b"an earlier recording");

    let proxy = Proxy::start_with(server.addr(), &out, &["--force"]);
    ping(&proxy.uri());
    assert!(proxy.stop().status.success());
    let recs = records(std::slice::from_ref(&out));
    assert!(recs.iter().any(|r| r.kind == RecordKind::Request));
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&out).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "capture mode {mode:o}");
}

/// Inserts `before` documents, waits `pause` seconds on the same connection, inserts `after`
/// more on it and `after` on a new client; prints the count.
const BEFORE_AFTER: &str = r#"
import sys, time, random, string
from pymongo import MongoClient
uri, before, pause, after = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
c = MongoClient(uri, serverSelectionTimeoutMS=10000)
db = c.safety
db.t.drop()
rnd = random.Random(7)
def doc(tag, i):
    return {'tag': tag, 'i': i, 's': ''.join(rnd.choice(string.ascii_letters) for _ in range(400))}
for i in range(before):
    db.t.insert_one(doc('before', i))
time.sleep(pause)
for i in range(after):
    db.t.insert_one(doc('after', i))
c2 = MongoClient(uri, serverSelectionTimeoutMS=10000)
for i in range(after):
    c2.safety.t.insert_one(doc('after-new', i))
print(c2.safety.t.count_documents({}))
"#;

#[test]
fn duration_ends_the_recording_not_the_forwarding() {
    let server = Server::start();
    let dir = tempdir();
    let out = dir.path().join("timed.mtape");
    let proxy = Proxy::start_with(server.addr(), &out, &["--duration", "3s"]);
    // The pause alone outlasts the recording, so every "after" write comes after its end.
    let count = python(
        BEFORE_AFTER,
        &[proxy.uri(), "30".into(), "4".into(), "25".into()],
    );
    assert_eq!(count.trim(), "80", "every write went through the proxy");
    let stderr = proxy.stderr();
    assert!(
        stderr.contains("recording ended (--duration reached)"),
        "{stderr}"
    );
    assert!(proxy.stop().status.success());
    let recs = records(std::slice::from_ref(&out));
    assert_eq!(
        recs.last().unwrap().kind,
        RecordKind::End,
        "capture closed cleanly"
    );
    // On a loaded machine the recording may end while the first writes still go on.
    let inserts = insert_requests(&out);
    assert!((1..=30).contains(&inserts), "{inserts} inserts recorded");
    for r in &recs {
        assert!(
            !contains(&r.payload, b"after\0") && !contains(&r.payload, b"after-new\0"),
            "a write made after the recording ended is in the capture"
        );
    }
}

#[test]
fn max_size_ends_the_recording_not_the_forwarding() {
    let server = Server::start();
    let dir = tempdir();
    let out = dir.path().join("sized.mtape");
    let proxy = Proxy::start_with(server.addr(), &out, &["--max-size", "0.05"]);
    let count = python(
        BEFORE_AFTER,
        &[proxy.uri(), "600".into(), "1.5".into(), "20".into()],
    );
    assert_eq!(count.trim(), "640");
    assert!(
        proxy
            .stderr()
            .contains("recording ended (--max-size reached)"),
        "{}",
        proxy.stderr()
    );
    assert!(proxy.stop().status.success());
    let size = std::fs::metadata(&out).unwrap().len();
    // The limit counts what the compressor still holds, so only the end record passes it.
    assert!(
        size <= 52 * 1024,
        "capture is {size} bytes for a 51,200-byte limit"
    );
    let inserts = insert_requests(&out);
    assert!(inserts > 20 && inserts < 600, "{inserts} inserts recorded");
}

#[test]
fn a_full_disk_closes_the_capture_and_forwarding_goes_on() {
    let server = Server::start();
    let dir = tempdir();
    let disk = dir.path().join("small-disk");
    std::fs::create_dir(&disk).unwrap();
    let mounted = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=96k", "tmpfs"])
        .arg(&disk)
        .status()
        .expect("run mount");
    assert!(
        mounted.success(),
        "mounting a 96 KiB tmpfs needs root (CI runs as root)"
    );
    struct Unmount(PathBuf);
    impl Drop for Unmount {
        fn drop(&mut self) {
            let _ = std::process::Command::new("umount").arg(&self.0).status();
        }
    }
    let _unmount = Unmount(disk.clone());
    let out = disk.join("full.mtape");
    let proxy = Proxy::start_with(server.addr(), &out, &[]);
    let count = python(
        BEFORE_AFTER,
        &[proxy.uri(), "800".into(), "1.5".into(), "20".into()],
    );
    assert_eq!(
        count.trim(),
        "840",
        "the disk filling up cost the application nothing"
    );
    let stderr = proxy.stderr();
    assert!(
        stderr.contains("recorder stopped") && stderr.contains("No space left"),
        "{stderr}"
    );
    let exit = proxy.stop();
    assert!(!exit.stderr.contains("panicked"), "{}", exit.stderr);
    // What was written before the disk filled reads back, up to where it ends.
    let mut set = CaptureSet::open(&[out]).unwrap();
    let mut requests = 0;
    while let Some(r) = set.next_record() {
        match r {
            Ok(r) if r.kind == RecordKind::Request => requests += 1,
            Ok(_) => {}
            Err(_) => break,
        }
    }
    assert!(requests > 10, "only {requests} requests readable");
}

/// Random strings, so the capture does not compress away and the segments fill.
const RANDOM_WORKLOAD: &str = r#"
import sys, random, string
from pymongo import MongoClient
c = MongoClient(sys.argv[1], serverSelectionTimeoutMS=10000)
db = c.segments
db.t.drop()
rnd = random.Random(11)
for i in range(1500):
    db.t.insert_one({'_id': i, 's': ''.join(rnd.choice(string.ascii_letters) for _ in range(120))})
db.t.update_many({'_id': {'$lt': 300}}, {'$set': {'flag': True}})
print(sum(1 for _ in db.t.find({'flag': True}).batch_size(50)))
"#;

#[test]
fn rotated_segments_replay_like_one_capture() {
    let server = Server::start();
    let dir = tempdir();
    let segments = dir.path().join("segments");
    std::fs::create_dir(&segments).unwrap();
    let proxy = Proxy::start_with(
        server.addr(),
        &segments.join("trace.mtape"),
        &["--rotate-size", "0.02"],
    );
    let flagged = python(RANDOM_WORKLOAD, &[proxy.uri()]);
    assert_eq!(flagged.trim(), "300");
    assert!(proxy.stop().status.success());
    let files: Vec<PathBuf> = {
        let mut f: Vec<PathBuf> = std::fs::read_dir(&segments)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        f.sort();
        f
    };
    assert!(files.len() >= 3, "{} segments: {files:?}", files.len());
    assert!(
        files
            .iter()
            .all(|f| f.to_string_lossy().ends_with(".mtape")),
        "a segment was left .partial: {files:?}"
    );
    // --rotate-size counts bytes on disk: every segment but the last holds at least that much.
    let sizes: Vec<u64> = files
        .iter()
        .map(|f| std::fs::metadata(f).unwrap().len())
        .collect();
    let asked = (0.02 * 1024.0 * 1024.0) as u64;
    assert!(
        sizes[..sizes.len() - 1].iter().all(|&n| n >= asked),
        "segments smaller than --rotate-size on disk: {sizes:?}"
    );
    // Each segment is a whole capture.
    for f in &files {
        let out = mongotape(&["inspect".to_string(), f.display().to_string()]);
        assert!(out.success(), "{}: {}", f.display(), out.stderr);
    }
    // The folder reads as one: every insert once, one end.
    assert_eq!(insert_requests(&segments), 1500);
    let all = records(std::slice::from_ref(&segments));
    assert_eq!(all.iter().filter(|r| r.kind == RecordKind::End).count(), 1);

    let fresh = Server::start();
    let r = replay(&segments, &uri_for(fresh.addr()), &["--fast"]);
    assert_eq!(r.count("insert"), 1500, "{}", r.describe());
    assert_same_db(
        &dump_db(&server_uri(&server), "segments"),
        &dump_db(&server_uri(&fresh), "segments"),
    );
}

fn server_uri(server: &Server) -> String {
    uri_for(server.addr())
}

#[test]
fn rotation_by_time_gives_whole_segments() {
    let server = Server::start();
    let dir = tempdir();
    let out = dir.path().join("every.mtape");
    let proxy = Proxy::start_with(server.addr(), &out, &["--rotate-every", "1s"]);
    python(
        "import sys, time\nfrom pymongo import MongoClient\nc = MongoClient(sys.argv[1])\nfor i in range(35):\n    c.admin.command('ping'); time.sleep(0.1)\n",
        &[proxy.uri()],
    );
    assert!(proxy.stop().status.success());
    let segs: Vec<PathBuf> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert!(segs.len() >= 3, "{segs:?}");
    let pings = records(&[dir.path().to_owned()])
        .iter()
        .filter(|r| r.kind == RecordKind::Request && contains(&r.payload, b"ping\0"))
        .count();
    assert_eq!(pings, 35, "every ping in exactly one segment");
}

const PASSWORD: &str = "Tr0ub4dor-and-3-horses";

#[test]
fn credentials_never_reach_the_capture() {
    let server = Server::start_with(&["--auth"]);
    let dir = tempdir();
    let out = dir.path().join("auth.mtape");
    let proxy = Proxy::start(server.addr(), &out);
    let addr = proxy.addr().to_string();
    // The first user through the localhost exception, then SCRAM-SHA-256, SCRAM-SHA-1 and PLAIN.
    let script = r#"
import sys
from pymongo import MongoClient
from pymongo.errors import OperationFailure
addr, pwd = sys.argv[1], sys.argv[2]
MongoClient(f"mongodb://{addr}/?directConnection=true").admin.command(
    "createUser", "alice", pwd=pwd, roles=["root"])
for mech in ["SCRAM-SHA-256", "SCRAM-SHA-1"]:
    c = MongoClient(f"mongodb://{addr}/?directConnection=true", username="alice", password=pwd,
                    authMechanism=mech, authSource="admin")
    c.safety.t.insert_one({"mech": mech})
try:
    MongoClient(f"mongodb://{addr}/?directConnection=true", username="alice", password=pwd,
                authMechanism="PLAIN", authSource="$external",
                serverSelectionTimeoutMS=3000).admin.command("ping")
except Exception:
    pass
print("ok")
"#;
    assert_eq!(python(script, &[addr.as_str(), PASSWORD]).trim(), "ok");
    assert!(proxy.stop().status.success());
    let recs = records(std::slice::from_ref(&out));
    let mut sasl = 0;
    for r in &recs {
        assert!(
            !contains(&r.payload, PASSWORD.as_bytes()),
            "password in a {:?} record",
            r.kind
        );
        // SCRAM's client-first (user and nonce), client-final (proof) and server-first (salt).
        for scram in [&b"n,,n=alice"[..], b"c=biws", b",s=", b",i=4096"] {
            assert!(
                !contains(&r.payload, scram),
                "SCRAM text {:?} in the capture",
                String::from_utf8_lossy(scram)
            );
        }
        if contains(&r.payload, b"saslStart\0") || contains(&r.payload, b"saslContinue\0") {
            sasl += 1;
        }
    }
    assert!(
        sasl >= 4,
        "the authentication conversations are recorded ({sasl}), without payloads"
    );
    let meta = CaptureSet::open(&[out]).unwrap().metadata().clone();
    assert_eq!(meta.redaction.as_deref(), Some("credentials"));
}

#[test]
fn redacted_values_keep_counts_cardinality_and_sizes() {
    let server = Server::start();
    let dir = tempdir();
    let out = dir.path().join("values.mtape");
    let proxy = Proxy::start_with(server.addr(), &out, &["--redact", "values"]);
    let script = r#"
import sys
from pymongo import MongoClient
c = MongoClient(sys.argv[1], serverSelectionTimeoutMS=10000)
db = c.crm
db.people.drop(); db.orders.drop()
db.people.create_index("name"); db.people.create_index("city")
cities = ["Hangzhou-secretcity", "Beijing-secretcity", "Shanghai-secretcity", "Xian-secretcity"]
for i in range(400):
    db.people.insert_one({"_id": i, "name": f"customer-{i % 37:02d}-secretname",
                          "city": cities[i % 4], "age": 20 + i % 50, "note": "secretnote" * (i % 5)})
db.orders.insert_many([{"who": f"customer-{i % 37:02d}-secretname", "n": i} for i in range(200)])
for i in range(37):
    db.people.update_many({"name": f"customer-{i:02d}-secretname"}, {"$set": {"vip": "secretvip"}})
print(db.people.count_documents({"name": "customer-05-secretname"}))
"#;
    assert_eq!(python(script, &[proxy.uri()]).trim(), "11");
    assert!(proxy.stop().status.success());
    for r in records(std::slice::from_ref(&out)) {
        assert!(
            !contains(&r.payload, b"secret"),
            "an original value in a {:?} record",
            r.kind
        );
    }
    let fresh = Server::start();
    let r = replay(&out, &uri_for(fresh.addr()), &["--fast"]);
    assert_eq!(r.count("insert"), 401, "{}", r.describe());
    let stats = r#"
import sys, json, bson
from pymongo import MongoClient
db = MongoClient(sys.argv[1]).crm
out = {}
for coll in ["people", "orders"]:
    docs = list(db[coll].find())
    out[coll] = {"count": len(docs), "bytes": sum(len(bson.encode(d)) for d in docs)}
for field in ["name", "city", "vip"]:
    out["distinct_" + field] = len(db.people.distinct(field))
out["indexes"] = sorted(i["name"] for i in db.people.list_indexes())
print(json.dumps(out))
"#;
    let before = python_json(stats, &[uri_for(server.addr())]);
    let after = python_json(stats, &[uri_for(fresh.addr())]);
    assert_eq!(
        before, after,
        "documents, sizes, cardinality and indexes survive"
    );
    assert_eq!(before["distinct_name"], 37);
    assert_eq!(before["distinct_city"], 4);
}

// ---------------------------------------------------------------------------------------------
// Symbolic links: neither --out, a rotation segment nor a report is ever written through one.
// ---------------------------------------------------------------------------------------------

const THROUGH_A_LINK: &str = "is a symbolic link: refusing to write through it";

/// `record --listen 127.0.0.1:0 --upstream ADDR --out OUT EXTRA...`, which must refuse to start
/// because of the link at `link`, named in its error.
fn refused_for_link(server: &Server, out: &Path, link: &Path, extra: &[&str]) {
    let mut args = vec![
        "record",
        "--listen",
        "127.0.0.1:0",
        "--upstream",
        server.addr(),
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let refused = mongotape(&args);
    assert!(!refused.success(), "record started: {}", refused.stderr);
    let said = format!("{} {THROUGH_A_LINK}", link.display());
    assert!(refused.stderr.contains(&said), "{}", refused.stderr);
}

fn mode_of(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
fn a_dangling_link_as_out_is_refused_not_written_through() {
    let server = Server::start();
    let dir = tempdir();
    let target = dir.path().join("elsewhere.mtape");
    let out = dir.path().join("trace.mtape");
    std::os::unix::fs::symlink(&target, &out).unwrap();
    refused_for_link(&server, &out, &out, &[]);
    refused_for_link(&server, &out, &out, &["--force"]);
    assert!(!target.exists(), "a capture was written through the link");
}

#[test]
fn force_does_not_write_through_a_link_nor_change_its_targets_mode() {
    let server = Server::start();
    let dir = tempdir();
    let target = dir.path().join("authorized_keys");
    std::fs::write(&target, b"ssh-ed25519 AAAA... operator\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = dir.path().join("trace.mtape");
    std::os::unix::fs::symlink(&target, &out).unwrap();
    refused_for_link(&server, &out, &out, &["--force"]);
    assert_eq!(
        std::fs::read(&target).unwrap(),
        b"ssh-ed25519 AAAA... operator\n"
    );
    assert_eq!(mode_of(&target), 0o644);
    assert!(std::fs::symlink_metadata(&out)
        .unwrap()
        .file_type()
        .is_symlink());
}

#[test]
fn a_planted_partial_link_in_a_rotation_folder_is_refused() {
    let server = Server::start();
    let dir = tempdir();
    let segments = dir.path().join("segments");
    std::fs::create_dir(&segments).unwrap();
    let target = dir.path().join("victim");
    std::fs::write(&target, b"not a capture").unwrap();
    let planted = segments.join("trace-000001.mtape.partial");
    std::os::unix::fs::symlink(&target, &planted).unwrap();
    let out = segments.join("trace.mtape");
    for extra in [
        &["--rotate-size", "1"][..],
        &["--rotate-size", "1", "--force"],
    ] {
        refused_for_link(&server, &out, &planted, extra);
    }
    assert_eq!(std::fs::read(&target).unwrap(), b"not a capture");
    assert!(
        !segments.join("trace-000001.mtape").exists(),
        "the planted link was renamed into a segment"
    );
    // A fresh folder still rotates (the refusal is about the link, not rotation).
    let fresh = dir.path().join("fresh");
    std::fs::create_dir(&fresh).unwrap();
    let proxy = Proxy::start_with(
        server.addr(),
        &fresh.join("trace.mtape"),
        &["--rotate-size", "1"],
    );
    ping(&proxy.uri());
    assert!(proxy.stop().status.success());
    assert!(fresh.join("trace-000001.mtape").is_file());
}

#[test]
fn a_report_is_not_written_through_a_link() {
    let server = Server::start();
    let recorded = record_inserts_finds(&server, "few", 5, 0.0, 0);
    let (dir, capture) = (&recorded.dir, &recorded.capture);
    let target = dir.path().join("bashrc");
    std::fs::write(&target, b"export PATH\n").unwrap();
    let links: Vec<PathBuf> = ["report.json", "report.html", "analyze.html"]
        .iter()
        .map(|name| {
            let link = dir.path().join(name);
            std::os::unix::fs::symlink(&target, &link).unwrap();
            link
        })
        .collect();
    let replay_args = |report: &Path, html: Option<&Path>| {
        let mut args = vec![
            "replay".to_string(),
            capture.display().to_string(),
            "--target".into(),
            server.addr().into(),
            "--fast".into(),
            "-o".into(),
            report.display().to_string(),
        ];
        if let Some(html) = html {
            args.extend(["--html".into(), html.display().to_string()]);
        }
        args
    };
    let refused = mongotape(&replay_args(&links[0], None));
    let said = format!("{} {THROUGH_A_LINK}", links[0].display());
    assert!(
        !refused.success() && refused.stderr.contains(&said),
        "{}",
        refused.stderr
    );
    let ok_report = dir.path().join("ok.json");
    let refused = mongotape(&replay_args(&ok_report, Some(&links[1])));
    assert!(
        !refused.success() && refused.stderr.contains(&links[1].display().to_string()),
        "{}",
        refused.stderr
    );
    let refused = mongotape(&[
        "analyze",
        capture.to_str().unwrap(),
        "--html",
        links[2].to_str().unwrap(),
    ]);
    assert!(
        !refused.success() && refused.stderr.contains(THROUGH_A_LINK),
        "{}",
        refused.stderr
    );
    assert_eq!(std::fs::read(&target).unwrap(), b"export PATH\n");
    // A regular file is still replaced: reports are rewritten run after run.
    std::fs::write(&ok_report, b"an older report").unwrap();
    let replaced = mongotape(&replay_args(&ok_report, None));
    assert!(replaced.success(), "{}", replaced.stderr);
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&ok_report).unwrap()).unwrap();
    assert!(report["schema_version"].is_number(), "{report}");
}

/// Runs `args` and asserts a usage error naming `output` and `input`.
fn refused_as_input(args: &[&str], output: &Path, input: &Path) {
    let out = mongotape(args);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {}", out.stderr);
    for path in [output, input] {
        let said = path.display().to_string();
        assert!(
            out.stderr.contains(&said),
            "{args:?}: names {said}: {}",
            out.stderr
        );
    }
}

#[test]
fn an_output_named_over_an_input_is_refused_and_the_input_kept() {
    let dir = tempdir();
    let original = std::fs::read(workspace_root().join("captures/pymongo.mtape")).unwrap();
    let big = dir.path().join("big.mtape");
    std::fs::write(&big, &original).unwrap();
    let linked = dir.path().join("linked.mtape");
    std::fs::hard_link(&big, &linked).unwrap();
    let pcap = dir.path().join("x.pcap");
    std::fs::write(&pcap, &original).unwrap();
    let rec = dir.path().join("rec");
    std::fs::create_dir(&rec).unwrap();
    std::fs::write(rec.join("trace-000001.mtape"), &original).unwrap();
    let (b, l, p) = (
        big.to_str().unwrap(),
        linked.to_str().unwrap(),
        pcap.to_str().unwrap(),
    );
    let slice = ["slice", b, "--command", "insert", "--force", "-o"];
    refused_as_input(&[&slice[..], &[b]].concat(), &big, &big);
    refused_as_input(&[&slice[..], &[l]].concat(), &linked, &big);
    refused_as_input(&["import", p, "-o", p, "--force"], &pcap, &pcap);
    let t = ["-t", "127.0.0.1:9"];
    refused_as_input(&[&["replay", b, "-o", b][..], &t].concat(), &big, &big);
    refused_as_input(
        &[&["replay", b, "--html", l][..], &t].concat(),
        &linked,
        &big,
    );
    refused_as_input(&["analyze", b, "--html", b], &big, &big);
    refused_as_input(&["merge", p, "-o", p], &pcap, &pcap);
    refused_as_input(&["compare", b, "--html", l], &linked, &big);
    let in_rec = rec.join("slice.mtape");
    let r = rec.to_str().unwrap();
    refused_as_input(
        &[
            "slice",
            r,
            "--command",
            "insert",
            "-o",
            in_rec.to_str().unwrap(),
        ],
        &in_rec,
        &rec,
    );
    assert!(!in_rec.exists());
    for kept in [&big, &linked, &pcap, &rec.join("trace-000001.mtape")] {
        assert_eq!(std::fs::read(kept).unwrap(), original, "{}", kept.display());
    }
    // --force replaces the name, not the inode: a hard link's other name keeps its bytes.
    let out = dir.path().join("out.mtape");
    std::fs::hard_link(&pcap, &out).unwrap();
    let forced = mongotape(&[&slice[..], &[out.to_str().unwrap()]].concat());
    assert!(
        matches!(forced.status.code(), Some(0 | 5)),
        "{}",
        forced.stderr
    );
    assert_eq!(std::fs::read(&pcap).unwrap(), original);
    assert_ne!(std::fs::read(&out).unwrap(), original);
}
