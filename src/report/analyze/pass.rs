//! The single streaming pass behind `mongotape analyze`. Memory is bounded by the connections open at
//! once, the distinct command names and the timeline's buckets (both capped).
//!
//! This file reads the records and hands each to the [`Tally`]: it books requests and replies
//! (per-command accumulators in `commands`); `finish` closes connections and assembles the report.

use super::shapes::ShapeBook;
use super::tally::Tally;
use super::why::Why;
use super::AnalyzeReport;
use crate::capture::{
    CaptureError, CaptureSet, GapEvent, OpenEvent, RecordKind, RecordSource, FAULT,
};
use crate::figures::slowest::DEFAULT_SLOWEST;
use crate::report::inspect::Driver;
use crate::shape::DEFAULT_MAX_SHAPES;
use crate::slice::{SliceOptions, SliceSummary};
use bson::RawDocumentBuf;
use std::path::Path;

/// Analyzes a capture read from `reader`; `source` names it and `label` names its column in
/// `compare` (default: the file stem). Reading errors end the pass and are reported in
/// `capture.error`; what came before still counts.
pub fn analyze(reader: impl RecordSource, source: &str, label: Option<&str>) -> AnalyzeReport {
    analyze_with(reader, source, label, DEFAULT_MAX_SHAPES)
}

/// What an analysis keeps at most.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Distinct query shapes (the rest under `shapes_other`).
    pub max_shapes: usize,
    /// The slowest requests listed (`--slowest`).
    pub slowest: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_shapes: DEFAULT_MAX_SHAPES,
            slowest: DEFAULT_SLOWEST,
        }
    }
}

/// [`analyze`] keeping at most `max_shapes` distinct query shapes (the rest under
/// `shapes_other`).
pub fn analyze_with(
    reader: impl RecordSource,
    source: &str,
    label: Option<&str>,
    max_shapes: usize,
) -> AnalyzeReport {
    let limits = Limits {
        max_shapes,
        ..Limits::default()
    };
    analyze_limited(reader, source, label, limits)
}

/// [`analyze`] within `limits`.
pub fn analyze_limited(
    reader: impl RecordSource,
    source: &str,
    label: Option<&str>,
    limits: Limits,
) -> AnalyzeReport {
    analyze_explained(reader, source, label, limits, None)
}

/// [`analyze_limited`], then, when a server is given (`analyze --explain`), each shape's first
/// request explained against it: the plans in the report's `plans`.
pub fn analyze_explained(
    reader: impl RecordSource,
    source: &str,
    label: Option<&str>,
    limits: Limits,
    explain: Option<&super::explain::ExplainTarget>,
) -> AnalyzeReport {
    let mut tally = Tally::default();
    tally.shapes = ShapeBook::with_cap(limits.max_shapes);
    let redacted = reader.metadata().redaction.as_deref() == Some("values");
    tally.why = Why::new(limits.slowest, redacted);
    if explain.is_some() {
        tally.shapes.keep_first_requests();
    }
    let meta = read_all(reader, &mut tally);
    let jobs = tally.shapes.take_explains();
    let mut report = tally.finish(meta, source, label);
    if let Some(e) = explain {
        report.plans = Some(e.run(jobs));
    }
    report
}

/// Reads every record into the tally; the capture's metadata.
fn read_all(mut reader: impl RecordSource, tally: &mut Tally) -> crate::capture::Metadata {
    let meta = reader.metadata().clone();
    tally
        .faults
        .get_or_insert_with(crate::fault::FaultsInjected::following);
    while let Some(record) = reader.next_record() {
        let record = match record {
            Ok(r) => r,
            Err(e) => {
                tally.facts.error.get_or_insert_with(|| e.to_string());
                tally.facts.read_errors.push(e.to_string());
                continue;
            }
        };
        tally.facts.records += 1;
        let ts = record.ts_ns;
        if record.kind != RecordKind::End {
            tally.first_ns.get_or_insert(ts);
            tally.last_ns = tally.last_ns.max(ts);
        }
        match record.kind {
            RecordKind::Open => {
                follow(tally, |f| f.open(&record));
                let client = record
                    .event::<OpenEvent>()
                    .map(|e| e.client)
                    .unwrap_or_default();
                tally.conn(record.conn_id, ts).report.client = client;
            }
            RecordKind::Close => {
                follow(tally, |f| f.close(record.conn_id));
                tally.close(record.conn_id, ts, true)
            }
            RecordKind::ClientMetadata => {
                follow(tally, |f| f.metadata(&record));
                if let Ok(doc) = RawDocumentBuf::from_bytes(record.payload.to_vec()) {
                    let d = Driver::from_client_doc(&doc);
                    let c = tally.conn(record.conn_id, ts);
                    c.report.driver = d.label();
                    c.report.application = d.application;
                }
            }
            RecordKind::Gap => {
                if let Ok(g) = record.event::<GapEvent>() {
                    tally.facts.dropped_messages += g.dropped_messages;
                }
                for c in tally.conns.values_mut() {
                    c.clock.gap();
                }
            }
            RecordKind::End => tally.facts.complete = true,
            RecordKind::Request => {
                follow(tally, |f| f.request(&record));
                tally.request(record.conn_id, ts, &record.payload)
            }
            RecordKind::Reply => {
                follow(tally, |f| f.reply(&record));
                tally.reply(record.conn_id, ts, &record.payload)
            }
            FAULT => {
                if let Some(faults) = &mut tally.faults {
                    faults.add(&record);
                }
            }
            RecordKind::Unknown(_) => {}
        }
    }
    meta
}

/// Hands a record to the faults' follower (what the client did after each fault), which
/// `read_all` always runs: the faulted request comes before its `fault` record.
fn follow(tally: &mut Tally, feed: impl FnOnce(&mut crate::fault::follow::Follower)) {
    if let Some(faults) = &mut tally.faults {
        if let Some(f) = faults.follower() {
            feed(f);
        }
        faults.book();
    }
}

/// Opens `path` and analyzes it; errors only if it cannot be opened or is not a capture.
pub fn analyze_file(path: &Path, label: Option<&str>) -> Result<AnalyzeReport, CaptureError> {
    analyze_files(&[path.to_owned()], label)
}

/// Analyzes captures read as one (a file, the segments of a rotated recording, or a folder);
/// the first input names the report.
pub fn analyze_files(
    inputs: &[std::path::PathBuf],
    label: Option<&str>,
) -> Result<AnalyzeReport, CaptureError> {
    analyze_files_with(inputs, label, DEFAULT_MAX_SHAPES)
}

/// [`analyze_files`] keeping at most `max_shapes` distinct query shapes.
pub fn analyze_files_with(
    inputs: &[std::path::PathBuf],
    label: Option<&str>,
    max_shapes: usize,
) -> Result<AnalyzeReport, CaptureError> {
    let limits = Limits {
        max_shapes,
        ..Limits::default()
    };
    analyze_files_limited(inputs, label, limits)
}

/// [`analyze_files`] within `limits`.
pub fn analyze_files_limited(
    inputs: &[std::path::PathBuf],
    label: Option<&str>,
    limits: Limits,
) -> Result<AnalyzeReport, CaptureError> {
    analyze_files_explained(inputs, label, limits, None)
}

/// [`analyze_files_limited`], explaining each shape against a server when one is given.
pub fn analyze_files_explained(
    inputs: &[std::path::PathBuf],
    label: Option<&str>,
    limits: Limits,
    explain: Option<&super::explain::ExplainTarget>,
) -> Result<AnalyzeReport, CaptureError> {
    let (report, _) =
        analyze_files_sliced(inputs, label, limits, explain, SliceOptions::default())?;
    Ok(report)
}

/// [`analyze_files_explained`] of the part of the captures that `slice` keeps (`--since`,
/// `--until`, `--app`); with the slice's counts when it was sliced.
pub fn analyze_files_sliced(
    inputs: &[std::path::PathBuf],
    label: Option<&str>,
    limits: Limits,
    explain: Option<&super::explain::ExplainTarget>,
    slice: SliceOptions,
) -> Result<(AnalyzeReport, Option<SliceSummary>), CaptureError> {
    let mut reader = slice.apply(CaptureSet::open(inputs)?);
    let path = inputs.first().map(|p| p.as_path()).unwrap_or(Path::new(""));
    let label = label.map(str::to_owned).unwrap_or_else(|| {
        path.file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default()
    });
    let report = analyze_explained(
        &mut reader,
        &path.display().to_string(),
        Some(&label),
        limits,
        explain,
    );
    Ok((report, reader.summary()))
}

#[cfg(test)]
mod tests {
    use super::super::commands::{MAX_COMMANDS, OTHER_COMMAND};
    use super::super::finish::MAX_CONN_REPORTS;
    use super::super::tally::MAX_OPEN_CONNS;
    use super::*;
    use crate::capture::{CaptureReader, CaptureWriter, Metadata, Record};
    use crate::wire::op_msg::OpMsg;
    use crate::wire::MsgFlags;
    use bson::rawdoc;

    fn op_msg(request_id: i32, response_to: i32, body: RawDocumentBuf) -> Vec<u8> {
        OpMsg::with_body(body, MsgFlags::empty()).encode(request_id, response_to)
    }

    fn capture(records: &[Record]) -> CaptureReader<std::io::Cursor<Vec<u8>>> {
        let mut w = CaptureWriter::new(Vec::new(), &Metadata::default(), 1).unwrap();
        for r in records {
            w.write(r).unwrap();
        }
        CaptureReader::new(std::io::Cursor::new(w.finish().unwrap())).unwrap()
    }

    #[test]
    fn many_connections_and_command_names_stay_bounded() {
        let mut recs = Vec::new();
        let conns = MAX_CONN_REPORTS as u64 + 50;
        for id in 1..=conns {
            recs.push(Record::new(RecordKind::Open, id, id * 10, &b"{}"[..]));
            recs.push(Record::new(RecordKind::Close, id, id * 10 + 5, &b"{}"[..]));
        }
        // One workload connection sending more distinct commands than are tracked.
        let id = conns + 1;
        let mut ts = conns * 10 + 100;
        for i in 0..(MAX_COMMANDS as i32 + 20) {
            let mut doc = bson::Document::new();
            doc.insert(format!("cmd{i}"), 1);
            doc.insert("$db", "x");
            let body = RawDocumentBuf::try_from(&doc).unwrap();
            recs.push(Record::new(
                RecordKind::Request,
                id,
                ts,
                op_msg(i + 1, 0, body),
            ));
            ts += 10;
            let reply = op_msg(10_000 + i, i + 1, rawdoc! { "ok": 1.0 });
            recs.push(Record::new(RecordKind::Reply, id, ts, reply));
            ts += 10;
        }
        let r = analyze(capture(&recs), "synthetic", None);
        assert_eq!(r.connections.len(), MAX_CONN_REPORTS);
        assert_eq!(r.connections_not_listed, 51);
        assert_eq!(r.other.connections + r.workload.connections, conns + 1);
        assert_eq!(r.commands.len(), MAX_COMMANDS + 1, "the rest under (other)");
        let other = r
            .commands
            .iter()
            .find(|c| c.command == OTHER_COMMAND)
            .unwrap();
        assert_eq!(other.requests, 20);
        assert_eq!(r.summary.ops, MAX_COMMANDS as u64 + 20);
        assert!(r.workload.times.adds_up());
        assert_eq!(r.workload.times.server_ns, 10 * (MAX_COMMANDS as u64 + 20));
    }

    /// Connections past [`MAX_OPEN_CONNS`] open at once share one entry: every request, reply and
    /// connection is still counted, the folded ones' time is unattributed, a folded connection
    /// stays folded after a slot frees up, and the followed ones keep their own clocks.
    #[test]
    fn connections_past_the_open_bound_are_folded_and_still_counted() {
        let followed = MAX_OPEN_CONNS as u64;
        let conns = followed + 300;
        let mut recs = Vec::new();
        for id in 1..=conns {
            recs.push(Record::new(RecordKind::Open, id, id, &b"{}"[..]));
        }
        // One followed connection closes: a folded one's next messages stay folded.
        recs.push(Record::new(RecordKind::Close, 1, conns + 1, &b"{}"[..]));
        let mut ts = conns * 10;
        for id in 2..=conns {
            let body = rawdoc! { "insert": "c", "documents": [{ "a": 1 }], "$db": "x" };
            recs.push(Record::new(RecordKind::Request, id, ts, op_msg(7, 0, body)));
            let reply = op_msg(8, 7, rawdoc! { "ok": 1.0, "n": 1 });
            recs.push(Record::new(RecordKind::Reply, id, ts + 40, reply));
            ts += 100;
        }
        let r = analyze(capture(&recs), "synthetic", None);
        assert_eq!(r.capture.connections_folded, 300);
        assert_eq!(r.workload.connections + r.other.connections, conns);
        assert_eq!(r.workload.requests, conns - 1);
        assert_eq!(r.workload.replies, conns - 1);
        assert_eq!(r.summary.ops, conns - 1);
        assert!(r.workload.times.adds_up());
        // 9,999 followed inserts of 40 ns each are server time; the folded ones' is not.
        assert_eq!(r.workload.times.server_ns, 40 * (followed - 1));
        assert!(r.workload.times.gaps.unattributed_ns > 0);
        assert_eq!(r.connections.len() as u64, followed);
        assert!(r.connections.iter().all(|c| c.id <= followed));
        let text = super::super::text::render_text(&r);
        assert!(
            text.contains("300 connections opened while 10,000 were open"),
            "{text}"
        );
    }

    #[test]
    fn garbage_payloads_and_wild_timestamps_do_not_panic() {
        let recs = vec![
            Record::new(RecordKind::Request, 1, u64::MAX, &b"\x10\0\0\0garbage!"[..]),
            Record::new(RecordKind::Reply, 1, 0, &b""[..]),
            Record::new(RecordKind::ClientMetadata, 1, 5, &b"not bson"[..]),
            Record::new(RecordKind::Open, 2, 3, &b"not json"[..]),
            Record::new(RecordKind::Gap, 0, 4, &b"{"[..]),
            Record::new(
                RecordKind::Request,
                2,
                7,
                op_msg(1, 0, rawdoc! {"find": "c", "$db": "d"}),
            ),
            Record::new(RecordKind::Unknown(99), 2, 8, &b"?"[..]),
        ];
        let r = analyze(capture(&recs), "garbage", Some("g"));
        assert_eq!(r.capture.undecodable_messages, 2);
        for c in &r.connections {
            assert!(c.times.adds_up(), "{c:?}");
        }
        assert_eq!(r.capture.unanswered_requests, 1);
        let _ = super::super::text::render_text(&r);
        let _ = crate::report::html::analyze::render_html(&r);
    }

    /// A cap of 0 turns shapes off: the same requests, no shape and nothing under `other`.
    #[test]
    fn max_shapes_zero_turns_shapes_off() {
        let recs = vec![
            Record::new(
                RecordKind::Request,
                1,
                10,
                op_msg(1, 0, rawdoc! {"find": "c", "filter": {"a": 1}, "$db": "d"}),
            ),
            Record::new(RecordKind::Reply, 1, 20, op_msg(2, 1, rawdoc! {"ok": 1.0})),
        ];
        let on = analyze(capture(&recs), "on", None);
        assert_eq!(on.shapes.shapes.len(), 1);
        assert_eq!(on.shapes.shapes[0].shape, "find d.c {a: ?number}");
        let off = analyze_with(capture(&recs), "off", None, 0);
        assert!(off.shapes.shapes.is_empty());
        assert_eq!(off.shapes.shapes_other.figures.count, 0);
        assert_eq!(off.summary.ops, on.summary.ops);
    }
}
