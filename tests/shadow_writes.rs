//! `mongotape shadow --mirror all --snapshot`: production's snapshot at T0 restored into a fresh
//! candidate, the writes production acknowledged applied to it in production's order (those
//! during the restore after it), and at stop the candidate's state equal to production's by the
//! state fingerprint (`state::compare`); a write queue too small for the restore makes the
//! candidate go on with reads only, said in the report and the log, while the clients see
//! nothing. Real servers (secantusd-rs) and pymongo through the shadow.

mod common;
use common::*;
use mongotape::state::compare::{between, Side};
use mongotape::state::survey::{Scanned, Surveyor};
use mongotape::state::NsPattern;
use serde_json::Value;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// shop.items (20,000 documents with an index on `g`) and shop.customers: a restore that takes
/// longer than a few batches of writes.
const LOAD: &str = r#"
import sys
from pymongo import MongoClient
db = MongoClient(sys.argv[1]).shop
db.items.create_index('g')
for s in range(0, 20000, 2000):
    db.items.insert_many([{'_id': i, 'g': i % 10, 'v': 'x%d' % i, 'c': 0, 'pad': 'p' * 100} for i in range(s, s + 2000)])
db.customers.insert_many([{'_id': i, 'name': 'c%d' % i} for i in range(3000)])
"#;

/// Writes in batches until the shadow's report says the candidate is no longer restoring
/// (`until restored`), or one batch of every kind of write (`until once`); `big` inserts 50 KB
/// documents. Each batch: inserts, a non-idempotent `$inc`, deletes, a read.
const WRITES: &str = r#"
import sys, json
from pymongo import MongoClient, UpdateOne, InsertOne, DeleteOne, ReturnDocument
from pymongo.write_concern import WriteConcern
uri, report, until, big = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] == 'big'
c = MongoClient(uri)
db = c.shop
def state():
    try:
        r = json.load(open(report))
    except Exception:
        return 'restoring'
    for t in r['targets']:
        if t['role'] == 'candidate' and t.get('writes'):
            return t['writes']['state']
    return 'restoring'
batches, s = 0, 'restoring'
while until == 'restored' and s == 'restoring' and batches < 5000:
    b = batches
    if big:
        db.blobs.insert_many([{'_id': b * 100 + k, 'blob': 'b' * 50000} for k in range(30)])
    for k in range(10):
        n = b * 10 + k
        db.items.insert_one({'_id': 100000 + n, 'g': n % 10, 'v': 'n%d' % n, 'c': 0})
        db.items.update_one({'_id': n % 5000}, {'$inc': {'c': 1}, '$set': {'w': 'p1'}})
        db.items.delete_one({'_id': 19999 - n})
    db.items.find_one({'_id': b})
    batches += 1
    s = state()
if until == 'once':
    db.items.insert_many([{'_id': 200000 + i, 'g': 3, 'v': 'm%d' % i} for i in range(200)])
    db.items.update_many({'g': 3}, {'$inc': {'c': 5}})
    db.items.find_one_and_update({'_id': 7}, {'$set': {'v': 'fam'}}, return_document=ReturnDocument.AFTER)
    db.items.bulk_write([InsertOne({'_id': 300000}), UpdateOne({'_id': 8}, {'$set': {'v': 'bulk'}}), DeleteOne({'_id': 9})])
    db.items.replace_one({'_id': 10}, {'g': 0, 'v': 'replaced'})
    db.items.delete_many({'g': 4, '_id': {'$lt': 1000}})
    db.items.create_index([('v', 1)], name='v_1')
    db.orders.insert_many([{'_id': i, 'item': i % 50} for i in range(500)])
    db.get_collection('orders', write_concern=WriteConcern(w=0)).insert_one({'_id': 'unacknowledged'})
    db.orders.update_one({'_id': 1}, {'$set': {'after_w0': True}})
    db.customers.drop()
    batches, s = 1, state()
print(json.dumps({'batches': batches, 'state': s}))
"#;

/// Multi-statement transactions through the shadow: 20 that start with a read and write two
/// collections, one through the callback API, one aborted (nothing of it may reach the
/// candidate), two open at once and committed in the other order, then a write outside.
const TRANSACTIONS: &str = r#"
import sys
from pymongo import MongoClient
c = MongoClient(sys.argv[1])
db = c.shop
with c.start_session() as s:
    for k in range(20):
        with s.start_transaction():
            db.items.find_one({'_id': k}, session=s)
            db.items.update_one({'_id': k}, {'$inc': {'c': 100}}, session=s)
            db.orders.insert_one({'_id': 'tx%d' % k, 'item': k}, session=s)
def callback(s):
    db.items.insert_one({'_id': 'callback'}, session=s)
    db.items.delete_one({'_id': 50}, session=s)
with c.start_session() as s:
    s.with_transaction(callback)
with c.start_session() as s:
    s.start_transaction()
    db.items.insert_one({'_id': 'aborted'}, session=s)
    db.items.update_many({'g': 1}, {'$set': {'wrong': True}}, session=s)
    s.abort_transaction()
s1, s2 = c.start_session(), c.start_session()
s1.start_transaction()
s2.start_transaction()
db.items.insert_one({'_id': 'one'}, session=s1)
db.items.insert_one({'_id': 'two'}, session=s2)
db.items.update_one({'_id': 60}, {'$set': {'v': 'by two'}}, session=s2)
s2.commit_transaction()
db.items.update_one({'_id': 61}, {'$set': {'v': 'by one'}}, session=s1)
s1.commit_transaction()
db.items.update_one({'_id': 'one'}, {'$set': {'after': True}})
assert db.items.count_documents({'_id': 'aborted'}) == 0
print('ok')
"#;

fn writes(proxy: &Proxy, report: &Path, until: &str, big: bool) -> Value {
    let size = if big { "big" } else { "small" };
    let out = python(
        WRITES,
        &[&proxy.uri(), &report.display().to_string(), until, size],
    );
    serde_json::from_str(out.trim()).expect("the writer's JSON")
}

fn shadow(upstream: &str, candidate: &str, dir: &Path, extra: &[&str]) -> Proxy {
    let mut command = Command::new(mongotape_bin());
    command
        .args(["shadow", "--listen", "127.0.0.1:0", "--upstream", upstream])
        .args(["--candidate", candidate, "--mirror", "all"])
        .arg("--report")
        .arg(dir.join("shadow.json"))
        .args(["--report-every", "1"])
        // The suite keeps both cores busy: at the default (SCHED_IDLE) the mirror would get
        // almost none of them. These tests are about what is mirrored and compared.
        .args(["--mirror-priority", "low"])
        .args(extra);
    Proxy::spawn(command, &dir.join("unused.mtape"))
}

fn report(dir: &Path) -> Value {
    let text = std::fs::read(dir.join("shadow.json")).unwrap_or_default();
    serde_json::from_slice(&text).unwrap_or(Value::Null)
}

fn candidate(r: &Value) -> &Value {
    r["targets"]
        .as_array()
        .and_then(|t| t.iter().find(|t| t["role"] == "candidate"))
        .unwrap_or_else(|| panic!("no candidate in {r}"))
}

/// Every `shop` collection of `uri`, fingerprinted.
async fn scans(uri: &str) -> Vec<(String, Scanned)> {
    let patterns = [NsPattern::parse("shop.*").expect("pattern")];
    let mut surveyor = Surveyor::connect(uri).await.expect("connect");
    let mut out = Vec::new();
    for ns in surveyor.namespaces(&patterns).await.expect("namespaces") {
        let scanned = surveyor.scan(&ns, |_| Ok(())).await.expect("scan");
        out.push((ns, scanned));
    }
    surveyor.close().await;
    out
}

/// The candidate's state against production's (`state::compare::between`): the verdict, the
/// namespaces on each side and production's document count.
fn compare_states(production: &str, candidate: &str) -> (String, Vec<String>, Vec<String>, u64) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let (a, b) = (scans(production).await, scans(candidate).await);
        let names = |s: &[(String, Scanned)]| s.iter().map(|(n, _)| n.clone()).collect();
        let documents = a.iter().map(|(_, s)| s.sum.documents).sum();
        let pair = between(
            Side {
                label: "production",
                uri: production,
                scans: &a,
            },
            Side {
                label: "candidate",
                uri: candidate,
                scans: &b,
            },
        )
        .await;
        let verdict = format!("{} {:?} {:?}", pair.verdict, pair.differing, pair.error);
        (verdict, names(&a), names(&b), documents)
    })
}

#[test]
fn mirrored_writes_into_a_fresh_candidate_end_with_productions_state() {
    let (prod, cand) = (Server::start(), Server::start());
    python(LOAD, &[prod.uri()]);
    // Something the restore must replace: the candidate's own shop.items.
    python(
        "import sys\nfrom pymongo import MongoClient\n\
         MongoClient(sys.argv[1]).shop.items.insert_one({'_id': -1, 'stray': True})\n",
        &[cand.uri()],
    );
    let dir = tempdir();
    let json = dir.path().join("shadow.json");
    let proxy = shadow(
        &prod.uri(),
        &cand.uri(),
        dir.path(),
        &[
            "--snapshot",
            "shop.*",
            "--html",
            &dir.path().join("shadow.html").display().to_string(),
        ],
    );
    let during = writes(&proxy, &json, "restored", false);
    assert_eq!(during["state"], "mirroring", "{during}");
    let after = writes(&proxy, &json, "once", false);
    assert_eq!(after["state"], "mirroring", "{after}");
    let exit = proxy.stop();
    assert!(exit.status.success(), "{}", exit.stderr);
    let r = report(dir.path());
    assert_eq!(r["complete"], true, "{r}");
    assert_schema("shadow", &r);
    let w = &candidate(&r)["writes"];
    assert_eq!(w["state"], "mirroring", "{w}");
    assert_eq!(u(&w["dropped"]), 0, "{w}");
    assert_eq!(u(&w["failed"]), 0, "{w}");
    assert_eq!(u(&w["queued"]), 0, "{w}");
    assert!(
        u(&w["queued_peak"]) > 0,
        "writes waited for the restore: {w}"
    );
    assert!(u(&w["mirrored"]) >= 40, "{w}");
    // The page's Writes table says the same.
    let page = std::fs::read_to_string(dir.path().join("shadow.html")).unwrap();
    let section = &page[page.find(">Writes<").expect("a Writes section")..];
    assert!(section.contains(">mirroring<"), "the state on the page");
    assert!(
        section.contains(&format!(">{}<", u(&w["mirrored"]))),
        "the count on the page"
    );
    let totals = &candidate(&r)["totals"];
    assert!(
        u(&totals["not_ready"]) > 0,
        "reads during the restore: {totals}"
    );
    assert!(dir.path().join("shadow.json.snapshot").is_dir());
    let (verdict, on_prod, on_cand, documents) = compare_states(&prod.uri(), &cand.uri());
    assert_eq!(on_prod, ["shop.items", "shop.orders"], "customers dropped");
    assert_eq!(on_cand, on_prod);
    assert!(verdict.starts_with("equal"), "{verdict}");
    assert_ne!(documents, 20_000 + 500, "the writes changed production");
}

#[test]
fn transactions_are_mirrored_whole_at_their_commit() {
    let (prod, cand) = (Server::start(), Server::start());
    python(LOAD, &[prod.uri()]);
    let dir = tempdir();
    let json = dir.path().join("shadow.json");
    let proxy = shadow(
        &prod.uri(),
        &cand.uri(),
        dir.path(),
        &["--snapshot", "shop.*"],
    );
    let during = writes(&proxy, &json, "restored", false);
    assert_eq!(during["state"], "mirroring", "{during}");
    assert_eq!(python(TRANSACTIONS, &[&proxy.uri()]).trim(), "ok");
    // The writes are applied after the clients' acknowledgements: wait until none is queued.
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut seen = 0;
    loop {
        let r = report(dir.path());
        let w = if r.is_null() {
            Value::Null
        } else {
            candidate(&r)["writes"].clone()
        };
        let mirrored = u(&w["mirrored"]);
        if mirrored > 0 && mirrored == seen && u(&w["queued"]) == 0 {
            break;
        }
        seen = mirrored;
        assert!(Instant::now() < deadline, "the writes never settled: {w}");
        std::thread::sleep(Duration::from_millis(1500));
    }
    let exit = proxy.stop();
    assert!(exit.status.success(), "{}", exit.stderr);
    assert!(!exit.stderr.contains("writes dropped"), "{}", exit.stderr);
    let r = report(dir.path());
    let w = &candidate(&r)["writes"];
    assert_eq!(w["state"], "mirroring", "{w}");
    assert_eq!(u(&w["dropped"]), 0, "{w}");
    assert_eq!(u(&w["failed"]), 0, "{w}");
    // 20 transactions of a read, two writes and a commit; the callback's, the two interleaved.
    assert!(u(&w["mirrored"]) >= 20 * 4 + 3 + 2 * 3, "{w}");
    let (verdict, on_prod, on_cand, _) = compare_states(&prod.uri(), &cand.uri());
    assert_eq!(on_prod, ["shop.customers", "shop.items", "shop.orders"]);
    assert_eq!(on_cand, on_prod);
    assert!(verdict.starts_with("equal"), "{verdict}");
}

#[test]
fn a_write_queue_too_small_for_the_restore_goes_reads_only_and_clients_see_nothing() {
    let (prod, cand) = (Server::start(), Server::start());
    python(LOAD, &[prod.uri()]);
    let dir = tempdir();
    let json = dir.path().join("shadow.json");
    let proxy = shadow(
        &prod.uri(),
        &cand.uri(),
        dir.path(),
        &["--snapshot", "shop.*", "--write-queue-mb", "1"],
    );
    let during = writes(&proxy, &json, "restored", true);
    assert_eq!(during["state"], "reads_only", "{during}");
    let read = "import sys\nfrom pymongo import MongoClient\n\
                db = MongoClient(sys.argv[1]).shop\n\
                print(sorted((d['_id'], d.get('c'), d['v']) for d in db.items.find({'g': 3})))\n";
    let through = python(read, &[proxy.uri()]);
    assert_eq!(through, python(read, &[prod.uri()]), "the clients' results");
    // Reads go on until one is mirrored: a read production answered before the restore ended
    // is not_ready, not mirrored.
    let deadline = Instant::now() + Duration::from_secs(120);
    let r = loop {
        let r = report(dir.path());
        if !r.is_null()
            && candidate(&r)["writes"]["state"] == "reads_only"
            && u(&candidate(&r)["totals"]["mirrored"]) > 0
        {
            break r;
        }
        assert!(Instant::now() < deadline, "the restore never ended: {r}");
        python(read, &[proxy.uri()]);
        std::thread::sleep(Duration::from_millis(200));
    };
    let exit = proxy.stop();
    assert!(exit.status.success(), "{}", exit.stderr);
    assert!(
        exit.stderr.contains("writes dropped: reads only from now"),
        "{}",
        exit.stderr
    );
    let w = &candidate(&r)["writes"];
    assert!(u(&w["dropped"]) > 0, "{w}");
    let last = report(dir.path());
    assert_eq!(candidate(&last)["writes"]["state"], "reads_only");
    assert!(
        exit.stderr.contains("writes reads_only"),
        "the summary says so: {}",
        exit.stderr
    );
}

#[test]
fn mirrored_writes_need_a_snapshot_or_the_opt_in() {
    let base = ["shadow", "-u", "127.0.0.1:1", "--candidate", "127.0.0.1:2"];
    let out = mongotape(&[&base[..], &["--mirror", "all"]].concat());
    assert_eq!(out.status.code(), Some(2), "{}", out.stderr);
    assert!(out.stderr.contains("--assume-same-state"), "{}", out.stderr);
    let out = mongotape(&[&base[..], &["--mirror", "all", "--snapshot", "shop.*"]].concat());
    assert_eq!(out.status.code(), Some(2), "{}", out.stderr);
    assert!(out.stderr.contains("--snapshot-dir"), "{}", out.stderr);
    let out = mongotape(&[&base[..], &["--assume-same-state"]].concat());
    assert_eq!(out.status.code(), Some(2), "{}", out.stderr);
}

/// A client that reads each document right after writing it: with `--mirror all` the candidate
/// applies the write before the read is sent to it, so every read matches at once (none needs
/// the recheck to settle it).
const READ_YOUR_WRITES: &str = r#"
import sys
from pymongo import MongoClient
items = MongoClient(sys.argv[1]).shop.fresh
for i in range(300):
    items.insert_one({'_id': i, 'v': 'v%d' % i, 'c': 0})
    assert items.find_one({'_id': i})['v'] == 'v%d' % i
    items.update_one({'_id': i}, {'$inc': {'c': 1}, '$set': {'v': 'w%d' % i}})
    assert items.find_one({'_id': i})['c'] == 1
print('ok')
"#;

#[test]
fn a_read_right_after_a_write_finds_it_on_the_candidate() {
    let (prod, cand) = (Server::start(), Server::start());
    let dir = tempdir();
    let proxy = shadow(
        &prod.uri(),
        &cand.uri(),
        dir.path(),
        &["--assume-same-state", "--max-outstanding", "1000"],
    );
    assert_eq!(python(READ_YOUR_WRITES, &[&proxy.uri()]).trim(), "ok");
    let deadline = Instant::now() + Duration::from_secs(60);
    let totals = loop {
        let r = report(dir.path());
        if !r.is_null() {
            let t = candidate(&r)["totals"].clone();
            let fates = [
                "matched",
                "settled",
                "discrepancies",
                "unconfirmed",
                "shed",
                "gaps",
            ];
            if fates.iter().map(|f| u(&t[*f])).sum::<u64>() >= 600 {
                break t;
            }
        }
        assert!(
            Instant::now() < deadline,
            "the reads were never all mirrored: {r}"
        );
        std::thread::sleep(Duration::from_millis(500));
    };
    let exit = proxy.stop();
    assert!(exit.status.success(), "{}", exit.stderr);
    assert_eq!(u(&totals["mirrored"]), 600, "{totals}");
    assert_eq!(u(&totals["shed"]) + u(&totals["gaps"]), 0, "{totals}");
    // Each read found the write before it: matched at once, nothing for the recheck to settle.
    assert_eq!(u(&totals["matched"]), 600, "{totals}");
    assert_eq!(u(&totals["settled"]), 0, "{totals}");
    assert_eq!(u(&totals["unconfirmed"]), 0, "{totals}");
    assert_eq!(u(&totals["discrepancies"]), 0, "{totals}");
}
