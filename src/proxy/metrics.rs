//! `record --metrics`: what the proxy counts per message, and its Prometheus exposition.
//!
//! Each connection has a [`ConnMeter`]: after a message is forwarded, the request pump tells it the
//! request (its opcode and command, read in place by [`crate::wire::peek`]) and the reply pump the
//! reply, which is paired with its request by `response_to` in a small per-connection table
//! (bounded: the oldest pending request is forgotten when it is full) for the request-to-reply
//! latency per command. Every figure is an atomic in a table allocated once; labels come from
//! bounded sets ([`crate::metrics::labels`]). Without `--metrics` a meter only bumps the
//! per-direction totals of [`Stats`].

use super::stats::Stats;
use crate::fault::FaultControl;
use crate::metrics::expose::{self, label};
use crate::metrics::labels::{
    self, command_index, command_label, opcode_index, opcode_label, ErrorCodes, COMMAND_SLOTS,
    COMPRESSED_COMMAND, OPCODE_SLOTS,
};
use crate::metrics::LatencyHistogram;
use crate::wire::peek::{self, ReplyOutcome};
use crate::wire::OpCode;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::DescriptorEncoder;
use prometheus_client::registry::Registry;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// Requests awaiting their reply per connection (drivers have one, exhaust cursors a few).
const PENDING: usize = 32;

/// The per-message figures shared by every connection.
#[derive(Debug)]
pub struct ProxyMetrics {
    requests: [AtomicU64; COMMAND_SLOTS],
    opcodes: [AtomicU64; OPCODE_SLOTS],
    latency: [LatencyHistogram; COMMAND_SLOTS],
    error_replies: ErrorCodes,
    /// Replies that answered no request the proxy was tracking (streamed hello replies, or a
    /// request forgotten from a full table).
    unmatched_replies: AtomicU64,
}

impl Default for ProxyMetrics {
    fn default() -> Self {
        ProxyMetrics {
            requests: std::array::from_fn(|_| AtomicU64::new(0)),
            opcodes: std::array::from_fn(|_| AtomicU64::new(0)),
            latency: std::array::from_fn(|_| LatencyHistogram::default()),
            error_replies: ErrorCodes::default(),
            unmatched_replies: AtomicU64::new(0),
        }
    }
}

impl ProxyMetrics {
    /// The per-command request counts, by label (for tests and the bench).
    pub fn requests(&self, command: &str) -> u64 {
        self.requests[command_index(command.as_bytes())].load(Ordering::Relaxed)
    }
}

/// A request awaiting its reply.
#[derive(Debug, Clone, Copy, Default)]
struct Pending {
    request_id: i32,
    command: u16,
    at_ns: u64,
}

#[derive(Debug)]
struct PendingTable {
    slots: [Pending; PENDING],
    len: usize,
    /// Where the next request goes when the table is full (the oldest, roughly).
    evict: usize,
}

/// One connection's view: the shared figures and the requests awaiting replies.
#[derive(Debug)]
pub struct ConnMeter<'a> {
    stats: &'a Stats,
    metrics: Option<&'a ProxyMetrics>,
    pending: PendingReplies,
}

impl<'a> ConnMeter<'a> {
    pub fn new(stats: &'a Stats, metrics: Option<&'a ProxyMetrics>) -> ConnMeter<'a> {
        ConnMeter {
            stats,
            metrics,
            pending: PendingReplies::default(),
        }
    }

    /// A whole request, forwarded at `now_ns`.
    pub fn request(&self, frame: &[u8], now_ns: u64) {
        self.pending
            .request(self.stats, self.metrics, frame, now_ns);
    }

    /// A whole reply, read at `now_ns`.
    pub fn reply(&self, frame: &[u8], now_ns: u64) {
        self.pending.reply(self.stats, self.metrics, frame, now_ns);
    }
}

/// One connection's requests awaiting their replies, for a meter that owns its figures
/// ([`ConnMeter`] borrows them; `record --interface` holds them in an `Arc`).
#[derive(Debug)]
pub struct PendingReplies(Mutex<PendingTable>);

impl Default for PendingReplies {
    fn default() -> Self {
        PendingReplies(Mutex::new(PendingTable {
            slots: [Pending::default(); PENDING],
            len: 0,
            evict: 0,
        }))
    }
}

impl PendingReplies {
    /// A whole request, forwarded (or seen) at `now_ns`, counted in `stats` and `metrics`.
    pub fn request(
        &self,
        stats: &Stats,
        metrics: Option<&ProxyMetrics>,
        frame: &[u8],
        now_ns: u64,
    ) {
        Stats::add(&stats.requests, 1);
        Stats::add(&stats.request_bytes, frame.len() as u64);
        let Some(m) = metrics else { return };
        let Some(p) = peek::request(frame) else {
            return;
        };
        m.opcodes[opcode_index(p.op_code)].fetch_add(1, Ordering::Relaxed);
        let command = match (p.command, p.op_code) {
            (Some(name), _) => command_index(name),
            (None, OpCode::Compressed) => COMPRESSED_COMMAND,
            (None, _) => labels::OTHER_COMMAND,
        };
        m.requests[command].fetch_add(1, Ordering::Relaxed);
        if p.expects_reply {
            let mut t = self.0.lock().unwrap_or_else(|e| e.into_inner());
            let at = if t.len < PENDING {
                t.len += 1;
                t.len - 1
            } else {
                t.evict = (t.evict + 1) % PENDING;
                t.evict
            };
            t.slots[at] = Pending {
                request_id: p.request_id,
                command: command as u16,
                at_ns: now_ns,
            };
        }
    }

    /// A whole reply, read at `now_ns`: its request's latency, or an unmatched reply.
    pub fn reply(&self, stats: &Stats, metrics: Option<&ProxyMetrics>, frame: &[u8], now_ns: u64) {
        Stats::add(&stats.replies, 1);
        Stats::add(&stats.reply_bytes, frame.len() as u64);
        let Some(m) = metrics else { return };
        let Some((response_to, outcome)) = peek::reply(frame) else {
            return;
        };
        if let ReplyOutcome::Error { code } = outcome {
            m.error_replies.add(code);
        }
        match self.take(response_to) {
            Some(p) => m.latency[p.command as usize].observe_ns(now_ns.saturating_sub(p.at_ns)),
            None => {
                m.unmatched_replies.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// The request `response_to` answers, taken out of the table.
    fn take(&self, response_to: i32) -> Option<Pending> {
        let mut t = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let len = t.len;
        let at = t.slots[..len]
            .iter()
            .position(|p| p.request_id == response_to)?;
        let p = t.slots[at];
        t.slots[at] = t.slots[len - 1];
        t.len -= 1;
        Some(p)
    }
}

/// Encodes everything at scrape time.
#[derive(Debug)]
struct ProxyCollector {
    stats: Arc<Stats>,
    metrics: Arc<ProxyMetrics>,
    queued_bytes: Option<Arc<AtomicUsize>>,
    faults: Option<Arc<FaultControl>>,
}

/// The registry `record --metrics` serves: prefix `mongotape_`.
pub fn registry(
    stats: Arc<Stats>,
    metrics: Arc<ProxyMetrics>,
    queued_bytes: Option<Arc<AtomicUsize>>,
    faults: Option<Arc<FaultControl>>,
) -> Registry {
    let mut registry = Registry::with_prefix("mongotape");
    registry.register_collector(Box::new(ProxyCollector {
        stats,
        metrics,
        queued_bytes,
        faults,
    }));
    registry
}

fn get(c: &AtomicU64) -> u64 {
    c.load(Ordering::Relaxed)
}

impl Collector for ProxyCollector {
    fn encode(&self, mut enc: DescriptorEncoder) -> std::fmt::Result {
        self.traffic(&mut enc)?;
        self.replies(&mut enc)?;
        self.capture(&mut enc)?;
        self.faults(&mut enc)
    }
}

/// The exposition in the order it has always had: connections and messages, replies, the capture.
impl ProxyCollector {
    /// `record --fault`: how often each rule fired (rules replaced by `PUT /faults` start at 0).
    fn faults(&self, e: &mut DescriptorEncoder) -> std::fmt::Result {
        let Some(faults) = &self.faults else {
            return Ok(());
        };
        let series = faults.status().into_iter().map(|r| {
            let labels = vec![("rule", r.name), ("action", r.action)];
            (labels, r.fired)
        });
        expose::counters(
            e,
            "faults_injected",
            "Faults injected by each fault rule (record --fault), by rule name and action.",
            series,
        )
    }

    /// Connections, and the messages and requests forwarded.
    fn traffic(&self, e: &mut DescriptorEncoder) -> std::fmt::Result {
        let (s, m) = (&self.stats, &self.metrics);
        expose::gauge(
            e,
            "connections_open",
            "Client connections open now.",
            get(&s.connections_open) as f64,
        )?;
        expose::counter(
            e,
            "connections",
            "Client connections accepted (after TLS, when the listener has it).",
            get(&s.connections_total),
        )?;
        expose::counter(
            e,
            "client_tls_failures",
            "Client connections refused during the TLS handshake.",
            get(&s.client_tls_failures),
        )?;
        expose::counters(
            e,
            "messages",
            "Whole wire messages forwarded, by direction (request: client to server).",
            [
                (label("direction", "request"), get(&s.requests)),
                (label("direction", "reply"), get(&s.replies)),
            ],
        )?;
        expose::counters(
            e,
            "message_bytes",
            "Bytes of whole wire messages forwarded, by direction.",
            [
                (label("direction", "request"), get(&s.request_bytes)),
                (label("direction", "reply"), get(&s.reply_bytes)),
            ],
        )?;
        expose::counters(
            e,
            "requests",
            "Requests by command (commands outside a known list are `other`; OP_COMPRESSED ones `compressed`).",
            // A series appears when its command is first seen, not ~60 zeros up front.
            (0..COMMAND_SLOTS)
                .filter(|&i| get(&m.requests[i]) > 0)
                .map(|i| (label("command", command_label(i)), get(&m.requests[i]))),
        )?;
        expose::counters(
            e,
            "requests_by_opcode",
            "Requests by wire opcode.",
            (0..OPCODE_SLOTS)
                .filter(|&i| get(&m.opcodes[i]) > 0)
                .map(|i| (label("opcode", opcode_label(i)), get(&m.opcodes[i]))),
        )?;
        Ok(())
    }

    /// Latency and errors of the replies, and what the hello rewrite did.
    fn replies(&self, e: &mut DescriptorEncoder) -> std::fmt::Result {
        let (s, m) = (&self.stats, &self.metrics);
        expose::histograms(
            e,
            "request_duration_seconds",
            "Time from a request forwarded to its reply read, as the proxy sees it, by command.",
            (0..COMMAND_SLOTS)
                .filter(|&i| m.latency[i].count() > 0)
                .map(|i| (label("command", command_label(i)), m.latency[i].snapshot())),
        )?;
        expose::counters(
            e,
            "error_replies",
            "Replies with ok: 0, by server error code (`none`: no code given).",
            m.error_replies
                .counts()
                .into_iter()
                .map(|(code, n)| (label("code", code), n)),
        )?;
        expose::counter(
            e,
            "unmatched_replies",
            "Replies that answered no tracked request (streamed hello replies).",
            get(&m.unmatched_replies),
        )?;
        expose::counter(
            e,
            "hello_rewrites",
            "Hello replies whose member addresses were rewritten to the proxy's listeners.",
            get(&s.hello_rewrites),
        )?;
        expose::counter(
            e,
            "unserved_address_replies",
            "Hello replies naming an address the proxy does not serve (a client could bypass it).",
            get(&s.unserved_addresses),
        )?;
        Ok(())
    }

    /// The recorder's queue and what it wrote or could not.
    fn capture(&self, e: &mut DescriptorEncoder) -> std::fmt::Result {
        let s = &self.stats;
        if let Some(queued) = &self.queued_bytes {
            expose::gauge(
                e,
                "recorder_queue_bytes",
                "Message bytes waiting for the recorder thread.",
                queued.load(Ordering::Relaxed) as f64,
            )?;
        }
        expose::counter(
            e,
            "records_written",
            "Records written to the capture (messages and connection events).",
            get(&s.records_written),
        )?;
        expose::counter(
            e,
            "recorded_messages",
            "Messages written to the capture.",
            get(&s.recorded_messages),
        )?;
        expose::counter(
            e,
            "redacted_messages",
            "Messages written with something redacted.",
            get(&s.redacted_messages),
        )?;
        expose::counter(
            e,
            "gap_records",
            "Gap records written (each marks messages lost to a full recorder queue).",
            get(&s.gap_records),
        )?;
        expose::counters(
            e,
            "not_recorded_messages",
            "Messages forwarded but not recorded, by reason.",
            [
                (label("reason", "queue_full"), get(&s.dropped_messages)),
                (
                    label("reason", "unredactable"),
                    get(&s.unredactable_messages),
                ),
            ],
        )?;
        expose::counter(
            e,
            "not_recorded_bytes",
            "Bytes of messages dropped from a full recorder queue.",
            get(&s.dropped_bytes),
        )?;
        expose::counter(
            e,
            "capture_bytes",
            "Bytes written to capture files (compressed, all segments).",
            get(&s.file_bytes),
        )?;
        expose::counter(
            e,
            "capture_uncompressed_bytes",
            "Record bytes handed to the capture writer, before compression.",
            get(&s.capture_bytes),
        )?;
        expose::counter(
            e,
            "capture_segments",
            "Capture segments started (1 without rotation).",
            get(&s.segments),
        )?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::op_msg::{MsgFlags, OpMsg};
    use bson::rawdoc;

    fn msg(body: bson::RawDocumentBuf, request_id: i32, response_to: i32) -> Vec<u8> {
        OpMsg::with_body(body, MsgFlags::empty()).encode(request_id, response_to)
    }

    #[test]
    fn requests_pair_with_replies_and_render() {
        let stats = Arc::new(Stats::default());
        let metrics = Arc::new(ProxyMetrics::default());
        let meter = ConnMeter::new(&stats, Some(&metrics));
        meter.request(&msg(rawdoc! {"insert": "c", "$db": "d"}, 1, 0), 1_000);
        meter.request(&msg(rawdoc! {"weirdCommand": 1, "$db": "d"}, 2, 0), 1_000);
        meter.reply(&msg(rawdoc! {"ok": 1.0}, 10, 1), 301_000);
        meter.reply(&msg(rawdoc! {"ok": 0.0, "code": 59}, 11, 2), 2_000);
        meter.reply(&msg(rawdoc! {"ok": 1.0}, 12, 99), 2_000);
        // Far more requests than the table holds, none answered: it stays bounded.
        for id in 100..1000 {
            meter.request(&msg(rawdoc! {"find": "c"}, id, 0), 0);
        }
        assert_eq!(metrics.requests("insert"), 1);
        assert_eq!(metrics.requests("other"), 1);
        assert_eq!(stats.requests.load(Ordering::Relaxed), 902);
        let text = expose::render(&registry(stats, metrics, None, None));
        for line in [
            "mongotape_requests_total{command=\"insert\"} 1",
            "mongotape_requests_total{command=\"find\"} 900",
            "mongotape_requests_by_opcode_total{opcode=\"OP_MSG\"} 902",
            "mongotape_request_duration_seconds_bucket{command=\"insert\",le=\"0.0005\"} 1",
            "mongotape_request_duration_seconds_bucket{command=\"insert\",le=\"0.00025\"} 0",
            "mongotape_request_duration_seconds_count{command=\"other\"} 1",
            "mongotape_request_duration_seconds_bucket{command=\"insert\",le=\"+Inf\"} 1",
            "mongotape_request_duration_seconds_bucket{command=\"other\",le=\"5e-05\"} 1",
            "mongotape_error_replies_total{code=\"59\"} 1",
            "mongotape_unmatched_replies_total 1",
            "mongotape_messages_total{direction=\"reply\"} 3",
            "# TYPE mongotape_request_duration_seconds histogram",
        ] {
            assert!(text.contains(line), "{line} missing in\n{text}");
        }
    }
}
