//! Pacing and layout options against the real server: --speed, --rate, --connections, --clones,
//! --db-map, filters, --duration.

mod common;

use common::*;

/// ~1 s of recorded time: 21 reads 50 ms apart, after a small setup.
const PACED: &str = r#"
import sys, time
from pymongo import MongoClient
db = MongoClient(sys.argv[1])["pace"]
db.drop_collection("c")
db.c.insert_many([{"_id": i, "g": i % 3} for i in range(20)])
for i in range(21):
    db.c.find_one({"_id": i % 20})
    time.sleep(0.05)
db.c.update_many({"g": 1}, {"$set": {"seen": True}})
"#;

fn f64_of(v: &serde_json::Value) -> f64 {
    v.as_f64().unwrap_or(f64::NAN)
}

#[test]
fn speed_two_takes_about_half_the_recorded_time() {
    let dir = tempdir();
    let a = Server::start_with(&["--standalone"]);
    let (capture, _) = record_python(&a, dir.path(), "paced", PACED);
    let expected = dump_db(&a.uri(), "pace");
    drop(a);
    let b = Server::start_with(&["--standalone"]);
    let r = replay(&capture, &b.uri(), &["--speed", "2"]);
    let span = f64_of(&r.report["recorded_span_s"]);
    let wall = f64_of(&r.report["summary"]["wall_s"]);
    assert!(span > 0.9, "recorded span {span}: {}", r.describe());
    let ratio = wall / span;
    assert!(
        (0.35..=0.75).contains(&ratio),
        "wall {wall} / span {span} = {ratio}"
    );
    assert_same_db(&expected, &dump_db(&b.uri(), "pace"));
    // The lag splits into the requests the lane reached in time (the clock's own lag) and those
    // held by an earlier reply: the 21 reads 25 ms apart wait for their time.
    let lag = &r.report["lag"];
    let (all, clock, held) = (
        lag["latency"]["count"].as_u64().unwrap(),
        lag["clock"]["count"].as_u64().unwrap(),
        lag["held"].as_u64().unwrap(),
    );
    assert_eq!(clock + held, all, "{lag}");
    assert!(clock >= 15, "{lag}");
    assert_eq!(lag["from_send"]["count"], 0, "closed loop: {lag}");

    let r = replay(&capture, &b.uri(), &["--fast"]);
    let fast = f64_of(&r.report["summary"]["wall_s"]);
    assert!(
        fast < span * 0.5,
        "--fast took {fast} s of a {span} s recording"
    );
}

#[test]
fn rate_holds_its_rate_and_connections_really_open() {
    let dir = tempdir();
    let a = Server::start_with(&["--standalone"]);
    let (capture, _) = record_python(&a, dir.path(), "paced", PACED);
    drop(a);
    let b = Server::start_with(&["--standalone"]);
    // 300 reads over 8 connections at 400/s: about 0.75 s.
    let r = replay(
        &capture,
        &b.uri(),
        &[
            "--rate",
            "400",
            "--connections",
            "8",
            "--command",
            "find",
            "--repeat",
            "15",
        ],
    );
    assert_eq!(r.count("find"), 21 * 15, "{}", r.describe());
    assert_eq!(r.report["connections_opened"], 8, "{}", r.describe());
    let created = &r.report["server"]["delta"]["connections"]["totalCreated"];
    assert!(
        created.as_u64() >= Some(8),
        "serverStatus saw {created}: {}",
        r.describe()
    );
    let rate = f64_of(&r.report["summary"]["ops_per_s"]);
    assert!(
        (300.0..=440.0).contains(&rate),
        "rate {rate}: {}",
        r.describe()
    );
    // Open loop: latency counts from the intended time, so it is at least the latency from the
    // send (the server's own), which the lag report carries beside it for every reply.
    let p50 = f64_of(&r.report["summary"]["overall"]["latency"]["p50_us"]);
    let from_send = &r.report["lag"]["from_send"];
    assert_eq!(from_send["count"], 21 * 15, "{from_send}");
    let served = f64_of(&from_send["p50_us"]);
    assert!(served > 0.0 && served <= p50 * 1.01, "{served} / {p50}");
}

#[test]
fn clones_db_map_and_filters() {
    let dir = tempdir();
    let a = Server::start_with(&["--standalone"]);
    let (capture, _) = record_python(&a, dir.path(), "paced", PACED);
    let expected = dump_db(&a.uri(), "pace");
    drop(a);
    let b = Server::start_with(&["--standalone"]);
    let r = replay(&capture, &b.uri(), &["--fast", "--clones", "3"]);
    assert_eq!(r.count("find"), 63, "{}", r.describe());
    for k in 1..=3 {
        assert_same_db(&expected, &dump_db(&b.uri(), &format!("pace_{k}")));
    }
    assert_eq!(
        dump_db(&b.uri(), "pace")["collections"],
        serde_json::json!({})
    );

    replay(&capture, &b.uri(), &["--fast", "--db-map", "pace:other"]);
    assert_same_db(&expected, &dump_db(&b.uri(), "other"));

    let r = replay(
        &capture,
        &b.uri(),
        &[
            "--fast",
            "--exclude-command",
            "find,drop",
            "--db-map",
            "pace:filtered",
        ],
    );
    assert_eq!(r.count("find"), 0, "{}", r.describe());
    assert_eq!(r.count("insert"), 1, "{}", r.describe());
    assert_eq!(r.skipped("filtered"), 22, "{}", r.describe());
    // Everything filtered out: the report is written, and the exit status (5) and stderr say so.
    let r = try_replay(
        &capture,
        &b.uri(),
        &["--fast", "--namespace", "nothing.here"],
    );
    assert_eq!(r.ops(), 0, "{}", r.describe());
    assert_eq!(r.output.status.code(), Some(5), "{}", r.describe());
    let why = &r.output.stderr;
    assert!(
        why.contains("nothing was replayed: of")
            && why.contains("left out by the filters (namespace=nothing.here)"),
        "{}",
        r.describe()
    );
}

#[test]
fn duration_repeats_the_capture_until_it_is_over() {
    let dir = tempdir();
    let a = Server::start_with(&["--standalone"]);
    let (capture, _) = record_python(
        &a,
        dir.path(),
        "short",
        "import sys\nfrom pymongo import MongoClient\nc = MongoClient(sys.argv[1])['pace'].c\nfor i in range(20):\n    c.find_one({'_id': i})\n",
    );
    drop(a);
    let b = Server::start_with(&["--standalone"]);
    let r = replay(&capture, &b.uri(), &["--fast", "--duration", "1"]);
    let wall = f64_of(&r.report["summary"]["wall_s"]);
    assert!((0.9..3.0).contains(&wall), "wall {wall}: {}", r.describe());
    assert!(
        r.report["iterations"].as_u64() > Some(2),
        "{}",
        r.describe()
    );
    assert!(r.report["timeline"].as_array().map(Vec::len) >= Some(1));
}

/// A pre-warmed pool (`minPoolSize`): pymongo opens a connection in the background and uses it for
/// the insert a second later. Another client's find comes first: the replay's clock starts there.
const WARM_POOL: &str = r#"
import sys, time
from pymongo import MongoClient
MongoClient(sys.argv[1])["pace"].other.find_one()
c = MongoClient(sys.argv[1], minPoolSize=1)
time.sleep(1.5)
c["pace"].warm.insert_one({"_id": 1})
"#;

/// For the connection that carried `command`: milliseconds from its open event to that request.
fn open_to_first(records: &[mongotape::capture::Record], command: &str) -> Option<f64> {
    use mongotape::capture::RecordKind;
    use mongotape::wire::{Message, RequestInfo};
    let first = records.iter().find(|r| {
        r.kind == RecordKind::Request
            && Message::parse(&r.payload).is_ok_and(|m| RequestInfo::of(&m).command == command)
    })?;
    let opened = records
        .iter()
        .find(|r| r.kind == RecordKind::Open && r.conn_id == first.conn_id)?;
    Some(first.ts_ns.saturating_sub(opened.ts_ns) as f64 / 1e6)
}

/// At recorded timing a replay connection opens when the recorded client opened its connection,
/// not when the first request is due: the handshake is not charged to that request. Seen from the
/// server's side, through a second recording proxy.
#[test]
fn a_connection_opens_when_the_recorded_client_opened_it() {
    let dir = tempdir();
    let a = Server::start();
    let (capture, _) = record_python(&a, dir.path(), "warm", WARM_POOL);
    drop(a);
    let recorded = open_to_first(&capture_records(&capture), "insert").expect("recorded insert");
    assert!(
        recorded >= 300.0,
        "pymongo was expected to open its minPoolSize connection well before the insert: {recorded:.0} ms"
    );

    let b = Server::start();
    let seen = dir.path().join("seen.mtape");
    let proxy = Proxy::start_with(b.addr(), &seen, &["--quiet"]);
    let r = replay(&capture, &proxy.uri(), &["--no-server-status"]);
    assert_eq!(r.count("insert"), 1, "{}", r.describe());
    assert!(proxy.stop().status.success());
    let replayed = open_to_first(&capture_records(&seen), "insert").expect("replayed insert");
    eprintln!("open to insert: recorded {recorded:.0} ms, replayed {replayed:.0} ms");
    assert!(
        replayed >= recorded / 2.0,
        "the replay opened its connection {replayed:.0} ms before the insert; the client {recorded:.0} ms"
    );
}
