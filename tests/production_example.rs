//! The worked example of docs/production.md, run exactly as the page writes it: its `app.py` and
//! its shell block, taken from the page, run by bash against two secantusd-rs servers serving TLS
//! with `--auth` (certificates made here): pymongo with a replica-set URI over TLS and SCRAM,
//! recorded through a TLS proxy, then replayed into the fresh server through its replica-set URI.

mod common;

use common::*;
use std::process::Command;
use std::time::Duration;

/// The code block that follows `<!-- worked-example: NAME -->` in docs/production.md.
fn block(page: &str, name: &str) -> String {
    let marker = format!("<!-- worked-example: {name} -->");
    let after = &page[page.find(&marker).unwrap_or_else(|| panic!("no {marker}")) + marker.len()..];
    let start = after.find("```").unwrap();
    let body = &after[start..];
    let body = &body[body.find('\n').unwrap() + 1..];
    body[..body.find("\n```").unwrap() + 1].to_owned()
}

/// Creates the application's user on a fresh `--auth` server (the localhost exception lets the
/// first user in).
fn create_app_user(server: &Server, pki: &Pki) {
    let uri = format!(
        "mongodb://{}/?directConnection=true&tls=true&tlsCAFile={}",
        server.addr(),
        pki.arg("ca.pem")
    );
    python(
        "import sys; from pymongo import MongoClient\n\
         c = MongoClient(sys.argv[1], serverSelectionTimeoutMS=10000)\n\
         c.admin.command('createUser', 'app', pwd='app-secret',\n\
             roles=[{'role': 'readWrite', 'db': 'shop'}, {'role': 'clusterMonitor', 'db': 'admin'}])",
        &[uri],
    );
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn the_worked_example_runs_as_written() {
    let page = std::fs::read_to_string(workspace_root().join("docs/production.md")).unwrap();
    let pki = Pki::new();
    let db = pki.server(&["--auth"]);
    let fresh = pki.server(&["--auth"]);
    create_app_user(&db, &pki);
    create_app_user(&fresh, &pki);

    let dir = tempdir();
    std::fs::write(dir.path().join("app.py"), block(&page, "app.py")).unwrap();
    std::fs::write(dir.path().join("run.sh"), block(&page, "run.sh")).unwrap();
    let proxy = format!("127.0.0.1:{}", free_port());
    let bin_dir = mongotape_bin().parent().unwrap().to_owned();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut command = Command::new("bash");
    command
        .arg("run.sh")
        .current_dir(dir.path())
        .env("PATH", path)
        .env("PROXY", &proxy)
        .env("DB", db.addr())
        .env("FRESH", fresh.addr())
        .env("CERTS", pki.path(""));
    let out = run_command(command, Duration::from_secs(180));
    let log = || {
        format!(
            "status {}\nstdout:\n{}\nstderr:\n{}\nrecord.log:\n{}",
            out.status,
            out.stdout,
            out.stderr,
            std::fs::read_to_string(dir.path().join("record.log")).unwrap_or_default()
        )
    };
    assert!(out.success(), "{}", log());
    // The driver, given a replica-set URI, sees only the proxy's listener.
    let port = proxy.rsplit_once(':').unwrap().1;
    let sees = out
        .stdout
        .lines()
        .find(|l| l.ends_with("is what the driver sees"))
        .unwrap_or_else(|| panic!("{}", log()));
    assert_eq!(
        sees,
        format!("[('127.0.0.1', {port})] is what the driver sees"),
        "{}",
        log()
    );
    assert!(out.stdout.contains("21 big orders"), "{}", log());

    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("replay.json")).unwrap()).unwrap();
    assert_eq!(report["complete"], true, "{report}");
    assert_eq!(
        report["topology"],
        format!(
            "replica set secantus, primary {}, 0 secondaries",
            fresh.addr()
        )
    );
    assert_eq!(
        report["summary"]["per_command"]["insert"]["count"], 50,
        "{report}"
    );
    assert_eq!(report["divergences"], serde_json::json!({}), "{report}");
    assert_eq!(orders(&fresh, &pki), 50);
    assert!(dir.path().join("shop.mtape").is_file());
}

fn orders(server: &Server, pki: &Pki) -> u64 {
    let uri = format!(
        "mongodb://app:app-secret@{}/shop?authSource=admin&directConnection=true&tls=true&tlsCAFile={}",
        server.addr(),
        pki.arg("ca.pem")
    );
    python(
        "import sys; from pymongo import MongoClient\n\
         print(MongoClient(sys.argv[1]).shop.orders.count_documents({}))",
        &[uri],
    )
    .trim()
    .parse()
    .unwrap()
}
