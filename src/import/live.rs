//! Live sniffing (`mongotape record --interface IFACE`): the import's reassembly and output on
//! packets as they cross an interface, for a host where the proxy cannot go in the path.
//!
//! The packets come from libpcap, through `tcpdump` writing a pcap stream to a pipe (`-w - -U`,
//! `--immediate-mode`): the filter (`tcp and port ...`) is compiled to BPF and runs in the kernel,
//! so only the server's traffic reaches user space; the capture privilege (root or CAP_NET_RAW)
//! is tcpdump's alone; and mongotape keeps `#![forbid(unsafe_code)]` (an AF_PACKET socket of our
//! own would need `unsafe` for its socket options and ring). The kernel's drop counter
//! (`pcap_stats`) is read every second (SIGUSR1 makes tcpdump print it); each increase becomes a
//! `gap` record of the whole capture, beside the per-connection gaps the reassembly finds where
//! segments are missing. TLS traffic cannot be read this way: its bytes are encrypted.
//!
//! It stops as the proxy does ([`crate::proxy::shutdown`]): the first signal asks tcpdump to stop
//! and the packets it still holds are recorded (for up to [`STOP_TIMEOUT`]), the second kills it.

use super::error::ImportError;
use super::output::{Limits, Meter, Output, OutputSpec};
use super::tcp::role::{ServerSpec, DEFAULT_PORT};
use super::{pcap, PacketImport, PacketsRead, Written};
use crate::capture::EndReason;
use crate::proxy::supervise::Shutdown;
use rustix::process::{kill_process, kill_process_group, Pid, Signal};
use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How often the kernel's drop counter is asked for.
const STATS_EVERY: Duration = Duration::from_secs(1);
/// How long tcpdump may take to stop after SIGTERM before it is killed: the drain of the first
/// signal.
pub const STOP_TIMEOUT: Duration = Duration::from_secs(10);
/// How often the control thread looks at the shutdown and the limits.
const POLL: Duration = Duration::from_millis(50);

/// What to sniff and where the capture goes.
#[derive(Debug, Clone)]
pub struct LiveOptions {
    pub interface: String,
    pub servers: ServerSpec,
    /// The reassembly's bounds (per direction and over all connections).
    pub reassembly: super::tcp::Bounds,
    pub output: OutputSpec,
    pub limits: Limits,
    /// The tcpdump to run.
    pub tcpdump: PathBuf,
    /// The kernel's capture buffer (tcpdump `-B`), KiB.
    pub buffer_kib: usize,
}

/// The kernel's counters, as libpcap reports them.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub struct KernelStats {
    pub received_by_filter: u64,
    pub dropped_by_kernel: u64,
    pub dropped_by_interface: u64,
}

/// What a live recording saw and wrote.
#[derive(Debug, Clone, Default)]
pub struct LiveSummary {
    pub read: PacketsRead,
    pub written: Written,
    pub kernel: KernelStats,
    /// The limit that ended it (`--duration reached`, `--max-size reached`), else a signal.
    pub ended_by: Option<String>,
    pub segments: u32,
}

/// The BPF filter: TCP to or from the servers named (port 27017 when none is).
pub fn filter(servers: &ServerSpec) -> String {
    let mut parts: Vec<String> = servers.ports.iter().map(|p| format!("port {p}")).collect();
    parts.extend(
        servers
            .addrs
            .iter()
            .map(|a| format!("(host {} and port {})", a.ip(), a.port())),
    );
    if parts.is_empty() {
        parts.push(format!("port {DEFAULT_PORT}"));
    }
    format!("tcp and ({})", parts.join(" or "))
}

/// The counters in one of tcpdump's statistics lines (`N packets dropped by kernel`, ...), merged
/// into `stats`. False when the line holds none.
pub fn parse_stats(line: &str, stats: &mut KernelStats) -> bool {
    let mut found = false;
    for part in line.trim_start_matches("tcpdump:").split(',') {
        let mut words = part.split_whitespace();
        let Some(n) = words.next().and_then(|w| w.parse::<u64>().ok()) else {
            continue;
        };
        let rest: Vec<&str> = words.collect();
        let what = rest.get(1..).map(|w| w.join(" ")).unwrap_or_default();
        let slot = match what.as_str() {
            "received by filter" => &mut stats.received_by_filter,
            "dropped by kernel" => &mut stats.dropped_by_kernel,
            "dropped by interface" => &mut stats.dropped_by_interface,
            _ => continue,
        };
        *slot = n;
        found = true;
    }
    found
}

/// What tcpdump said on stderr: its counters, and its first lines for an error message.
#[derive(Default)]
struct Said {
    stats: KernelStats,
    listening: bool,
    lines: Vec<String>,
}

/// The tcpdump process and the threads around it.
struct Sniffer {
    child: Child,
    said: Arc<Mutex<Said>>,
    dropped: Arc<AtomicU64>,
    stderr: Option<std::thread::JoinHandle<()>>,
}

impl Sniffer {
    fn start(opts: &LiveOptions) -> Result<(Sniffer, std::process::ChildStdout), ImportError> {
        let mut cmd = Command::new(&opts.tcpdump);
        cmd.args(["-i", &opts.interface, "-n", "-U", "-w", "-", "-s", "0"])
            .arg("--immediate-mode")
            .args(["-B", &opts.buffer_kib.to_string()])
            .arg(filter(&opts.servers))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // Its own process group, so that a stop reaches whatever it runs (a wrapper
            // script's child keeps the pipes open otherwise, and the reader waits on them).
            .process_group(0);
        let mut child = cmd.spawn().map_err(|e| ImportError::Sniffer {
            interface: opts.interface.clone(),
            what: if e.kind() == std::io::ErrorKind::NotFound {
                format!(
                    "{} is not installed: `record --interface` reads packets through tcpdump \
                     (libpcap); apt-get install tcpdump",
                    opts.tcpdump.display()
                )
            } else {
                format!("cannot run {}: {e}", opts.tcpdump.display())
            },
        })?;
        let stdout = child.stdout.take().expect("piped");
        let stderr = child.stderr.take().expect("piped");
        let said = Arc::new(Mutex::new(Said::default()));
        let dropped = Arc::new(AtomicU64::new(0));
        let (s, d) = (said.clone(), dropped.clone());
        let thread = std::thread::Builder::new()
            .name("mongotape-sniff-stats".into())
            .spawn(move || read_stderr(stderr, &s, &d))
            .map_err(|e| ImportError::Sniffer {
                interface: opts.interface.clone(),
                what: format!("starting a thread: {e}"),
            })?;
        let sniffer = Sniffer {
            child,
            said,
            dropped,
            stderr: Some(thread),
        };
        Ok((sniffer, stdout))
    }

    fn signal(&self, sig: Signal) {
        if let Some(pid) = Pid::from_raw(self.child.id() as i32) {
            let _ = kill_process(pid, sig);
        }
    }

    /// `sig` to tcpdump's process group: it and anything it started.
    fn signal_group(&self, sig: Signal) {
        if let Some(pid) = Pid::from_raw(self.child.id() as i32) {
            let _ = kill_process_group(pid, sig);
        }
    }

    /// Waits for tcpdump to end; its last counters are read. An error when it never captured.
    fn end(
        mut self,
        interface: &str,
        shutdown: Option<&Shutdown>,
    ) -> Result<KernelStats, ImportError> {
        // Asked to stop (SIGTERM) before this; one that does not within the bound, or by the
        // second signal, is killed.
        let deadline = Instant::now() + STOP_TIMEOUT;
        let now = || shutdown.is_some_and(|s| *s.now.borrow());
        while matches!(self.child.try_wait(), Ok(None)) && Instant::now() < deadline && !now() {
            std::thread::sleep(POLL);
        }
        if matches!(self.child.try_wait(), Ok(None)) {
            if !now() {
                tracing::warn!("tcpdump did not stop within {STOP_TIMEOUT:?} of SIGTERM: killed");
            }
            self.signal_group(Signal::KILL);
        }
        let status = self.child.wait();
        // Its stderr ends with it; a reader still blocked after the bound is left behind.
        if let Some(t) = self.stderr.take() {
            let until = Instant::now() + Duration::from_secs(2);
            while !t.is_finished() && Instant::now() < until {
                std::thread::sleep(POLL);
            }
            if t.is_finished() {
                let _ = t.join();
            }
        }
        let said = self.said.lock().unwrap_or_else(|p| p.into_inner());
        if said.listening {
            return Ok(said.stats.clone());
        }
        let text = said.lines.join("; ");
        let permission = text.contains("permission") || text.contains("Operation not permitted");
        Err(ImportError::Sniffer {
            interface: interface.into(),
            what: if permission {
                format!("capturing needs root or CAP_NET_RAW (tcpdump said: {text})")
            } else {
                let status = status.map_or_else(|e| e.to_string(), |s| s.to_string());
                format!("tcpdump ended before capturing ({status}): {text}")
            },
        })
    }
}

fn read_stderr(stderr: std::process::ChildStderr, said: &Mutex<Said>, dropped: &AtomicU64) {
    for line in BufReader::new(stderr).lines() {
        let Ok(line) = line else { break };
        let mut s = said.lock().unwrap_or_else(|p| p.into_inner());
        if line.starts_with("tcpdump: listening on") {
            s.listening = true;
        } else if parse_stats(&line, &mut s.stats) {
            let total = s.stats.dropped_by_kernel + s.stats.dropped_by_interface;
            dropped.store(total, Ordering::Relaxed);
        } else if s.lines.len() < 8 {
            s.lines.push(line);
        }
    }
}

/// How long tcpdump may take to say it is capturing.
const START_TIMEOUT: Duration = Duration::from_secs(15);

/// tcpdump capturing, its packets not read yet.
pub struct Sniffing {
    sniffer: Sniffer,
    stdout: std::process::ChildStdout,
    opts: LiveOptions,
}

/// Starts tcpdump and returns once it says it is capturing: from then on no packet of the
/// servers' traffic is missed. An error naming the cause when it cannot capture (not installed,
/// no such interface, no privilege).
pub fn start(opts: &LiveOptions) -> Result<Sniffing, ImportError> {
    let (mut sniffer, stdout) = Sniffer::start(opts)?;
    let deadline = Instant::now() + START_TIMEOUT;
    loop {
        if sniffer
            .said
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .listening
        {
            break;
        }
        let exited = matches!(sniffer.child.try_wait(), Ok(Some(_)));
        if exited || Instant::now() >= deadline {
            sniffer.signal_group(Signal::KILL);
            let ended = sniffer.end(&opts.interface, None).err();
            let silent = ImportError::Sniffer {
                interface: opts.interface.clone(),
                what: format!(
                    "{} did not say it was capturing within {START_TIMEOUT:?}: stopped",
                    opts.tcpdump.display()
                ),
            };
            return Err(if exited {
                ended.unwrap_or(silent)
            } else {
                silent
            });
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    Ok(Sniffing {
        sniffer,
        stdout,
        opts: opts.clone(),
    })
}

impl Sniffing {
    /// Records until `shutdown` drains (tcpdump stops, the packets it holds are recorded) or
    /// stops at once (tcpdump is killed), a limit of the options is reached, or tcpdump ends; the
    /// capture is then closed with its `end` record.
    pub fn run(
        self,
        shutdown: Shutdown,
        meter: Option<Box<dyn Meter>>,
    ) -> Result<LiveSummary, ImportError> {
        let Sniffing {
            sniffer,
            stdout,
            opts,
        } = self;
        let dropped = sniffer.dropped.clone();
        let sniffer = Arc::new(Mutex::new(Some(sniffer)));
        let done = Arc::new(AtomicBool::new(false));
        // A limit of the options reached (the capture is closed): tcpdump is stopped.
        let ended = Arc::new(AtomicBool::new(false));
        let control = {
            let (sniffer, done, ended) = (sniffer.clone(), done.clone(), ended.clone());
            let shutdown = shutdown.clone();
            let deadline = opts.limits.duration.map(|d| Instant::now() + d);
            std::thread::spawn(move || control(&sniffer, &done, &ended, &shutdown, deadline))
        };
        let mut output = Output::with_limits(opts.output.clone(), opts.limits.clone());
        if let Some(meter) = meter {
            output.set_meter(meter);
        }
        let mut run = PacketImport::with_output(opts.servers.clone(), opts.reassembly, output);
        let mut reported = 0u64;
        let source = PathBuf::from(format!("tcpdump -i {}", opts.interface));
        let read = pcap::read(stdout, &source, &mut |p| {
            run.packet(p)?;
            note_drops(&mut run.output, &dropped, &mut reported, p.ts_ns)?;
            if run.output.ended().is_some() {
                ended.store(true, Ordering::Relaxed);
            }
            Ok(())
        });
        done.store(true, Ordering::Relaxed);
        let deadline_reached = control.join().unwrap_or(false);
        let sniffer = sniffer.lock().unwrap_or_else(|p| p.into_inner()).take();
        let sniffer = sniffer.expect("started");
        // Stopped already, unless reading ended first (an error writing the capture).
        sniffer.signal(Signal::TERM);
        let kernel = sniffer.end(&opts.interface, Some(&shutdown))?;
        match read {
            Ok(_) => {}
            Err(e) if e.is_damage() => tracing::warn!("{e}; the packets before it were recorded"),
            Err(e) => return Err(e),
        }
        dropped.store(
            kernel.dropped_by_kernel + kernel.dropped_by_interface,
            Ordering::Relaxed,
        );
        let last = run.last_ts();
        note_drops(&mut run.output, &dropped, &mut reported, last)?;
        let ended_by = match run.output.ended() {
            Some(reason) => Some(reason.as_str().to_string()),
            None if deadline_reached => Some(EndReason::Duration.as_str().to_string()),
            None => None,
        };
        let segments = run.output.segments();
        let (read, written) = run.finish()?;
        Ok(LiveSummary {
            read,
            written,
            kernel,
            ended_by,
            segments: segments.max(1),
        })
    }
}

/// A `gap` record for the packets the kernel dropped since the last one.
fn note_drops(
    output: &mut Output,
    dropped: &AtomicU64,
    reported: &mut u64,
    ts_ns: u64,
) -> Result<(), ImportError> {
    let now = dropped.load(Ordering::Relaxed);
    if now > *reported {
        let reason = format!("the kernel dropped {} packets", now - *reported);
        tracing::warn!("{reason}: connections with missing segments have gap records");
        *reported = now;
        output.capture_gap(reason, ts_ns)?;
    }
    Ok(())
}

/// Asks tcpdump for its counters every second; stops it (SIGTERM: it flushes and prints its last
/// counters) at the first signal, at the deadline, at a limit (`ended`), or when the reader is
/// done; kills it at the second signal. True when the deadline stopped it.
fn control(
    sniffer: &Mutex<Option<Sniffer>>,
    done: &AtomicBool,
    ended: &AtomicBool,
    shutdown: &Shutdown,
    deadline: Option<Instant>,
) -> bool {
    let mut asked = Instant::now();
    let mut stopping = None;
    let mut by_deadline = false;
    while !done.load(Ordering::Relaxed) {
        std::thread::sleep(POLL);
        let guard = sniffer.lock().unwrap_or_else(|p| p.into_inner());
        let Some(s) = guard.as_ref() else { break };
        if *shutdown.now.borrow() {
            s.signal_group(Signal::KILL);
            break;
        }
        let late = deadline.is_some_and(|d| Instant::now() >= d);
        let asked_to_stop = *shutdown.drain.borrow() || ended.load(Ordering::Relaxed);
        if stopping.is_none() && (asked_to_stop || late) {
            s.signal(Signal::TERM);
            stopping = Some(Instant::now());
            by_deadline = late && !asked_to_stop;
        } else if let Some(since) = stopping {
            // One that does not end (or whose group keeps its output open) is killed, so
            // that the reader sees the end of its pipe.
            if since.elapsed() >= STOP_TIMEOUT {
                s.signal_group(Signal::KILL);
            }
        } else if asked.elapsed() >= STATS_EVERY {
            s.signal(Signal::USR1);
            asked = Instant::now();
        }
    }
    by_deadline
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_filter_names_every_server_and_defaults_to_27017() {
        assert_eq!(filter(&ServerSpec::default()), "tcp and (port 27017)");
        let spec = ServerSpec {
            ports: vec![27017, 27018],
            addrs: vec!["10.0.0.5:27019".parse().unwrap()],
        };
        assert_eq!(
            filter(&spec),
            "tcp and (port 27017 or port 27018 or (host 10.0.0.5 and port 27019))"
        );
    }

    /// The lines tcpdump 4.99 prints on SIGUSR1 and at exit.
    #[test]
    fn tcpdumps_counters_are_read_from_both_forms() {
        let mut s = KernelStats::default();
        let line = "tcpdump: 120 packets captured, 130 packets received by filter, 7 packets dropped by kernel";
        assert!(parse_stats(line, &mut s));
        assert_eq!((s.received_by_filter, s.dropped_by_kernel), (130, 7));
        assert!(parse_stats("9 packets dropped by kernel", &mut s));
        assert!(parse_stats("1 packet dropped by interface", &mut s));
        assert_eq!((s.dropped_by_kernel, s.dropped_by_interface), (9, 1));
        assert!(!parse_stats(
            "tcpdump: listening on lo, link-type EN10MB",
            &mut s
        ));
        assert!(!parse_stats("120 packets captured", &mut s));
    }
}
