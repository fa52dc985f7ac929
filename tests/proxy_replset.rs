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
        // Not probed yet: the replica-set tests below run pymongo, mongosh and PHP.
        Client::Node | Client::Rust | Client::CxxLegacy => {
            panic!("no topology probe for {}", client.name())
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
    // `cat --events` names it.
    let events = mongotape(&["cat", out.to_str().unwrap(), "--events", "--no-body"]);
    assert!(events.success(), "{}", events.stderr);
    let named = events
        .stdout
        .lines()
        .filter(|l| l.contains(r#""event":"hello_rewrite""#))
        .count();
    assert_eq!(named, cap.rewrites.len(), "{}", events.stdout);
    assert!(!events.stdout.contains(r#""event":"unknown""#));
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

// ------------------------------------------------------------------------------------------------
// Following a set that grows. The test server is a one-node set that cannot add members, so this
// one upstream is a stand-in that answers every command with a hello naming the members it is told.

mod growing_set {
    use mongotape::net::ConnString;
    use mongotape::proxy::{Proxy, ProxyConfig, StatusMode};
    use mongotape::wire::op_msg::{MsgFlags, OpMsg, Section};
    use mongotape::wire::{FrameSplitter, MsgHeader};
    use std::sync::{Arc, Mutex};
    use std::time::Duration;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::{TcpListener, TcpStream};

    fn hello_doc(members: &[String], me: &str) -> bson::RawDocumentBuf {
        let mut hosts = bson::raw::RawArrayBuf::new();
        for m in members {
            hosts.push(m.as_str());
        }
        bson::rawdoc! {
            "isWritablePrimary": true, "hosts": hosts, "setName": "grow",
            "primary": me, "me": me, "maxWireVersion": 21, "ok": 1.0,
        }
    }

    async fn serve_hello(mut s: TcpStream, members: Arc<Mutex<Vec<String>>>, me: String) {
        let mut splitter = FrameSplitter::new();
        loop {
            match s.read_buf(splitter.read_buf()).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
            while let Ok(Some(frame)) = splitter.next_frame() {
                let header = MsgHeader::parse(&frame).unwrap().unwrap();
                let doc = hello_doc(&members.lock().unwrap(), &me);
                let reply = OpMsg {
                    flags: MsgFlags::empty(),
                    sections: vec![Section::Body(doc)],
                    checksum: None,
                }
                .encode(9, header.request_id);
                if s.write_all(&reply).await.is_err() {
                    return;
                }
            }
        }
    }

    async fn hello_through(addr: &str) -> bson::RawDocumentBuf {
        let mut s = TcpStream::connect(addr).await.unwrap();
        let request = OpMsg {
            flags: MsgFlags::empty(),
            sections: vec![Section::Body(bson::rawdoc! { "hello": 1, "$db": "admin" })],
            checksum: None,
        }
        .encode(1, 0);
        s.write_all(&request).await.unwrap();
        let mut splitter = FrameSplitter::new();
        loop {
            assert!(s.read_buf(splitter.read_buf()).await.unwrap() > 0);
            if let Some(frame) = splitter.next_frame().unwrap() {
                return OpMsg::parse(&frame).unwrap().body().clone();
            }
        }
    }

    fn strings(doc: &bson::RawDocumentBuf, key: &str) -> Vec<String> {
        doc.get_array(key)
            .unwrap()
            .into_iter()
            .map(|v| v.unwrap().as_str().unwrap().to_owned())
            .collect()
    }

    /// A stand-in upstream naming `members` (itself first); its address and the shared list.
    async fn stand_in(others: &[&str]) -> (String, Arc<Mutex<Vec<String>>>) {
        let upstream = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let me = upstream.local_addr().unwrap().to_string();
        // The other members' addresses are only named, never connected to.
        let mut list = vec![me.clone()];
        list.extend(others.iter().map(|s| s.to_string()));
        let members = Arc::new(Mutex::new(list));
        let shared = members.clone();
        let me2 = me.clone();
        tokio::spawn(async move {
            while let Ok((s, _)) = upstream.accept().await {
                tokio::spawn(serve_hello(s, shared.clone(), me2.clone()));
            }
        });
        (me, members)
    }

    async fn config(me: &str, listen: &str) -> ProxyConfig {
        ProxyConfig {
            listen: vec![listen.into()],
            advertise_host: None,
            upstream: ConnString::parse(&format!("mongodb://{me}/?replicaSet=grow"))
                .await
                .unwrap(),
            client_tls: None,
            out: None,
            redaction: Default::default(),
            status: StatusMode::Never,
            zstd_level: 1,
            max_queue_bytes: 1 << 20,
            topology_interval: Duration::from_millis(300),
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_unmapped_member_is_an_unserved_address_warning() {
        let (me, _members) = stand_in(&["127.0.0.1:9"]).await;
        let proxy = Proxy::bind(config(&me, &format!("{me}=127.0.0.1:0")).await)
            .await
            .unwrap();
        let listeners = proxy.local_addrs();
        assert_eq!(listeners.len(), 1, "only the mapped member is served");
        let stats = proxy.stats();
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let running = tokio::spawn(proxy.run(stopped));
        let hello = hello_through(&listeners[0]).await;
        // Mapped where it can be, left as the server said where it cannot.
        assert_eq!(
            strings(&hello, "hosts"),
            [listeners[0].clone(), "127.0.0.1:9".into()]
        );
        assert_eq!(stats.snapshot().unserved_addresses, 1);
        assert!(stats.snapshot().status_line().contains("UNSERVED"));
        stop.send(true).unwrap();
        running.await.unwrap().unwrap();
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_new_member_gets_a_listener_and_hello_names_only_listeners() {
        let (me, members) = stand_in(&["127.0.0.1:9"]).await;
        let proxy = Proxy::bind(config(&me, "127.0.0.1:0").await).await.unwrap();
        let topology = proxy.topology();
        let listeners = proxy.local_addrs();
        assert_eq!(listeners.len(), 2, "one listener per member");
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let running = tokio::spawn(proxy.run(stopped));

        let hello = hello_through(&listeners[0]).await;
        assert_eq!(strings(&hello, "hosts"), listeners);
        assert_eq!(hello.get_str("me").unwrap(), listeners[0]);
        assert_eq!(hello.get_str("setName").unwrap(), "grow");

        members.lock().unwrap().push("127.0.0.1:10".to_owned());
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while topology.members().len() < 3 {
            assert!(
                tokio::time::Instant::now() < deadline,
                "the new member got no listener"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let hello = hello_through(&listeners[0]).await;
        let hosts = strings(&hello, "hosts");
        assert_eq!(hosts.len(), 3);
        assert_eq!(hosts[..2], listeners[..]);
        let third: Vec<String> = topology
            .members()
            .iter()
            .map(|m| m.advertised.clone())
            .collect();
        assert_eq!(hosts, third);

        stop.send(true).unwrap();
        let snap = running.await.unwrap().unwrap();
        assert!(
            snap.hello_rewrites >= 2 && snap.unserved_addresses == 0,
            "{snap:?}"
        );
    }
}

/// Streaming (exhaust) hello: a monitoring connection gets a reply with moreToCome every
/// heartbeat without asking again. Each one is rewritten, and the driver never leaves the proxy.
#[test]
fn streaming_hello_replies_are_rewritten_too() {
    let server = Server::start();
    let dir = tempdir();
    let out = dir.path().join("streaming.mtape");
    let proxy = Proxy::start_with(server.addr(), &out, &["--quiet"]);
    let uri = format!(
        "mongodb://{}/?replicaSet=secantus&heartbeatFrequencyMS=500",
        proxy.addr()
    );
    let seen = python_json(
        "import sys, json, time\n\
         from pymongo import MongoClient\n\
         c = MongoClient(sys.argv[1], serverSelectionTimeoutMS=10000)\n\
         c.admin.command('ping')\n\
         time.sleep(3)\n\
         c.admin.command('ping')\n\
         print(json.dumps(['%s:%d' % a for a in c.topology_description.server_descriptions()]))\n",
        &[&uri],
    );
    assert_eq!(seen, serde_json::json!([proxy.addr()]));
    let exit = proxy.stop();
    assert!(exit.status.success(), "{}", exit.stderr);
    // Count the rewritten replies that came with moreToCome.
    let mut last_reply_streamed = false;
    let mut streamed_rewrites = 0;
    for record in CaptureReader::open(&out).unwrap() {
        let record = record.unwrap();
        if record.kind == RecordKind::Reply {
            let msg = Message::parse(&record.payload).unwrap();
            last_reply_streamed = matches!(&msg.body, Body::Msg(m) if m.more_to_come());
        } else if record.kind == HELLO_REWRITE && last_reply_streamed {
            streamed_rewrites += 1;
        }
    }
    assert!(
        streamed_rewrites >= 2,
        "only {streamed_rewrites} streamed hello replies were rewritten"
    );
}
