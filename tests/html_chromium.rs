//! Every HTML report (`analyze`, `compare`, `replay`, `merge`), opened in headless Chromium as a
//! person would: it renders, its script runs to the end, the charts are there with as many points
//! as the report has, nothing reaches the console, nothing is fetched, and a screenshot shows a
//! page (not a blank image). A deliberately broken page must fail the same checks.
//!
//! Screenshots go to a temporary directory; set `MONGOTAPE_SCREENSHOTS=DIR` to keep them there.

mod common;

use common::*;
use mongotape::replay::report::ReplayReport;
use std::path::Path;

/// Screenshots `page` into `dir` as `name` and checks it shows a page.
fn shot(page: &Path, dir: &Path, name: &str) -> Ink {
    screenshot_ok(page, &dir.join(name))
}

/// Points a chart draws, from the report: the bucketed timeline's, all series together; p99
/// only in buckets of 100 replies or more (in fewer it is the max, drawn once).
fn timeline_points(r: &ReplayReport) -> (usize, usize) {
    let points = r.timeline_buckets.points();
    let latency = points
        .iter()
        .map(|p| {
            let p99 = p.p99_us.filter(|_| p.samples >= 100);
            [p.p50_us, p99, p.max_us].iter().flatten().count()
        })
        .sum();
    (2 * points.len(), latency)
}

/// The checks a replay page (a replay's or a merged one) passes against its JSON report.
fn assert_replay_page(html: &Path, report: &ReplayReport) -> Rendered {
    let page = std::fs::read_to_string(html).unwrap();
    let rendered = render(html);
    assert_page_ok(&page, &rendered, 6);
    let dom = &rendered.dom;
    let (throughput, latency) = timeline_points(report);
    assert!(
        throughput > 2 * 10,
        "{throughput} timeline points for a short replay"
    );
    let attr = |title: &str| {
        chart_attr(dom, title, "data-points").unwrap_or_else(|| panic!("no chart {title:?}"))
    };
    assert_eq!(
        attr("Throughput: operations per second"),
        throughput.to_string()
    );
    assert_eq!(attr("Latency over time"), latency.to_string());
    // In buckets of a few replies p99 is the max: drawn only where it says more, as the legend says.
    // A series with no point has no legend entry: it is named under the chart instead.
    let p99_drawn = report
        .timeline_buckets
        .points()
        .iter()
        .any(|p| p.p99_us.is_some() && p.samples >= 100);
    assert_eq!(
        dom.contains(">p99 (100+ replies)</text>"),
        p99_drawn,
        "the p99 line is in the legend only where it is drawn"
    );
    assert_eq!(
        dom.contains("Not drawn (no point to draw): p99 (100+ replies)."),
        !p99_drawn
    );
    // One small chart per command with replies (up to 8), replayed and recorded on each.
    let commands: Vec<&String> = report
        .summary
        .per_command
        .iter()
        .filter(|(_, c)| c.latency.count > 0)
        .map(|(k, _)| k)
        .collect();
    // And one per query shape with replies (up to 8), its own small multiple.
    let shapes = report
        .shapes
        .shapes
        .iter()
        .filter(|s| s.replayed.figures.answered())
        .take(8)
        .count();
    assert_eq!(
        dom.matches("chart line small").count(),
        commands.len().min(8) + shapes
    );
    for c in ["insert", "find"] {
        assert!(
            commands.contains(&&c.to_string()),
            "{c} replayed: {commands:?}"
        );
        assert!(
            attr(c).parse::<usize>().unwrap() > 2,
            "{c}'s curves have points"
        );
        assert!(
            report.recorded.per_command[c].count > 0,
            "{c} recorded latency"
        );
    }
    assert!(
        dom.contains("<title>recorded</title>"),
        "the recorded curve is drawn"
    );
    assert!(
        dom.contains("replayer (mongotape itself)"),
        "the replayer's CPU is named"
    );
    rendered
}

/// The charts name drivers as the tables do (`pymongo 4.20.0 (C extension)`), never by their raw
/// handshake label (`PyMongo|c 4.20.0|`).
fn assert_drivers_for_people(dom: &str, analyzed: &serde_json::Value) {
    let figure = figure_of(dom, "Server vs client time per driver");
    for d in analyzed["drivers"].as_array().unwrap() {
        let raw = d["driver"].as_str().unwrap();
        let people = mongotape::figures::drivers::label_for_people(raw);
        assert_ne!(raw, people, "a raw label to normalize");
        assert!(!dom.contains(raw), "{raw:?} on the page");
        assert!(figure.contains(&people), "{people:?} not in the chart");
    }
}

/// A series zero everywhere draws no bar and is named as such; no bar of 0 has a width, none
/// runs past its axis.
fn assert_zero_not_drawn(dom: &str, analyzed: &serde_json::Value) {
    for mark in dom.split("<rect class=\"mark\"").skip(1) {
        let attr = |name: &str| -> f64 {
            let at = mark.find(&format!(" {name}=\"")).unwrap() + name.len() + 3;
            mark[at..].split('"').next().unwrap().parse().unwrap()
        };
        let (x, width, value) = (attr("x"), attr("width"), attr("data-value"));
        assert!(value > 0.0 || width < 0.5, "a bar of 0, {width} px wide");
        assert!(
            x + width <= 860.0,
            "a bar past the axis: x {x}, width {width}"
        );
    }
    // Extra requests no driver needed (getLastError at least, with a modern driver): said once
    // under the chart, not drawn, not in the legend.
    let figure = figure_of(dom, "Extra requests per logical operation, per driver");
    let drivers = analyzed["drivers"].as_array().unwrap();
    let zero: Vec<&str> = [
        "handshake",
        "sessions",
        "getMore",
        "killCursors",
        "getLastError",
    ]
    .into_iter()
    .filter(|k| {
        drivers
            .iter()
            .all(|d| d["workload"]["per_op"]["extra"][k].as_f64().unwrap_or(0.0) == 0.0)
    })
    .collect();
    assert!(zero.contains(&"getLastError"), "{zero:?}");
    let said = format!("{}: 0 throughout.", zero.join(", "));
    assert!(figure.contains(&said), "{said:?} not in {figure}");
    for k in zero {
        assert!(
            !figure.contains(&format!(">{k}</text>")),
            "{k} in the legend"
        );
    }
}

/// The `<figure>` whose caption is `title`.
fn figure_of<'a>(dom: &'a str, title: &str) -> &'a str {
    let caption = format!("\">{title}</figcaption>");
    let at = dom
        .find(&caption)
        .unwrap_or_else(|| panic!("no chart {title:?}"));
    let end = dom[at..].find("</figure>").unwrap() + at;
    &dom[at..end]
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
    assert!(rendered.dom.contains("pymongo 4."), "the driver is named");
    assert!(rendered.dom.contains("<polyline"), "line charts have lines");
    assert!(
        !rendered.dom.contains("rendered:") && !rendered.dom.contains(" marks<"),
        "the footer counts charts for nobody"
    );
    let small = rendered.dom.matches("chart line small").count();
    assert!(
        (2..=8).contains(&small),
        "one distribution chart per command: {small}"
    );
    // ... answered more than once: one reply has no distribution of its own.
    let analyzed: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let charted = analyzed["commands"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| {
            matches!(
                c["category"].as_str(),
                Some("operation" | "getMore" | "killCursors")
            )
        })
        .take(8)
        .filter(|c| c["latency"]["count"].as_u64() > Some(1))
        .count();
    assert_eq!(
        small, charted,
        "charts for commands answered more than once"
    );
    assert_drivers_for_people(&rendered.dom, &analyzed);
    assert_zero_not_drawn(&rendered.dom, &analyzed);
    shot(&html, dir.path(), "analyze.png");
    assert_eq!(clipped_tables_at(&html, 1280), 0, "a table cut at 1280 px");

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
    shot(&cmp, dir.path(), "compare.png");
    assert_eq!(clipped_tables_at(&cmp, 1280), 0, "a table cut at 1280 px");

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
fn replay_and_merge_pages_render_in_chromium() {
    let _serial = one_at_a_time();
    let server = Server::start_with(&["--standalone"]);
    let rec = record_inserts_finds(&server, "replaypage", 150, 0.0, 5);
    let dir = tempdir();
    let html = dir.path().join("replay.html");
    let html_arg = html.display().to_string();
    // Without the recorded drop the inserts meet the documents recorded: each one diverges.
    let r = replay(
        &rec.capture,
        &server.uri(),
        &["--exclude-command", "drop", "--html", &html_arg],
    );
    let report: ReplayReport = serde_json::from_value(r.report.clone()).unwrap();
    let rendered = assert_replay_page(&html, &report);
    let dom = &rendered.dom;
    assert_eq!(report.divergences["insert"].count, 150, "{}", r.describe());
    assert!(dom.contains("Divergences from the recorded replies"));
    let examples: usize = report.divergences.values().map(|d| d.examples.len()).sum();
    // The examples' folds (the slowest requests' bodies fold in their cells, `details class`).
    let folds = dom.matches("<details>").count() + dom.matches("<details open").count();
    assert_eq!(folds, examples);
    assert_eq!(
        dom.matches("<details open").count(),
        1,
        "insert's first example unfolded"
    );
    assert!(dom.contains("insert, example 1 of the 5 kept (150 differed): "));
    assert!(!dom.contains("see the JSON") && !dom.contains("in the JSON report"));
    shot(&html, dir.path(), "replay.png");
    assert_eq!(clipped_tables_at(&html, 1280), 0, "a table cut at 1280 px");

    // Two shards of the same capture, merged: one page for both, its timeline added up.
    let mut shards = Vec::new();
    for i in 0..2 {
        let json = dir.path().join(format!("shard-{i}.json"));
        let out = mongotape(&[
            "replay".to_string(),
            rec.capture.display().to_string(),
            "--target".into(),
            server.uri(),
            "--shard".into(),
            format!("{i}/2"),
            "--report".into(),
            json.display().to_string(),
        ]);
        assert!(out.success(), "{}", out.stderr);
        shards.push(json.display().to_string());
    }
    let merged_html = dir.path().join("merged.html");
    let merged_json = dir.path().join("merged.json");
    let mut args = vec!["merge".to_string()];
    args.extend(shards);
    args.extend([
        "--report".into(),
        merged_json.display().to_string(),
        "--html".into(),
        merged_html.display().to_string(),
    ]);
    let out = mongotape(&args);
    assert!(out.success(), "{}", out.stderr);
    let merged: ReplayReport =
        serde_json::from_slice(&std::fs::read(&merged_json).unwrap()).unwrap();
    let ops: u64 = merged.timeline_buckets.buckets.iter().map(|b| b.ops).sum();
    assert_eq!(
        ops, merged.summary.ops,
        "the merged timeline holds every operation"
    );
    assert_replay_page(&merged_html, &merged);
    shot(&merged_html, dir.path(), "merged.png");
    assert_eq!(
        clipped_tables_at(&merged_html, 1280),
        0,
        "a table cut at 1280 px"
    );
}

/// A ramp's page: the rate intended and achieved and the schedule lag per second, the knee marked
/// on both and said in a sentence, nothing cut at 1280 px.
#[test]
fn a_ramp_page_shows_its_schedule_and_knee_in_chromium() {
    let _serial = one_at_a_time();
    let server = Server::start_with(&["--standalone"]);
    let dir = tempdir();
    let html = dir.path().join("ramp.html");
    let html_arg = html.display().to_string();
    let capture = workspace_root().join("captures/pymongo.mtape");
    let r = replay(
        &capture,
        &server.uri(),
        &["--rate", "100..30000", "--ramp", "4s", "--html", &html_arg],
    );
    let report: ReplayReport = serde_json::from_value(r.report.clone()).unwrap();
    let rendered = assert_replay_page(&html, &report);
    let dom = &rendered.dom;
    let knee = report.knee.as_ref().expect("a ramp has a knee report");
    assert!(
        dom.contains(&format!("{}.", knee.summary)),
        "the sentence: {}",
        knee.summary
    );
    // The seconds wholly inside the 4 s schedule, intended and achieved, and the knee's two ends.
    let inside = report
        .timeline
        .iter()
        .map(|s| s.unix_s as f64 - report.started_at_unix_s + 0.5)
        .filter(|t| *t >= 0.5 && *t <= 3.5)
        .count();
    let marker = if knee.at_s.is_some() { 2 } else { 0 };
    let attr = |title: &str| chart_attr(dom, title, "data-points").expect(title);
    assert_eq!(
        attr("Rate intended and achieved"),
        (2 * inside + marker).to_string()
    );
    assert_eq!(
        attr("Schedule lag: the latest send in each second"),
        (inside + marker).to_string()
    );
    shot(&html, dir.path(), "ramp.png");
    assert_eq!(clipped_tables_at(&html, 1280), 0, "a table cut at 1280 px");
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
        .table(
            &mongotape::figures::table::Table::new([evil]).with_rows(vec![vec![evil.to_string()]]),
        )
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

/// Issue 34's A/B page at 1280 px: a pymongo orders workload replayed with `--explain` into A, B
/// (without the index on `{status: 1, ts: -1}`) and A2, its page laid out by Chromium and
/// screenshotted: what it shows, from the DOM and the picture.
#[test]
fn ab_page_renders_in_chromium() {
    let _serial = one_at_a_time();
    let dir = tempdir();
    let AbOrders { servers, run } = ab_orders_run(dir.path());
    let html = dir.path().join("ab.html");
    std::fs::write(&html, &run.html).unwrap();
    assert_page_ok(&run.html, &render(&html), 3);
    let layout = probe_layout(&html, 1280);
    assert_eq!(layout.uncued, 0, "a table wider than the page with no cue");
    // Narrower, the comparison tables are wider than the page: each says so.
    let narrow = probe_layout(&html, 700);
    assert!(
        narrow.wide > 0 && narrow.uncued == 0,
        "{} wide, {} uncued",
        narrow.wide,
        narrow.uncued
    );
    for l in [&layout, &narrow] {
        assert!(
            l.namespace_cells >= 4,
            "{} namespace cells",
            l.namespace_cells
        );
        assert!(
            l.broken_words.is_empty(),
            "broken mid-word: {:?}",
            l.broken_words
        );
    }
    // The small charts' captions: cut with an ellipsis where too long (the long filter's), whole
    // in their title.
    assert!(layout.captions.iter().any(|c| c.0), "{:?}", layout.captions);
    for &(cut, ellipsis, titled) in &layout.captions {
        assert!(titled && (!cut || ellipsis), "{:?}", layout.captions);
    }
    let dom = &layout.rendered.dom;
    let tables = dom_tables(dom);
    assert_ab_tables(&tables, &run.report);
    assert_ab_text(dom, &tables, &run.report);
    // The picture at 1280 px: a page, and nothing drawn past its 1,100 px column (90 px margins).
    let png = dir.path().join("ab.png");
    let ink = screenshot_ok_at(&html, &png, 1280);
    assert_eq!(ink.width, 1280, "{ink:?}");
    assert_eq!(ink_beyond(&png, 1190), 0, "drawn past the page's column");
    drop(servers);
}
