//! The test server: finding `secantusd-rs` and running it on `127.0.0.1:0` with its own storage.

use super::process::{drain_lines, parse_listen_line, wait_for_line, OutputLog};
use super::{tempdir, workspace_root, SETUP_HINT};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;

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
