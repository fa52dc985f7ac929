//! Replica sets through the proxy: secantusd-rs in its default mode (the one-node set `secantus`),
//! each real client given `mongodb://PROXY/?replicaSet=secantus` (no directConnection). Every
//! operation of the workload must reach the capture, and the driver's own view of the topology must
//! name only the proxy: the hello replies it saw were rewritten, the capture keeps the originals.

mod common;

use common::*;
use mongotape::capture::record::HELLO_REWRITE;
use mongotape::capture::{CaptureReader, HelloRewriteEvent, RecordKind};
use mongotape::wire::{step_marker, Body, Message, RequestInfo};
use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// The addresses the client's driver knows after connecting, as `host:port` strings.
fn driver_view(client: Client, uri: &str) -> Vec<String> {
    let mut command = match client {
        Client::Pymongo => {
            let mut c = Command::new("python3");
            c.arg("-c").arg(
                "import sys, json\n\
                 from pymongo import MongoClient\n\
                 c = MongoClient(sys.argv[1], serverSelectionTimeoutMS=10000)\n\
                 c.admin.command('ping')\n\
                 td = c.topology_description\n\
                 seen = ['%s:%d' % a for a in td.server_descriptions()]\n\
                 seen += ['%s:%d' % n for n in c.nodes]\n\
                 if c.primary: seen.append('%s:%d' % c.primary)\n\
                 h = c.admin.command('hello')\n\
                 seen += h.get('hosts', []) + [h['me'], h['primary']]\n\
                 print(json.dumps(seen))\n",
            );
            c.arg(uri);
            c
        }
        Client::Mongosh => {
            let mut c = Command::new("mongosh");
            c.args([uri, "--quiet", "--norc", "--eval"]).arg(
                "const h = db.hello(); \
                 print(JSON.stringify([...h.hosts, h.me, h.primary]))",
            );
            c
        }
        Client::Php => {
            let mut c = Command::new("php");
            c.arg("-r").arg(
                r#"$m = new MongoDB\Driver\Manager($argv[1]);
                   $m->executeCommand('admin', new MongoDB\Driver\Command(['ping' => 1]));
                   $seen = [];
                   foreach ($m->getServers() as $s) { $seen[] = $s->getHost() . ':' . $s->getPort(); }
                   $h = $m->executeCommand('admin', new MongoDB\Driver\Command(['hello' => 1]))->toArray()[0];
                   foreach ($h->hosts as $a) { $seen[] = $a; }
                   $seen[] = $h->me; $seen[] = $h->primary;
                   echo json_encode($seen), "\n";"#,
            );
            c.arg("--").arg(uri);
            c
        }
    };
    let out = run_command(
        {
            command.stdin(std::process::Stdio::null());
            command
        },
        Duration::from_secs(60),
    );
    assert!(
        out.success(),
        "{} topology view failed: {}\n{}",
        client.name(),
        out.stderr,
        out.stdout
    );
    let line = out.stdout.lines().last().unwrap_or_default();
    serde_json::from_str(line).unwrap_or_else(|e| panic!("{}: {e}: {}", client.name(), out.stdout))
}

struct Capture {
    commands: BTreeSet<String>,
    markers: Vec<String>,
    rewrites: Vec<HelloRewriteEvent>,
    /// Addresses named by the hello replies as stored (what the server said).
    stored_hosts: BTreeSet<String>,
}

fn read_capture(path: &Path) -> Capture {
    let mut cap = Capture {
        commands: BTreeSet::new(),
        markers: Vec::new(),
        rewrites: Vec::new(),
        stored_hosts: BTreeSet::new(),
    };
    for record in CaptureReader::open(path).unwrap() {
        let record = record.unwrap();
        match record.kind {
            RecordKind::Request => {
                let msg = Message::parse(&record.payload).unwrap();
                if let Some(marker) = step_marker(&msg) {
                    cap.markers.push(marker.to_owned());
                }
                cap.commands.insert(RequestInfo::of(&msg).command);
            }
            RecordKind::Reply => {
                let msg = Message::parse(&record.payload).unwrap();
                let doc = match &msg.body {
                    Body::Msg(m) => Some(m.body().clone()),
                    Body::Reply(r) => r.documents.first().cloned(),
                    _ => None,
                };
                if let Some(hosts) = doc.as_ref().and_then(|d| d.get_array("hosts").ok()) {
                    for h in hosts.into_iter().flatten() {
                        cap.stored_hosts
                            .insert(h.as_str().unwrap_or("?").to_owned());
                    }
                }
            }
            kind if kind == HELLO_REWRITE => cap.rewrites.push(record.event().unwrap()),
            _ => {}
        }
    }
    cap
}

fn replica_set_client(client: Client) {
    let server = Server::start();
    assert!(!server.is_standalone());
    let dir = tempdir();
    let out = dir.path().join(format!("{}.mtape", client.name()));
    let proxy = Proxy::start_with(server.addr(), &out, &["--quiet"]);
    let uri = format!("mongodb://{}/?replicaSet=secantus", proxy.addr());

    let run = run_client(client, "basic", &uri, "bench", 1.0);
    let seen = driver_view(client, &uri);
    assert!(!seen.is_empty());
    for address in &seen {
        assert_eq!(
            address,
            proxy.addr(),
            "{}'s driver knows {address}, not only the proxy: {seen:?}",
            client.name()
        );
    }
    let exit = proxy.stop();
    assert!(exit.status.success(), "proxy: {}", exit.stderr);
    assert!(!exit.stderr.contains("UNSERVED"), "{}", exit.stderr);

    let cap = read_capture(&out);
    // Every step of the workload went through the proxy (its marker is in the capture)...
    for step in &run.steps {
        if step.step == "drop_database" {
            continue;
        }
        assert!(
            cap.markers.contains(&step.step),
            "{}: step {} not in the capture (markers {:?})",
            client.name(),
            step.step,
            cap.markers
        );
    }
    // ... with its operations.
    for expected in [
        "insert",
        "update",
        "find",
        "getMore",
        "delete",
        "createIndexes",
    ] {
        assert!(
            cap.commands.contains(expected),
            "{}: no {expected} in {:?}",
            client.name(),
            cap.commands
        );
    }
    // The capture keeps what the server said, and marks that the client saw it rewritten.
    assert!(
        !cap.rewrites.is_empty(),
        "{}: no hello_rewrite record",
        client.name()
    );
    assert!(cap
        .rewrites
        .iter()
        .all(|r| r.replaced >= 1 && r.unserved.is_empty()));
    assert_eq!(
        cap.stored_hosts,
        BTreeSet::from([server.addr().to_owned()]),
        "{}",
        client.name()
    );
}

#[test]
fn pymongo_replica_set_uri_through_the_proxy() {
    replica_set_client(Client::Pymongo);
}

#[test]
fn mongosh_replica_set_uri_through_the_proxy() {
    replica_set_client(Client::Mongosh);
}

#[test]
fn php_replica_set_uri_through_the_proxy() {
    replica_set_client(Client::Php);
}

#[test]
fn a_wrong_replica_set_name_is_refused_at_start() {
    let server = Server::start();
    let dir = tempdir();
    let out = dir.path().join("x.mtape");
    let mut command = Command::new(mongotape_bin());
    command
        .args(["record", "--listen", "127.0.0.1:0", "--upstream"])
        .arg(format!("mongodb://{}/?replicaSet=other", server.addr()))
        .arg("--out")
        .arg(&out);
    let output = run_command(command, Duration::from_secs(30));
    assert!(!output.success());
    assert!(
        output.stderr.contains("replicaSet=other") && output.stderr.contains("secantus"),
        "{}",
        output.stderr
    );
}

#[test]
fn direct_connection_upstream_leaves_hello_untouched() {
    let server = Server::start();
    let dir = tempdir();
    let out = dir.path().join("direct.mtape");
    let upstream = format!("mongodb://{}/?directConnection=true", server.addr());
    let proxy = Proxy::start_with(&upstream, &out, &["--quiet"]);
    ping(&uri_for(proxy.addr()));
    let exit = proxy.stop();
    assert!(exit.status.success(), "{}", exit.stderr);
    let cap = read_capture(&out);
    assert!(cap.rewrites.is_empty());
    assert!(cap.commands.contains("ping"));
}
