//! Equivalence: a workload recorded against one server, replayed into a second, empty one, leaves
//! the same database, document by document, for each real client (pymongo, mongosh, PHP, the
//! Node.js and Rust drivers, the legacy C++ driver, whose OP_QUERY commands replay as OP_MSG).

mod common;

use common::*;

fn equivalence(client: Client, workload: &str, scale: f64) {
    let dir = tempdir();
    let a = Server::start();
    let db = "bench";
    let (capture, _) = record_workload(&a, dir.path(), client, workload, db, scale);
    let expected = dump_db(&a.uri(), db);
    drop(a);

    let b = Server::start();
    let r = replay(&capture, &b.uri(), &[]);
    assert!(r.ops() > 0, "{}", r.describe());
    assert_eq!(r.skipped("cursor_not_found"), 0, "{}", r.describe());
    assert_eq!(r.divergences(), 0, "{}", r.describe());
    assert!(r.report["summary"]["per_command"]["insert"]["count"].as_u64() > Some(0));
    assert_same_db(&expected, &dump_db(&b.uri(), db));
}

#[test]
fn pymongo_basic_replays_to_an_equal_database() {
    equivalence(Client::Pymongo, "basic", 1.0);
}

#[test]
fn mongosh_basic_replays_to_an_equal_database() {
    equivalence(Client::Mongosh, "basic", 1.0);
}

#[test]
fn php_basic_replays_to_an_equal_database() {
    equivalence(Client::Php, "basic", 1.0);
}

#[test]
fn node_basic_replays_to_an_equal_database() {
    equivalence(Client::Node, "basic", 1.0);
}

#[test]
fn rust_basic_replays_to_an_equal_database() {
    equivalence(Client::Rust, "basic", 1.0);
}

#[test]
fn cxx_legacy_basic_replays_to_an_equal_database() {
    equivalence(Client::CxxLegacy, "basic", 1.0);
}

#[test]
fn cxx_legacy_randstring_replays_to_an_equal_database() {
    equivalence(Client::CxxLegacy, "randstring", 0.05);
}

#[test]
fn pymongo_embedded_replays_to_an_equal_database() {
    equivalence(Client::Pymongo, "embedded", 0.1);
}
