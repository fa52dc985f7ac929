//! The proxy under test: `mongotape record` in front of a server, stopped by SIGTERM (or SIGKILL).

use super::cli::mongotape_bin;
use super::process::{
    drain_lines, parse_listen_line, send_signal, wait_for_line, wait_timeout, OutputLog,
    STOP_TIMEOUT,
};
use super::server::uri_for;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::thread::{self, JoinHandle};
use std::time::Duration;

/// How a proxy process ended.
#[derive(Debug)]
pub struct ProxyExit {
    pub status: ExitStatus,
    pub stderr: String,
    /// True when the process had to be killed with SIGKILL after SIGTERM timed out.
    pub killed: bool,
}

/// `mongotape record --listen 127.0.0.1:0 --upstream ADDR --out FILE`. On drop: SIGTERM, up to
/// [`STOP_TIMEOUT`] to exit, then SIGKILL.
pub struct Proxy {
    child: Option<Child>,
    addr: String,
    port: u16,
    out: PathBuf,
    stderr: OutputLog,
    stdout: OutputLog,
    drains: Vec<JoinHandle<()>>,
}

impl Proxy {
    pub fn start(upstream: &str, out: &Path) -> Proxy {
        Proxy::start_with(upstream, out, &[])
    }

    /// With extra `record` arguments appended.
    pub fn start_with(upstream: &str, out: &Path, extra: &[&str]) -> Proxy {
        let mut command = Command::new(mongotape_bin());
        command
            .args([
                "record",
                "--listen",
                "127.0.0.1:0",
                "--upstream",
                upstream,
                "--out",
            ])
            .arg(out)
            .args(extra);
        Proxy::spawn(command, out)
    }

    /// Any `mongotape` command line that ends up listening (prints `mongotape: listening on ADDR`).
    pub fn spawn(mut command: Command, out: &Path) -> Proxy {
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|err| panic!("start {command:?}: {err}"));
        let stderr = OutputLog::default();
        let stdout = OutputLog::default();
        let (tx, lines) = mpsc::channel();
        let drains = vec![
            drain_lines(child.stderr.take().unwrap(), stderr.clone(), Some(tx)),
            drain_lines(child.stdout.take().unwrap(), stdout.clone(), None),
        ];
        let (addr, port) = wait_for_line("mongotape record", &mut child, &lines, &stderr, |line| {
            parse_listen_line(line, "mongotape: listening on")
        });
        Proxy {
            child: Some(child),
            addr,
            port,
            out: out.to_path_buf(),
            stderr,
            stdout,
            drains,
        }
    }

    /// `127.0.0.1:PORT` the proxy listens on.
    pub fn addr(&self) -> &str {
        &self.addr
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn uri(&self) -> String {
        uri_for(&self.addr)
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("proxy already stopped").id()
    }

    /// The capture file it writes.
    pub fn out(&self) -> &Path {
        &self.out
    }

    /// stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr.text()
    }

    pub fn stdout(&self) -> String {
        self.stdout.text()
    }

    /// SIGTERM, wait up to [`STOP_TIMEOUT`] (then SIGKILL); returns the status and all of stderr.
    pub fn stop(mut self) -> ProxyExit {
        self.finish(libc::SIGTERM)
    }

    /// SIGTERM, waiting up to `timeout`: a proxy with a large backlog to write (a debug build on a
    /// loaded machine writes tens of MB/s).
    pub fn stop_within(mut self, timeout: Duration) -> ProxyExit {
        self.finish_within(libc::SIGTERM, timeout)
    }

    /// Another stopping signal (SIGHUP, SIGINT), waited for as [`Proxy::stop`] waits.
    pub fn stop_with(mut self, signal: libc::c_int) -> ProxyExit {
        self.finish(signal)
    }

    /// SIGKILL: the recorder gets no chance to flush or write its `end` record.
    pub fn kill9(mut self) -> ProxyExit {
        self.finish(libc::SIGKILL)
    }

    fn finish(&mut self, signal: libc::c_int) -> ProxyExit {
        self.finish_within(signal, STOP_TIMEOUT)
    }

    fn finish_within(&mut self, signal: libc::c_int, timeout: Duration) -> ProxyExit {
        let mut child = self.child.take().expect("proxy already stopped");
        send_signal(child.id(), signal);
        let (status, killed) = match wait_timeout(&mut child, timeout) {
            Some(status) => (status, false),
            None => {
                send_signal(child.id(), libc::SIGKILL);
                (child.wait().expect("wait for the proxy"), true)
            }
        };
        for drain in self.drains.drain(..) {
            let _ = drain.join();
        }
        ProxyExit {
            status,
            stderr: self.stderr.text(),
            killed,
        }
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        if self.child.is_some() {
            let exit = self.finish(libc::SIGTERM);
            if exit.killed && !thread::panicking() {
                eprintln!(
                    "mongotape record ignored SIGTERM for {STOP_TIMEOUT:?}; stderr:\n{}",
                    exit.stderr
                );
            }
        }
    }
}
