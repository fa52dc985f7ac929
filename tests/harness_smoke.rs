//! The test harness itself: a real server answers pymongo, dumps see what was written, and every way
//! a process can fail turns into a test failure rather than a hang or a silent pass.

mod common;

use common::*;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

#[test]
fn server_answers_ping_and_dumps_an_empty_database() {
    Client::Pymongo.require_installed();
    let server = Server::start();
    assert!(server.port() > 0);
    assert_eq!(server.addr(), format!("127.0.0.1:{}", server.port()));
    ping(&server.uri());

    let dump = dump_db(&server.uri(), "harness_smoke_empty");
    assert_eq!(dump["db"], "harness_smoke_empty");
    assert_eq!(dump["collections"], serde_json::json!({}), "{dump}");
}

#[test]
fn dump_keeps_order_types_and_indexes() {
    let server = Server::start_with(&["--standalone"]);
    python(
        "import sys\n\
         from pymongo import MongoClient\n\
         db = MongoClient(sys.argv[1])['harness_smoke']\n\
         db.c.insert_many([{'_id': 2, 'x': 1.0}, {'_id': 1, 'x': 1}])\n\
         db.c.create_index('x', name='x_1')\n",
        &[server.uri()],
    );
    let dump = dump_db(&server.uri(), "harness_smoke");
    let coll = &dump["collections"]["c"];
    let docs = coll["documents"].as_array().expect("documents");
    assert_eq!(docs.len(), 2, "{dump}");
    assert_eq!(
        docs[0]["_id"],
        serde_json::json!({"$numberInt": "1"}),
        "sorted by _id: {dump}"
    );
    assert_eq!(
        docs[0]["x"],
        serde_json::json!({"$numberInt": "1"}),
        "an int stays an int: {dump}"
    );
    assert_eq!(
        docs[1]["x"],
        serde_json::json!({"$numberDouble": "1.0"}),
        "a double stays a double: {dump}"
    );
    let names: Vec<_> = coll["indexes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["name"].clone())
        .collect();
    assert_eq!(names, ["_id_", "x_1"], "{dump}");

    assert_same_db(&dump, &dump_db(&server.uri(), "harness_smoke"));
    let other = dump_db(&server.uri(), "harness_smoke_other");
    assert!(std::panic::catch_unwind(|| assert_same_db(&dump, &other)).is_err());
}

#[test]
fn a_killed_server_fails_the_client() {
    let server = Server::start_with(&["--standalone"]);
    let uri = server.uri();
    drop(server);
    let output = try_python(
        "import sys\n\
         from pymongo import MongoClient\n\
         MongoClient(sys.argv[1], serverSelectionTimeoutMS=500).admin.command('ping')\n",
        &[uri],
    );
    assert!(!output.success(), "ping succeeded against a killed server");
    assert!(
        output.stderr.contains("ServerSelectionTimeoutError"),
        "{}",
        output.stderr
    );
}

#[test]
#[should_panic(expected = "before printing its address")]
fn a_server_that_exits_at_start_is_a_failure() {
    Server::start_binary(Path::new("/bin/false"), &[]);
}

fn sh(script: &str) -> Command {
    let mut command = Command::new("sh");
    command.args(["-c", script]);
    command
}

// The proxy handle's process control, on a stand-in that prints the proxy's listening line.

#[test]
fn proxy_handle_stops_with_sigterm_and_keeps_stderr() {
    let proxy = Proxy::spawn(
        // The trap is set before the listening line, so SIGTERM can never beat it.
        sh("trap 'echo flushed >&2; exit 3' TERM; echo 'mongotape: listening on 127.0.0.1:4242' >&2; \
            while true; do sleep 0.05; done"),
        Path::new("unused.mtape"),
    );
    assert_eq!(proxy.port(), 4242);
    assert_eq!(
        proxy.uri(),
        "mongodb://127.0.0.1:4242/?directConnection=true"
    );
    let exit = proxy.stop();
    assert_eq!(exit.status.code(), Some(3), "{exit:?}");
    assert!(!exit.killed);
    assert!(exit.stderr.ends_with("flushed\n"), "{exit:?}");
}

#[test]
fn proxy_handle_kill9() {
    let proxy = Proxy::spawn(
        sh("echo 'mongotape: listening on 127.0.0.1:4243' >&2; exec sleep 60"),
        Path::new("unused.mtape"),
    );
    let exit = proxy.kill9();
    assert!(killed_by(&exit.status, libc::SIGKILL), "{exit:?}");
}

#[test]
#[should_panic(expected = "error: no upstream")]
fn proxy_handle_reports_an_early_exit_with_its_stderr() {
    Proxy::spawn(
        sh("echo 'error: no upstream' >&2; exit 2"),
        Path::new("unused.mtape"),
    );
}

#[test]
#[should_panic(expected = "still running after")]
fn a_hanging_command_is_killed_and_fails() {
    run_command(sh("sleep 30"), Duration::from_millis(300));
}

#[test]
fn workload_step_lines_are_parsed() {
    let stdout = "Current Mongosh Log ID: 1234\n\
                  {\"step\": \"insert_ack\", \"ops\": 50, \"seconds\": 0.02, \"result\": {\"inserted\": 50}}\n\
                  {\"step\": \"drop\", \"ops\": 1.0, \"seconds\": 0, \"result\": null}\n";
    let steps = parse_steps(stdout).unwrap();
    assert_eq!(steps.len(), 2);
    assert_eq!((steps[0].step.as_str(), steps[0].ops), ("insert_ack", 50));
    assert_eq!(steps[0].result["inserted"], 50);
    assert_eq!(steps[1].ops, 1);
    assert!(
        parse_steps("{\"step\": \"x\", \"seconds\": 1}").is_err(),
        "a step without ops"
    );
}
