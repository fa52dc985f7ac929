//! `record --metrics` and `replay --metrics`: the endpoint is scraped while a real pymongo workload
//! runs through the proxy (and while the capture is replayed), its exposition is checked line by
//! line, and its counters are compared with what the capture holds.

mod common;

use common::*;
use mongotape::capture::{CaptureReader, RecordKind};
use mongotape::wire::{Message, RequestInfo};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const INSERTS: u64 = 300;
const W0: u64 = 40;

/// Inserts, a command the server does not know (an ok: 0 reply, code 59), a pause to be scraped
/// in, finds, and unacknowledged inserts. Prints "paused" when the pause starts.
const WORKLOAD: &str = r#"
import sys, time
from pymongo import MongoClient, WriteConcern
from pymongo.errors import OperationFailure
uri, n, w0 = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
client = MongoClient(uri, serverSelectionTimeoutMS=10000)
db = client.metrics_test
db.c.drop()
for i in range(n):
    db.c.insert_one({'_id': i, 'x': 'a' * 100})
try:
    db.command('noSuchCommandAtAll')
except OperationFailure:
    pass
print('paused', flush=True)
time.sleep(2)
for i in range(n):
    assert db.c.find_one({'_id': i}) is not None
fire = db.get_collection('w0', write_concern=WriteConcern(w=0))
for i in range(w0):
    fire.insert_one({'i': i})
client.close()
"#;

/// One sample line of the exposition.
#[derive(Debug, Clone)]
struct Sample {
    name: String,
    labels: BTreeMap<String, String>,
    value: f64,
}

/// The exposition checked against the Prometheus text format, then its samples.
fn parse_exposition(text: &str) -> Vec<Sample> {
    let mut types: BTreeMap<String, String> = BTreeMap::new();
    let mut helped = std::collections::BTreeSet::new();
    let mut samples = Vec::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let (name, help) = rest.split_once(' ').expect("HELP has a name and a text");
            assert!(!help.is_empty(), "{line}");
            assert!(helped.insert(name.to_owned()), "HELP twice for {name}");
            continue;
        }
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').expect("TYPE has a name and a type");
            assert!(helped.contains(name), "TYPE before HELP for {name}");
            assert!(["counter", "gauge", "histogram"].contains(&kind), "{line}");
            assert!(name.starts_with("mongotape_"), "{name} is not prefixed");
            assert_eq!(
                kind == "counter",
                name.ends_with("_total"),
                "{line}: counters and only counters end in _total"
            );
            assert!(
                types.insert(name.to_owned(), kind.to_owned()).is_none(),
                "TYPE twice for {name}"
            );
            continue;
        }
        assert!(
            !line.starts_with('#') && !line.is_empty(),
            "unexpected line {line:?}"
        );
        let (series, value) = line.rsplit_once(' ').expect("sample has a value");
        let value: f64 = match value {
            "+Inf" => f64::INFINITY,
            v => v
                .parse()
                .unwrap_or_else(|_| panic!("bad value in {line:?}")),
        };
        let (name, labels) = match series.split_once('{') {
            Some((name, rest)) => {
                let body = rest.strip_suffix('}').expect("labels end with }");
                let mut labels = BTreeMap::new();
                for pair in body.split(',').filter(|p| !p.is_empty()) {
                    let (k, v) = pair.split_once('=').expect("label is k=v");
                    let v = v
                        .strip_prefix('"')
                        .and_then(|v| v.strip_suffix('"'))
                        .expect("quoted label value");
                    labels.insert(k.to_owned(), v.to_owned());
                }
                (name.to_owned(), labels)
            }
            None => (series.to_owned(), BTreeMap::new()),
        };
        // Every sample belongs to a family announced before it.
        let family = ["_bucket", "_sum", "_count"]
            .iter()
            .find_map(|s| {
                name.strip_suffix(s)
                    .filter(|f| types.get(*f).map(String::as_str) == Some("histogram"))
            })
            .unwrap_or(&name);
        assert!(types.contains_key(family), "{name} has no TYPE line");
        if name.ends_with("_bucket") {
            assert!(labels.contains_key("le"), "{line}");
        }
        samples.push(Sample {
            name,
            labels,
            value,
        });
    }
    assert!(!samples.is_empty(), "an empty exposition");
    samples
}

/// The value of one series (0 when absent).
fn value(samples: &[Sample], name: &str, labels: &[(&str, &str)]) -> f64 {
    samples
        .iter()
        .filter(|s| {
            s.name == name
                && labels
                    .iter()
                    .all(|(k, v)| s.labels.get(*k).map(String::as_str) == Some(*v))
        })
        .map(|s| s.value)
        .sum()
}

/// Per request command (decoded independently of the proxy), request and reply counts and bytes.
struct CaptureCounts {
    commands: BTreeMap<String, u64>,
    requests: u64,
    replies: u64,
    request_bytes: u64,
    reply_bytes: u64,
}

fn capture_counts(path: &Path) -> CaptureCounts {
    let mut reader = CaptureReader::open(path).unwrap();
    let mut c = CaptureCounts {
        commands: BTreeMap::new(),
        requests: 0,
        replies: 0,
        request_bytes: 0,
        reply_bytes: 0,
    };
    while let Some(record) = reader.next_record() {
        let record = record.unwrap();
        match record.kind {
            RecordKind::Request => {
                c.requests += 1;
                c.request_bytes += record.payload.len() as u64;
                let info = RequestInfo::of(&Message::parse(&record.payload).unwrap());
                *c.commands.entry(info.command).or_default() += 1;
            }
            RecordKind::Reply => {
                c.replies += 1;
                c.reply_bytes += record.payload.len() as u64;
            }
            _ => {}
        }
    }
    c
}

#[test]
fn record_metrics_match_the_capture() {
    let server = Server::start();
    let dir = tempdir();
    let out = dir.path().join("metrics.mtape");
    let proxy = Proxy::start_with(
        server.addr(),
        &out,
        &["--quiet", "--metrics", "127.0.0.1:0"],
    );
    let addr = metrics_addr(&proxy.stderr()).expect("the proxy names its metrics address");

    // The workload runs in its own process; the endpoint is scraped while it pauses.
    let mut workload = Command::new("python3")
        .arg("-c")
        .arg(WORKLOAD)
        .args([proxy.uri(), INSERTS.to_string(), W0.to_string()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(workload.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line.trim(), "paused", "workload did not reach its pause");
    let during_text = scrape(&addr);
    let during = parse_exposition(&during_text);
    assert_eq!(
        value(
            &during,
            "mongotape_requests_total",
            &[("command", "insert")]
        ),
        INSERTS as f64
    );
    // A command's series appears when it is first seen: none for the ones never sent.
    let zeros = during_text
        .lines()
        .filter(|l| l.starts_with("mongotape_requests_total{") && l.ends_with(" 0"))
        .count();
    assert_eq!(zeros, 0, "{during_text}");
    assert!(!during_text.contains(r#"command="renameCollection""#));
    assert_eq!(
        value(&during, "mongotape_requests_total", &[("command", "find")]),
        0.0
    );
    assert!(value(&during, "mongotape_connections_open", &[]) >= 1.0);
    let status = workload.wait().unwrap();
    let mut err = String::new();
    workload
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(status.success(), "workload failed: {err}");

    // Once every connection is closed and the recorder has caught up, the figures are final.
    let deadline = Instant::now() + Duration::from_secs(20);
    let after = loop {
        let s = parse_exposition(&scrape(&addr));
        let settled = value(&s, "mongotape_connections_open", &[]) == 0.0
            && value(&s, "mongotape_recorded_messages_total", &[])
                == value(&s, "mongotape_messages_total", &[])
            && value(&s, "mongotape_capture_bytes_total", &[]) > 0.0;
        if settled || Instant::now() > deadline {
            break s;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let exit = proxy.stop();
    assert!(exit.status.success(), "proxy: {}", exit.stderr);
    let capture = capture_counts(&out);
    let v = |name: &str, labels: &[(&str, &str)]| value(&after, name, labels);

    // Requests per command and in all, as the capture holds them.
    for (command, n) in &capture.commands {
        let label = if mongotape::metrics::labels::COMMANDS.contains(&command.as_str()) {
            command.as_str()
        } else {
            continue;
        };
        assert_eq!(
            v("mongotape_requests_total", &[("command", label)]),
            *n as f64,
            "requests of {command}"
        );
    }
    assert_eq!(capture.commands["insert"], INSERTS + W0);
    assert_eq!(v("mongotape_requests_total", &[]), capture.requests as f64);
    assert_eq!(
        v("mongotape_requests_by_opcode_total", &[]),
        capture.requests as f64
    );
    assert_eq!(
        v("mongotape_messages_total", &[("direction", "request")]),
        capture.requests as f64
    );
    assert_eq!(
        v("mongotape_messages_total", &[("direction", "reply")]),
        capture.replies as f64
    );
    assert_eq!(
        v("mongotape_message_bytes_total", &[("direction", "request")]),
        capture.request_bytes as f64
    );
    assert_eq!(
        v("mongotape_message_bytes_total", &[("direction", "reply")]),
        capture.reply_bytes as f64
    );
    assert_eq!(
        v("mongotape_recorded_messages_total", &[]),
        (capture.requests + capture.replies) as f64
    );
    // Acknowledged inserts were timed; unacknowledged ones have no reply to time.
    assert_eq!(
        v(
            "mongotape_request_duration_seconds_count",
            &[("command", "insert")]
        ),
        INSERTS as f64
    );
    assert_eq!(
        v(
            "mongotape_request_duration_seconds_count",
            &[("command", "find")]
        ),
        capture.commands["find"] as f64
    );
    let inf = v(
        "mongotape_request_duration_seconds_bucket",
        &[("command", "find"), ("le", "+Inf")],
    );
    assert_eq!(inf, capture.commands["find"] as f64);
    assert!(
        v(
            "mongotape_request_duration_seconds_sum",
            &[("command", "find")]
        ) > 0.0
    );
    // The unknown command: one ok: 0 reply with code 59, counted as `other`.
    assert_eq!(v("mongotape_error_replies_total", &[("code", "59")]), 1.0);
    assert!(v("mongotape_requests_total", &[("command", "other")]) >= 1.0);
    assert_eq!(v("mongotape_connections_open", &[]), 0.0);
    assert!(v("mongotape_connections_total", &[]) >= 2.0);
    assert_eq!(v("mongotape_capture_segments_total", &[]), 1.0);
    assert!(v("mongotape_capture_bytes_total", &[]) > 0.0);
    assert_eq!(v("mongotape_not_recorded_messages_total", &[]), 0.0);
    assert_eq!(v("mongotape_gap_records_total", &[]), 0.0);
    assert!(
        v("mongotape_records_written_total", &[]) > (capture.requests + capture.replies) as f64
    );
    // Counters only grow between scrapes.
    for s in during.iter().filter(|s| s.name.ends_with("_total")) {
        let later = after
            .iter()
            .find(|a| a.name == s.name && a.labels == s.labels)
            .map_or(0.0, |a| a.value);
        assert!(later >= s.value, "{} {:?} went down", s.name, s.labels);
    }
}

#[test]
fn replay_metrics_show_progress_while_running() {
    let server = Server::start();
    let dir = tempdir();
    let out = dir.path().join("replay.mtape");
    record_through(&server, &out, |uri| {
        python(
            WORKLOAD.replace("time.sleep(2)", "pass").as_str(),
            &[uri.to_owned(), "200".into(), "0".into()],
        )
    });
    let capture = capture_counts(&out);
    let report = dir.path().join("report.json");
    let mut child = Command::new(mongotape_bin())
        .arg("replay")
        .arg(&out)
        .args([
            "--target",
            &server.uri(),
            "--rate",
            "250",
            "--metrics",
            "127.0.0.1:0",
            "--quiet",
            "--report",
        ])
        .arg(&report)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    let addr = loop {
        let mut line = String::new();
        assert!(
            stderr.read_line(&mut line).unwrap() > 0,
            "replay ended before serving metrics: {seen}"
        );
        seen.push_str(&line);
        if let Some(addr) = metrics_addr(&line) {
            break addr;
        }
    };
    let drain = std::thread::spawn(move || {
        let mut rest = String::new();
        let _ = stderr.read_to_string(&mut rest);
        rest
    });
    // Scrape until the replay is done; keep the scrapes taken midway.
    let mut midway = Vec::new();
    let mut last_ops = 0.0;
    let deadline = Instant::now() + REPLAY_TIMEOUT;
    while child.try_wait().unwrap().is_none() && Instant::now() < deadline {
        let Ok(mut stream) = TcpStream::connect(&addr) else {
            break;
        };
        let _ = stream.write_all(b"GET /metrics HTTP/1.1\r\n\r\n");
        let mut response = String::new();
        let _ = stream.read_to_string(&mut response);
        if let Some((_, body)) = response.split_once("\r\n\r\n") {
            if !body.is_empty() {
                let samples = parse_exposition(body);
                let ops = value(&samples, "mongotape_replay_ops_total", &[]);
                assert!(ops >= last_ops, "ops went down");
                last_ops = ops;
                let progress = value(&samples, "mongotape_replay_progress_ratio", &[]);
                if ops > 0.0 && progress < 1.0 {
                    midway.push(samples);
                }
            }
        }
        std::thread::sleep(Duration::from_millis(150));
    }
    let status = child.wait().unwrap();
    let rest = drain.join().unwrap();
    assert!(status.success(), "replay failed: {seen}{rest}");
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    let total_ops = report["summary"]["ops"].as_u64().unwrap() as f64;
    let inserts = report["summary"]["per_command"]["insert"]["count"]
        .as_u64()
        .unwrap() as f64;
    assert_eq!(inserts, capture.commands["insert"] as f64);
    assert!(
        midway.len() >= 2,
        "fewer than two scrapes during the replay"
    );
    let last = midway.last().unwrap();
    let v = |name: &str, labels: &[(&str, &str)]| value(last, name, labels);
    let ops = v("mongotape_replay_ops_total", &[]);
    assert!(ops > 0.0 && ops <= total_ops, "{ops} of {total_ops}");
    assert!(v("mongotape_replay_ops_total", &[("command", "insert")]) <= inserts);
    assert!(v("mongotape_replay_requests_sent_total", &[]) >= ops - 1.0);
    assert!(v("mongotape_replay_connections_opened_total", &[]) >= 1.0);
    assert!(v("mongotape_replay_requests_routed_total", &[]) >= ops);
    let progress = v("mongotape_replay_progress_ratio", &[]);
    assert!(progress > 0.0 && progress < 1.0, "progress {progress}");
    assert!(v("mongotape_replay_capture_expected_bytes", &[]) > 0.0);
    let timed: f64 = v("mongotape_replay_request_duration_seconds_count", &[]);
    assert!(timed > 0.0 && timed <= ops);
    // Every operation has a lag sample (read a moment apart from the ops).
    let lagged = v("mongotape_replay_schedule_lag_seconds_count", &[]);
    assert!(
        (lagged - ops).abs() <= 4.0,
        "{lagged} lag samples for {ops} ops"
    );
    assert_eq!(v("mongotape_replay_aborted", &[]), 0.0);
}

#[test]
fn a_bad_metrics_address_is_a_clear_error() {
    let dir = tempdir();
    let out = mongotape(&[
        "record",
        "--listen",
        "127.0.0.1:0",
        "--upstream",
        "127.0.0.1:1",
        "--metrics",
        "not-an-address",
        "--out",
        dir.path().join("x.mtape").to_str().unwrap(),
    ]);
    assert!(!out.success());
    assert!(
        out.stderr
            .contains("--metrics not-an-address: cannot listen there"),
        "{}",
        out.stderr
    );
    assert!(
        !dir.path().join("x.mtape").exists(),
        "nothing is recorded after a bad --metrics"
    );

    // An address already taken.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let capture = dir.path().join("none.mtape");
    std::fs::write(&capture, b"").unwrap();
    let out = mongotape(&[
        "replay",
        capture.to_str().unwrap(),
        "--target",
        "127.0.0.1:1",
        "--metrics",
        &addr,
    ]);
    assert!(!out.success());
    assert!(
        out.stderr
            .contains(&format!("--metrics {addr}: cannot listen there")),
        "{}",
        out.stderr
    );
}

/// Idle connections (a port scanner, a half-open load balancer check) cannot blind the scraper:
/// more of them than the endpoint has slots, and a scrape is still answered, well before the old
/// 10 s hold would have ended; the endpoint says when it is full. `/` is not an alias of `/metrics`.
#[test]
fn idle_connections_do_not_blind_the_scraper_and_only_metrics_is_served() {
    let server = Server::start();
    let dir = tempdir();
    let out = dir.path().join("idle.mtape");
    let proxy = Proxy::start_with(server.addr(), &out, &["--metrics", "127.0.0.1:0"]);
    let addr = metrics_addr(&proxy.stderr()).expect("the proxy names its metrics address");
    let idle: Vec<TcpStream> = (0..80)
        .map(|_| TcpStream::connect(&addr).unwrap())
        .collect();
    let asked = Instant::now();
    let mut stream = TcpStream::connect(&addr).unwrap();
    // Bounded, and shorter than the 10 s for which 8 idle connections used to hold every slot.
    stream
        .set_read_timeout(Some(Duration::from_secs(8)))
        .unwrap();
    stream
        .write_all(format!("GET /metrics HTTP/1.1\r\nHost: {addr}\r\n\r\n").as_bytes())
        .unwrap();
    let mut response = String::new();
    stream
        .read_to_string(&mut response)
        .unwrap_or_else(|e| panic!("no scrape answer behind 80 idle connections: {e}"));
    eprintln!(
        "FIGURE scrape behind 80 idle connections answered after {:?}",
        asked.elapsed()
    );
    assert!(response.starts_with("HTTP/1.1 200 OK"), "{response}");
    assert!(response.contains("mongotape_connections"), "{response}");
    let deadline = Instant::now() + Duration::from_secs(10);
    while !proxy.stderr().contains("all 64 connections busy") {
        assert!(
            Instant::now() < deadline,
            "no busy line: {}",
            proxy.stderr()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(idle);

    let mut root = TcpStream::connect(&addr).unwrap();
    root.set_read_timeout(Some(Duration::from_secs(8))).unwrap();
    root.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let mut response = String::new();
    root.read_to_string(&mut response).unwrap();
    assert!(response.starts_with("HTTP/1.1 404"), "{response}");
    assert!(!response.contains("mongotape_"), "{response}");
    assert!(proxy.stop().status.success());
}
