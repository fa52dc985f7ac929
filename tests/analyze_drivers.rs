//! One capture, three real clients (pymongo sleeping between operations, a PHP tight loop, a
//! mongosh loop) through one proxy: analyze tells the drivers apart by their handshake metadata and
//! answers "server or client?" for each.

mod common;

use common::*;
use serde_json::Value;
use std::process::Command;
use std::time::Duration;

const PHP: &str = r#"
$m = new MongoDB\Driver\Manager($argv[1]);
$n = (int)$argv[2];
for ($i = 0; $i < $n; $i++) {
    $b = new MongoDB\Driver\BulkWrite;
    $b->insert(["_id" => $i, "x" => str_repeat("a", 100)]);
    $m->executeBulkWrite("analyze_drivers.php", $b);
}
for ($i = 0; $i < $n; $i++) {
    $m->executeQuery("analyze_drivers.php", new MongoDB\Driver\Query(["_id" => $i]))->toArray();
}
echo "ok\n";
"#;

const MONGOSH: &str = r#"
const c = db.getSiblingDB("analyze_drivers").sh;
for (let i = 0; i < 30; i++) c.insertOne({_id: i});
for (let i = 0; i < 30; i++) c.findOne({_id: i});
print("ok");
"#;

fn run(mut cmd: Command, what: &str) {
    cmd.current_dir(workspace_root());
    let out = run_command(cmd, Duration::from_secs(120));
    assert!(
        out.success() && out.stdout.contains("ok"),
        "{what}: {}\n{}",
        out.stderr,
        out.stdout
    );
}

fn driver<'a>(report: &'a Value, needle: &str) -> &'a Value {
    report["drivers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["driver"].as_str().unwrap().contains(needle))
        .unwrap_or_else(|| panic!("no driver {needle:?} in {}", report["drivers"]))
}

#[test]
fn three_clients_in_one_capture_are_told_apart() {
    let _serial = one_at_a_time();
    Client::Php.require_installed();
    Client::Mongosh.require_installed();
    let server = Server::start_with(&["--standalone"]);
    let dir = tempdir();
    let capture = dir.path().join("drivers.mtape");
    let proxy = Proxy::start(server.addr(), &capture);
    let uri = proxy.uri();

    python(INSERTS_FINDS, &[uri.as_str(), "10", "0.02", "0", "sleepy"]);
    let mut php = Command::new("php");
    php.args(["-r", PHP, "--", &uri, "100"]);
    run(php, "php");
    let mut sh = Command::new("mongosh");
    sh.args([&uri, "--quiet", "--norc", "--eval", MONGOSH]);
    run(sh, "mongosh");
    let exit = proxy.stop();
    assert!(exit.status.success(), "{}", exit.stderr);

    let report = analyze_json(&capture, &[]);
    let text = mongotape(&["analyze".to_string(), capture.display().to_string()]).stdout;
    eprintln!("{text}");
    let py = driver(&report, "PyMongo");
    assert!(
        py["driver"].as_str().unwrap().ends_with("(sleepy)"),
        "{}",
        py["driver"]
    );
    let php = driver(&report, "ext-mongodb:PHP");
    let sh = driver(&report, "mongosh");

    // Each driver's logical operations are its own.
    assert_eq!(u(&py["workload"]["ops"]), 2 * 10 + 2);
    assert_eq!(u(&php["workload"]["ops"]), 200);
    assert!(u(&sh["workload"]["ops"]) >= 60, "{}", sh["workload"]);
    let total: u64 = report["drivers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| u(&d["workload"]["ops"]))
        .sum();
    assert_eq!(total, u(&report["workload"]["ops"]));

    // Per-driver times are the sums of that driver's workload connections and add up.
    for d in report["drivers"].as_array().unwrap() {
        let t = &d["workload"]["times"];
        let g = &t["gaps"];
        let gaps: u64 = g.as_object().unwrap().values().map(u).sum();
        assert_eq!(
            u(&t["server_ns"]) + u(&t["client_ns"]) + gaps,
            u(&t["wall_ns"]),
            "{}",
            d["driver"]
        );
    }
    // The sleeping pymongo is far more client-bound than PHP's tight loop; pymongo's monitor is
    // set apart.
    let share = |d: &Value| d["workload"]["client_bound_share"].as_f64().unwrap();
    assert!(
        share(py) > share(php) + 0.2,
        "pymongo {} vs php {}",
        share(py),
        share(php)
    );
    assert!(u(&py["other"]["connections"]) >= 1, "{}", py["other"]);
    assert!(
        php["per_command"]["insert"]["count"].as_u64() == Some(100),
        "{}",
        php["per_command"]
    );
    // The text names the drivers as people do (the JSON keeps what the clients sent).
    for needle in ["pymongo ", "(C extension)", "PHP ext-mongodb ", "mongosh "] {
        assert!(
            text.contains(needle),
            "{needle} missing from the text report"
        );
    }

    // The HTML report draws the drivers side by side and renders cleanly.
    let html = dir.path().join("drivers.html");
    let out = mongotape(&[
        "analyze".to_string(),
        capture.display().to_string(),
        "--html".into(),
        html.display().to_string(),
    ]);
    assert!(out.success(), "{}", out.stderr);
    let page = std::fs::read_to_string(&html).unwrap();
    let rendered = render(&html);
    assert_page_ok(&page, &rendered, 8);
    assert!(rendered.dom.contains("p50 latency per command and driver"));
    screenshot_ok(&html, &dir.path().join("drivers.png"));
}
