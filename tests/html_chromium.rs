//! The HTML reports of `analyze` and `compare`, opened in headless Chromium: they render, their
//! script runs to the end, the charts are there with data, nothing reaches the console, nothing is
//! fetched. A deliberately broken page must fail the same checks.

mod common;

use common::*;
use std::path::PathBuf;

/// Where screenshots are kept for a person to look at.
fn shots_dir() -> PathBuf {
    let dir = workspace_root().join("target/html-screenshots");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn analyze_and_compare_pages_render_in_chromium() {
    let _serial = one_at_a_time();
    let server = Server::start_with(&["--standalone"]);
    let rec = record_inserts_finds(&server, "page", 40, 0.0, 5);
    let dir = tempdir();
    let html = dir.path().join("analyze.html");
    let json = dir.path().join("analyze.json");
    let out = mongotape(&[
        "analyze".to_string(),
        rec.capture.display().to_string(),
        "--json".into(),
        "--html".into(),
        html.display().to_string(),
    ]);
    assert!(out.success(), "{}", out.stderr);
    std::fs::write(&json, &out.stdout).unwrap();
    let page = std::fs::read_to_string(&html).unwrap();
    let rendered = render(&html);
    // Time split per driver and per connection, latency distribution and percentiles, throughput
    // and latency over time.
    assert_page_ok(&page, &rendered, 6);
    for title in [
        "Server vs client time per driver",
        "Latency distribution per command",
        "Throughput: logical operations per second",
        "Latency over time",
    ] {
        assert!(rendered.dom.contains(title), "{title:?} missing");
    }
    assert!(rendered.dom.contains("PyMongo"), "the driver is named");
    assert!(rendered.dom.contains("<polyline"), "line charts have lines");
    let console = screenshot(&html, &shots_dir().join("analyze.png"));
    assert!(console.is_empty(), "{console:?}");

    let cmp = dir.path().join("compare.html");
    let out = mongotape(&[
        "compare".to_string(),
        json.display().to_string(),
        json.display().to_string(),
        "--html".into(),
        cmp.display().to_string(),
    ]);
    assert!(out.success(), "{}", out.stderr);
    let page = std::fs::read_to_string(&cmp).unwrap();
    let rendered = render(&cmp);
    assert_page_ok(&page, &rendered, 5);
    assert!(rendered.dom.contains("1.00x"));
    let console = screenshot(&cmp, &shots_dir().join("compare.png"));
    assert!(console.is_empty(), "{console:?}");

    // The checks catch a broken page: a script error, and a page whose charts are missing.
    let broken = dir.path().join("broken.html");
    let bad = page.replace("</body>", "<script>undefinedFunction()</script></body>");
    std::fs::write(&broken, &bad).unwrap();
    let r = render(&broken);
    assert!(
        r.console.iter().any(|l| l.contains("Uncaught")),
        "{:?}",
        r.console
    );
    let caught = std::panic::catch_unwind(|| assert_page_ok(&bad, &r, 5));
    assert!(caught.is_err(), "a script error must fail the page check");
    let no_script = page.replace(
        "document.body.setAttribute",
        "document.body.removeAttribute",
    );
    std::fs::write(&broken, &no_script).unwrap();
    let r = render(&broken);
    assert!(std::panic::catch_unwind(|| assert_page_ok(&no_script, &r, 5)).is_err());
}

#[test]
fn hostile_names_from_a_capture_are_escaped() {
    use mongotape::report::html::{BarChart, Page};
    let dir = tempdir();
    let path = dir.path().join("hostile.html");
    let evil = "<img src=x onerror=alert(1)><script>alert(2)</script>";
    let html = Page::new(evil)
        .bar_chart(
            BarChart::new(evil, "µs")
                .categories([evil])
                .series(evil, [1.0]),
        )
        .table(&[evil], &[vec![evil.to_string()]])
        .render();
    std::fs::write(&path, &html).unwrap();
    let r = render(&path);
    assert!(r.console.is_empty(), "{:?}", r.console);
    assert!(
        !r.dom.contains("<img"),
        "markup from a capture must stay text"
    );
    assert!(r.dom.contains("data-rendered=\"1:1\""), "{}", r.dom);
}
