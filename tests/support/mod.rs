//! Shared by the analyze, compare and html tests (`mod support;`): record a real pymongo
//! workload through the proxy, run `mongotape analyze`/`compare`, open a page in headless Chromium.

#![allow(dead_code)]

#[path = "../common/mod.rs"]
mod common;

pub use common::*;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// A pymongo workload: `n` acknowledged inserts, `n` finds by `_id`, one cursor read in batches (so
/// getMores), `w0` unacknowledged inserts; `sleep` seconds between the inserts and finds; an
/// optional fifth argument names the application. Prints the number of documents the cursor
/// returned.
pub const WORKLOAD: &str = r#"
import sys, time
from pymongo import MongoClient, WriteConcern
uri, n, sleep, w0 = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
appname = sys.argv[5] if len(sys.argv) > 5 else None
client = MongoClient(uri, serverSelectionTimeoutMS=10000, appname=appname)
db = client.analyze_test
db.c.drop()
for i in range(n):
    db.c.insert_one({'_id': i, 'x': 'a' * 100})
    if sleep:
        time.sleep(sleep)
for i in range(n):
    assert db.c.find_one({'_id': i}) is not None
    if sleep:
        time.sleep(sleep)
print(len(list(db.c.find().batch_size(max(2, n // 5)))))
fire = db.get_collection('w0', write_concern=WriteConcern(w=0))
for i in range(w0):
    fire.insert_one({'i': i})
client.close()
"#;

/// Serializes the tests of one binary that measure timing: the machine has 2 cores, shared.
pub fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// A capture recorded through the proxy, with the temporary directory holding it.
pub struct Recorded {
    pub dir: tempfile::TempDir,
    pub capture: PathBuf,
    pub stdout: String,
}

/// Records `WORKLOAD` through a fresh proxy in front of `server`.
pub fn record_workload(server: &Server, name: &str, n: u32, sleep_s: f64, w0: u32) -> Recorded {
    record_workload_with(server, name, n, sleep_s, w0, "")
}

/// Like [`record_workload`], with `uri_options` (`&key=value...`) appended to the connection string.
pub fn record_workload_with(
    server: &Server,
    name: &str,
    n: u32,
    sleep_s: f64,
    w0: u32,
    uri_options: &str,
) -> Recorded {
    let dir = tempdir();
    let capture = dir.path().join(format!("{name}.mtape"));
    let proxy = Proxy::start(server.addr(), &capture);
    let stdout = python(
        WORKLOAD,
        &[
            format!("{}{uri_options}", proxy.uri()),
            n.to_string(),
            sleep_s.to_string(),
            w0.to_string(),
        ],
    );
    let exit = proxy.stop();
    assert!(exit.status.success(), "proxy: {}", exit.stderr);
    Recorded {
        dir,
        capture,
        stdout,
    }
}

/// Runs the mongotape binary to completion.
pub fn mongotape<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> CommandOutput {
    let mut cmd = Command::new(mongotape_bin());
    cmd.args(args);
    run_command(cmd, Duration::from_secs(120))
}

/// `mongotape analyze FILE --json [extra]`, parsed; panics unless it succeeds.
pub fn analyze_json(capture: &Path, extra: &[&str]) -> serde_json::Value {
    let mut args: Vec<String> = vec![
        "analyze".into(),
        capture.display().to_string(),
        "--json".into(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    let out = mongotape(&args);
    assert!(
        out.success(),
        "analyze failed ({}):\n{}",
        out.status,
        out.stderr
    );
    serde_json::from_str(&out.stdout)
        .unwrap_or_else(|e| panic!("analyze --json: {e}\n{}", out.stdout))
}

/// `mongotape inspect FILE --json`, parsed.
pub fn inspect_json(capture: &Path) -> serde_json::Value {
    let out = mongotape(&[
        "inspect".to_string(),
        capture.display().to_string(),
        "--json".into(),
    ]);
    assert!(out.success(), "inspect failed: {}", out.stderr);
    serde_json::from_str(&out.stdout).expect("inspect --json")
}

pub fn u(v: &serde_json::Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

/// What headless Chromium made of a page.
pub struct Rendered {
    /// The DOM after scripts ran.
    pub dom: String,
    /// Console messages and uncaught exceptions (from Chromium's log).
    pub console: Vec<String>,
}

pub const CHROMIUM: &str = "/usr/bin/chromium";

fn chromium(page: &Path, mode: &[String]) -> CommandOutput {
    assert!(
        Path::new(CHROMIUM).is_file(),
        "{CHROMIUM} is missing: run tools/setup"
    );
    let profile = tempdir();
    let mut cmd = Command::new(CHROMIUM);
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--enable-logging=stderr",
        "--v=0",
    ])
    .arg(format!("--user-data-dir={}", profile.path().display()))
    .args(mode)
    .arg(format!(
        "file://{}",
        page.canonicalize().expect("page path").display()
    ));
    let out = run_command(cmd, Duration::from_secs(90));
    assert!(
        out.success(),
        "chromium failed ({}):\n{}",
        out.status,
        out.stderr
    );
    out
}

fn console_lines(stderr: &str) -> Vec<String> {
    stderr
        .lines()
        .filter(|l| l.contains(":CONSOLE") || l.contains("Uncaught"))
        .map(str::to_owned)
        .collect()
}

/// Opens `page` in headless Chromium and returns the DOM after scripts and the console output.
pub fn render(page: &Path) -> Rendered {
    let out = chromium(page, &["--dump-dom".to_string()]);
    Rendered {
        dom: out.stdout,
        console: console_lines(&out.stderr),
    }
}

/// Screenshots `page` to `png` (1200 px wide) and returns the console output.
pub fn screenshot(page: &Path, png: &Path) -> Vec<String> {
    let out = chromium(
        page,
        &[
            "--window-size=1200,2600".to_string(),
            "--hide-scrollbars".to_string(),
            format!("--screenshot={}", png.display()),
        ],
    );
    assert!(png.is_file(), "no screenshot written:\n{}", out.stderr);
    console_lines(&out.stderr)
}

/// The checks every report page must pass: it rendered, its script ran to the end, its charts are
/// SVG with data marks, nothing went to the console, nothing is fetched from elsewhere.
pub fn assert_page_ok(html: &str, r: &Rendered, min_charts: usize) {
    assert!(
        r.console.is_empty(),
        "console output:\n{}",
        r.console.join("\n")
    );
    let attr = r
        .dom
        .split("data-rendered=\"")
        .nth(1)
        .and_then(|s| s.split('"').next())
        .unwrap_or_else(|| {
            panic!(
                "the page script did not finish (no data-rendered):\n{}",
                &r.dom[..r.dom.len().min(2000)]
            )
        });
    let (charts, marks) = attr.split_once(':').expect("charts:marks");
    let charts: usize = charts.parse().unwrap();
    let marks: usize = marks.parse().unwrap();
    assert!(charts >= min_charts, "{charts} charts, wanted {min_charts}");
    assert!(marks > charts, "{marks} data marks for {charts} charts");
    assert_eq!(
        r.dom.matches("<svg class=\"chart").count(),
        charts,
        "charts in the DOM"
    );
    for needle in ["http://", "https://", "src=", "@import", "url("] {
        assert!(
            !html.contains(needle),
            "the page references {needle:?}: not self-contained"
        );
    }
}
