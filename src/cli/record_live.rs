//! `mongotape record --interface IFACE`: the capture made by sniffing packets rather than by
//! proxying. Everything else is in `mongotape::import::live`.

use super::exit::usage;
use super::output::note;
use super::record::{segment_plan, RecordArgs};
use mongotape::import::live::{self, LiveOptions, STOP_TIMEOUT};
use mongotape::import::meter::LiveMeter;
use mongotape::import::output::{Limits, Meter};
use mongotape::import::{text, OutputSpec, ServerSpec};
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
            redaction: args.redact.redaction(),
            upstream: String::new(),
            source: format!("live: tcpdump -i {interface} '{}'", live::filter(&servers)),
            skip_probes: false,
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
        note!("mongotape: {}", text::sniffing_line(&opts));
    }
    let summary = sniffing.run(shutdown, meter.map(|m| Box::new(m) as Box<dyn Meter>))?;
    if !args.quiet {
        note!("mongotape: {}", summary.status_line());
    }
    Ok(ExitCode::SUCCESS)
}
