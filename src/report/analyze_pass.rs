//! The single streaming pass behind `mongotape analyze`. Memory is bounded by the connections open at
//! once, the distinct command names and the timeline's buckets (both capped).
//!
//! This file reads the records and books each request and reply; the per-command accumulators are
//! in `analyze_commands`, what happens when a connection closes and at the end in `analyze_finish`.

use super::analyze::{
    is_monitoring_command, AnalyzeReport, CaptureFacts, Category, ConnClock, ConnReport,
    DriverReport, Totals,
};
use super::analyze_commands::{count_reply, count_request, CmdAcc, Commands};
use super::analyze_finish::driver_key;
use super::analyze_timeline::{Bucket, Timeline};
use super::inspect::Driver;
use super::pair::{Answer, Pairer};
use super::phases::Phases;
use super::summary::new_ns_histogram;
use crate::capture::{CaptureError, CaptureReader, GapEvent, OpenEvent, RecordKind};
use crate::wire::info::is_handshake_command;
use crate::wire::marker::step_marker;
use crate::wire::{Body, Message, MsgFlags, ReplyInfo, RequestInfo};
use bson::RawDocumentBuf;
use hdrhistogram::Histogram;
use std::collections::{BTreeMap, HashMap};
use std::io::Read;
use std::path::Path;

/// Latencies of a not-yet-classified connection's hello traffic kept for its histogram.
const MAX_DEFERRED_LATENCIES: usize = 4096;
/// Per-driver, per-command latency histograms kept in all (each is a few hundred KiB).
const MAX_DRIVER_HISTOGRAMS: usize = 200;

/// Hello and authentication traffic of a connection not yet known to be a workload connection.
#[derive(Default)]
pub(super) struct Deferred {
    commands: BTreeMap<String, CmdAcc>,
    latencies: Vec<(String, u64)>,
    pub(super) requests: u64,
}

pub(super) struct ConnState {
    pub(super) report: ConnReport,
    pub(super) clock: ConnClock,
    pub(super) workload: bool,
    pub(super) hellos: u64,
    pub(super) awaitable: bool,
    pub(super) deferred: Deferred,
}

#[derive(Default)]
pub(super) struct Pass {
    pub(super) first_ns: Option<u64>,
    pub(super) last_ns: u64,
    pub(super) conns: HashMap<u64, ConnState>,
    pub(super) done: Vec<ConnReport>,
    pub(super) conns_not_listed: u64,
    pub(super) workload: Totals,
    pub(super) other: Totals,
    pub(super) drivers: BTreeMap<String, DriverReport>,
    driver_histograms: usize,
    pub(super) pairer: Pairer,
    pub(super) workload_cmds: Commands,
    pub(super) other_cmds: Commands,
    /// driver -> command -> latency, logical operations only.
    pub(super) driver_cmds: BTreeMap<String, BTreeMap<String, Histogram<u64>>>,
    /// Requests a replay replays (workload, not handshake): the summary's operations.
    pub(super) replayable: u64,
    pub(super) replayable_hist: Option<Histogram<u64>>,
    pub(super) replayable_errors: u64,
    pub(super) timeline: Timeline,
    /// First and last replayable request or reply (the summary's wall time).
    pub(super) span: Option<(u64, u64)>,
    pub(super) facts: CaptureFacts,
    /// Cut at step markers: operations, latency, server and client time per phase.
    pub(super) phases: Phases,
    /// Step markers sent and not yet answered: (connection, request id) -> step.
    pub(super) markers: HashMap<(u64, i32), String>,
}

/// Analyzes a capture read from `reader`; `source` names it and `label` names its column in
/// `compare` (default: the file stem). Reading errors end the pass and are reported in
/// `capture.error`; what came before still counts.
pub fn analyze<R: Read>(
    mut reader: CaptureReader<R>,
    source: &str,
    label: Option<&str>,
) -> AnalyzeReport {
    let meta = reader.metadata().clone();
    let mut pass = Pass::default();
    for record in &mut reader {
        let record = match record {
            Ok(r) => r,
            Err(e) => {
                pass.facts.error = Some(e.to_string());
                break;
            }
        };
        pass.facts.records += 1;
        let ts = record.ts_ns;
        if record.kind != RecordKind::End {
            pass.first_ns.get_or_insert(ts);
            pass.last_ns = pass.last_ns.max(ts);
        }
        match record.kind {
            RecordKind::Open => {
                let client = record
                    .event::<OpenEvent>()
                    .map(|e| e.client)
                    .unwrap_or_default();
                pass.conn(record.conn_id, ts).report.client = client;
            }
            RecordKind::Close => pass.close(record.conn_id, ts, true),
            RecordKind::ClientMetadata => {
                if let Ok(doc) = RawDocumentBuf::from_bytes(record.payload.to_vec()) {
                    let d = Driver::from_client_doc(&doc);
                    let c = pass.conn(record.conn_id, ts);
                    c.report.driver = d.label();
                    c.report.application = d.application;
                }
            }
            RecordKind::Gap => {
                if let Ok(g) = record.event::<GapEvent>() {
                    pass.facts.dropped_messages += g.dropped_messages;
                }
                for c in pass.conns.values_mut() {
                    c.clock.gap();
                }
            }
            RecordKind::End => pass.facts.complete = true,
            RecordKind::Request => pass.request(record.conn_id, ts, &record.payload),
            RecordKind::Reply => pass.reply(record.conn_id, ts, &record.payload),
            RecordKind::Unknown(_) => {}
        }
    }
    pass.finish(meta, source, label)
}

/// Opens `path` and analyzes it; errors only if it cannot be opened or is not a capture.
pub fn analyze_file(path: &Path, label: Option<&str>) -> Result<AnalyzeReport, CaptureError> {
    let reader = CaptureReader::open(path)?;
    let label = label.map(str::to_owned).unwrap_or_else(|| {
        path.file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default()
    });
    Ok(analyze(reader, &path.display().to_string(), Some(&label)))
}

impl Pass {
    fn conn(&mut self, id: u64, ts: u64) -> &mut ConnState {
        let first = self.first_ns.unwrap_or(ts);
        self.conns.entry(id).or_insert_with(|| ConnState {
            report: ConnReport {
                id,
                driver: "unknown".into(),
                opened_s: ts.saturating_sub(first) as f64 / 1e9,
                ..Default::default()
            },
            clock: ConnClock::new(ts),
            workload: false,
            hellos: 0,
            awaitable: false,
            deferred: Deferred::default(),
        })
    }

    fn bucket(&mut self, ts: u64) -> Option<&mut Bucket> {
        let offset = ts.saturating_sub(self.first_ns?);
        Some(self.timeline.at(offset))
    }

    fn request(&mut self, conn_id: u64, ts: u64, payload: &[u8]) {
        let bytes = payload.len() as u64;
        let c = self.conn(conn_id, ts);
        c.report.requests += 1;
        c.report.bytes += bytes;
        let msg = match Message::parse(payload) {
            Ok(m) => m,
            Err(_) => {
                // Whether a reply is due is unknown: the time up to the next event is too.
                c.clock.request(ts, false, false);
                c.clock.gap();
                self.facts.undecodable_messages += 1;
                return;
            }
        };
        let info = RequestInfo::of(&msg);
        let operation = Category::of(&info.command) == Category::Operation
            && !is_monitoring_command(&info.command);
        let booked = c.clock.booked();
        c.clock.request(ts, info.expects_reply, operation);
        if info.expects_reply {
            c.report.round_trips += 1;
        }
        let monitoring_cmd = is_monitoring_command(&info.command);
        if !c.workload && !monitoring_cmd {
            c.workload = true;
            let deferred = std::mem::take(&mut c.deferred);
            *c.report
                .extra
                .entry(Category::Handshake.name().into())
                .or_default() += deferred.requests;
            self.flush(deferred, true);
        }
        let c = self.conns.get_mut(&conn_id).expect("inserted above");
        if c.workload {
            book(&mut self.phases, booked, c.clock.booked());
            if info.command == "ping" {
                if let Some(step) = step_marker(&msg) {
                    if info.expects_reply {
                        self.markers
                            .insert((conn_id, msg.header.request_id), step.to_owned());
                    } else {
                        self.phases.marker(step, ts, ts);
                    }
                }
            }
        }
        if !c.workload {
            c.deferred.requests += 1;
            if matches!(info.command.as_str(), "hello" | "isMaster" | "ismaster") {
                c.hellos += 1;
                if let Body::Msg(m) = &msg.body {
                    let await_time = m.body().get("maxAwaitTimeMS").ok().flatten().is_some();
                    c.awaitable |= await_time || m.flags.contains(MsgFlags::EXHAUST_ALLOWED);
                }
            }
            let acc = c.deferred.commands.entry(info.command.clone()).or_default();
            count_request(acc, bytes, info.expects_reply);
        } else {
            let category = Category::of(&info.command);
            if !is_handshake_command(&info.command) {
                self.replayable += 1;
                stretch(&mut self.span, ts);
                if let Some(p) = self.phases.at(ts) {
                    p.op(ts);
                }
            }
            if category == Category::Operation {
                c.report.ops += 1;
                if let Some(s) = self.bucket(ts) {
                    s.ops += 1;
                }
            } else {
                *c.report.extra.entry(category.name().into()).or_default() += 1;
            }
            count_request(
                self.workload_cmds.entry(&info.command),
                bytes,
                info.expects_reply,
            );
        }
        self.pairer.request(conn_id, &msg, info, ts, payload.len());
    }

    fn reply(&mut self, conn_id: u64, ts: u64, payload: &[u8]) {
        let bytes = payload.len() as u64;
        let c = self.conn(conn_id, ts);
        c.report.replies += 1;
        c.report.bytes += bytes;
        let msg = match Message::parse(payload) {
            Ok(m) => m,
            Err(_) => {
                c.clock.reply(ts, false, false);
                c.clock.gap();
                self.facts.undecodable_messages += 1;
                return;
            }
        };
        let reply = ReplyInfo::of(&msg);
        let answer = self.pairer.reply(conn_id, &msg, reply.more_to_come);
        if let Answer::Request(p) = &answer {
            if p.info.command == "ping" {
                if let Some(step) = self.markers.remove(&(conn_id, msg.header.response_to)) {
                    self.phases.marker(&step, p.ts_ns, ts);
                }
            }
        }
        let c = self.conns.get_mut(&conn_id).expect("inserted above");
        let booked = c.clock.booked();
        c.clock
            .reply(ts, matches!(answer, Answer::Request(_)), reply.more_to_come);
        if c.workload {
            book(&mut self.phases, booked, c.clock.booked());
        }
        let p = match answer {
            Answer::Request(p) => p,
            Answer::Unsolicited => {
                self.facts.unsolicited_replies += 1;
                return;
            }
        };
        let latency = ts.saturating_sub(p.ts_ns);
        let error = !reply.is_ok() || reply.write_errors > 0;
        let command = p.info.command;
        if !c.workload {
            let acc = c.deferred.commands.entry(command.clone()).or_default();
            count_reply(acc, bytes, error);
            if c.deferred.latencies.len() < MAX_DEFERRED_LATENCIES {
                c.deferred.latencies.push((command, latency));
            }
            return;
        }
        let driver = driver_key(&c.report);
        let acc = self.workload_cmds.entry(&command);
        count_reply(acc, bytes, error);
        acc.record(latency);
        if !is_handshake_command(&command) {
            stretch(&mut self.span, ts);
            self.replayable_errors += u64::from(error);
            self.replayable_hist
                .get_or_insert_with(new_ns_histogram)
                .saturating_record(latency.max(100));
            if let Some(phase) = self.phases.at(p.ts_ns) {
                phase.done(ts, Some(latency), error);
            }
        }
        if Category::of(&command) != Category::Operation {
            return;
        }
        let known = self
            .driver_cmds
            .get(&driver)
            .is_some_and(|per| per.contains_key(&command));
        if known || self.driver_histograms < MAX_DRIVER_HISTOGRAMS {
            let per = self.driver_cmds.entry(driver).or_default();
            if !known {
                self.driver_histograms += 1;
            }
            per.entry(command)
                .or_insert_with(new_ns_histogram)
                .saturating_record(latency.max(100));
        }
        if let Some(s) = self.bucket(ts) {
            s.replies += 1;
            s.sum_ns = s.sum_ns.saturating_add(latency);
            s.max_ns = s.max_ns.max(latency);
        }
    }

    /// Moves a connection's hello traffic to the workload or the other commands.
    pub(super) fn flush(&mut self, deferred: Deferred, workload: bool) {
        let target = if workload {
            &mut self.workload_cmds
        } else {
            &mut self.other_cmds
        };
        for (name, acc) in deferred.commands {
            target.entry(&name).merge(acc);
        }
        for (name, latency) in deferred.latencies {
            target.entry(&name).record(latency);
        }
    }
}

/// The summary's wall time runs from the first replayable request to the last one or its reply, so a
/// client's start-up and shutdown are not in its throughput.
fn stretch(span: &mut Option<(u64, u64)>, ts: u64) {
    let (a, b) = span.unwrap_or((ts, ts));
    *span = Some((a.min(ts), b.max(ts)));
}

/// Books a workload connection's interval, from its clock before and after an event, to the phases.
fn book(phases: &mut Phases, before: (u64, u64, u64), after: (u64, u64, u64)) {
    let (from, to) = (before.0, after.0);
    if after.1 > before.1 {
        phases.time(from, to, true);
    } else if after.2 > before.2 {
        phases.time(from, to, false);
    }
}

#[cfg(test)]
mod tests {
    use super::super::analyze_commands::{MAX_COMMANDS, OTHER_COMMAND};
    use super::super::analyze_finish::MAX_CONN_REPORTS;
    use super::*;
    use crate::capture::{CaptureWriter, Metadata, Record};
    use crate::wire::op_msg::{OpMsg, Section};
    use bson::rawdoc;

    fn op_msg(request_id: i32, response_to: i32, body: RawDocumentBuf) -> Vec<u8> {
        OpMsg {
            flags: MsgFlags::empty(),
            sections: vec![Section::Body(body)],
            checksum: None,
        }
        .encode(request_id, response_to)
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
        let _ = super::super::analyze_text::render_text(&r);
        let _ = super::super::analyze_html::render_html(&r);
    }
}
