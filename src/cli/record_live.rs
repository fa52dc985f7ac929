//! `mongotape record --interface IFACE`: the capture made by sniffing packets rather than by
//! proxying. Everything else is in `mongotape::import::live`.

use super::output::note;
use super::record::{segment_plan, RecordArgs};
use anyhow::Context;
use mongotape::import::live::{self, LiveOptions, LiveSummary};
use mongotape::import::output::Limits;
use mongotape::import::output::Meter;
use mongotape::import::{OutputSpec, ServerSpec};
use mongotape::metrics::MetricsServer;
use mongotape::proxy::metrics::{self, ConnMeter, ProxyMetrics};
use mongotape::proxy::stats::Stats;
use prometheus_client::registry::Registry;
use std::collections::HashMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

pub fn run(args: RecordArgs) -> anyhow::Result<ExitCode> {
    let interface = args.interface.clone().expect("called with --interface");
    let plan = segment_plan(&args)?.context("--interface needs --out")?;
    plan.check_free()?;
    let servers = ServerSpec {
        ports: args.server_port.clone(),
        addrs: Vec::new(),
    };
    let opts = LiveOptions {
        interface: interface.clone(),
        reassembly: mongotape::import::tcp::Bounds::default(),
        output: OutputSpec {
            path: plan.path.clone(),
            force: plan.force,
            zstd_level: args.zstd_level,
            redaction: args.redaction(),
            upstream: String::new(),
            source: format!("live: tcpdump -i {interface} '{}'", live::filter(&servers)),
        },
        servers,
        limits: Limits {
            rotate_bytes: plan.rotate_bytes,
            rotate_every: plan.rotate_every,
            max_bytes: plan.max_bytes,
            duration: plan.duration,
        },
        tcpdump: std::env::var_os("MONGOTAPE_TCPDUMP")
            .map(PathBuf::from)
            .unwrap_or_else(|| "tcpdump".into()),
        buffer_kib: args.sniff_buffer,
    };
    let stop = Arc::new(AtomicBool::new(false));
    let metrics = match args.metrics.as_deref() {
        Some(addr) => Some(MetricsServer::bind(addr)?),
        None => None,
    };
    let meter = metrics.as_ref().map(|_| LiveMeter::new());
    let registry = meter.as_ref().map(LiveMeter::registry);
    if let Some(server) = &metrics {
        if !args.quiet {
            note!(
                "mongotape: metrics on http://{}/metrics",
                server.local_addr()
            );
        }
    }
    watch_signals(stop.clone(), metrics.zip(registry))?;
    let sniffing = live::start(&opts)?;
    if !args.quiet {
        note!(
            "mongotape: sniffing {} on {interface} into {} (TLS traffic cannot be read this way: \
             use the proxy or the server's traffic recording for it); stop with Ctrl-C",
            live::filter(&opts.servers),
            plan.path.display()
        );
    }
    let summary = sniffing.run(stop, meter.map(|m| Box::new(m) as Box<dyn Meter>))?;
    if !args.quiet {
        note!("mongotape: {}", render(&summary));
    }
    Ok(ExitCode::SUCCESS)
}

/// SIGINT, SIGTERM and SIGHUP end the recording (tcpdump is stopped, the capture closed whole).
/// The metrics endpoint, if any, is served on the same thread until then.
fn watch_signals(
    stop: Arc<AtomicBool>,
    metrics: Option<(MetricsServer, Registry)>,
) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the signal watcher")?;
    let signals = runtime.block_on(async { mongotape::proxy::shutdown::Signals::new() });
    let mut signals = signals.context("installing the signal handlers")?;
    if let Some((server, registry)) = metrics {
        runtime.block_on(async { server.serve(registry) })?;
    }
    std::thread::Builder::new()
        .name("mongotape-signals".into())
        .spawn(move || {
            runtime.block_on(signals.next());
            stop.store(true, Ordering::Relaxed);
        })
        .context("starting the signal watcher")?;
    Ok(())
}

fn render(s: &LiveSummary) -> String {
    let w = &s.import.written;
    let k = &s.kernel;
    format!(
        "recorded {} connections, {} messages ({} bytes) from {} packets in {} segment(s){}; \
         gaps: {} ({} messages lost); kernel: {} packets received by the filter, {} dropped",
        w.connections,
        w.messages,
        w.wire_bytes,
        s.import.packets,
        s.segments,
        s.ended_by
            .as_ref()
            .map(|r| format!(", ended: {r}"))
            .unwrap_or_default(),
        w.gap_records,
        w.dropped_messages,
        k.received_by_filter,
        k.dropped_by_kernel + k.dropped_by_interface,
    )
}

/// `--metrics` with `--interface`: the proxy's series, fed from the sniffed messages (request to
/// reply latency from the packets' own times).
struct LiveMeter {
    stats: &'static Arc<Stats>,
    metrics: &'static Arc<ProxyMetrics>,
    conns: HashMap<u64, ConnMeter<'static>>,
}

impl LiveMeter {
    fn new() -> LiveMeter {
        // The endpoint serves them for the rest of the process.
        LiveMeter {
            stats: Box::leak(Box::new(Arc::new(Stats::default()))),
            metrics: Box::leak(Box::new(Arc::new(ProxyMetrics::default()))),
            conns: HashMap::new(),
        }
    }

    fn registry(&self) -> Registry {
        metrics::registry(self.stats.clone(), self.metrics.clone(), None)
    }
}

impl Meter for LiveMeter {
    fn opened(&mut self, conn: u64) {
        Stats::add(&self.stats.connections_open, 1);
        Stats::add(&self.stats.connections_total, 1);
        let meter = ConnMeter::new(self.stats, Some(self.metrics));
        self.conns.insert(conn, meter);
    }

    fn closed(&mut self, conn: u64) {
        if self.conns.remove(&conn).is_some() {
            self.stats.connections_open.fetch_sub(1, Ordering::Relaxed);
        }
    }

    fn message(&mut self, conn: u64, request: bool, frame: &[u8], ts_ns: u64) {
        Stats::add(&self.stats.messages, 1);
        Stats::add(&self.stats.wire_bytes, frame.len() as u64);
        if let Some(meter) = self.conns.get(&conn) {
            if request {
                meter.request(frame, ts_ns);
            } else {
                meter.reply(frame, ts_ns);
            }
        }
    }

    fn recorded(&mut self, redacted: bool) {
        Stats::add(&self.stats.recorded_messages, 1);
        if redacted {
            Stats::add(&self.stats.redacted_messages, 1);
        }
    }

    fn gap(&mut self, messages: u64, bytes: u64, unredactable: bool) {
        Stats::add(&self.stats.gap_records, 1);
        if unredactable {
            Stats::add(&self.stats.unredactable_messages, messages);
        } else {
            Stats::add(&self.stats.dropped_messages, messages);
            Stats::add(&self.stats.dropped_bytes, bytes);
        }
    }

    fn written(&mut self, file_bytes: u64) {
        Stats::add(&self.stats.records_written, 1);
        self.stats.file_bytes.store(file_bytes, Ordering::Relaxed);
    }
}
