//! Packet captures taken on the loopback while a test runs: `tcpdump` (pcap) and `dumpcap`
//! (pcapng), started before the traffic, stopped by their pid (SIGTERM, which flushes the file).

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running packet capture.
pub struct Sniffer {
    child: Option<Child>,
    pub file: PathBuf,
    log: PathBuf,
    stopped_log: std::sync::Arc<std::sync::Mutex<String>>,
}

/// Which tool, and how it says it is capturing.
#[derive(Clone, Copy)]
pub enum Tool {
    /// `tcpdump -i lo -s 0 -w FILE tcp port P`: pcap, Ethernet link type.
    Tcpdump,
    /// `dumpcap -i any -y LINUX_SLL2 -s 0 -w FILE -f 'tcp port P'`: pcapng, Linux cooked v2 (what
    /// tcpdump writes for `-i any` by default; dumpcap's default is v1).
    Dumpcap,
    /// `tcpdump -i any -y LINUX_SLL -s 0 -w FILE tcp port P`: pcap, Linux cooked v1 (SLL).
    TcpdumpAny,
}

impl Sniffer {
    /// Starts capturing TCP to or from `port` into `file`; returns once the tool says it is.
    pub fn start(tool: Tool, port: u16, file: &Path) -> Sniffer {
        let log = file.with_extension("log");
        let filter = format!("tcp port {port}");
        let (bin, args): (&str, Vec<String>) = match tool {
            Tool::Tcpdump => (
                "tcpdump",
                vec![
                    "-i".into(),
                    "lo".into(),
                    "-Z".into(),
                    "root".into(),
                    // 32 MiB of kernel buffer: fewer drops on a loaded machine.
                    "-B".into(),
                    "32768".into(),
                    "-s".into(),
                    "0".into(),
                    "-U".into(),
                    "-w".into(),
                    file.display().to_string(),
                    filter,
                ],
            ),
            Tool::TcpdumpAny => (
                "tcpdump",
                [
                    "-i",
                    "any",
                    "-y",
                    "LINUX_SLL",
                    "-Z",
                    "root",
                    "-B",
                    "32768",
                    "-s",
                    "0",
                    "--immediate-mode",
                    "-w",
                ]
                .iter()
                .map(|a| a.to_string())
                .chain([file.display().to_string(), filter.clone()])
                .collect(),
            ),
            Tool::Dumpcap => (
                "dumpcap",
                vec![
                    "-i".into(),
                    "any".into(),
                    "-y".into(),
                    "LINUX_SLL2".into(),
                    "-s".into(),
                    "0".into(),
                    "-w".into(),
                    file.display().to_string(),
                    "-f".into(),
                    filter,
                ],
            ),
        };
        let stderr = File::create(&log).expect("sniffer log");
        let child = Command::new(bin)
            .args(&args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {bin} ({e}): run tools/setup capture"));
        let mut s = Sniffer {
            child: Some(child),
            file: file.to_owned(),
            log,
            stopped_log: Default::default(),
        };
        s.wait_ready(bin);
        s
    }

    fn wait_ready(&mut self, bin: &str) {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let text = std::fs::read_to_string(&self.log).unwrap_or_default();
            if text.contains("listening on") || text.contains("Capturing on") {
                // The filter is attached by now; a moment more for the socket to be live (with
                // 300 ms, `tcpdump -i any` missed the first packets of a run).
                std::thread::sleep(Duration::from_millis(1000));
                return;
            }
            if let Some(status) = self.child.as_mut().unwrap().try_wait().unwrap() {
                panic!("{bin} exited ({status}) before capturing: {text}");
            }
            assert!(
                Instant::now() < deadline,
                "{bin} did not start capturing: {text}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Stops the capture (SIGTERM) and returns the file. libpcap hands packets over in blocks,
    /// at the latest after its buffer timeout (1 s): the last ones are waited for first.
    pub fn stop(mut self) -> PathBuf {
        std::thread::sleep(Duration::from_millis(1500));
        let mut child = self.child.take().unwrap();
        super::process::send_signal(child.id(), libc::SIGTERM);
        let status = child.wait().expect("wait for the sniffer");
        let log = std::fs::read_to_string(&self.log).unwrap_or_default();
        assert!(
            status.success() || status.code().is_none(),
            "sniffer: {status}: {log}"
        );
        *self.stopped_log.lock().unwrap() = log;
        self.file.clone()
    }

    /// Stops the capture; the file and the packets the kernel dropped, as the tool reported them
    /// (`N packets dropped by kernel` from tcpdump, `received/dropped` from dumpcap).
    pub fn stop_counting_drops(self) -> (PathBuf, u64) {
        let log = self.stopped_log.clone();
        let file = self.stop();
        let text = log.lock().unwrap().clone();
        (file, dropped(&text))
    }
}

/// The drops a sniffer's last words report.
fn dropped(log: &str) -> u64 {
    let mut total = 0;
    for line in log.lines() {
        if let Some(n) = line.strip_suffix(" packets dropped by kernel") {
            total += n.trim().parse::<u64>().unwrap_or(0);
        }
        // dumpcap: "Packets received/dropped on interface 'any': 350/0 (...)"
        if let Some(rest) = line
            .split("': ")
            .nth(1)
            .filter(|_| line.contains("received/dropped"))
        {
            let pair = rest.split(' ').next().unwrap_or("");
            total += pair
                .split('/')
                .nth(1)
                .and_then(|d| d.parse().ok())
                .unwrap_or(0);
        }
    }
    total
}

impl Drop for Sniffer {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// `mongotape record --interface IFACE --server-port PORT -o CAPTURE [EXTRA...]`, running; started
/// once it says it is sniffing (tcpdump capturing), stopped by SIGINT.
pub struct LiveRecord {
    child: Option<Child>,
    log: super::process::OutputLog,
}

impl LiveRecord {
    pub fn start(interface: &str, port: u16, capture: &Path, extra: &[&str]) -> LiveRecord {
        LiveRecord::start_env(interface, port, capture, extra, &[])
    }

    /// As [`LiveRecord::start`], with these variables in its environment (`MONGOTAPE_TCPDUMP`).
    pub fn start_env(
        interface: &str,
        port: u16,
        capture: &Path,
        extra: &[&str],
        env: &[(&str, &str)],
    ) -> LiveRecord {
        let mut child = Command::new(super::cli::mongotape_bin())
            .envs(env.iter().copied())
            .args(["record", "--interface", interface, "--server-port"])
            .arg(port.to_string())
            .arg("-o")
            .arg(capture)
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start mongotape record --interface");
        let log = super::process::OutputLog::default();
        let (tx, lines) = std::sync::mpsc::channel();
        super::process::drain_lines(child.stdout.take().unwrap(), log.clone(), None);
        super::process::drain_lines(child.stderr.take().unwrap(), log.clone(), Some(tx));
        super::process::wait_for_line(
            "mongotape record --interface",
            &mut child,
            &lines,
            &log,
            |l| l.starts_with("mongotape: sniffing").then_some(()),
        );
        LiveRecord {
            child: Some(child),
            log,
        }
    }

    /// What it printed so far.
    pub fn log(&self) -> String {
        self.log.text()
    }

    /// Waits for it to end by itself (`--duration`); its exit status and output.
    pub fn wait(mut self, timeout: Duration) -> (std::process::ExitStatus, String) {
        let mut child = self.child.take().unwrap();
        let status = super::process::wait_timeout(&mut child, timeout).unwrap_or_else(|| {
            let _ = child.kill();
            panic!(
                "mongotape record --interface did not end:\n{}",
                self.log.text()
            )
        });
        std::thread::sleep(Duration::from_millis(100));
        (status, self.log.text())
    }

    /// Sends `signal` and returns at once.
    pub fn signal(&self, signal: libc::c_int) {
        super::process::send_signal(self.child.as_ref().unwrap().id(), signal);
    }

    /// SIGINT, then waits; its exit status and output.
    pub fn stop(mut self) -> (std::process::ExitStatus, String) {
        let pid = self.child.as_ref().unwrap().id();
        super::process::send_signal(pid, libc::SIGINT);
        let child = self.child.take();
        self.child = child;
        self.wait(super::process::STOP_TIMEOUT)
    }
}

impl Drop for LiveRecord {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
