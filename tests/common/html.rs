//! Report pages in headless Chromium: the DOM after scripts ran, the console, screenshots, and the
//! checks every page must pass.

use super::process::{run_command, CommandOutput};
use super::tempdir;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

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
