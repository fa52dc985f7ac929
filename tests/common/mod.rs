//! Shared harness for the black-box integration tests.
//!
//! - [`Server`]: a `secantusd-rs` process on `127.0.0.1:0` with its own storage directory.
//! - [`Proxy`]: the `mongotape record` binary in front of a server.
//! - [`run_client`]: one workload through a real client (pymongo, mongosh, PHP) via `tools/workloads/run`.
//! - [`python`], [`dump_db`]: inline pymongo snippets, and a whole-database dump to compare two servers.
//!
//! Missing tools are a failure with a pointer to `tools/setup`, never a silent skip. Every process is
//! started by the harness, stopped by its pid, and reaped; child output is drained by threads so no
//! pipe ever fills.

#![allow(dead_code)]

use std::collections::HashMap;
use std::ffi::OsStr;
use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

/// How long a server or the proxy may take to print its listening address.
pub const START_TIMEOUT: Duration = Duration::from_secs(20);
/// How long a stopped proxy may take to exit after SIGTERM before it gets SIGKILL.
pub const STOP_TIMEOUT: Duration = Duration::from_secs(10);
/// Upper bound for one client workload run or python snippet; a hang fails the test instead of the CI job.
pub const CLIENT_TIMEOUT: Duration = Duration::from_secs(300);

const SETUP_HINT: &str = "run tools/setup";

/// The repository checkout (where Cargo.toml is).
pub fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A fresh temporary directory, deleted when the value is dropped.
pub fn tempdir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("mongotape-test-")
        .tempdir()
        .expect("create a temporary directory")
}

// ------------------------------------------------------------------------------------------------
// Child processes

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
fn drain_lines<R: Read + Send + 'static>(
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
fn wait_timeout(child: &mut Child, timeout: Duration) -> Option<ExitStatus> {
    let deadline = Instant::now() + timeout;
    loop {
        match child.try_wait().expect("wait for a child process") {
            Some(status) => return Some(status),
            None if Instant::now() >= deadline => return None,
            None => thread::sleep(Duration::from_millis(10)),
        }
    }
}

fn send_signal(pid: u32, signal: libc::c_int) {
    // SAFETY: kill(2) has no memory-safety preconditions; the pid is a child we spawned and have
    // not reaped yet, so it cannot have been reused.
    unsafe {
        libc::kill(pid as libc::pid_t, signal);
    }
}

/// Waits for the line matching `parse` on `lines`; panics with the child's output if the child exits
/// or the timeout passes first.
fn wait_for_line<T>(
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
fn parse_listen_line(line: &str, prefix: &str) -> Option<(String, u16)> {
    let rest = &line[line.find(prefix)? + prefix.len()..];
    let addr = rest.split_whitespace().next()?;
    let port = addr.rsplit_once(':')?.1.parse().ok()?;
    Some((addr.to_string(), port))
}

// ------------------------------------------------------------------------------------------------
// The server

/// Where secantusd-rs is: `$MONGOTAPE_SECANTUSD`, else what tools/setup installed
/// (`${MONGOTAPE_TOOLS:-/opt/mongotape}/secantus-VERSION/bin/secantusd-rs`, preferring the version
/// tools/setup pins), else `PATH`. Panics when there is none.
pub fn secantusd_path() -> PathBuf {
    if let Some(path) = std::env::var_os("MONGOTAPE_SECANTUSD") {
        let path = PathBuf::from(path);
        assert!(
            path.is_file(),
            "MONGOTAPE_SECANTUSD={} is not a file: {SETUP_HINT}",
            path.display()
        );
        return path;
    }
    let tools = std::env::var_os("MONGOTAPE_TOOLS").unwrap_or_else(|| "/opt/mongotape".into());
    let mut installed: Vec<PathBuf> = std::fs::read_dir(&tools)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|entry| entry.file_name().to_string_lossy().starts_with("secantus-"))
        .map(|entry| entry.path().join("bin/secantusd-rs"))
        .filter(|path| path.is_file())
        .collect();
    installed.sort();
    let pinned = pinned_secantus_version().map(|version| format!("secantus-{version}"));
    if let Some(path) = installed
        .iter()
        .find(|path| {
            pinned
                .as_deref()
                .is_some_and(|dir| path.starts_with(Path::new(&tools).join(dir)))
        })
        .or(installed.last())
    {
        return path.clone();
    }
    find_in_path("secantusd-rs").unwrap_or_else(|| {
        panic!("secantusd-rs not found: {SETUP_HINT} (or set MONGOTAPE_SECANTUSD)")
    })
}

/// `SECANTUS_VERSION="..."` from tools/setup.
fn pinned_secantus_version() -> Option<String> {
    let setup = std::fs::read_to_string(workspace_root().join("tools/setup")).ok()?;
    let line = setup
        .lines()
        .find(|line| line.starts_with("SECANTUS_VERSION="))?;
    Some(
        line["SECANTUS_VERSION=".len()..]
            .trim_matches('"')
            .to_string(),
    )
}

fn find_in_path(name: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join(name))
        .find(|path| path.is_file())
}

/// A secantusd-rs process on an ephemeral loopback port. Killed (by pid) and reaped on drop.
pub struct Server {
    child: Child,
    addr: String,
    port: u16,
    standalone: bool,
    log: OutputLog,
    storage: tempfile::TempDir,
}

impl Server {
    /// The default mode: a one-node replica set (`secantus`), so transactions work.
    pub fn start() -> Server {
        Server::start_with(&[])
    }

    /// With extra flags, e.g. `&["--standalone"]`.
    pub fn start_with(args: &[&str]) -> Server {
        Server::start_binary(&secantusd_path(), args)
    }

    /// A given server binary (same flags and output as secantusd-rs, e.g. secantusd-py).
    pub fn start_binary(binary: &Path, args: &[&str]) -> Server {
        let storage = tempdir();
        let mut child = Command::new(binary)
            .args(["--host", "127.0.0.1", "--port", "0", "--storage-path"])
            .arg(storage.path())
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|err| panic!("start {}: {err}", binary.display()));
        let log = OutputLog::default();
        let (tx, lines) = mpsc::channel();
        drain_lines(child.stdout.take().unwrap(), log.clone(), Some(tx.clone()));
        drain_lines(child.stderr.take().unwrap(), log.clone(), Some(tx));
        let (addr, port) = wait_for_line("secantusd-rs", &mut child, &lines, &log, |line| {
            parse_listen_line(line, "secantusd-rs listening on")
        });
        Server {
            child,
            addr,
            port,
            standalone: args.contains(&"--standalone"),
            log,
            storage,
        }
    }

    /// `127.0.0.1:PORT`.
    pub fn addr(&self) -> &str {
        &self.addr
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn is_standalone(&self) -> bool {
        self.standalone
    }

    /// A connection string every client accepts in both modes; it always has a query string, so
    /// options can be appended as `&compressors=zstd`. `directConnection=true` matters in
    /// replica-set mode: without it a driver would follow the member list from `hello` and could
    /// bypass whatever sits at this address (the proxy uses [`uri_for`] the same way).
    pub fn uri(&self) -> String {
        uri_for(&self.addr)
    }

    pub fn storage_path(&self) -> &Path {
        self.storage.path()
    }

    /// Everything the server printed so far (stdout and stderr interleaved by line).
    pub fn log(&self) -> String {
        self.log.text()
    }

    /// Whether the process is still running.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        // Storage is thrown away with the temp dir, so no clean shutdown is needed.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The connection string for a server or proxy listening at `addr`.
pub fn uri_for(addr: &str) -> String {
    format!("mongodb://{addr}/?directConnection=true")
}

// ------------------------------------------------------------------------------------------------
// The proxy

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

    /// SIGKILL: the recorder gets no chance to flush or write its `end` record.
    pub fn kill9(mut self) -> ProxyExit {
        self.finish(libc::SIGKILL)
    }

    fn finish(&mut self, signal: libc::c_int) -> ProxyExit {
        let mut child = self.child.take().expect("proxy already stopped");
        send_signal(child.id(), signal);
        let (status, killed) = match wait_timeout(&mut child, STOP_TIMEOUT) {
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

/// The mongotape binary built for these tests.
pub fn mongotape_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_mongotape"))
}

/// Whether a status is "killed by `signal`".
pub fn killed_by(status: &ExitStatus, signal: libc::c_int) -> bool {
    status.signal() == Some(signal)
}

// ------------------------------------------------------------------------------------------------
// Running commands with a deadline

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
pub fn run_command(mut command: Command, timeout: Duration) -> CommandOutput {
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
    let status = match wait_timeout(&mut child, timeout) {
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

// ------------------------------------------------------------------------------------------------
// Real clients

/// The real clients a workload can run through.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Client {
    Pymongo,
    Mongosh,
    Php,
}

impl Client {
    pub const ALL: [Client; 3] = [Client::Pymongo, Client::Mongosh, Client::Php];

    /// The name `tools/workloads/run` takes.
    pub fn name(self) -> &'static str {
        match self {
            Client::Pymongo => "pymongo",
            Client::Mongosh => "mongosh",
            Client::Php => "php",
        }
    }

    /// Panics with a pointer to tools/setup when the client is not installed.
    pub fn require_installed(self) {
        let (command, args, check): (&str, &[&str], fn(&str) -> bool) = match self {
            Client::Pymongo => (
                "python3",
                &["-c", "import pymongo; print(pymongo.version)"],
                |_| true,
            ),
            Client::Mongosh => ("mongosh", &["--version"], |_| true),
            Client::Php => ("php", &["-m"], |out| {
                out.lines().any(|line| line.trim() == "mongodb")
            }),
        };
        let output = Command::new(command)
            .args(args)
            .stdin(Stdio::null())
            .output();
        let ok = matches!(&output, Ok(out) if out.status.success()
            && check(&String::from_utf8_lossy(&out.stdout)));
        assert!(
            ok,
            "client {} is not installed ({command} {}: {}): {SETUP_HINT}",
            self.name(),
            args.join(" "),
            match &output {
                Ok(out) => String::from_utf8_lossy(&out.stderr).trim().to_string(),
                Err(err) => err.to_string(),
            }
        );
    }
}

/// Panics unless every client is installed.
pub fn require_clients() {
    for client in Client::ALL {
        client.require_installed();
    }
}

/// One step a workload reported: a JSON line `{"step", "ops", "seconds", "result"}`.
#[derive(Clone, Debug)]
pub struct Step {
    pub step: String,
    pub ops: u64,
    pub seconds: f64,
    pub result: serde_json::Value,
}

/// A finished workload run.
#[derive(Debug)]
pub struct ClientRun {
    pub client: Client,
    pub workload: String,
    pub steps: Vec<Step>,
    pub stdout: String,
    pub stderr: String,
    pub status: ExitStatus,
    pub elapsed: Duration,
}

impl ClientRun {
    pub fn step(&self, name: &str) -> &Step {
        self.steps
            .iter()
            .find(|step| step.step == name)
            .unwrap_or_else(|| {
                panic!(
                    "{} {}: no step {name:?} in {:?}",
                    self.client.name(),
                    self.workload,
                    self.steps
                )
            })
    }

    pub fn total_ops(&self) -> u64 {
        self.steps.iter().map(|step| step.ops).sum()
    }

    /// Step name to result, for comparing two runs.
    pub fn results(&self) -> HashMap<String, serde_json::Value> {
        self.steps
            .iter()
            .map(|step| (step.step.clone(), step.result.clone()))
            .collect()
    }
}

/// Runs `tools/workloads/run CLIENT WORKLOAD --uri URI --db DB --scale S`; panics (with stderr) on
/// failure or when no step was reported.
pub fn run_client(client: Client, workload: &str, uri: &str, db: &str, scale: f64) -> ClientRun {
    let run = try_run_client(client, workload, uri, db, scale);
    assert!(
        run.status.success() && !run.steps.is_empty(),
        "{} {workload} against {uri} failed ({}, {} steps).\nstderr:\n{}\nstdout:\n{}",
        client.name(),
        run.status,
        run.steps.len(),
        run.stderr,
        run.stdout
    );
    run
}

/// Like [`run_client`] without judging the outcome (for runs expected to fail).
pub fn try_run_client(
    client: Client,
    workload: &str,
    uri: &str,
    db: &str,
    scale: f64,
) -> ClientRun {
    client.require_installed();
    let script = workspace_root().join("tools/workloads/run");
    assert!(script.is_file(), "{} is missing", script.display());
    let mut command = Command::new(&script);
    command
        .args([client.name(), workload, "--uri", uri, "--db", db, "--scale"])
        .arg(scale.to_string())
        .current_dir(workspace_root());
    let output = run_command(command, CLIENT_TIMEOUT);
    let steps = parse_steps(&output.stdout).unwrap_or_else(|err| {
        panic!(
            "{} {workload}: {err}\nstdout:\n{}",
            client.name(),
            output.stdout
        )
    });
    ClientRun {
        client,
        workload: workload.to_string(),
        steps,
        stdout: output.stdout,
        stderr: output.stderr,
        status: output.status,
        elapsed: output.elapsed,
    }
}

/// The step lines of a workload's stdout. Lines that are not JSON objects are ignored (a client may
/// print banners); a JSON object with a `step` but malformed fields is an error.
pub fn parse_steps(stdout: &str) -> Result<Vec<Step>, String> {
    let mut steps = Vec::new();
    for line in stdout
        .lines()
        .map(str::trim)
        .filter(|line| line.starts_with('{'))
    {
        let Ok(serde_json::Value::Object(fields)) = serde_json::from_str::<serde_json::Value>(line)
        else {
            continue;
        };
        let Some(step) = fields.get("step") else {
            continue;
        };
        let step = step
            .as_str()
            .ok_or_else(|| format!("step is not a string: {line}"))?;
        let ops = match fields.get("ops") {
            Some(value) => value
                .as_u64()
                .or_else(|| {
                    value
                        .as_f64()
                        .filter(|ops| *ops >= 0.0)
                        .map(|ops| ops as u64)
                })
                .ok_or_else(|| format!("ops is not a count: {line}"))?,
            None => return Err(format!("no ops: {line}")),
        };
        let seconds = fields
            .get("seconds")
            .and_then(serde_json::Value::as_f64)
            .ok_or_else(|| format!("seconds is not a number: {line}"))?;
        steps.push(Step {
            step: step.to_string(),
            ops,
            seconds,
            result: fields
                .get("result")
                .cloned()
                .unwrap_or(serde_json::Value::Null),
        });
    }
    Ok(steps)
}

// ------------------------------------------------------------------------------------------------
// Inline python (pymongo)

/// Runs `python3 -c SCRIPT ARGS...` and returns stdout; panics with stderr on failure.
pub fn python<S: AsRef<OsStr>>(script: &str, args: &[S]) -> String {
    let output = try_python(script, args);
    assert!(
        output.success(),
        "python3 failed ({}):\n{}\nscript:\n{script}",
        output.status,
        output.stderr
    );
    output.stdout
}

/// Like [`python`] without judging the outcome.
pub fn try_python<S: AsRef<OsStr>>(script: &str, args: &[S]) -> CommandOutput {
    let mut command = Command::new("python3");
    command.arg("-c").arg(script).args(args);
    run_command(command, CLIENT_TIMEOUT)
}

/// Runs a script that prints one JSON document (extended JSON is fine) and parses it.
pub fn python_json<S: AsRef<OsStr>>(script: &str, args: &[S]) -> serde_json::Value {
    let stdout = python(script, args);
    serde_json::from_str(stdout.trim())
        .unwrap_or_else(|err| panic!("python output is not JSON ({err}):\n{stdout}"))
}

/// Runs one command against the `admin` database with pymongo; the reply as relaxed extended JSON.
pub fn admin_command(uri: &str, command: &str) -> serde_json::Value {
    python_json(
        "import sys, json\n\
         from pymongo import MongoClient\n\
         from bson import json_util\n\
         client = MongoClient(sys.argv[1], serverSelectionTimeoutMS=10000)\n\
         reply = client.admin.command(json.loads(sys.argv[2]))\n\
         print(json_util.dumps(reply, json_options=json_util.RELAXED_JSON_OPTIONS))\n",
        &[uri, command],
    )
}

/// `ping` through pymongo; panics when the server does not answer `ok: 1`.
pub fn ping(uri: &str) {
    let reply = admin_command(uri, r#"{"ping": 1}"#);
    assert_eq!(reply["ok"].as_f64(), Some(1.0), "ping {uri}: {reply}");
}

const DUMP_DB: &str = r#"
import sys
from pymongo import MongoClient
from bson import json_util
from bson.son import SON

client = MongoClient(sys.argv[1], serverSelectionTimeoutMS=10000)
db = client[sys.argv[2]]
collections = SON()
for info in sorted(db.list_collections(), key=lambda info: info["name"]):
    name = info["name"]
    entry = SON([("type", info.get("type", "collection")), ("options", info.get("options", {}))])
    if entry["type"] == "collection":
        indexes = []
        for index in db[name].list_indexes():
            index = SON((k, v) for k, v in index.items() if k not in ("v", "ns"))
            indexes.append(index)
        entry["indexes"] = sorted(indexes, key=lambda index: index["name"])
    # Views have no _id order of their own; their content is compared through the collections.
    if entry["type"] != "view":
        entry["documents"] = list(db[name].find({}).sort("_id", 1))
    collections[name] = entry
print(json_util.dumps(SON([("db", sys.argv[2]), ("collections", collections)]),
                      json_options=json_util.CANONICAL_JSON_OPTIONS))
"#;

/// The whole database as canonical extended JSON text: every collection (sorted by name) with its
/// type, options, indexes (sorted by name, without `v`/`ns`) and documents sorted by `_id` (server
/// order), field order kept. Types survive (`{"$numberInt": "1"}` is not `{"$numberDouble": "1.0"}`).
pub fn dump_db_json(uri: &str, db: &str) -> String {
    python(DUMP_DB, &[uri, db])
}

/// [`dump_db_json`] parsed: `{"db": NAME, "collections": {NAME: {"type", "options", "indexes",
/// "documents"}}}`. Note that `serde_json::Value` compares objects without regard to key order; use
/// [`dump_db_json`] when field order matters.
pub fn dump_db(uri: &str, db: &str) -> serde_json::Value {
    let text = dump_db_json(uri, db);
    serde_json::from_str(text.trim())
        .unwrap_or_else(|err| panic!("dump of {db} is not JSON ({err})"))
}

/// Panics with the first difference between two dumps (collection by collection, document by
/// document), which is far easier to read than two whole dumps.
pub fn assert_same_db(left: &serde_json::Value, right: &serde_json::Value) {
    let empty = serde_json::Map::new();
    let collections = |dump: &serde_json::Value| {
        dump["collections"]
            .as_object()
            .cloned()
            .unwrap_or_else(|| empty.clone())
    };
    let (l, r) = (collections(left), collections(right));
    let lnames: Vec<_> = l.keys().collect();
    let rnames: Vec<_> = r.keys().collect();
    assert_eq!(lnames, rnames, "collections differ");
    for (name, lcoll) in &l {
        let rcoll = &r[name];
        for key in ["type", "options", "indexes"] {
            assert_eq!(lcoll[key], rcoll[key], "collection {name}: {key} differs");
        }
        let ldocs = lcoll["documents"].as_array().cloned().unwrap_or_default();
        let rdocs = rcoll["documents"].as_array().cloned().unwrap_or_default();
        for (i, (ld, rd)) in ldocs.iter().zip(&rdocs).enumerate() {
            assert_eq!(ld, rd, "collection {name}: document #{i} differs");
        }
        assert_eq!(
            ldocs.len(),
            rdocs.len(),
            "collection {name}: document counts differ"
        );
    }
}
