//! `analyze` over the committed real captures in `captures/` (pymongo plain and with each wire
//! compressor, mongosh, PHP): nothing lost, every connection adds up, the renderings hold. No
//! server needed.

use mongotape::report::analyze::text::render_text;
use mongotape::report::analyze::{analyze_file, Role};
use mongotape::report::html::analyze::render_html;
use mongotape::report::inspect::inspect_file;
use std::path::PathBuf;

fn fixtures() -> Vec<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("captures");
    let mut out: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("captures/")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "mtape"))
        .collect();
    out.sort();
    assert!(out.len() >= 3, "fixtures in {}: {out:?}", dir.display());
    out
}

#[test]
fn every_fixture_is_accounted_for() {
    for path in fixtures() {
        let name = path.display().to_string();
        let r = analyze_file(&path, None).unwrap();
        let i = inspect_file(&path).unwrap();
        assert!(r.capture.error.is_none(), "{name}: {:?}", r.capture.error);
        assert_eq!(r.connections.len(), i.connections.len(), "{name}");
        let requests: u64 = r.connections.iter().map(|c| c.requests).sum();
        let inspected: u64 = i.connections.iter().map(|c| c.requests).sum();
        assert_eq!(requests, inspected, "{name}");
        assert_eq!(r.workload.requests + r.other.requests, requests, "{name}");
        let bytes: u64 = r.connections.iter().map(|c| c.bytes).sum();
        assert_eq!(bytes, i.wire_bytes, "{name}");
        assert_eq!(
            r.capture.unanswered_requests, i.unanswered_requests,
            "{name}"
        );
        assert_eq!(
            r.capture.unsolicited_replies, i.unsolicited_replies,
            "{name}"
        );
        for c in &r.connections {
            assert!(c.times.adds_up(), "{name} conn {}: {:?}", c.id, c.times);
            assert!(c.role.is_some());
            if c.role != Some(Role::Workload) {
                assert_eq!(c.ops, 0, "{name} conn {}", c.id);
            }
        }
        assert!(r.workload.times.adds_up(), "{name}");
        assert!(r.workload.connections >= 1, "{name}");
        assert!(r.summary.ops > 0 && r.summary.ops_per_s > 0.0, "{name}");
        let by_cmd: u64 = r
            .commands
            .iter()
            .chain(&r.other_commands)
            .map(|c| c.requests)
            .sum();
        assert_eq!(by_cmd, requests, "{name}");
        for (cmd, stats) in &i.by_command {
            let ours: u64 = r
                .commands
                .iter()
                .chain(&r.other_commands)
                .filter(|c| &c.command == cmd)
                .map(|c| c.requests)
                .sum();
            assert_eq!(ours, stats.requests, "{name}: {cmd}");
        }
        let timeline_ops: u64 = r.timeline.iter().map(|p| p.ops).sum();
        assert_eq!(timeline_ops, r.workload.ops, "{name}");
        // Every driver named in a handshake is a driver of the report.
        for c in &i.connections {
            if let Some(d) = &c.driver {
                assert!(
                    r.drivers.iter().any(|rd| rd.driver.starts_with(&d.label())),
                    "{name}: {}",
                    d.label()
                );
            }
        }
        let text = render_text(&r);
        assert!(text.contains("client-bound"), "{name}");
        let html = render_html(&r);
        assert!(html.matches("<svg class=\"chart").count() >= 6, "{name}");
        let json = serde_json::to_value(&r).unwrap();
        assert_eq!(json["summary"]["kind"], "analyze");
    }
}
