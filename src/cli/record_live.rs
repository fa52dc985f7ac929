//! `mongotape record --interface IFACE`: the capture made by sniffing packets rather than by
//! proxying. Everything else is in `mongotape::import::live`.

use super::output::note;
use super::record::{segment_plan, RecordArgs};
use anyhow::Context;
use mongotape::import::live::{self, LiveOptions, LiveSummary};
use mongotape::import::output::Limits;
use mongotape::import::{OutputSpec, ServerSpec};
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
        window: 4 << 20,
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
    watch_signals(stop.clone())?;
    let sniffing = live::start(&opts)?;
    if !args.quiet {
        note!(
            "mongotape: sniffing {} on {interface} into {} (TLS traffic cannot be read this way: \
             use the proxy or the server's traffic recording for it); stop with Ctrl-C",
            live::filter(&opts.servers),
            plan.path.display()
        );
    }
    let summary = sniffing.run(stop)?;
    if !args.quiet {
        note!("mongotape: {}", render(&summary));
    }
    Ok(ExitCode::SUCCESS)
}

/// SIGINT, SIGTERM and SIGHUP end the recording (tcpdump is stopped, the capture closed whole).
fn watch_signals(stop: Arc<AtomicBool>) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the signal watcher")?;
    let signals = runtime.block_on(async { mongotape::proxy::shutdown::Signals::new() });
    let mut signals = signals.context("installing the signal handlers")?;
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
