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

/// [`render`] in a window `width` px wide (the page laid out as a reader at that width sees it).
pub fn render_at(page: &Path, width: u32) -> Rendered {
    let out = chromium(
        page,
        &[
            format!("--window-size={width},2000"),
            "--dump-dom".to_string(),
        ],
    );
    Rendered {
        dom: out.stdout,
        console: console_lines(&out.stderr),
    }
}

/// The page laid out in a window `width` px wide: how many of its tables are wider than the page
/// (a reader would scroll sideways to see their right-hand columns).
pub fn clipped_tables_at(page: &Path, width: u32) -> usize {
    let out = chromium(
        page,
        &[
            format!("--window-size={width},2000"),
            "--dump-dom".to_string(),
        ],
    );
    out.stdout
        .split("data-clipped-tables=\"")
        .nth(1)
        .and_then(|s| s.split('"').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("the page did not measure its tables:\n{}", out.stderr))
}

/// Screenshots `page` to `png` (1200 x 5200 px: a whole report) and returns the console output.
pub fn screenshot(page: &Path, png: &Path) -> Vec<String> {
    screenshot_sized(page, png, 1200)
}

/// [`screenshot`] in a window `width` px wide (and 5200 px high).
pub fn screenshot_sized(page: &Path, png: &Path, width: u32) -> Vec<String> {
    let out = chromium(
        page,
        &[
            format!("--window-size={width},5200"),
            "--hide-scrollbars".to_string(),
            format!("--screenshot={}", png.display()),
        ],
    );
    assert!(png.is_file(), "no screenshot written:\n{}", out.stderr);
    console_lines(&out.stderr)
}

/// What a screenshot shows, roughly: how much of it is not the background, and in how many colours.
#[derive(Debug)]
pub struct Ink {
    pub width: u32,
    pub height: u32,
    /// Share of pixels not of the commonest colour (the background).
    pub share: f64,
    pub colours: usize,
}

/// The PNG at `png` decoded: its pixels' bytes (exactly the frame) and its frame's info.
pub fn decode(png: &Path) -> (Vec<u8>, png::OutputInfo) {
    let file = std::fs::File::open(png).expect("screenshot file");
    let mut reader = png::Decoder::new(std::io::BufReader::new(file))
        .read_info()
        .expect("a PNG");
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).expect("a PNG frame");
    buf.truncate(info.buffer_size());
    (buf, info)
}

/// Decodes the PNG at `png` and measures its ink; fails on a file that is not a PNG.
pub fn ink(png: &Path) -> Ink {
    let (buf, info) = decode(png);
    let step = info.color_type.samples();
    let mut counts = std::collections::HashMap::<&[u8], u64>::new();
    for px in buf[..info.buffer_size()].chunks_exact(step) {
        *counts.entry(px).or_default() += 1;
    }
    let total: u64 = counts.values().sum();
    let background = counts.values().copied().max().unwrap_or(0);
    Ink {
        width: info.width,
        height: info.height,
        share: 1.0 - background as f64 / total.max(1) as f64,
        colours: counts.len(),
    }
}

/// Screenshots `page` to `png`, fails on console output or a screenshot with next to nothing on it
/// (a blank or single-colour image), and returns what it shows. `MONGOTAPE_SCREENSHOTS=DIR` keeps a
/// copy in DIR.
pub fn screenshot_ok(page: &Path, png: &Path) -> Ink {
    screenshot_ok_at(page, png, 1200)
}

/// [`screenshot_ok`] in a window `width` px wide.
pub fn screenshot_ok_at(page: &Path, png: &Path, width: u32) -> Ink {
    let console = screenshot_sized(page, png, width);
    assert!(console.is_empty(), "console output: {console:?}");
    let ink = ink(png);
    assert!(
        ink.share > 0.03 && ink.colours > 50,
        "{} looks blank: {ink:?}",
        png.display()
    );
    // For a person to look at: `MONGOTAPE_SCREENSHOTS=DIR` keeps a copy.
    if let (Some(keep), Some(name)) = (std::env::var_os("MONGOTAPE_SCREENSHOTS"), png.file_name()) {
        let keep = std::path::PathBuf::from(keep);
        std::fs::create_dir_all(&keep).expect("MONGOTAPE_SCREENSHOTS directory");
        std::fs::copy(png, keep.join(name)).expect("copy the screenshot");
    }
    ink
}

/// An attribute of the chart whose title (`aria-label`) is `title`, from the rendered DOM.
pub fn chart_attr(dom: &str, title: &str, attr: &str) -> Option<String> {
    let label = format!("aria-label=\"{title}\"");
    let at = dom.find(&label)?;
    let tag_start = dom[..at].rfind("<svg")?;
    let tag = &dom[tag_start..tag_start + dom[tag_start..].find('>')?];
    let value = tag.split(&format!(" {attr}=\"")).nth(1)?;
    Some(value.split('"').next()?.to_owned())
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
