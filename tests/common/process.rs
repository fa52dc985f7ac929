//! Child processes: output drained by threads (no pipe ever fills), waiting with a deadline,
//! signals by pid, the "listening on ADDR" line, and [`run_command`] for commands that finish.

use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

/// How long a server or the proxy may take to print its listening address.
pub const START_TIMEOUT: Duration = Duration::from_secs(20);
/// How long a stopped proxy may take to exit after SIGTERM before it gets SIGKILL.
pub const STOP_TIMEOUT: Duration = Duration::from_secs(10);

/// Output collected from a child by a background thread.
#[derive(Clone, Default)]
pub struct OutputLog(Arc<Mutex<String>>);

impl OutputLog {
    pub fn text(&self) -> String {
        self.0.lock().unwrap().clone()
    }

    fn push_line(&self, line: &str) {
        let mut text = self.0.lock().unwrap();
        text.push_str(line);
        text.push('\n');
    }
}

/// Reads `pipe` line by line into `log` until EOF; each line is also offered to `lines` while the
/// receiver listens (used to spot the "listening on" line).
pub(super) fn drain_lines<R: Read + Send + 'static>(
    pipe: R,
    log: OutputLog,
    lines: Option<mpsc::Sender<String>>,
) -> JoinHandle<()> {
    thread::spawn(move || {
        let mut reader = BufReader::new(pipe);
        let mut buf = Vec::new();
        loop {
            buf.clear();
            match reader.read_until(b'\n', &mut buf) {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    let line = String::from_utf8_lossy(&buf);
                    let line = line.trim_end_matches(['\n', '\r']);
                    log.push_line(line);
                    if let Some(tx) = &lines {
                        let _ = tx.send(line.to_string());
                    }
                }
            }
        }
    })
}

/// Waits for `child` until `timeout`; `None` if it is still running.
pub(super) fn wait_timeout(child: &mut Child, timeout: Duration) -> Option<ExitStatus> {
    let deadline = Instant::now() + timeout;
    loop {
        match child.try_wait().expect("wait for a child process") {
            Some(status) => return Some(status),
            None if Instant::now() >= deadline => return None,
            None => thread::sleep(Duration::from_millis(10)),
        }
    }
}

pub(super) fn send_signal(pid: u32, signal: libc::c_int) {
    // SAFETY: kill(2) has no memory-safety preconditions; the pid is a child we spawned and have
    // not reaped yet, so it cannot have been reused.
    unsafe {
        libc::kill(pid as libc::pid_t, signal);
    }
}

/// Waits for the line matching `parse` on `lines`; panics with the child's output if the child exits
/// or the timeout passes first.
pub(super) fn wait_for_line<T>(
    what: &str,
    child: &mut Child,
    lines: &mpsc::Receiver<String>,
    log: &OutputLog,
    parse: impl Fn(&str) -> Option<T>,
) -> T {
    let deadline = Instant::now() + START_TIMEOUT;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match lines.recv_timeout(left.min(Duration::from_millis(100))) {
            Ok(line) => {
                if let Some(found) = parse(&line) {
                    return found;
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                let status = wait_timeout(child, Duration::from_secs(5)).or_else(|| {
                    let _ = child.kill();
                    child.wait().ok()
                });
                panic!(
                    "{what} closed its output before printing its address (exit: {status:?}); output:\n{}",
                    log.text()
                );
            }
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "{what} did not print its address within {START_TIMEOUT:?}; output:\n{}",
                log.text()
            );
        }
        if let Ok(Some(status)) = child.try_wait() {
            // Let the drain threads catch up so the panic shows the last words.
            thread::sleep(Duration::from_millis(200));
            panic!(
                "{what} exited ({status}) before printing its address; output:\n{}",
                log.text()
            );
        }
    }
}

/// `(ADDR, PORT)` from a line `PREFIX ADDR`, e.g. `mongotape: listening on 127.0.0.1:PORT`.
/// The prefix may come after other text (a log timestamp).
pub(super) fn parse_listen_line(line: &str, prefix: &str) -> Option<(String, u16)> {
    let rest = &line[line.find(prefix)? + prefix.len()..];
    let addr = rest.split_whitespace().next()?;
    let port = addr.rsplit_once(':')?.1.parse().ok()?;
    Some((addr.to_string(), port))
}

/// The result of a finished command.
#[derive(Debug)]
pub struct CommandOutput {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
}

impl CommandOutput {
    pub fn success(&self) -> bool {
        self.status.success()
    }
}

/// Runs `command` to completion with stdin closed, killing its whole process group if it outlives
/// `timeout` (a panic then, with the output so far).
pub fn run_command(command: Command, timeout: Duration) -> CommandOutput {
    run_waiting(command, timeout, |child| {
        child.try_wait().expect("wait for a child process")
    })
}

/// [`run_command`], and the child's peak resident memory in bytes.
///
/// wait4(2)'s `ru_maxrss` of that one process is exact, except that Linux starts a spawned child's
/// figure at the spawning process's own high-water mark: when the test process has been bigger
/// than the child, the child's `VmHWM` sampled from `/proc` every 10 ms is used instead.
pub fn run_command_peak_rss(command: Command, timeout: Duration) -> (CommandOutput, u64) {
    let parent_hwm = vm_hwm("self").unwrap_or(u64::MAX);
    let (mut sampled, mut waited) = (0, 0);
    let out = run_waiting(command, timeout, |child| {
        if let Some(hwm) = vm_hwm(&child.id().to_string()) {
            sampled = sampled.max(hwm);
        }
        let mut status = 0;
        // SAFETY: a zeroed rusage is a valid value of this plain C struct.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: wait4(2) on our own unreaped child with valid out-pointers; once it has reaped
        // the child, `Child` is never waited on again (run_waiting stops polling).
        let pid = unsafe {
            libc::wait4(
                child.id() as libc::pid_t,
                &mut status,
                libc::WNOHANG,
                &mut usage,
            )
        };
        assert!(pid >= 0, "wait4: {}", std::io::Error::last_os_error());
        (pid != 0).then(|| {
            waited = usage.ru_maxrss as u64 * 1024;
            ExitStatus::from_raw(status)
        })
    });
    let peak = if waited > parent_hwm { waited } else { sampled };
    (out, peak)
}

/// `VmHWM` of /proc/PID/status in bytes (`None` once the process has exited).
fn vm_hwm(pid: &str) -> Option<u64> {
    proc_status_kb(pid, "VmHWM:").map(|kb| kb * 1024)
}

/// A `NAME: N kB` field of /proc/PID/status.
fn proc_status_kb(pid: &str, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// (current, peak) resident memory of a running process, in MB.
pub fn rss_mb(pid: u32) -> (f64, f64) {
    let mb = |field| {
        proc_status_kb(&pid.to_string(), field)
            .unwrap_or_else(|| panic!("no {field} for process {pid}")) as f64
            / 1024.0
    };
    (mb("VmRSS:"), mb("VmHWM:"))
}

/// Runs `command` to completion, polling `try_wait` (which reaps the child when it has exited).
fn run_waiting(
    mut command: Command,
    timeout: Duration,
    mut try_wait: impl FnMut(&mut Child) -> Option<ExitStatus>,
) -> CommandOutput {
    let started = Instant::now();
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0); // its own group, so a timeout can take down what it spawned too
    let mut child = command
        .spawn()
        .unwrap_or_else(|err| panic!("start {command:?}: {err}"));
    let stdout = read_all_in_thread(child.stdout.take().unwrap());
    let stderr = read_all_in_thread(child.stderr.take().unwrap());
    let deadline = Instant::now() + timeout;
    let status = loop {
        if let Some(status) = try_wait(&mut child) {
            break Some(status);
        }
        if Instant::now() >= deadline {
            break None;
        }
        thread::sleep(Duration::from_millis(10));
    };
    let status = match status {
        Some(status) => status,
        None => {
            send_signal_group(child.id(), libc::SIGKILL);
            let _ = child.wait();
            let (out, err) = (join_text(stdout), join_text(stderr));
            panic!("{command:?} still running after {timeout:?}, killed.\nstdout:\n{out}\nstderr:\n{err}");
        }
    };
    CommandOutput {
        status,
        stdout: join_text(stdout),
        stderr: join_text(stderr),
        elapsed: started.elapsed(),
    }
}

fn send_signal_group(pgid: u32, signal: libc::c_int) {
    // SAFETY: as in `send_signal`; a negative pid addresses the process group we created.
    unsafe {
        libc::kill(-(pgid as libc::pid_t), signal);
    }
}

fn read_all_in_thread<R: Read + Send + 'static>(mut pipe: R) -> JoinHandle<Vec<u8>> {
    thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = pipe.read_to_end(&mut buf);
        buf
    })
}

fn join_text(handle: JoinHandle<Vec<u8>>) -> String {
    String::from_utf8_lossy(&handle.join().unwrap_or_default()).into_owned()
}

/// Whether a status is "killed by `signal`".
pub fn killed_by(status: &ExitStatus, signal: libc::c_int) -> bool {
    status.signal() == Some(signal)
}
