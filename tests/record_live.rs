//! `mongotape record --interface`: a capture made by sniffing the packets of a real server and a
//! real client on the loopback of a network namespace the test makes (its own `lo`: no other
//! test's traffic), checked the way a proxy capture is: it replays to an equal database. Rotation
//! and `--duration` apply as when proxying; without the capture privilege, or without tcpdump, it
//! says so; it stops as the proxy does (the first signal drains, the second stops at once). Needs
//! root, iproute2 and tcpdump, as CI has (tools/setup installs tcpdump).

mod common;

use common::*;
use std::time::{Duration, Instant};

const WORKLOAD: &str = r#"
import sys
from pymongo import MongoClient
client = MongoClient(sys.argv[1], appname="live-sniffed", serverSelectionTimeoutMS=10000)
db = client.shop
db.orders.insert_many([{"_id": i, "sku": "s%d" % (i % 7), "qty": i % 5} for i in range(300)])
for i in range(0, 300, 3):
    db.orders.update_one({"_id": i}, {"$inc": {"qty": 10}, "$set": {"seen": True}})
db.orders.delete_many({"qty": 0})
db.orders.create_index([("sku", 1)])
assert len(list(db.orders.find({"qty": {"$gt": 1}}).batch_size(20))) > 0
db.notes.insert_one({"_id": "n1", "text": "x" * 5000})
print("done")
"#;

#[test]
fn a_workload_sniffed_on_a_namespace_loopback_replays_to_an_equal_database() {
    let ns = Netns::create("live");
    ns.enter();
    let server = Server::start();
    let dir = tempdir();
    let capture = dir.path().join("live.mtape");
    let live = LiveRecord::start("lo", server.port(), &capture, &["--metrics", "127.0.0.1:0"]);
    assert!(python(WORKLOAD, &[server.uri()]).contains("done"));
    // The last replies cross the loopback before tcpdump hands them over.
    std::thread::sleep(Duration::from_millis(500));
    let addr = metrics_addr(&live.log()).expect("the metrics address is printed");
    let body = scrape(&addr);
    let series = |line: &str| -> u64 {
        body.lines()
            .find_map(|l| l.strip_prefix(line)?.trim().parse::<f64>().ok())
            .unwrap_or_else(|| panic!("no `{line}` in:\n{body}")) as u64
    };
    // 100 update_one calls, each its own command, each answered: counted, and timed from the
    // packets' own times.
    assert_eq!(series("mongotape_requests_total{command=\"update\"}"), 100);
    assert_eq!(
        series("mongotape_request_duration_seconds_count{command=\"update\"}"),
        100
    );
    assert!(series("mongotape_connections_total") >= 1, "{body}");
    assert!(series("mongotape_recorded_messages_total") >= 200, "{body}");
    let (status, log) = live.stop();
    assert!(
        status.success(),
        "record --interface failed ({status}):\n{log}"
    );
    assert!(
        log.contains("TLS traffic cannot be read this way"),
        "the TLS limit is said at start:\n{log}"
    );
    assert!(log.contains("recorded "), "a summary at the end:\n{log}");
    assert!(
        log.contains("stopping (SIGINT): draining"),
        "the first signal drains, as when proxying:\n{log}"
    );

    let inspect = inspect_json(&capture);
    let text = inspect.to_string();
    assert!(
        text.contains("live-sniffed"),
        "the handshake's app name: {text}"
    );
    assert!(text.contains("\"insert\""), "{text}");

    let fresh = Server::start();
    let replayed = replay(&capture, &fresh.uri(), &[]);
    assert_eq!(replayed.divergences(), 0, "{}", replayed.describe());
    assert_same_db(
        &dump_db(&server.uri(), "shop"),
        &dump_db(&fresh.uri(), "shop"),
    );
}

const STEADY: &str = r#"
import sys, time
from pymongo import MongoClient
client = MongoClient(sys.argv[1], serverSelectionTimeoutMS=10000)
end = time.time() + float(sys.argv[2])
i = 0
while time.time() < end:
    client.t.c.insert_one({"_id": i})
    i += 1
    time.sleep(0.005)
print(i)
"#;

#[test]
fn rotation_and_duration_apply_to_a_sniffed_capture() {
    let ns = Netns::create("live");
    ns.enter();
    let server = Server::start();
    let dir = tempdir();
    let capture = dir.path().join("rot.mtape");
    let live = LiveRecord::start(
        "lo",
        server.port(),
        &capture,
        &["--rotate-every", "1s", "--duration", "3s"],
    );
    let sent: u64 = python(STEADY, &[server.uri().as_str(), "4.5"])
        .trim()
        .parse()
        .unwrap();
    let (status, log) = live.wait(Duration::from_secs(20));
    assert!(status.success(), "{status}:\n{log}");
    assert!(log.contains("--duration reached"), "{log}");
    let mut segments: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("rot-") && n.ends_with(".mtape"))
        .collect();
    segments.sort();
    assert!(segments.len() >= 2, "segments: {segments:?}\n{log}");
    let mut inserts = 0;
    for name in &segments {
        let inspect = inspect_json(&dir.path().join(name));
        assert_eq!(inspect["complete"], true, "{name}: {inspect}");
        inserts += inspect["by_command"]["insert"]["requests"]
            .as_u64()
            .unwrap_or(0);
    }
    assert!(
        inserts > 0 && inserts < sent,
        "the 3 s recorded part of {sent} inserts, got {inserts}"
    );
}

#[test]
fn without_the_capture_privilege_or_tcpdump_it_says_what_is_missing() {
    let ns = Netns::create("live");
    ns.enter();
    let dir = tempdir();
    // The unprivileged user must be able to create the capture, so that the privilege is what
    // fails.
    std::fs::set_permissions(
        dir.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o777),
    )
    .unwrap();
    let capture = dir.path().join("x.mtape");
    let mut cmd = std::process::Command::new("setpriv");
    cmd.args([
        "--reuid=65534",
        "--regid=65534",
        "--clear-groups",
        "--inh-caps=-all",
        "--bounding-set=-all",
    ])
    .arg(mongotape_bin())
    .args(["record", "--interface", "lo", "-o"])
    .arg(&capture);
    let out = run_command(cmd, Duration::from_secs(30));
    assert!(!out.success(), "{}", out.stderr);
    assert!(out.stderr.contains("CAP_NET_RAW"), "{}", out.stderr);

    // Proxy options have no meaning when sniffing: refused, not ignored.
    let mut cmd = std::process::Command::new(mongotape_bin());
    cmd.args([
        "record",
        "--interface",
        "lo",
        "--upstream",
        "127.0.0.1:1",
        "-o",
    ])
    .arg(&capture);
    let out = run_command(cmd, Duration::from_secs(30));
    assert_eq!(out.status.code(), Some(2), "{}", out.stderr);
    assert!(out.stderr.contains("cannot be used with"), "{}", out.stderr);

    let mut cmd = std::process::Command::new(mongotape_bin());
    cmd.env("MONGOTAPE_TCPDUMP", "/nonexistent/tcpdump")
        .args(["record", "--interface", "lo", "--force", "-o"])
        .arg(&capture);
    let out = run_command(cmd, Duration::from_secs(30));
    assert!(!out.success(), "{}", out.stderr);
    assert!(
        out.stderr.contains("not installed") && out.stderr.contains("apt-get install tcpdump"),
        "{}",
        out.stderr
    );
}

#[test]
fn a_capture_helper_that_never_reports_is_stopped_at_its_start_timeout() {
    let dir = tempdir();
    // A helper that says nothing and runs a child that keeps its pipes open.
    let helper = dir.path().join("mute-tcpdump");
    std::fs::write(&helper, "#!/bin/sh\nsleep 600 &\nsleep 600\n").unwrap();
    let made = std::process::Command::new("chmod")
        .arg("+x")
        .arg(&helper)
        .status()
        .unwrap();
    assert!(made.success());
    let started = std::time::Instant::now();
    let mut cmd = std::process::Command::new(mongotape_bin());
    cmd.env("MONGOTAPE_TCPDUMP", &helper)
        .args(["record", "--interface", "lo", "-o"])
        .arg(dir.path().join("mute.mtape"));
    let out = run_command(cmd, Duration::from_secs(60));
    assert_eq!(out.status.code(), Some(1), "{}", out.stderr);
    assert!(
        out.stderr
            .contains("did not say it was capturing within 15s"),
        "{}",
        out.stderr
    );
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
}

/// A tcpdump that says it is capturing, writes a pcap header and then nothing, and ignores SIGTERM
/// (and the SIGUSR1 that asks for its counters), as one stuck in the kernel would.
const DEAF_TCPDUMP: &str = "#!/bin/sh\n\
trap '' TERM USR1\n\
echo 'tcpdump: listening on lo, link-type EN10MB (Ethernet), snapshot length 262144 bytes' >&2\n\
printf '\\324\\303\\262\\241\\002\\000\\004\\000\\000\\000\\000\\000\\000\\000\\000\\000\\377\\377\\000\\000\\001\\000\\000\\000'\n\
exec sleep 600\n";

#[test]
fn the_first_signal_drains_and_the_second_stops_at_once() {
    let dir = tempdir();
    let fake = dir.path().join("tcpdump");
    std::fs::write(&fake, DEAF_TCPDUMP).unwrap();
    std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let capture = dir.path().join("stuck.mtape");
    let env = [("MONGOTAPE_TCPDUMP", fake.to_str().unwrap())];
    let live = LiveRecord::start_env("lo", 27017, &capture, &[], &env);
    // SIGHUP (an ssh session that dropped) drains as SIGTERM and SIGINT do.
    live.signal(libc::SIGHUP);
    let deadline = Instant::now() + Duration::from_secs(5);
    while !live.log().contains("stopping (SIGHUP): draining") {
        assert!(Instant::now() < deadline, "no drain said:\n{}", live.log());
        std::thread::sleep(Duration::from_millis(20));
    }
    // tcpdump ignores the SIGTERM it was sent: the drain would wait for it up to its bound.
    std::thread::sleep(Duration::from_millis(300));
    let second = Instant::now();
    live.signal(libc::SIGINT);
    let (status, log) = live.wait(Duration::from_secs(5));
    assert!(status.success(), "{status}:\n{log}");
    assert!(log.contains("stopping at once (SIGINT)"), "{log}");
    assert!(
        second.elapsed() < Duration::from_secs(3),
        "the second signal took {:?}:\n{log}",
        second.elapsed()
    );
    assert_eq!(inspect_json(&capture)["complete"], true, "{log}");
}
