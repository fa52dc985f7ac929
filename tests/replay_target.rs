//! `replay --target` as a production deployment needs it: a connection string into secantusd-rs
//! serving TLS (certificates made here) with `--auth`, authenticated with SCRAM-SHA-256 (a
//! non-ASCII password, SASLprepped), SCRAM-SHA-1 and MONGODB-X509 (the client certificate as the
//! identity, on a server that requires one); a replica-set URI whose primary is found from
//! `hello`; options the replayer cannot honour refused by name.

mod common;

use common::*;
use std::path::Path;

/// The non-ASCII password of the SCRAM-SHA-256 user, and as a connection string writes it.
const PASSWORD: &str = "pässwörd-ü";
const PASSWORD_IN_URI: &str = "p%C3%A4ssw%C3%B6rd-%C3%BC";

/// Creates, over TLS (with the client certificate when given), `root` (SCRAM-SHA-256, the
/// localhost exception lets the first user in), then as root `old` (SCRAM-SHA-1 only) and the
/// `$external` user of the client certificate. Prints the mechanisms of `old`.
const CREATE_USERS: &str = r#"
import sys
from urllib.parse import quote_plus
from pymongo import MongoClient
uri, password, subject = sys.argv[1], sys.argv[2], sys.argv[3]
c = MongoClient(uri, serverSelectionTimeoutMS=10000)
c.admin.command("createUser", "root", pwd=password, roles=["root"], mechanisms=["SCRAM-SHA-256"])
c.close()
c = MongoClient(uri.replace("mongodb://", "mongodb://root:" + quote_plus(password) + "@"),
                serverSelectionTimeoutMS=10000, authMechanism="SCRAM-SHA-256")
c.admin.command("createUser", "old", pwd="old-secret", roles=["root"], mechanisms=["SCRAM-SHA-1"])
c["$external"].command("createUser", subject, roles=[{"role": "root", "db": "admin"}])
print(c.admin.command("usersInfo", "old")["users"][0]["mechanisms"])
"#;

/// Counts the documents of analyze_test.c as root.
const COUNT: &str = r#"
import sys
from urllib.parse import quote_plus
from pymongo import MongoClient
uri, password = sys.argv[1], sys.argv[2]
c = MongoClient(uri.replace("mongodb://", "mongodb://root:" + quote_plus(password) + "@"),
                serverSelectionTimeoutMS=10000)
print(c.analyze_test.c.count_documents({}))
"#;

/// The TLS options every client of `server` needs (with the client certificate when `cert`).
fn tls_opts(pki: &Pki, cert: bool) -> String {
    let mut opts = format!("tls=true&tlsCAFile={}", pki.arg("ca.pem"));
    if cert {
        opts.push_str(&format!("&tlsCertificateKeyFile={}", pki.arg("client.pem")));
    }
    opts
}

/// A TLS + auth server with the three users; `require_cert` makes client certificates mandatory.
fn auth_server(pki: &Pki, require_cert: bool) -> Server {
    let mut flags = vec!["--auth"];
    if require_cert {
        flags.push("--tls-require-client-cert");
    }
    let server = pki.server(&flags);
    let uri = format!(
        "mongodb://{}/?directConnection=true&{}",
        server.addr(),
        tls_opts(pki, require_cert)
    );
    let out = python(CREATE_USERS, &[uri.as_str(), PASSWORD, CLIENT_SUBJECT]);
    assert!(
        out.contains("SCRAM-SHA-1") && !out.contains("SCRAM-SHA-256"),
        "{out}"
    );
    server
}

fn count_docs(server: &Server, pki: &Pki, cert: bool) -> u64 {
    let uri = format!(
        "mongodb://{}/?directConnection=true&{}",
        server.addr(),
        tls_opts(pki, cert)
    );
    python(COUNT, &[uri.as_str(), PASSWORD])
        .trim()
        .parse()
        .unwrap()
}

/// Replays `capture` into `target` and checks every operation was answered without a divergence
/// and the documents are there.
fn replay_into(capture: &Path, target: &str, server: &Server, pki: &Pki, cert: bool) -> Replay {
    let r = replay(capture, target, &["--fast", "--quiet"]);
    assert!(
        r.count("insert") >= 20 && r.count("find") >= 20,
        "{}",
        r.describe()
    );
    assert_eq!(r.divergences(), 0, "{}", r.describe());
    assert_eq!(count_docs(server, pki, cert), 20);
    r
}

#[test]
fn replays_into_tls_with_scram_sha256_nonascii_and_scram_sha1() {
    let pki = Pki::new();
    let recorded = record_inserts_finds(&Server::start(), "tls_scram", 20, 0.0, 0);

    let server = auth_server(&pki, false);
    let target = format!(
        "mongodb://root:{PASSWORD_IN_URI}@{}/?replicaSet=secantus&authMechanism=SCRAM-SHA-256&{}",
        server.addr(),
        tls_opts(&pki, false)
    );
    let r = replay_into(&recorded.capture, &target, &server, &pki, false);
    // The replica-set URI found the primary from hello.
    assert_eq!(
        r.report["topology"],
        format!(
            "replica set secantus, primary {}, 0 secondaries",
            server.addr()
        ),
        "{}",
        r.describe()
    );
    assert!(!r.report["target"]
        .as_str()
        .unwrap()
        .contains(PASSWORD_IN_URI));

    // SCRAM-SHA-1, on a fresh server: the user exists with SHA-1 only.
    let server = auth_server(&pki, false);
    let target = format!(
        "mongodb://old:old-secret@{}/?authSource=admin&authMechanism=SCRAM-SHA-1&directConnection=true&{}",
        server.addr(),
        tls_opts(&pki, false)
    );
    replay_into(&recorded.capture, &target, &server, &pki, false);

    // A wrong password is an authentication error naming the user, before anything is replayed.
    let wrong = target.replace("old-secret", "nope");
    let r = try_replay(&recorded.capture, &wrong, &["--fast", "--quiet"]);
    assert!(!r.output.success());
    assert!(
        r.output.stderr.contains("authentication as \"old\""),
        "{}",
        r.describe()
    );
}

/// secantusd-rs supports MONGODB-X509: with `--tls-require-client-cert` it takes the user from
/// the certificate's subject (RFC 2253 order) and looks it up in `$external`.
#[test]
fn replays_with_x509_on_a_server_that_requires_client_certificates() {
    let pki = Pki::new();
    let recorded = record_inserts_finds(&Server::start(), "x509", 20, 0.0, 0);
    let server = auth_server(&pki, true);
    let target = format!(
        "mongodb://{}/?authMechanism=MONGODB-X509&replicaSet=secantus&{}",
        server.addr(),
        tls_opts(&pki, true)
    );
    replay_into(&recorded.capture, &target, &server, &pki, true);

    // A certificate from the same CA whose subject has no user: the server refuses it by name.
    let stranger = pki.client("stranger.pem", "nobody in particular");
    let wrong = target.replace(pki.arg("client.pem").as_str(), stranger.to_str().unwrap());
    let r = try_replay(&recorded.capture, &wrong, &["--fast", "--quiet"]);
    assert!(!r.output.success());
    assert!(r.output.stderr.contains("MONGODB-X509"), "{}", r.describe());

    // Without TLS, X.509 cannot work: said before connecting.
    let plain = format!("mongodb://{}/?authMechanism=MONGODB-X509", server.addr());
    let r = try_replay(&recorded.capture, &plain, &["--fast", "--quiet"]);
    assert!(!r.output.success());
    assert!(
        r.output.stderr.contains("tlsCertificateKeyFile"),
        "{}",
        r.describe()
    );
}

#[test]
fn a_replica_set_uri_finds_the_primary_and_wrong_options_are_named() {
    let server = Server::start();
    let recorded = record_inserts_finds(&server, "replset", 5, 0.0, 0);
    // A seed that is down and one that answers: the set is found through the one that answers.
    let target = format!(
        "mongodb://127.0.0.1:1,{}/?replicaSet=secantus&readPreference=secondaryPreferred&w=majority",
        server.addr()
    );
    let r = replay(&recorded.capture, &target, &["--fast", "--quiet"]);
    assert_eq!(
        r.report["topology"],
        format!(
            "replica set secantus, primary {}, 0 secondaries",
            server.addr()
        )
    );
    assert!(r.count("insert") >= 5, "{}", r.describe());
    // w is carried by the recorded requests: accepted, and said so.
    assert!(
        r.output.stderr.contains("--target w: not used"),
        "{}",
        r.describe()
    );

    // The wrong set name is an error naming both.
    let wrong = format!("mongodb://{}/?replicaSet=other", server.addr());
    let r = try_replay(&recorded.capture, &wrong, &["--fast", "--quiet"]);
    assert!(!r.output.success());
    assert!(
        r.output
            .stderr
            .contains("not a member of replica set other"),
        "{}",
        r.describe()
    );

    for (option, uri) in [
        (
            "readPreferenceTags",
            "readPreference=secondary&readPreferenceTags=dc:ny",
        ),
        ("loadBalanced", "loadBalanced=true"),
        ("authMechanism=PLAIN", "authMechanism=PLAIN"),
        ("frobnicate", "frobnicate=1"),
    ] {
        let target = format!("mongodb://u:p@{}/?{uri}", server.addr());
        let r = try_replay(&recorded.capture, &target, &["--fast", "--quiet"]);
        assert!(!r.output.success(), "{uri}");
        assert!(
            r.output.stderr.contains(option),
            "{uri}: {}",
            r.output.stderr
        );
        assert!(r.report.is_null(), "nothing replayed for {uri}");
    }
}
