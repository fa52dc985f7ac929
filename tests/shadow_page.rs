//! The live shadow's page (`mongotape shadow --html`) opened in headless Chromium, and its JSON
//! read by `mongotape compare`, after a short real shadow: secantusd-rs as production and as a
//! candidate with one document changed, pymongo reading through the shadow.

mod common;
use common::*;
use serde_json::Value;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

const READS: &str = "import sys\nfrom pymongo import MongoClient\n\
c = MongoClient(sys.argv[1])\n\
for i in range(60):\n\
\x20   list(c.shop.items.find({'_id': i % 20}))\n\
\x20   list(c.shop.items.find({'g': i % 10}).sort('_id', 1).limit(3))\n\
\x20   c.shop.items.count_documents({'g': i % 10})\n";

/// Runs a shadow of `prod` to `cand` over 180 reads; its report (written at stop) and page land
/// in `dir` as shadow.json and shadow.html.
fn shadow_run(dir: &Path) -> Value {
    let (prod, cand) = (Server::start(), Server::start());
    for (s, changed) in [(&prod, -1), (&cand, 7)] {
        python(
            "import sys\nfrom pymongo import MongoClient\n\
             c = MongoClient(sys.argv[1]); ch = int(sys.argv[2])\n\
             c.shop.items.drop()\n\
             c.shop.items.insert_many([{'_id': i, 'g': i % 10, 'v': -1 if i == ch else i} for i in range(100)])\n",
            &[s.uri(), changed.to_string()],
        );
    }
    let json = dir.join("shadow.json");
    let mut command = Command::new(mongotape_bin());
    command
        .args(["shadow", "--listen", "127.0.0.1:0", "-u", &prod.uri()])
        .args(["--candidate", &cand.uri(), "--report-every", "1"])
        .arg("--report")
        .arg(&json)
        .arg("--html")
        .arg(dir.join("shadow.html"));
    let proxy = Proxy::spawn(command, &dir.join("unused.mtape"));
    python(READS, &[proxy.uri()]);
    let deadline = Instant::now() + Duration::from_secs(60);
    let settled = |r: &Value| {
        let t = &r["targets"][0]["totals"];
        ["mirrored", "shed", "gaps", "orphans"]
            .iter()
            .filter_map(|k| t[*k].as_u64())
            .sum::<u64>()
            >= 180
    };
    while !settled(
        &serde_json::from_slice(&std::fs::read(&json).unwrap_or_default()).unwrap_or(Value::Null),
    ) {
        assert!(Instant::now() < deadline, "180 reads never accounted for");
        std::thread::sleep(Duration::from_millis(200));
    }
    let exit = proxy.stop();
    assert!(exit.status.success(), "{}", exit.stderr);
    serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap()
}

#[test]
fn the_shadow_page_renders_in_chromium_and_fits_1280_px() {
    let dir = tempdir();
    let report = shadow_run(dir.path());
    let html = dir.path().join("shadow.html");
    let page = std::fs::read_to_string(&html).unwrap();
    let rendered = render(&html);
    assert_page_ok(&page, &rendered, 1);
    assert_eq!(clipped_tables_at(&html, 1280), 0, "a table cut at 1280 px");
    let layout = probe_layout(&html, 1280);
    assert_eq!(layout.uncued, 0, "a table wider than the page with no cue");
    let tables = dom_tables(&layout.rendered.dom);
    let target = &report["targets"][0];
    let shapes = target["shapes"].as_array().unwrap();
    let per_shape = tables
        .iter()
        .find(|t| t.headers.first().is_some_and(|h| h == "shape"))
        .expect("the per-shape table");
    assert_eq!(per_shape.rows.len(), shapes.len(), "a row per shape");
    // The first row is the shape with the discrepancy (the changed document), as in the JSON.
    assert_eq!(per_shape.rows[0][0], shapes[0]["shape"].as_str().unwrap());
    let col = |name: &str| per_shape.headers.iter().position(|h| h == name).unwrap();
    assert_eq!(
        per_shape.rows[0][col("discrep.")],
        shapes[0]["discrepancies"].to_string()
    );
    assert_ne!(shapes[0]["discrepancies"], 0, "{target}");
    assert!(per_shape.rows[0][col("ratio (interval)")].contains("x ("));
    let text = text_of(&layout.rendered.dom);
    assert!(text.contains("Legend") && text.contains("Gaps"), "{text}");
    screenshot_ok(&html, &dir.path().join("shadow.png"));
}
