//! Why, beyond how much, against the real server and pymongo: errors counted by code in
//! `analyze` and `replay` (a replay into a server that already holds the data: DuplicateKey and
//! its hint), and the slowest requests in `cat --slowest` and every `cat` reply's `latency_us`.

mod common;
use common::*;
use serde_json::Value;

/// Inserts 30 documents with the application's own integer `_id`s, finds them, then fails on
/// purpose: the same 5 inserted again (DuplicateKey write errors, caught) and a find with a
/// filter that is not a document (a command error). Arguments: URI.
const INSERTS_AND_ERRORS: &str = r#"
import sys
from pymongo import MongoClient, errors
db = MongoClient(sys.argv[1], serverSelectionTimeoutMS=10000, appname='why-app').why
for i in range(30):
    db.items.insert_one({'_id': i, 'kind': 'k%d' % (i % 3)})
for i in range(30):
    db.items.find_one({'_id': i})
if len(sys.argv) > 2:
    for i in range(5):
        try:
            db.items.insert_one({'_id': i})
        except errors.DuplicateKeyError:
            pass
    try:
        db.command({'find': 'items', 'filter': 1})
    except errors.OperationFailure:
        pass
"#;

fn entries(report: &Value) -> Vec<Value> {
    report["errors_by_code"]
        .as_array()
        .unwrap_or_else(|| panic!("no errors_by_code: {report}"))
        .clone()
}

fn entry<'a>(all: &'a [Value], command: &str, code: i64) -> &'a Value {
    all.iter()
        .find(|e| e["command"] == command && e["code"] == code)
        .unwrap_or_else(|| panic!("no {command} {code} in {all:?}"))
}

#[test]
fn analyze_counts_a_captures_errors_by_code_with_their_names_and_shapes() {
    let server = Server::start_with(&["--standalone"]);
    let dir = tempdir();
    let (capture, _) = record_python(
        &server,
        dir.path(),
        "errors",
        &INSERTS_AND_ERRORS.replace("sys.argv) > 2", "sys.argv) > 1"),
    );
    let report = analyze_json(&capture, &["--slowest", "4"]);
    assert_schema("analyze", &report);
    let all = entries(&report);
    let dup = entry(&all, "insert", 11000);
    assert_eq!(dup["count"], 5, "{all:?}");
    assert_eq!(dup["codeName"], "DuplicateKey");
    assert_eq!(dup["write_error"], true);
    assert!(dup["errmsg"].as_str().unwrap().contains("E11000"), "{dup}");
    assert_eq!(dup["shapes"][0]["shape"], "insert why.items", "{dup}");
    let failed = all
        .iter()
        .find(|e| e["command"] == "find")
        .unwrap_or_else(|| panic!("the failed find: {all:?}"));
    assert_eq!(failed["count"], 1);
    assert!(failed["code"].as_i64().is_some(), "{failed}");
    assert!(
        failed["codeName"].as_str().is_some_and(|n| !n.is_empty()),
        "{failed}"
    );
    assert_eq!(failed["write_error"], false);
    assert_eq!(report["summary"]["overall"]["errors"], 6);

    // The 4 slowest, slowest first, each with its application, shape and body.
    let slow = report["slowest"].as_array().unwrap();
    assert_eq!(slow.len(), 4);
    let us: Vec<f64> = slow
        .iter()
        .map(|s| s["recorded_us"].as_f64().unwrap())
        .collect();
    assert!(us.windows(2).all(|w| w[0] >= w[1]), "{us:?}");
    for s in slow {
        assert_eq!(s["application"], "why-app", "{s}");
        assert!(s["shape"].as_str().unwrap().contains("why.items"), "{s}");
        let body: Value = serde_json::from_str(s["body"].as_str().unwrap()).unwrap();
        assert_eq!(body["$db"], "why", "{s}");
    }
    let text = mongotape(&["analyze", capture.to_str().unwrap()]);
    assert!(text.success(), "{}", text.stderr);
    assert!(
        text.stdout
            .contains("errors 6: DuplicateKey (11000) 5 on insert (write error)"),
        "{}",
        text.stdout
    );
    assert!(text.stdout.contains("slowest requests"), "{}", text.stdout);
}

#[test]
fn a_replay_into_a_server_that_holds_the_data_reports_duplicate_key_and_what_it_means() {
    let server = Server::start_with(&["--standalone"]);
    let dir = tempdir();
    let (capture, _) = record_python(&server, dir.path(), "inserts", INSERTS_AND_ERRORS);
    // The recording server holds the 30 documents: every insert replayed into it fails.
    let run = try_replay(&capture, &server.uri(), &["--fast", "--slowest", "3"]);
    assert_eq!(run.report["complete"], true, "{}", run.describe());
    assert_schema("replay", &run.report);
    let all = entries(&run.report);
    let dup = entry(&all, "insert", 11000);
    assert_eq!(dup["count"], 30, "{all:?}");
    assert_eq!(dup["codeName"], "DuplicateKey");
    assert_eq!(dup["shapes"][0]["shape"], "insert why.items");
    assert!(dup["errmsg"].as_str().unwrap().contains("E11000"), "{dup}");
    // Sentences are wrapped at 100 columns: read with the breaks undone.
    let text = &flat(&run.output.stdout);
    assert!(
        text.contains("errors 30: DuplicateKey (11000) 30 on insert (write error)"),
        "{text}"
    );
    assert!(
        text.contains("already holds the data") && text.contains("docs/production.md"),
        "{text}"
    );
    let production = std::fs::read_to_string(workspace_root().join("docs/production.md")).unwrap();
    assert!(production.contains("### A consistent starting point for replay"));

    // The 3 slowest, by the replay's latency, with the recorded one beside it.
    let slow = run.report["slowest"].as_array().unwrap();
    assert_eq!(slow.len(), 3);
    let us: Vec<f64> = slow
        .iter()
        .map(|s| s["replayed_us"].as_f64().unwrap())
        .collect();
    assert!(us.windows(2).all(|w| w[0] >= w[1]), "{us:?}");
    assert!(slow.iter().all(|s| s["recorded_us"].as_f64().is_some()));
    // Each with its recorded connection's application (from the handshake) and its shape.
    for s in slow {
        assert_eq!(s["application"], "why-app", "{s}");
        assert!(
            s["shape_hash"].as_str().is_some_and(|h| h.len() == 16),
            "{s}"
        );
    }

    // Two shards of the same replay, merged: the errors add up, the K slowest of both are kept.
    let mut shards = Vec::new();
    for i in 0..2 {
        let out = dir.path().join(format!("shard{i}.json"));
        let shard = format!("{i}/2");
        let args = ["--fast", "-q", "--slowest", "3", "--shard", &shard, "-o"];
        let run = mongotape(
            &[
                &["replay", capture.to_str().unwrap(), "-t", &server.uri()][..],
                &args[..],
                &[out.to_str().unwrap()][..],
            ]
            .concat(),
        );
        assert!(run.success(), "{}", run.stderr);
        shards.push(out.display().to_string());
    }
    let merged = dir.path().join("merged.json");
    let out = mongotape(&[
        "merge",
        &shards[0],
        &shards[1],
        "-q",
        "-o",
        merged.to_str().unwrap(),
    ]);
    assert!(out.success(), "{}", out.stderr);
    let merged: Value = serde_json::from_slice(&std::fs::read(&merged).unwrap()).unwrap();
    assert_schema("merge", &merged);
    assert_eq!(
        entry(&entries(&merged), "insert", 11000)["count"],
        30,
        "{merged}"
    );
    assert_eq!(merged["slowest"].as_array().unwrap().len(), 3);

    // Into an empty server, the same capture fails nowhere.
    let fresh = Server::start_with(&["--standalone"]);
    let clean = replay(&capture, &fresh.uri(), &["--fast"]);
    assert_eq!(entries(&clean.report).len(), 0, "{}", clean.describe());
    assert!(!clean.output.stdout.contains("DuplicateKey"));
}

#[test]
fn cat_lists_the_slowest_requests_and_gives_each_reply_its_latency() {
    let server = Server::start_with(&["--standalone"]);
    let dir = tempdir();
    let (capture, _) = record_python(&server, dir.path(), "cat", INSERTS_AND_ERRORS);
    let file = capture.to_str().unwrap();
    let out = mongotape(&["cat", file, "--slowest", "3", "-j"]);
    assert!(out.success(), "{}", out.stderr);
    let lines: Vec<Value> = out
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3, "{}", out.stdout);
    let us: Vec<f64> = lines
        .iter()
        .map(|l| l["latency_us"].as_f64().unwrap())
        .collect();
    assert!(us.windows(2).all(|w| w[0] >= w[1]), "{us:?}");
    for l in &lines {
        assert_eq!(l["application"], "why-app", "{l}");
        assert_eq!(l["reply"]["ok"], 1.0, "{l}");
        assert_eq!(l["body"]["$db"], "why", "{l}");
    }

    // Every reply line of a plain cat carries latency_us, and the slowest of them is the first
    // `cat --slowest` printed (handshakes aside).
    let all = mongotape(&["cat", file, "--no-body"]);
    assert!(all.success(), "{}", all.stderr);
    let mut slowest_reply: f64 = 0.0;
    let mut replies = 0;
    for l in all.stdout.lines() {
        let l: Value = serde_json::from_str(l).unwrap();
        if l["dir"] != "reply" {
            assert!(l.get("latency_us").is_none(), "{l}");
            continue;
        }
        replies += 1;
        let us = l["latency_us"]
            .as_f64()
            .unwrap_or_else(|| panic!("a reply without latency_us: {l}"));
        let command = l["command"].as_str().unwrap_or_default();
        if !mongotape::wire::info::is_handshake_command(command) {
            slowest_reply = slowest_reply.max(us);
        }
    }
    assert!(replies >= 60, "{replies}");
    assert_eq!(slowest_reply, us[0]);

    // `t` counts from the first record, as cat's: every slow request lies within the capture.
    let last_t = all
        .stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok()?["t"].as_f64())
        .fold(0.0, f64::max);
    for l in &lines {
        let t = l["t"].as_f64().unwrap();
        assert!(
            (0.0..=last_t).contains(&t),
            "t {t} past the last {last_t}: {l}"
        );
    }
    let bare = mongotape(&["cat", file, "--slowest", "3", "-j", "--no-body"]);
    assert!(bare.success(), "{}", bare.stderr);
    for l in bare.stdout.lines() {
        let l: Value = serde_json::from_str(l).unwrap();
        assert!(l.get("body").is_none() && l["reply"]["ok"] == 1.0, "{l}");
    }

    // By default a table: latency, t, connection, application and shape, no session noise.
    let table = mongotape(&["cat", file, "--slowest", "3"]);
    assert!(table.success(), "{}", table.stderr);
    let rows: Vec<&str> = table.stdout.lines().collect();
    assert_eq!(rows.len(), 2 + 3, "{}", table.stdout);
    assert!(rows[0].starts_with("latency") && rows[0].contains("shape"));
    for (row, l) in rows[2..].iter().zip(&lines) {
        assert!(row.contains("why-app") && row.len() <= 100, "{row}");
        assert!(
            row.contains(&format!("{:.3}s", l["t"].as_f64().unwrap())),
            "{row}"
        );
        assert!(row.contains(l["shape"].as_str().unwrap()), "{row} {l}");
        assert!(
            !row.contains("lsid") && !row.contains("$clusterTime"),
            "{row}"
        );
    }
}

/// Seeds `ab.d` with k = 0..19 (`_id` = k), in reverse order when asked. Arguments: URI REVERSE.
const SEED_IN_ORDER: &str = r#"
import sys
from pymongo import MongoClient
db = MongoClient(sys.argv[1], serverSelectionTimeoutMS=10000).ab
ks = list(range(20))
if sys.argv[2] == '1':
    ks.reverse()
db.d.insert_many([{'_id': k, 'k': k, 's': 'v%d' % k} for k in ks])
"#;

/// Reads `ab.d` 40 times without a sort (any order will do) and 40 times sorted. Arguments: URI.
const UNSORTED_READS: &str = r#"
import sys
from pymongo import MongoClient
db = MongoClient(sys.argv[1], serverSelectionTimeoutMS=10000).ab
for _ in range(40):
    db.command({'find': 'd', 'filter': {'k': {'$gte': 0}}})
    db.command({'count': 'd'})
"#;

#[test]
fn with_a2_a_candidate_like_a_is_judged_against_the_copy_and_order_alone_is_no_difference() {
    let _serial = one_at_a_time();
    let recording = Server::start_with(&["--standalone"]);
    python(SEED_IN_ORDER, &[recording.uri().as_str(), "0"]);
    let dir = tempdir();
    let capture = dir.path().join("unsorted.mtape");
    record_through(&recording, &capture, |uri| python(UNSORTED_READS, &[uri]));
    // A and A2 hold the documents in insertion order, B the same documents in reverse.
    let servers: Vec<Server> = (0..3)
        .map(|_| Server::start_with(&["--standalone"]))
        .collect();
    for (s, reverse) in servers.iter().zip(["0", "1", "0"]) {
        python(SEED_IN_ORDER, &[s.uri().as_str(), reverse]);
    }
    let addrs: Vec<&str> = servers.iter().map(|s| s.addr()).collect();
    let run = ab_replay(&capture, &addrs, &["--fast"]);
    run.assert_schema();
    let d = &run.report["differences"];
    assert!(d["reordered"].as_u64().unwrap() >= 40, "{d}");
    assert_eq!(d["real"], serde_json::json!([]), "{d}");
    assert!(
        run.report["findings"]
            .as_array()
            .unwrap()
            .iter()
            .all(|f| !f.as_str().unwrap().contains("replies differ")),
        "{}",
        run.output.stdout
    );
    // What A2 showed against A, per command, and B judged against it.
    let control = run.report["control"].as_array().unwrap();
    let find = control
        .iter()
        .find(|c| c["kind"] == "command" && c["name"] == "find")
        .unwrap_or_else(|| panic!("no check on find: {control:?}"));
    assert_eq!(
        (&find["baseline"], &find["candidate"]),
        (&"A2".into(), &"B".into())
    );
    assert!(
        find["sentence"]
            .as_str()
            .unwrap()
            .starts_with("A2, a copy of A, differs by"),
        "{find}"
    );
    assert!(
        run.output.stdout.contains("A2, a copy of A, differs by"),
        "{}",
        run.output.stdout
    );
    // A ratio judged within the copy's band never stands among the findings.
    for c in control.iter().filter(|c| c["within"] == true) {
        let what = format!("on {} (", c["name"].as_str().unwrap());
        assert!(
            !run.report["findings"].as_array().unwrap().iter().any(|f| f
                .as_str()
                .unwrap()
                .starts_with("B is")
                && f.as_str().unwrap().contains(&what)),
            "{c}\n{}",
            run.output.stdout
        );
    }
    // Positions kept (--strict-order): the reversed batch is a real difference.
    let strict = ab_replay(&capture, &addrs, &["--fast", "--strict-order"]);
    let d = &strict.report["differences"];
    assert_eq!(d["reordered"], 0, "{d}");
    let real: Vec<&str> = d["real"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|v| v.as_str())
        .collect();
    assert!(real.contains(&"cursor.firstBatch[]._id"), "{real:?}");
    let example = &d["fields"]["cursor.firstBatch[].s"]["examples"][0];
    assert!(
        example["control"].is_string() && example["candidate"].is_string(),
        "{example}"
    );
}

/// Where [`recorded_and_replayed`] replays.
enum ReplayInto {
    /// A server just started.
    Fresh,
    /// The server the workload was recorded against, which holds what it wrote.
    TheRecordingServer,
}

/// `script` (arguments: URI) recorded through the proxy in front of a standalone server, then
/// replayed with `args`; the replay completed.
fn recorded_and_replayed(script: &str, into: ReplayInto, args: &[&str]) -> Replay {
    let server = Server::start_with(&["--standalone"]);
    let dir = tempdir();
    let (capture, _) = record_python(&server, dir.path(), "workload", script);
    let fresh = matches!(into, ReplayInto::Fresh).then(|| Server::start_with(&["--standalone"]));
    let target = fresh.as_ref().unwrap_or(&server);
    let run = try_replay(&capture, &target.uri(), args);
    assert_eq!(run.report["complete"], true, "{}", run.describe());
    run
}

/// Seeds 40 documents, then reads them back in batches of 3 (a find and 13 getMores on the same
/// cursor). Arguments: URI.
const BATCHED_READS: &str = r#"
import sys
from pymongo import MongoClient
db = MongoClient(sys.argv[1], serverSelectionTimeoutMS=10000, appname='batches').why
db.b.insert_many([{'_id': i, 'v': i % 7} for i in range(40)])
assert len(list(db.b.find({'v': {'$gte': 0}}).batch_size(3))) == 40
"#;

#[test]
fn a_replays_slowest_getmores_carry_the_shape_of_the_find_that_opened_their_cursor() {
    // Every request kept: the getMores are among them whatever their latencies.
    let run = recorded_and_replayed(
        BATCHED_READS,
        ReplayInto::Fresh,
        &["--fast", "--slowest", "100"],
    );
    let slow = run.report["slowest"].as_array().unwrap();
    let find = slow
        .iter()
        .find(|s| s["command"] == "find")
        .unwrap_or_else(|| panic!("no find among {slow:?}"));
    assert_eq!(find["shape"], "find why.b {v: {$gte: ?number}}", "{find}");
    let getmores: Vec<&Value> = slow.iter().filter(|s| s["command"] == "getMore").collect();
    assert_eq!(getmores.len(), 13, "{slow:?}");
    for g in getmores {
        assert_eq!(g["shape"], find["shape"], "{g}");
        assert_eq!(g["shape_hash"], find["shape_hash"], "{g}");
        assert_eq!(g["application"], "batches", "{g}");
    }
}

/// Ten documents in one unordered insert. Arguments: URI.
const UNORDERED_BATCH: &str = r#"
import sys
from pymongo import MongoClient
db = MongoClient(sys.argv[1], serverSelectionTimeoutMS=10000).why
db.u.insert_many([{'_id': i} for i in range(10)], ordered=False)
"#;

#[test]
fn an_unordered_batch_into_a_server_that_holds_it_counts_each_duplicate() {
    let run = recorded_and_replayed(UNORDERED_BATCH, ReplayInto::TheRecordingServer, &["--fast"]);
    assert_schema("replay", &run.report);
    let all = entries(&run.report);
    let dup = entry(&all, "insert", 11000);
    // One reply, ten documents refused.
    assert_eq!(
        (&dup["count"], &dup["statements"]),
        (&1.into(), &10.into()),
        "{dup}"
    );
    assert!(
        run.output
            .stdout
            .contains("DuplicateKey (11000) 1 on insert (10 write errors)"),
        "{}",
        run.output.stdout
    );
}

/// Every line of a text report within 100 columns, and something said.
fn assert_fits(what: &str, text: &str) {
    assert!(!text.trim().is_empty(), "{what}: nothing printed");
    for line in text.lines() {
        let width = line.chars().count();
        assert!(
            width <= 100,
            "{what}: a line {width} wide:\n{line}\n\n{text}"
        );
    }
}

/// A text with its line breaks undone, to read a wrapped sentence whole.
fn flat(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[test]
fn a_replay_where_many_operations_failed_warns_naming_the_top_error_and_the_restore_hint() {
    let server = Server::start_with(&["--standalone"]);
    let dir = tempdir();
    let (capture, _) = record_python(&server, dir.path(), "inserts", INSERTS_AND_ERRORS);
    // The recording server holds the 30 documents: every insert replayed into it fails.
    let run = try_replay(&capture, &server.uri(), &["--fast"]);
    assert!(
        run.output.success(),
        "no threshold, exit 0: {}",
        run.describe()
    );
    assert_schema("replay", &run.report);
    let overall = &run.report["summary"]["overall"];
    let w = &run.report["failures"];
    assert_eq!(w["failed"], 30, "{}", run.describe());
    assert_eq!(
        (&w["failed"], &w["ops"]),
        (&overall["errors"], &overall["count"])
    );
    assert_eq!(w["top_code"], 11000, "{w}");
    assert_eq!(w["top_error"], "DuplicateKey (11000) on insert", "{w}");
    let ops = u(&overall["count"]);
    let share = 30.0 / ops as f64;
    assert!(share > 0.05, "{ops} operations");
    assert!((w["share"].as_f64().unwrap() - share).abs() < 1e-9, "{w}");
    let text = flat(&run.output.stdout);
    let said = format!(
        "WARNING: {:.1}% of the operations failed (30 of {ops}), most with DuplicateKey (11000) \
         on insert: the target usually already holds the data the capture inserts: restore a snapshot",
        share * 100.0
    );
    assert!(text.contains(&said), "{}", run.output.stdout);
    assert!(text.contains("docs/production.md") && text.contains("--max-error-rate makes"));
    assert_fits("replay", &run.output.stdout);

    // Into an empty server nothing fails: no warning, `failures` null.
    let fresh = Server::start_with(&["--standalone"]);
    let clean = replay(&capture, &fresh.uri(), &["--fast"]);
    assert!(clean.report["failures"].is_null(), "{}", clean.describe());
    assert!(
        !clean.output.stdout.contains("WARNING"),
        "{}",
        clean.output.stdout
    );
}

#[test]
fn every_text_report_fits_100_columns_on_real_captures() {
    // analyze of every fixture: the five clients' drivers, with and without compression.
    let mut fixtures = 0;
    for entry in std::fs::read_dir(workspace_root().join("captures")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "mtape") {
            let out = mongotape(&["analyze", path.to_str().unwrap()]);
            assert!(out.success(), "{}", out.stderr);
            assert_fits(&format!("analyze {}", path.display()), &out.stdout);
            fixtures += 1;
        }
    }
    assert!(fixtures >= 5, "{fixtures} fixtures");

    // A capture with errors, replayed into the server that holds its data (the warning), and
    // A/B into three servers with --explain (plans, findings, the A2 sentences).
    let server = Server::start_with(&["--standalone"]);
    let dir = tempdir();
    let script = INSERTS_AND_ERRORS.replace("sys.argv) > 2", "sys.argv) > 1");
    let (capture, _) = record_python(&server, dir.path(), "errors", &script);
    let file = capture.to_str().unwrap();
    let at = |name: &str| dir.path().join(name).display().to_string();
    let analyzed = mongotape(&["analyze", file]);
    assert!(analyzed.success(), "{}", analyzed.stderr);
    assert_fits("analyze", &analyzed.stdout);
    let json = mongotape(&["analyze", file, "--json"]);
    std::fs::write(at("analyze.json"), &json.stdout).unwrap();
    let replayed = mongotape(&[
        "replay",
        file,
        "-t",
        &server.uri(),
        "--fast",
        "-o",
        &at("r1.json"),
    ]);
    assert!(replayed.success(), "{}", replayed.stderr);
    assert!(replayed.stdout.contains("WARNING"), "{}", replayed.stdout);
    assert_fits("replay", &replayed.stdout);
    let servers: Vec<Server> = (0..3)
        .map(|_| Server::start_with(&["--standalone"]))
        .collect();
    let fresh = servers[0].uri();
    let again = mongotape(&[
        "replay",
        file,
        "-t",
        &fresh,
        "--fast",
        "-q",
        "-o",
        &at("r2.json"),
    ]);
    assert!(again.success(), "{}", again.stderr);
    let mut ab = vec!["replay", file, "--fast", "--explain", "-o"];
    let ab_json = at("ab.json");
    ab.push(&ab_json);
    let uris: Vec<String> = servers.iter().map(Server::uri).collect();
    for uri in &uris {
        ab.extend(["-t", uri.as_str()]);
    }
    let ab = mongotape(&ab);
    assert!(ab.success(), "{}", ab.stderr);
    assert!(ab.stdout.contains("per query shape"), "{}", ab.stdout);
    assert_fits("A/B", &ab.stdout);

    // compare of 4 reports, the A/B one three: six columns of figures, each with its ratio.
    let files = ["analyze.json", "r1.json", "r2.json", "ab.json"].map(at);
    let mut args = vec!["compare"];
    args.extend(files.iter().map(String::as_str));
    let compared = mongotape(&args);
    assert!(compared.success(), "{}", compared.stderr);
    assert_fits("compare", &compared.stdout);
    let headers: Vec<&str> = compared
        .stdout
        .lines()
        .filter(|l| l.starts_with("metric "))
        .collect();
    for label in ["A", "B", "A2"] {
        assert!(
            headers
                .iter()
                .any(|h| h.split("  ").any(|c| c.trim() == label)),
            "no column {label}: {}",
            compared.stdout
        );
    }
    // A folded table keeps each ratio beside its figure: no block opens with a ratio.
    for h in &headers {
        let columns: Vec<&str> = h
            .split("  ")
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .collect();
        assert!(!columns[1].starts_with("vs "), "{h}\n{}", compared.stdout);
    }
}
