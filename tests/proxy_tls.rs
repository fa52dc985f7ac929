//! TLS on both legs: secantusd-rs serving TLS (with certificates made here), the proxy accepting
//! TLS clients and connecting to the upstream with TLS from the connection string. The real clients,
//! given a replica-set URI over TLS, record the same content as through plain TCP; a required client certificate is
//! enforced; a plain client on the TLS listener and wrong certificates (each side) are refused with a
//! log line naming the side while another client's connection goes on.

mod common;

use common::*;
use mongotape::capture::{CaptureReader, RecordKind};
use mongotape::wire::op_msg::{MsgFlags, OpMsg, Section};
use mongotape::wire::{info, Message, RequestInfo};
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// PEM files of a test PKI: a CA, a server certificate for localhost / 127.0.0.1, a client
/// certificate, and a second CA with its own client certificate (the wrong one).
struct Pki {
    dir: tempfile::TempDir,
}

impl Pki {
    fn new() -> Pki {
        let dir = tempdir();
        let write = |name: &str, text: &str| std::fs::write(dir.path().join(name), text).unwrap();
        let (ca_pem, ca) = make_ca("mongotape test CA");
        write("ca.pem", &ca_pem);
        let (cert, key) = make_leaf(&ca, "localhost", &["localhost", "127.0.0.1"]);
        write("server.pem", &cert);
        write("server-key.pem", &key);
        let (cert, key) = make_leaf(&ca, "mongotape test client", &[]);
        write("client.pem", &format!("{cert}{key}"));
        let (other_pem, other) = make_ca("some other CA");
        write("other-ca.pem", &other_pem);
        let (cert, key) = make_leaf(&other, "a stranger", &[]);
        write("stranger.pem", &format!("{cert}{key}"));
        Pki { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn arg(&self, name: &str) -> String {
        self.path(name).to_str().unwrap().to_owned()
    }
}

fn make_ca(name: &str) -> (String, Issuer<'static, KeyPair>) {
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(DnType::CommonName, name);
    let cert = params.self_signed(&key).unwrap();
    (cert.pem(), Issuer::new(params, key))
}

fn make_leaf(ca: &Issuer<'static, KeyPair>, name: &str, sans: &[&str]) -> (String, String) {
    let key = KeyPair::generate().unwrap();
    let sans: Vec<String> = sans.iter().map(|s| s.to_string()).collect();
    let mut params = CertificateParams::new(sans).unwrap();
    params.distinguished_name.push(DnType::CommonName, name);
    let cert = params.signed_by(&key, ca).unwrap();
    (cert.pem(), key.serialize_pem())
}

fn tls_server(pki: &Pki, require_client_cert: bool) -> Server {
    let mut args = vec![
        "--tls-cert-file".to_owned(),
        pki.arg("server.pem"),
        "--tls-key-file".to_owned(),
        pki.arg("server-key.pem"),
        "--tls-ca-file".to_owned(),
        pki.arg("ca.pem"),
    ];
    if require_client_cert {
        args.push("--tls-require-client-cert".to_owned());
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    Server::start_with(&args)
}

/// The proxy's upstream URI into a TLS server that wants the proxy's client certificate. Without
/// `direct`, the proxy discovers the replica set over TLS and rewrites hello replies.
fn tls_upstream(server: &Server, pki: &Pki, ca: &str, direct: bool) -> String {
    format!(
        "mongodb://{}/?directConnection={direct}&tls=true&tlsCAFile={}&tlsCertificateKeyFile={}",
        server.addr(),
        pki.arg(ca),
        pki.arg("client.pem")
    )
}

fn tls_proxy(upstream: &str, out: &Path, pki: &Pki, extra: &[&str]) -> Proxy {
    // Not --quiet: a test reads the final status line, which -q drops.
    let mut args = vec![
        "--tls-cert".to_owned(),
        pki.arg("server.pem"),
        "--tls-key".to_owned(),
        pki.arg("server-key.pem"),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    Proxy::start_with(upstream, out, &args)
}

/// Workload commands and namespaces in a capture, counted (handshakes and session ends left out:
/// their number depends on monitoring timing, not on the workload).
fn content(path: &Path) -> BTreeMap<(String, String), u64> {
    let mut counts = BTreeMap::new();
    for record in CaptureReader::open(path).unwrap() {
        let record = record.unwrap();
        if record.kind != RecordKind::Request {
            continue;
        }
        let msg = Message::parse(&record.payload).unwrap();
        let req = RequestInfo::of(&msg);
        if info::is_handshake_command(&req.command) || req.command == "endSessions" {
            continue;
        }
        *counts
            .entry((req.command.clone(), req.namespace()))
            .or_default() += 1;
    }
    counts
}

fn record_run(
    client: Client,
    upstream: &str,
    proxy_extra: Option<(&Pki, &[&str])>,
    uri_opts: &str,
) -> BTreeMap<(String, String), u64> {
    let dir = tempdir();
    let out = dir.path().join("run.mtape");
    let proxy = match proxy_extra {
        Some((pki, extra)) => tls_proxy(upstream, &out, pki, extra),
        None => Proxy::start_with(upstream, &out, &["--quiet"]),
    };
    let uri = format!("mongodb://{}/?{uri_opts}", proxy.addr());
    run_client(client, "basic", &uri, "bench", 1.0);
    let exit = proxy.stop();
    assert!(exit.status.success(), "proxy: {}", exit.stderr);
    let counts = content(&out);
    assert!(
        counts.keys().any(|(c, _)| c == "insert") && counts.keys().any(|(c, _)| c == "find"),
        "{}: {counts:?}",
        client.name()
    );
    counts
}

#[test]
fn clients_record_the_same_content_through_tls_on_both_legs() {
    require_clients();
    let pki = Pki::new();
    let plain = Server::start();
    let secure = tls_server(&pki, true);
    let upstream = tls_upstream(&secure, &pki, "ca.pem", false);
    for client in Client::ALL {
        let expected = record_run(client, plain.addr(), None, "directConnection=true");
        // As an application would connect: the set's name, TLS, no directConnection.
        let tls_opts = format!(
            "replicaSet=secantus&tls=true&tlsCAFile={}",
            pki.arg("ca.pem")
        );
        let got = record_run(client, &upstream, Some((&pki, &[])), &tls_opts);
        assert_eq!(expected, got, "{} through TLS", client.name());
    }
}

// ------------------------------------------------------------------------------------------------
// Raw TLS clients, to hold a connection open across other clients' failures.

fn client_config(pki: &Pki, identity: Option<&str>) -> Arc<rustls::ClientConfig> {
    let tls = mongotape::net::ClientTls {
        ca_file: Some(pki.path("ca.pem")),
        cert_key_file: identity.map(|name| pki.path(name)),
        ..Default::default()
    };
    tls.client_config().unwrap()
}

type TlsConn = rustls::StreamOwned<rustls::ClientConnection, TcpStream>;

fn connect_tls(addr: &str, config: Arc<rustls::ClientConfig>) -> TlsConn {
    let tcp = TcpStream::connect(addr).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let conn = rustls::ClientConnection::new(config, name).unwrap();
    rustls::StreamOwned::new(conn, tcp)
}

fn ping_bytes(request_id: i32) -> Vec<u8> {
    OpMsg {
        flags: MsgFlags::empty(),
        sections: vec![Section::Body(bson::rawdoc! { "ping": 1, "$db": "admin" })],
        checksum: None,
    }
    .encode(request_id, 0)
}

/// Sends a ping and reads its reply; `Err` with what went wrong.
fn ping<S: Read + Write>(stream: &mut S, request_id: i32) -> Result<(), String> {
    stream
        .write_all(&ping_bytes(request_id))
        .and_then(|_| stream.flush())
        .map_err(|e| format!("write: {e}"))?;
    let mut header = [0u8; 16];
    stream
        .read_exact(&mut header)
        .map_err(|e| format!("read: {e}"))?;
    let len = i32::from_le_bytes(header[..4].try_into().unwrap()) as usize;
    let mut rest = vec![0u8; len - 16];
    stream
        .read_exact(&mut rest)
        .map_err(|e| format!("read: {e}"))?;
    let mut whole = header.to_vec();
    whole.extend_from_slice(&rest);
    let reply = info::ReplyInfo::of(&Message::parse(&whole).unwrap());
    if reply.is_ok() {
        Ok(())
    } else {
        Err(format!("not ok: {reply:?}"))
    }
}

fn wait_for_log(proxy: &Proxy, needle: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let log = proxy.stderr();
        if log.contains(needle) || Instant::now() > deadline {
            return log;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn required_client_certificates_and_refusals_name_their_side() {
    let pki = Pki::new();
    let server = tls_server(&pki, true);
    let dir = tempdir();
    let out = dir.path().join("run.mtape");
    let upstream = tls_upstream(&server, &pki, "ca.pem", true);
    let ca = pki.arg("ca.pem");
    let proxy = tls_proxy(&upstream, &out, &pki, &["--tls-ca", &ca]);

    // A client with a good certificate gets through, and stays connected throughout.
    let mut good = connect_tls(proxy.addr(), client_config(&pki, Some("client.pem")));
    ping(&mut good, 1).expect("a client with a certificate from the CA");

    // No certificate: refused by the proxy, named as the client side.
    let mut anonymous = connect_tls(proxy.addr(), client_config(&pki, None));
    assert!(ping(&mut anonymous, 1).is_err(), "no client certificate");
    let log = wait_for_log(&proxy, "client side: client TLS handshake failed");
    assert!(
        log.contains("client side: client TLS handshake failed"),
        "{log}"
    );

    // A certificate from another CA: refused the same way.
    let mut stranger = connect_tls(proxy.addr(), client_config(&pki, Some("stranger.pem")));
    assert!(
        ping(&mut stranger, 1).is_err(),
        "certificate from another CA"
    );

    // A plain client on the TLS listener: closed, with a log line that says so.
    let mut plain = TcpStream::connect(proxy.addr()).unwrap();
    plain
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    assert!(ping(&mut plain, 1).is_err(), "plaintext on a TLS listener");
    let log = wait_for_log(&proxy, "plaintext to a TLS listener");
    assert!(
        log.contains("client sent plaintext to a TLS listener"),
        "{log}"
    );

    // The good connection went on.
    ping(&mut good, 2).expect("the other client's connection goes on");
    drop(good);
    let exit = proxy.stop();
    assert!(
        exit.stderr.contains("client TLS failures"),
        "{}",
        exit.stderr
    );

    // An upstream whose certificate the proxy does not trust: the client's connection is closed
    // and the log names the upstream side.
    let out2 = dir.path().join("wrong-ca.mtape");
    let wrong = tls_upstream(&server, &pki, "other-ca.pem", true);
    let proxy = tls_proxy(&wrong, &out2, &pki, &[]);
    let mut client = connect_tls(proxy.addr(), client_config(&pki, None));
    assert!(
        ping(&mut client, 1).is_err(),
        "upstream certificate not trusted"
    );
    let log = wait_for_log(&proxy, "TLS handshake with upstream");
    assert!(
        log.contains(&format!(
            "TLS handshake with upstream {} failed",
            server.addr()
        )),
        "{log}"
    );
    drop(proxy);
}

#[test]
fn a_bad_upstream_option_is_an_error_naming_it() {
    let dir = tempdir();
    let out = dir.path().join("x.mtape");
    let output = run_command(
        {
            let mut c = std::process::Command::new(mongotape_bin());
            c.args([
                "record",
                "--listen",
                "127.0.0.1:0",
                "--upstream",
                "mongodb://127.0.0.1:1/?loadBalanced=true",
                "--out",
            ])
            .arg(&out);
            c
        },
        Duration::from_secs(30),
    );
    assert!(!output.success());
    assert!(output.stderr.contains("loadBalanced"), "{}", output.stderr);
}
