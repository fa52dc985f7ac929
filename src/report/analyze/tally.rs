//! What the pass has counted so far: the connections open, the closed ones' reports, the totals
//! per driver and per command, the timeline and the phases. [`Tally::request`] and [`Tally::reply`]
//! book one message each; closing a connection and assembling the report are in `finish`.

use super::commands::{count_reply, count_request, CmdAcc, Commands};
use super::shapes::ShapeBook;
use super::timeline::{Bucket, Timeline};
use super::why::{Answered, Why};
use super::{
    is_monitoring_command, CaptureFacts, Category, ConnClock, ConnReport, DriverReport, Totals,
};
use crate::figures::phases::Phases;
use crate::figures::summary::new_ns_histogram;
use crate::report::pair::{Answer, Pairer};
use crate::shape::ShapeId;
use crate::wire::info::is_handshake_command;
use crate::wire::marker::step_marker;
use crate::wire::{Body, Message, MsgFlags, ReplyInfo, RequestInfo};
use bytes::Bytes;
use hdrhistogram::Histogram;
use std::collections::{BTreeMap, HashMap, HashSet};

/// Latencies of a not-yet-classified connection's hello traffic kept for its histogram.
const MAX_DEFERRED_LATENCIES: usize = 4096;
/// The same, summed over every connection still unclassified: 10,000 open monitors cannot keep
/// 4,096 latencies each.
const MAX_DEFERRED_LATENCIES_IN_ALL: usize = 200_000;
/// Connections followed one by one at once (a clock, a role, a driver each). A connection that
/// opens while this many are open is folded: its messages count in every total and per command,
/// its time as unattributed, under one shared entry.
pub(super) const MAX_OPEN_CONNS: usize = 10_000;
/// The shared entry of the folded connections, never a real connection id in `conns`.
pub(super) const FOLDED: u64 = u64::MAX;
/// Folded connection ids remembered, so that one stays folded until it closes even when a slot
/// frees up (8 MB at most); past it a folded connection may be followed from its next message.
const MAX_FOLDED_IDS: usize = 1_000_000;
/// Step markers awaiting their reply.
const MAX_MARKERS: usize = 10_000;
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

impl ConnState {
    /// A request on a connection not yet known to be a workload one: kept aside, and hellos
    /// counted (awaitable ones mark a monitoring connection).
    fn defer_request(&mut self, msg: &Message, info: &RequestInfo, bytes: u64) {
        self.deferred.requests += 1;
        if matches!(info.command.as_str(), "hello" | "isMaster" | "ismaster") {
            self.hellos += 1;
            if let Body::Msg(m) = &msg.body {
                let await_time = m.body().get("maxAwaitTimeMS").ok().flatten().is_some();
                self.awaitable |= await_time || m.flags.contains(MsgFlags::EXHAUST_ALLOWED);
            }
        }
        let acc = self
            .deferred
            .commands
            .entry(info.command.clone())
            .or_default();
        count_request(acc, bytes, info.expects_reply);
    }

    fn defer_reply(
        &mut self,
        command: String,
        bytes: u64,
        latency: u64,
        error: bool,
        kept: &mut usize,
    ) {
        let acc = self.deferred.commands.entry(command.clone()).or_default();
        count_reply(acc, bytes, error);
        if self.deferred.latencies.len() < MAX_DEFERRED_LATENCIES
            && *kept < MAX_DEFERRED_LATENCIES_IN_ALL
        {
            *kept += 1;
            self.deferred.latencies.push((command, latency));
        }
    }
}

#[derive(Default)]
pub(super) struct Tally {
    /// `fault` records, handed to the report as they are.
    pub(super) faults: Option<crate::fault::FaultsInjected>,
    pub(super) first_ns: Option<u64>,
    pub(super) last_ns: u64,
    pub(super) conns: HashMap<u64, ConnState>,
    /// Connections folded into [`FOLDED`] and not yet closed.
    folded_ids: HashSet<u64>,
    /// Deferred latencies kept, over every connection.
    deferred_kept: usize,
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
    /// Query shapes of the workload's requests.
    pub(super) shapes: ShapeBook,
    /// Errors by code and the slowest requests.
    pub(super) why: Why,
}

impl Tally {
    /// The entry that books connection `id`: its own, or the folded connections' one.
    fn key(&mut self, id: u64) -> u64 {
        if self.conns.contains_key(&id) && id != FOLDED {
            return id;
        }
        let open = self.conns.len() - usize::from(self.conns.contains_key(&FOLDED));
        if id != FOLDED && !self.folded_ids.contains(&id) && open < MAX_OPEN_CONNS {
            return id;
        }
        if id != FOLDED && self.folded_ids.len() < MAX_FOLDED_IDS && self.folded_ids.insert(id) {
            self.facts.connections_folded += 1;
        }
        FOLDED
    }

    /// The state of connection `id` (the folded entry's, once [`MAX_OPEN_CONNS`] are open).
    pub(super) fn conn(&mut self, id: u64, ts: u64) -> &mut ConnState {
        let key = self.key(id);
        self.state(key, ts)
    }

    fn state(&mut self, key: u64, ts: u64) -> &mut ConnState {
        let first = self.first_ns.unwrap_or(ts);
        self.conns.entry(key).or_insert_with(|| ConnState {
            report: ConnReport {
                id: key,
                driver: if key == FOLDED {
                    "(folded connections)".into()
                } else {
                    "unknown".into()
                },
                opened_s: ts.saturating_sub(first) as f64 / 1e9,
                ..Default::default()
            },
            clock: ConnClock::new(ts),
            // Folded connections are not told apart: all of their traffic is the workload's.
            workload: key == FOLDED,
            hellos: 0,
            awaitable: false,
            deferred: Deferred::default(),
        })
    }

    /// Whether `id` is a folded connection, which stops being one when it closes.
    pub(super) fn unfold(&mut self, id: u64) -> bool {
        self.folded_ids.remove(&id)
    }

    /// After an event of the folded entry: its intervals mix many connections, so none is
    /// anybody's time.
    fn blur(&mut self, key: u64) {
        if key == FOLDED {
            if let Some(c) = self.conns.get_mut(&key) {
                c.clock.gap();
            }
        }
    }

    fn bucket(&mut self, ts: u64) -> Option<&mut Bucket> {
        let offset = ts.saturating_sub(self.first_ns?);
        Some(self.timeline.at(offset))
    }

    pub(super) fn request(&mut self, conn_id: u64, ts: u64, payload: &Bytes) {
        let key = self.key(conn_id);
        self.request_on(key, conn_id, ts, payload);
        self.blur(key);
    }

    fn request_on(&mut self, key: u64, conn_id: u64, ts: u64, payload: &Bytes) {
        let bytes = payload.len() as u64;
        let c = self.state(key, ts);
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
        if !c.workload && !is_monitoring_command(&info.command) {
            c.workload = true;
            let deferred = std::mem::take(&mut c.deferred);
            *c.report
                .extra
                .entry(Category::Handshake.name().into())
                .or_default() += deferred.requests;
            self.flush(deferred, true);
        }
        let c = self.conns.get_mut(&key).expect("inserted above");
        let (shape, kept) = if c.workload {
            book(&mut self.phases, booked, c.clock.booked());
            let shape = self.workload_request(key, conn_id, ts, &msg, &info, bytes);
            (shape, self.why.keep(payload))
        } else {
            c.defer_request(&msg, &info, bytes);
            (None, None)
        };
        self.pairer
            .request_kept(conn_id, &msg, info, (ts, payload.len()), shape, kept);
    }

    /// A request on a workload connection: step markers, the replayable operations, the timeline,
    /// the per-command figures; returns the query shape it was charged to.
    fn workload_request(
        &mut self,
        key: u64,
        conn_id: u64,
        ts: u64,
        msg: &Message,
        info: &RequestInfo,
        bytes: u64,
    ) -> Option<ShapeId> {
        if info.command == "ping" {
            if let Some(step) = step_marker(msg) {
                if info.expects_reply && self.markers.len() < MAX_MARKERS {
                    self.markers
                        .insert((conn_id, msg.header.request_id), step.to_owned());
                } else {
                    self.phases.marker(step, ts, ts);
                }
            }
        }
        let mut shape = None;
        if !is_handshake_command(&info.command) {
            self.replayable += 1;
            stretch(&mut self.span, ts);
            if let Some(p) = self.phases.at(ts) {
                p.op(ts);
            }
            shape = self.shapes.request(msg, info);
        }
        let c = self.conns.get_mut(&key).expect("booked by request");
        let category = Category::of(&info.command);
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
        shape
    }

    pub(super) fn reply(&mut self, conn_id: u64, ts: u64, payload: &[u8]) {
        let key = self.key(conn_id);
        self.reply_on(key, conn_id, ts, payload);
        self.blur(key);
    }

    fn reply_on(&mut self, key: u64, conn_id: u64, ts: u64, payload: &[u8]) {
        let bytes = payload.len() as u64;
        let c = self.state(key, ts);
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
                if let Some(step) = self.markers.remove(&(conn_id, p.request_id)) {
                    self.phases.marker(&step, p.ts_ns, ts);
                }
            }
        }
        let c = self.conns.get_mut(&key).expect("inserted above");
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
        if let Some(shape) = p.shape {
            self.shapes
                .reply(shape, &p.info, &reply, latency, bytes, error);
        }
        let conn = self.conns.get(&key);
        let answered = Answered {
            conn: conn.map(|c| (c.workload, c.report.application.as_deref())),
            first_ns: self.first_ns.unwrap_or(0),
            at: (conn_id, ts),
            reply: payload,
            request_id: p.request_id,
            pending: &p,
            error,
        };
        self.why.explain(&self.shapes, answered);
        let c = self.conns.get_mut(&key).expect("inserted above");
        let command = p.info.command;
        if !c.workload {
            c.defer_reply(command, bytes, latency, error, &mut self.deferred_kept);
            return;
        }
        let driver = c.report.driver_key();
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
        self.operation_reply(driver, command, ts, latency);
    }

    /// A logical operation's reply: its driver's latency and the timeline.
    fn operation_reply(&mut self, driver: String, command: String, ts: u64, latency: u64) {
        self.driver_latency(driver, command, latency);
        if let Some(s) = self.bucket(ts) {
            s.replies += 1;
            s.sum_ns = s.sum_ns.saturating_add(latency);
            s.max_ns = s.max_ns.max(latency);
        }
    }

    /// A logical operation's latency in its driver's histogram for the command, while the number
    /// of histograms allows.
    fn driver_latency(&mut self, driver: String, command: String, latency: u64) {
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
        self.deferred_kept = self.deferred_kept.saturating_sub(deferred.latencies.len());
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
