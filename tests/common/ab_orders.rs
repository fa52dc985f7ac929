//! An A/B replay of an orders workload where B lacks an index: recorded through the proxy with
//! pymongo, replayed with `--explain` into three real servers, A and A2 with the index on
//! `{status: 1, ts: -1}` and B without it ([`ab_orders_run`]); and what its page must show
//! (issue 34), checked on the DOM Chromium laid out ([`assert_ab_tables`], [`assert_ab_text`]).

use super::layout::{text_of, DomTable};
use super::load::{Load, LoadSpec};
use super::pymongo::python;
use super::record::record_through;
use super::replay::{ab_replay, AbRun};
use super::server::Server;
use mongotape::replay::ab::diff::is_clock_field;
use serde_json::Value;
use std::path::Path;

/// 5,000 orders in `storefront.orders`, with the index `{status: 1, ts: -1}` when INDEX is "1".
/// Arguments: URI INDEX.
const ORDERS_SETUP: &str = r#"
import sys
from pymongo import MongoClient
db = MongoClient(sys.argv[1], serverSelectionTimeoutMS=10000).storefront
db.drop_collection('orders')
db.orders.insert_many([{'_id': i, 'status': 's%d' % (i % 50), 'ts': i, 'customer': i % 300,
    'channel': ['web', 'shop', 'phone'][i % 3], 'total': i % 97} for i in range(5000)])
if sys.argv[2] == '1':
    db.orders.create_index([('status', 1), ('ts', -1)])
"#;

/// 60 finds by status, newest first, and 60 with a filter long enough that its shape's text is
/// cut in a small chart's caption. Arguments: URI.
const ORDERS_FINDS: &str = r#"
import sys
from pymongo import MongoClient
c = MongoClient(sys.argv[1], serverSelectionTimeoutMS=10000).storefront.orders
for i in range(60):
    assert len(list(c.find({'status': 's%d' % (i % 50)}).sort('ts', -1).limit(10))) == 10
    f = {'status': 's%d' % (i % 50), 'ts': {'$gte': 0, '$lt': 5000}, 'customer': {'$in': [1, 2, 3]},
         'channel': {'$ne': 'fax'}, 'total': {'$gte': 0}}
    list(c.find(f).sort('ts', -1).limit(5))
"#;

/// The servers (kept running while the run is looked at) and the A/B run into them.
pub struct AbOrders {
    pub servers: Vec<Server>,
    pub run: AbRun,
}

/// Records [`ORDERS_FINDS`] through the proxy and replays it (`--fast --explain`, A/B page too)
/// into A, B and A2, on replica-set servers (their replies carry clock fields, noise to fold),
/// B's taking other inserts during the replay.
pub fn ab_orders_run(dir: &Path) -> AbOrders {
    let recording = Server::start();
    python(ORDERS_SETUP, &[recording.uri().as_str(), "1"]);
    let capture = dir.join("orders.mtape");
    record_through(&recording, &capture, |uri| python(ORDERS_FINDS, &[uri]));
    drop(recording);
    let servers: Vec<Server> = (0..3).map(|_| Server::start()).collect();
    for (s, index) in servers.iter().zip(["1", "0", "1"]) {
        python(ORDERS_SETUP, &[s.uri().as_str(), index]);
    }
    // B's server takes other writes until the replay is done: its clock moves apart from A's and
    // A2's. (An idle server's clock only moves by a no-op every 10 s, to the second, so idle
    // servers can answer with the same clock.)
    let spec = LoadSpec {
        db: "other",
        threads: 1,
        inserts: None,
        flowing_after: 50,
        pad: 10,
    };
    let other = Load::start(servers[1].uri(), spec);
    other.wait_flowing();
    let addrs: Vec<&str> = servers.iter().map(|s| s.addr()).collect();
    let run = ab_replay(&capture, &addrs, &["--fast", "--explain"]);
    assert!(other.stop().errors.is_empty(), "the other writes on B");
    AbOrders { servers, run }
}

/// The table whose first headers are `first`.
fn table<'a>(tables: &'a [DomTable], first: &[&str]) -> &'a DomTable {
    tables
        .iter()
        .find(|t| t.headers.len() >= first.len() && t.headers[..first.len()] == *first)
        .unwrap_or_else(|| panic!("no table headed {first:?}"))
}

/// The comparison tables: each target's figures in columns of its own (A2's too), the ratios a
/// row per key and candidate with A2 right under B; the shape table's count, p50 / p99 and share
/// per target; the plans with B's marked `changed`, never A's or A2's.
pub fn assert_ab_tables(tables: &[DomTable], report: &Value) {
    for key in ["command", "namespace"] {
        let latency = table(tables, &[key, "A ops"]);
        assert!(latency
            .headers
            .ends_with(&["A2 ops", "A2 p50", "A2 p99"].map(String::from)));
        let keys = 1 + report[&format!("per_{key}")].as_object().unwrap().len();
        assert_eq!(latency.rows.len(), keys, "{key}: a row each and all");
    }
    for first in ["command", "namespace", "shape"] {
        let ratios = table(tables, &[first, "target"]);
        let targets = ratios.column("target");
        assert!(
            !targets.is_empty() && targets.len().is_multiple_of(2),
            "{targets:?}"
        );
        for (pair, keys) in targets.chunks(2).zip(ratios.rows.chunks(2)) {
            assert_eq!(pair, ["B", "A2"], "A2 under B: {:?}", ratios.rows);
            assert_eq!(keys[0][0], keys[1][0], "one key per pair");
        }
    }
    let shapes = table(tables, &["shape", "count"]);
    let headers = ["A p50 / p99", "B p50 / p99", "A2 p50 / p99", "share A/B/A2"];
    assert_eq!(shapes.headers[2..6], headers.map(String::from));
    let reported = report["shapes"].as_array().unwrap();
    assert_eq!(shapes.rows.len(), reported.len());
    for (row, s) in shapes.rows.iter().zip(reported) {
        assert_eq!(row[0], s["shape"].as_str().unwrap());
        assert_eq!(row[1], s["targets"][0]["count"].to_string(), "{row:?}");
        assert!(
            row[2..5].iter().all(|c| c.split(" / ").count() == 2),
            "{row:?}"
        );
        let shares: Vec<&str> = row[5].split('/').collect();
        assert!(shares.len() == 3 && shares.iter().all(|s| s.ends_with('%')));
    }
    let plans = table(tables, &["shape", "target", "plan"]);
    assert_eq!(
        plans.rows.len(),
        3 * reported.len(),
        "a plan per shape and target"
    );
    for row in &plans.rows {
        let (target, plan, mark) = (&row[1], &row[2], row.last().unwrap());
        assert_eq!(mark == "changed", target == "B", "{row:?}");
        let scan = if target == "B" { "COLLSCAN" } else { "IXSCAN" };
        assert!(plan.starts_with(scan), "{row:?}");
    }
}

/// The text around the tables: the reply differences folded under a line that counts the clock
/// fields without naming them (and no finding names one), their examples folded per cell; each
/// of the control's copy's (A2) sentences; the small charts' captions titled with whole shapes.
pub fn assert_ab_text(dom: &str, tables: &[DomTable], report: &Value) {
    let fields = report["differences"]["fields"].as_object().unwrap();
    let clocks = fields.keys().filter(|n| is_clock_field(n)).count();
    assert!(
        clocks > 0,
        "replica-set replies differ on clock fields: {fields:?}"
    );
    let folded = dom
        .split("<details class=\"table\"><summary>")
        .nth(1)
        .expect("the reply differences folded");
    let line = text_of(folded.split("</summary>").next().unwrap());
    assert!(
        line.contains(&format!("; {clocks} server clock fields (noise)")),
        "{line}"
    );
    assert!(
        !line.contains("$clusterTime") && !line.contains("operationTime"),
        "{line}"
    );
    for f in report["findings"].as_array().unwrap() {
        assert!(!f.as_str().unwrap().starts_with("replies differ"), "{f}");
    }
    let differences = table(tables, &["field", "compared"]);
    let i = differences
        .headers
        .iter()
        .position(|h| h == "examples")
        .unwrap();
    for row in &differences.raw {
        let cell = &row[i];
        assert!(
            cell.is_empty() || cell.starts_with("<details class=\"cell\">"),
            "{cell}"
        );
    }
    let text = text_of(dom);
    assert!(text.contains("The control's copy (A2) against the control, per command"));
    let control = report["control"].as_array().unwrap();
    assert!(
        control.iter().any(|c| c["kind"] == "command"),
        "{control:?}"
    );
    // Per command and per query shape (the page leaves the namespaces' to the JSON).
    for c in control.iter().filter(|c| c["kind"] != "namespace") {
        let sentence = c["sentence"].as_str().unwrap();
        assert!(sentence.starts_with("A2, a copy of A,"), "{sentence}");
        assert!(text.contains(sentence), "{sentence} not on the page");
    }
    let grid = dom
        .split("<div class=\"grid\">")
        .nth(1)
        .expect("the small charts");
    let titles: Vec<String> = (grid.split("<figcaption title=\"").skip(1))
        .map(|t| text_of(t.split('"').next().unwrap()))
        .collect();
    let shapes: Vec<&str> = (report["shapes"].as_array().unwrap().iter())
        .map(|s| s["shape"].as_str().unwrap())
        .collect();
    assert_eq!(
        titles, shapes,
        "a chart per shape, its title the whole shape"
    );
}
