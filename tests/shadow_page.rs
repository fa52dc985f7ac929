//! The live shadow's page (`mongotape shadow --html`) opened in headless Chromium, and its JSON
//! read by `mongotape compare`, after a short real shadow: secantusd-rs as production and as a
//! candidate with one document changed and an index production lacks, pymongo reading through
//! the shadow.

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
             c.shop.items.insert_many([{'_id': i, 'g': i % 10, 'v': -1 if i == ch else i} for i in range(100)])\n\
             if ch >= 0: c.shop.items.create_index('g')\n",
            &[s.uri(), changed.to_string()],
        );
    }
    let json = dir.join("shadow.json");
    let mut command = Command::new(mongotape_bin());
    command
        .args(["shadow", "--listen", "127.0.0.1:0", "-u", &prod.uri()])
        .args(["--candidate", &cand.uri(), "--report-every", "1"])
        // Every read mirrored even when the mirror's threads get little CPU on a busy machine:
        // the page's rows are asserted below, not the shedding.
        .args(["--max-outstanding", "1000"])
        .args(["--mirror-priority", "low"])
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
    // The sorted find by `g` differs (the changed document): explained on both sides, its plan
    // changed (the candidate's index on g).
    let by_g = shapes
        .iter()
        .find(|s| s["shape"].as_str().unwrap().contains("g:") && s["command"] == "find")
        .expect("the find by g");
    assert_ne!(by_g["discrepancies"], 0, "{by_g}");
    assert_eq!(by_g["plan_changed"], true, "{by_g}");
    let text = text_of(&layout.rendered.dom);
    assert!(
        text.contains(by_g["plan_target"].as_str().unwrap()),
        "the plans on the page"
    );
    assert!(text.contains("Legend") && text.contains("Gaps"), "{text}");
    screenshot_ok(&html, &dir.path().join("shadow.png"));
}

#[test]
fn compare_reads_a_shadow_report_as_production_and_a_column_per_target() {
    let dir = tempdir();
    let report = shadow_run(dir.path());
    let json = dir.path().join("shadow.json");
    let out = mongotape(&["compare".as_ref(), json.as_os_str(), "--json".as_ref()]);
    assert!(out.success(), "{}", out.stderr);
    let cmp: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_schema("compare", &cmp);
    let target = &report["targets"][0];
    let labels: Vec<&str> = cmp["columns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["label"].as_str().unwrap())
        .collect();
    let candidate = format!("candidate {}", target["label"].as_str().unwrap());
    assert_eq!(labels, ["production", candidate.as_str()]);
    // Every shape of the report, its p50 on each side and the candidate's ratio to production.
    let shapes = target["shapes"].as_array().unwrap();
    assert_eq!(cmp["shapes"].as_array().unwrap().len(), shapes.len());
    for s in shapes {
        let row = cmp["shapes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["hash"] == s["hash"])
            .unwrap_or_else(|| panic!("{} in {cmp}", s["shape"]));
        let p50 = row["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["metric"] == "p50")
            .unwrap();
        let (prod, cand) = (
            s["production_latency_us"]["p50"].as_f64().unwrap(),
            s["target_latency_us"]["p50"].as_f64().unwrap(),
        );
        assert_eq!(p50["values"], serde_json::json!([prod, cand]), "{row}");
        let ratio = p50["ratios"][1].as_f64().unwrap();
        assert!((ratio - cand / prod).abs() < 1e-9, "{row}");
        let count = row["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["metric"] == "count");
        assert_eq!(
            count.unwrap()["values"][1].as_f64(),
            s["mirrored"].as_f64(),
            "{row}"
        );
    }
    // The text names both columns, beside another report as well.
    let file = json.as_os_str();
    let text = mongotape(&["compare".as_ref(), file, file]);
    assert!(text.success(), "{}", text.stderr);
    assert!(
        text.stdout.contains("production") && text.stdout.contains("candidate"),
        "{}",
        text.stdout
    );
}
