//! `mongotape record --interface IFACE`: the capture made by sniffing packets rather than by
//! proxying. Everything else is in `mongotape::import::live`.

use super::exit::usage;
use super::output::note;
use super::record::{segment_plan, RecordArgs};
use mongotape::import::live::{self, LiveOptions, LiveSummary, STOP_TIMEOUT};
use mongotape::import::meter::LiveMeter;
use mongotape::import::output::{Limits, Meter};
use mongotape::import::{OutputSpec, ServerSpec};
use mongotape::metrics::MetricsServer;
use mongotape::proxy::shutdown;
use std::path::PathBuf;
use std::process::ExitCode;

pub fn run(args: RecordArgs) -> anyhow::Result<ExitCode> {
    let interface = args.interface.clone().expect("called with --interface");
    let plan = segment_plan(&args)?.ok_or_else(|| usage("--interface needs --out"))?;
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
    let metrics = match args.metrics.as_deref() {
        Some(addr) => Some(MetricsServer::bind(addr)?),
        None => None,
    };
    let meter = metrics.as_ref().map(|_| LiveMeter::default());
    if let Some(server) = &metrics {
        if !args.quiet {
            note!(
                "mongotape: metrics on http://{}/metrics",
                server.local_addr()
            );
        }
    }
    let registry = meter.as_ref().map(LiveMeter::registry);
    let shutdown = shutdown::on_thread(STOP_TIMEOUT, metrics.zip(registry))?;
    let sniffing = live::start(&opts)?;
    if !args.quiet {
        note!(
            "mongotape: sniffing {} on {interface} into {} (TLS traffic cannot be read this way: \
             use the proxy or the server's traffic recording for it); stop with Ctrl-C",
            live::filter(&opts.servers),
            plan.path.display()
        );
    }
    let summary = sniffing.run(shutdown, meter.map(|m| Box::new(m) as Box<dyn Meter>))?;
    if !args.quiet {
        note!("mongotape: {}", render(&summary));
    }
    Ok(ExitCode::SUCCESS)
}

fn render(s: &LiveSummary) -> String {
    let w = &s.written;
    let k = &s.kernel;
    format!(
        "recorded {} connections, {} messages ({} bytes) from {} packets in {} segment(s){}; \
         gaps: {} ({} messages lost); kernel: {} packets received by the filter, {} dropped",
        w.connections,
        w.messages,
        w.wire_bytes,
        s.read.packets,
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
