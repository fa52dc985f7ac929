//! `mongotape shadow` against real servers (secantusd-rs: production, candidate, control) with
//! pymongo clients through it: an identical candidate gives no discrepancy over 20,000 mirrored
//! reads from 8 connections (each also to a control); one changed document gives a discrepancy
//! naming its shape and `_id`; a stopped candidate leaves the clients' results identical and sheds reads; a killed candidate
//! is reconnected once it is back; a candidate that answers garbage is survived; left to its
//! default, the mirror runs at SCHED_IDLE.

mod common;
use common::*;
use serde_json::Value;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

const DOCS: usize = 200;

/// Fills `shop.items` with DOCS documents (`_id`, `g`, `v`), `changed` giving one `_id` another `v`.
fn fill(uri: &str, changed: Option<i64>) {
    python(
        "import sys\n\
         from pymongo import MongoClient\n\
         c = MongoClient(sys.argv[1])\n\
         n, changed = int(sys.argv[2]), int(sys.argv[3])\n\
         c.shop.items.drop()\n\
         c.shop.items.insert_many([{'_id': i, 'g': i % 10, 'v': 'x%d' % (i * 7 if i != changed else -1)} for i in range(n)])\n",
        &[uri, &DOCS.to_string(), &changed.unwrap_or(-1).to_string()],
    );
}

/// `threads` threads of one pymongo client, `per_thread` reads each (find by _id, a sorted find,
/// count_documents, distinct); prints a digest of every result, the same for the same data.
const READS: &str = r#"
import sys, threading, hashlib, json
from pymongo import MongoClient
uri, per, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
client = MongoClient(uri, maxPoolSize=threads)
coll = client.shop.items
results = [None] * threads
def work(t):
    out = []
    for i in range(per):
        k = (t * per + i) % 200
        m = i % 4
        if m == 0: out.append(list(coll.find({'_id': k})))
        elif m == 1: out.append(list(coll.find({'g': k % 10}).sort('_id', 1).limit(5)))
        elif m == 2: out.append(coll.count_documents({'g': k % 10}))
        else: out.append(sorted(coll.distinct('g')))
    results[t] = out
ts = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
for t in ts: t.start()
for t in ts: t.join()
if any(r is None for r in results): sys.exit('a reading thread failed')
print(hashlib.sha256(json.dumps(results, sort_keys=True).encode()).hexdigest())
"#;

fn reads(uri: &str, per_thread: usize, threads: usize) -> String {
    python(READS, &[uri, &per_thread.to_string(), &threads.to_string()])
        .trim()
        .to_owned()
}

fn shadow(upstream: &str, dir: &Path, extra: &[&str]) -> Proxy {
    let mut command = Command::new(mongotape_bin());
    command
        .args(["shadow", "--listen", "127.0.0.1:0", "--upstream", upstream])
        .arg("--report")
        .arg(dir.join("shadow.json"))
        .args(["--report-every", "1"])
        // The suite keeps both cores busy: at the default (SCHED_IDLE) the mirror would get
        // almost none of them. These tests are about what is mirrored and compared.
        .args(["--mirror-priority", "low"])
        .args(extra);
    if !extra.contains(&"--candidate-timeout") {
        // The stopped and killed candidates' tests: a candidate is found down within a second.
        command.args(["--candidate-timeout", "1s"]);
    }
    Proxy::spawn(command, &dir.join("unused.mtape"))
}

fn report(dir: &Path) -> Value {
    let text = std::fs::read(dir.join("shadow.json")).unwrap_or_default();
    serde_json::from_slice(&text).unwrap_or(Value::Null)
}

fn target<'a>(report: &'a Value, role: &str) -> &'a Value {
    report["targets"]
        .as_array()
        .and_then(|t| t.iter().find(|t| t["role"] == role))
        .unwrap_or_else(|| panic!("no {role} in {report}"))
}

fn total(report: &Value, role: &str, what: &str) -> u64 {
    u(&target(report, role)["totals"][what])
}

/// Waits until the periodic report says `done`: at most 90 s without the targets' counts
/// moving (a mirror at low priority on a loaded machine is slow, not stuck), 600 s in all.
fn wait_for_report(dir: &Path, what: &str, done: impl Fn(&Value) -> bool) -> Value {
    let started = Instant::now();
    let (mut moved, mut last) = (Instant::now(), String::new());
    loop {
        let r = report(dir);
        if !r.is_null() && done(&r) {
            return r;
        }
        let counts: Vec<String> = ["candidate", "control"]
            .iter()
            .filter_map(|role| r["targets"].as_array()?.iter().find(|t| t["role"] == *role))
            .map(|t| t["totals"].to_string())
            .collect();
        if counts.concat() != last {
            (moved, last) = (Instant::now(), counts.concat());
        }
        assert!(
            moved.elapsed() < Duration::from_secs(90)
                && started.elapsed() < Duration::from_secs(600),
            "{what}: never reached; report: {r}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn accounted(r: &Value) -> u64 {
    let t = &target(r, "candidate")["totals"];
    ["mirrored", "shed", "gaps", "orphans"]
        .iter()
        .map(|k| u(&t[*k]))
        .sum()
}

#[test]
fn an_identical_candidate_gives_no_discrepancy_and_a_control_is_mirrored_too() {
    let (prod, cand, ctl) = (Server::start(), Server::start(), Server::start());
    for s in [&prod, &cand, &ctl] {
        fill(&s.uri(), None);
    }
    let dir = tempdir();
    let proxy = shadow(
        &prod.uri(),
        dir.path(),
        &[
            "--candidate",
            &cand.uri(),
            "--control",
            &ctl.uri(),
            "--max-outstanding",
            "100000",
            // Nothing here is down: a mirror the loaded machine keeps off the CPU for a second
            // must not take its candidate for dead and lose reads as gaps.
            "--candidate-timeout",
            "60s",
        ],
    );
    // 8 connections x 2,500 reads = 20,000 reads, each mirrored to the candidate and the control.
    let digest = reads(&proxy.uri(), 2500, 8);
    assert_eq!(
        digest,
        reads(&prod.uri(), 2500, 8),
        "the clients' results through the shadow"
    );
    wait_for_report(dir.path(), "20,000 mirrored", |r| {
        total(r, "candidate", "mirrored") >= 20_000 && total(r, "control", "mirrored") >= 20_000
    });
    let exit = proxy.stop();
    assert!(exit.status.success(), "{}", exit.stderr);
    let r = {
        let last = report(dir.path());
        assert_eq!(last["complete"], true, "{last}");
        last
    };
    assert_schema("shadow", &r);
    for role in ["candidate", "control"] {
        let t = &target(&r, role)["totals"];
        assert_eq!(u(&t["discrepancies"]), 0, "{role}: {t}");
        assert_eq!(u(&t["shed"]), 0, "{role}: {t}");
        assert_eq!(u(&t["matched"]), u(&t["mirrored"]), "{role}: {t}");
    }
    let shapes = target(&r, "candidate")["shapes"].as_array().unwrap();
    let commands: std::collections::BTreeSet<_> = shapes
        .iter()
        .map(|s| s["command"].as_str().unwrap())
        .collect();
    for c in ["find", "aggregate", "distinct"] {
        assert!(commands.contains(c), "{c} mirrored: {commands:?}");
    }
    assert!(shapes
        .iter()
        .all(|s| s["ratio"].is_object() || u(&s["mirrored"]) < 2));
    assert!(
        exit.stderr.contains("discrepancies"),
        "summary at stop: {}",
        exit.stderr
    );
}

#[test]
fn one_changed_document_is_a_discrepancy_naming_its_shape_and_id() {
    let (prod, cand) = (Server::start(), Server::start());
    fill(&prod.uri(), None);
    fill(&cand.uri(), Some(77));
    let dir = tempdir();
    let disc = dir.path().join("d.jsonl");
    let proxy = shadow(
        &prod.uri(),
        dir.path(),
        &[
            "--candidate",
            &cand.uri(),
            "--discrepancies",
            disc.to_str().unwrap(),
            "--metrics",
            "127.0.0.1:0",
        ],
    );
    python(
        "import sys\nfrom pymongo import MongoClient\n\
         c = MongoClient(sys.argv[1])\n\
         for i in range(70, 80): list(c.shop.items.find({'_id': i}))\n",
        &[&proxy.uri()],
    );
    let r = wait_for_report(dir.path(), "one discrepancy", |r| {
        total(r, "candidate", "discrepancies") >= 1
    });
    let stderr = proxy.stderr();
    let addr = metrics_addr(&stderr).unwrap_or_else(|| panic!("no metrics address: {stderr}"));
    let exposition = scrape(&addr);
    let series = exposition
        .lines()
        .find(|l| l.starts_with("mongotape_shadow_reads_total{") && l.contains("discrepancy"))
        .filter(|l| !l.contains("shape=\"other\"") && l.ends_with(" 1"));
    assert!(
        series.is_some(),
        "a shape's discrepancy on --metrics:\n{exposition}"
    );
    // The shape's latency on both sides: one histogram each, counting the same reads.
    let shape = series.unwrap().split("shape=\"").nth(1).unwrap();
    let shape = &shape[..shape.find('"').unwrap()];
    let count = |side: &str| -> u64 {
        let l = exposition
            .lines()
            .find(|l| {
                l.starts_with("mongotape_shadow_read_latency_seconds_count{")
                    && l.contains(&format!("shape=\"{shape}\""))
                    && l.contains(&format!("side=\"{side}\""))
            })
            .unwrap_or_else(|| panic!("no {side} latency of {shape}:\n{exposition}"));
        l.rsplit(' ').next().unwrap().parse().unwrap()
    };
    assert!(count("target") >= 10, "{exposition}");
    assert_eq!(count("production"), count("target"), "{exposition}");
    let exit = proxy.stop();
    assert!(exit.status.success(), "{}", exit.stderr);
    assert_eq!(total(&r, "candidate", "discrepancies"), 1, "{r}");
    assert_eq!(total(&r, "candidate", "matched"), 9, "{r}");
    let lines = std::fs::read_to_string(&disc).unwrap();
    let line: Value = serde_json::from_str(lines.lines().next().unwrap()).unwrap();
    assert_eq!(line["ids"], serde_json::json!([77]), "{line}");
    // Confirmed within a second of the read (the recheck waits 200 ms, then asks both sides).
    let after = line["confirmed_after_ms"].as_u64().unwrap();
    assert!((200..1000).contains(&after), "{line}");
    assert_eq!(line["ns"], "shop.items", "{line}");
    let shape = line["shape"].as_str().unwrap();
    assert!(
        shape.starts_with("find shop.items") && shape.contains("_id"),
        "{line}"
    );
    let entry = target(&r, "candidate")["shapes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["shape"] == shape)
        .cloned()
        .unwrap();
    assert_eq!(u(&entry["discrepancies"]), 1, "{entry}");
}

#[test]
fn a_stopped_candidate_sheds_reads_and_never_changes_the_clients_results() {
    let (prod, cand) = (Server::start(), Server::start());
    fill(&prod.uri(), None);
    fill(&cand.uri(), None);
    let dir = tempdir();
    let proxy = shadow(&prod.uri(), dir.path(), &["--candidate", &cand.uri()]);
    let direct = reads(&prod.uri(), 200, 4);
    unsafe { libc::kill(cand.pid() as i32, libc::SIGSTOP) };
    let through = reads(&proxy.uri(), 200, 4);
    unsafe { libc::kill(cand.pid() as i32, libc::SIGCONT) };
    assert_eq!(
        through, direct,
        "the clients' results with the candidate stopped"
    );
    let r = wait_for_report(dir.path(), "800 reads accounted for", |r| {
        accounted(r) >= 800
    });
    assert!(total(&r, "candidate", "shed") > 0, "sheds counted: {r}");
    let (before, seen) = (total(&r, "candidate", "mirrored"), accounted(&r));
    reads(&proxy.uri(), 50, 2);
    // The 100 new reads are each mirrored or shed (a debug build on a busy machine may shed some).
    let r = wait_for_report(dir.path(), "mirroring resumed", |r| {
        accounted(r) >= seen + 100
    });
    assert!(
        total(&r, "candidate", "mirrored") > before,
        "mirroring resumed: {r}"
    );
    let exit = proxy.stop();
    assert!(exit.status.success(), "{}", exit.stderr);
    assert_eq!(total(&report(dir.path()), "candidate", "discrepancies"), 0);
}

#[test]
fn a_killed_candidate_is_reconnected_once_it_is_back() {
    let prod = Server::start();
    let storage = tempdir();
    let store = storage.path().display().to_string();
    let cand = Server::start_with(&["--storage-path", &store]);
    let port = cand.port().to_string();
    fill(&prod.uri(), None);
    fill(&cand.uri(), None);
    let dir = tempdir();
    let proxy = shadow(&prod.uri(), dir.path(), &["--candidate", &cand.uri()]);
    reads(&proxy.uri(), 20, 2);
    // Every read is accounted for; a few may be shed (at most 10 outstanding per connection).
    wait_for_report(dir.path(), "first reads mirrored", |r| {
        accounted(r) >= 40 && total(r, "candidate", "mirrored") > 0
    });
    drop(cand);
    let direct = reads(&prod.uri(), 50, 2);
    assert_eq!(
        reads(&proxy.uri(), 50, 2),
        direct,
        "results with the candidate dead"
    );
    let r = wait_for_report(dir.path(), "the gap counted", |r| {
        total(r, "candidate", "gaps") > 0
    });
    let before = total(&r, "candidate", "mirrored");
    let _back = Server::start_with(&["--storage-path", &store, "--port", &port]);
    // Keeps reading until the mirror has reconnected (its backoff is at most 5 s).
    let r = wait_for_report(dir.path(), "mirroring after the restart", |r| {
        reads(&proxy.uri(), 10, 2);
        total(r, "candidate", "mirrored") > before
    });
    let t = target(&r, "candidate");
    assert!(u(&t["connections"]) >= 2, "reconnected: {t}");
    assert!(u(&t["connection_failures"]) >= 1, "{t}");
    let exit = proxy.stop();
    assert!(exit.status.success(), "{}", exit.stderr);
}

#[test]
fn a_candidate_answering_garbage_is_survived() {
    let prod = Server::start();
    fill(&prod.uri(), None);
    let junk = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let junk_addr = junk.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        for stream in junk.incoming().flatten() {
            use std::io::Write;
            let mut s = stream;
            // A header claiming 16 bytes of a reply to request 1, then noise.
            let _ = s.write_all(&[
                0x10, 0, 0, 0, 9, 9, 9, 9, 1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff,
            ]);
            let _ = s.write_all(b"HTTP/1.1 400 Bad Request\r\n\r\nnot mongodb at all");
        }
    });
    let dir = tempdir();
    let proxy = shadow(
        &prod.uri(),
        dir.path(),
        &["--candidate", &uri_for(&junk_addr)],
    );
    let direct = reads(&prod.uri(), 100, 4);
    assert_eq!(reads(&proxy.uri(), 100, 4), direct);
    let r = wait_for_report(dir.path(), "400 reads accounted for", |r| {
        accounted(r) >= 400
    });
    assert_eq!(total(&r, "candidate", "mirrored"), 0, "{r}");
    assert!(
        u(&target(&r, "candidate")["connection_failures"]) > 0,
        "{r}"
    );
    let exit = proxy.stop();
    assert!(exit.status.success(), "{}", exit.stderr);
}

#[test]
fn namespace_and_app_filters_mirror_only_those_reads_and_count_the_rest() {
    let (prod, cand) = (Server::start(), Server::start());
    fill(&prod.uri(), None);
    fill(&cand.uri(), None);
    let dir = tempdir();
    let proxy = shadow(
        &prod.uri(),
        dir.path(),
        &[
            "--candidate",
            &cand.uri(),
            "--namespace",
            "shop.items",
            "--app",
            "web",
        ],
    );
    // web: 10 reads of shop.items and 10 of crm.people; batch: 10 of shop.items.
    python(
        "import sys\nfrom pymongo import MongoClient\n\
         web = MongoClient(sys.argv[1], appname='web')\n\
         batch = MongoClient(sys.argv[1], appname='batch')\n\
         for i in range(10):\n\
         \x20   list(web.shop.items.find({'_id': i}))\n\
         \x20   list(web.crm.people.find({'_id': i}))\n\
         \x20   list(batch.shop.items.find({'_id': i}))\n",
        &[&proxy.uri()],
    );
    let r = wait_for_report(dir.path(), "30 reads mirrored or filtered", |r| {
        accounted(r) + u(&r["filtered"]) >= 30
    });
    let exit = proxy.stop();
    assert!(exit.status.success(), "{}", exit.stderr);
    assert_eq!(total(&r, "candidate", "mirrored"), 10, "{r}");
    assert_eq!(total(&r, "candidate", "shed"), 0, "{r}");
    assert_eq!(u(&r["filtered"]), 20, "{r}");
    let shapes = target(&r, "candidate")["shapes"].as_array().unwrap();
    assert!(
        shapes.iter().all(|s| s["namespace"] == "shop.items"),
        "{shapes:?}"
    );
}

/// CONNS connections opened one after the other, connection `i` reading `shop.c{i}` once.
const CONNS: usize = 40;

fn one_read_per_connection(addr: &str) {
    use std::io::Write;
    for i in 0..CONNS {
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let body = bson::rawdoc! { "find": format!("c{i}"), "filter": {}, "$db": "shop" };
        s.write_all(&command_message(1, Default::default(), body))
            .unwrap();
        read_frame(&mut s, &mut mongotape::wire::FrameSplitter::new()).expect("a reply");
    }
}

/// The collections of the connections a shadow with `--sample 50` mirrored.
fn sampled_connections(prod: &Server, cand: &Server, seed: &str) -> Vec<String> {
    let dir = tempdir();
    let proxy = shadow(
        &prod.uri(),
        dir.path(),
        &[
            "--candidate",
            &cand.uri(),
            "--sample",
            "50",
            "--sample-seed",
            seed,
        ],
    );
    one_read_per_connection(proxy.addr());
    let r = wait_for_report(dir.path(), "every read mirrored or filtered", |r| {
        accounted(r) + u(&r["filtered"]) >= CONNS as u64
    });
    let exit = proxy.stop();
    assert!(exit.status.success(), "{}", exit.stderr);
    assert_eq!(total(&r, "candidate", "shed"), 0, "{r}");
    let mut picked: Vec<String> = target(&r, "candidate")["shapes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["namespace"].as_str().unwrap().to_owned())
        .collect();
    picked.sort();
    assert_eq!(picked.len() as u64 + u(&r["filtered"]), CONNS as u64, "{r}");
    picked
}

#[test]
fn sampling_half_the_connections_picks_about_half_and_the_same_with_the_same_seed() {
    let (prod, cand) = (Server::start(), Server::start());
    let first = sampled_connections(&prod, &cand, "7");
    assert!(
        (CONNS / 5..=CONNS * 4 / 5).contains(&first.len()),
        "{} of {CONNS} connections mirrored: {first:?}",
        first.len()
    );
    assert_eq!(sampled_connections(&prod, &cand, "7"), first, "same seed");
    assert_ne!(
        sampled_connections(&prod, &cand, "8"),
        first,
        "another seed"
    );
}

#[test]
fn record_only_options_are_hidden_from_the_help_and_a_snapshot_needs_mirrored_writes() {
    let help = mongotape(&["shadow", "--help"]);
    assert!(help.success(), "{}", help.stderr);
    for option in ["--interface <", "--sniff-buffer <", "--server-port <"] {
        assert!(
            !help.stdout.contains(option),
            "{option} in:\n{}",
            help.stdout
        );
    }
    assert!(help.stdout.contains("--sample"), "{}", help.stdout);
    let out = mongotape(&[
        "shadow",
        "-u",
        "127.0.0.1:1",
        "-o",
        "x.mtape",
        "--candidate",
        "127.0.0.1:2",
        "--snapshot",
        "shop.*",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", out.stderr);
    assert!(out.stderr.contains("--mirror all"), "{}", out.stderr);
}

/// Each of `pid`'s threads: its name and its scheduling policy (`/proc/PID/task/TID/stat`,
/// field 41).
fn policies(pid: u32) -> Vec<(String, u32)> {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).expect("the shadow's threads");
    tasks
        .filter_map(|t| {
            let dir = t.ok()?.path();
            let comm = std::fs::read_to_string(dir.join("comm")).ok()?;
            let stat = std::fs::read_to_string(dir.join("stat")).ok()?;
            let fields: Vec<&str> = stat[stat.rfind(')')? + 2..].split(' ').collect();
            Some((comm.trim().to_owned(), fields[41 - 3].parse().ok()?))
        })
        .collect()
}

/// Left to its default, the mirror's thread is `SCHED_IDLE` (policy 5): it only ever takes CPU
/// time nothing else wants, while every other thread (the forwarding) stays `SCHED_OTHER` (0).
#[test]
fn by_default_the_mirror_only_takes_cpu_time_nothing_else_wants() {
    const SCHED_OTHER: u32 = 0;
    const SCHED_IDLE: u32 = 5;
    let dir = tempdir();
    let (prod, cand) = (Server::start(), Server::start());
    fill(&prod.uri(), None);
    fill(&cand.uri(), None);
    let mut command = Command::new(mongotape_bin());
    command
        .args([
            "shadow",
            "--listen",
            "127.0.0.1:0",
            "--upstream",
            &prod.uri(),
        ])
        .args(["--candidate", &cand.uri()]);
    let proxy = Proxy::spawn(command, &dir.path().join("unused.mtape"));
    let direct = reads(&prod.uri(), 20, 2);
    assert_eq!(reads(&proxy.uri(), 20, 2), direct, "the clients' results");
    let threads = policies(proxy.pid());
    let (mirror, others): (Vec<_>, Vec<_>) = threads
        .iter()
        .partition(|(name, _)| name.starts_with("mongotape-mirro"));
    assert_eq!(mirror.len(), 1, "one mirror thread: {threads:?}");
    assert_eq!(mirror[0].1, SCHED_IDLE, "the mirror's thread: {threads:?}");
    assert!(
        others.len() >= 2 && others.iter().all(|(_, p)| *p == SCHED_OTHER),
        "the forwarding keeps its priority: {threads:?}"
    );
    let exit = proxy.stop();
    assert!(exit.status.success(), "{}", exit.stderr);
}
