//! The real clients (pymongo, mongosh, PHP, the Node.js and Rust drivers, the legacy C++ driver):
//! whether they are installed, and one workload run through `tools/workloads/run`, its step lines
//! parsed.

use super::process::run_command;
use super::{workspace_root, SETUP_HINT};
use std::collections::HashMap;
use std::path::PathBuf;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

/// Upper bound for one client workload run or python snippet; a hang fails the test instead of the CI job.
pub const CLIENT_TIMEOUT: Duration = Duration::from_secs(300);

/// The real clients a workload can run through.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Client {
    Pymongo,
    Mongosh,
    Php,
    Node,
    Rust,
    /// The legacy C++ driver (libmongoclient 1.1.3): OP_QUERY only, no TLS or compression options,
    /// no client metadata; not in [`Client::ALL`].
    CxxLegacy,
}

impl Client {
    /// The five current drivers, which run every workload with every URI option (TLS,
    /// compressors); [`Client::CxxLegacy`] is apart.
    pub const ALL: [Client; 5] = [
        Client::Pymongo,
        Client::Mongosh,
        Client::Php,
        Client::Node,
        Client::Rust,
    ];

    /// The name `tools/workloads/run` takes.
    pub fn name(self) -> &'static str {
        match self {
            Client::Pymongo => "pymongo",
            Client::Mongosh => "mongosh",
            Client::Php => "php",
            Client::Node => "node",
            Client::Rust => "rust",
            Client::CxxLegacy => "cxx-legacy",
        }
    }

    /// Panics with a pointer to tools/setup when the client is not installed (the Rust driver's
    /// client is built from this crate instead: [`rust_workload_bin`]; the C++ one by
    /// `tools/workloads/run`, which needs g++ and the driver's headers).
    pub fn require_installed(self) {
        if self == Client::Rust {
            rust_workload_bin();
            return;
        }
        let (command, args, check): (&str, &[&str], fn(&str) -> bool) = match self {
            Client::Pymongo => (
                "python3",
                &["-c", "import pymongo; print(pymongo.version)"],
                |_| true,
            ),
            Client::Mongosh => ("mongosh", &["--version"], |_| true),
            Client::CxxLegacy => (
                "sh",
                &[
                    "-c",
                    "command -v \"${CXX:-g++}\" && test -f /usr/include/mongo/client/dbclient.h",
                ],
                |_| true,
            ),
            Client::Php => ("php", &["-m"], |out| {
                out.lines().any(|line| line.trim() == "mongodb")
            }),
            // tools/workloads/node/common.js loads the driver from the same place.
            Client::Node => (
                "node",
                &[
                    "-e",
                    "const p = require('path'); \
                     const m = process.env.MONGOTAPE_NODE_MODULES || p.join(process.env.MONGOTAPE_TOOLS \
                     || '/opt/mongotape', 'node', 'node_modules'); \
                     console.log(require(p.join(m, 'mongodb', 'package.json')).version)",
                ],
                |_| true,
            ),
            Client::Rust => unreachable!("built, not installed"),
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

/// The Rust driver's workload client (`examples/workload.rs`), built once per test binary with the
/// tests' own profile (whose dependencies, the driver among them, are already compiled), beside the
/// mongotape binary the tests use. `tools/workloads/run rust` runs it through
/// `$MONGOTAPE_RUST_WORKLOAD`.
pub fn rust_workload_bin() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let profile_dir = PathBuf::from(env!("CARGO_BIN_EXE_mongotape"))
                .parent()
                .expect("the mongotape binary's directory")
                .to_path_buf();
            let mut command = Command::new(env!("CARGO"));
            command
                .args(["build", "--quiet", "--example", "workload"])
                .current_dir(workspace_root());
            // Cargo gives the test process the package's own variables (CARGO_MANIFEST_DIR,
            // CARGO_PKG_NAME, OUT_DIR ...). Build scripts watch some of them (ring's
            // `rerun-if-env-changed`): inherited, they made this build recompile ring, rustls
            // and the driver, 5 minutes on a loaded 2-core machine, where it should be a link.
            for (name, _) in std::env::vars_os() {
                let name = name.to_string_lossy();
                if is_package_variable(&name) {
                    command.env_remove(name.as_ref());
                }
            }
            if profile_dir
                .file_name()
                .is_some_and(|name| name == "release")
            {
                command.arg("--release");
            }
            let out = run_command(command, CLIENT_TIMEOUT);
            assert!(
                out.success(),
                "cargo build --example workload failed:\n{}",
                out.stderr
            );
            let path = profile_dir.join("examples").join("workload");
            assert!(path.is_file(), "{} was not built", path.display());
            path
        })
        .clone()
}

/// A variable cargo sets for the package whose test runs, never for a build it starts.
fn is_package_variable(name: &str) -> bool {
    name.starts_with("CARGO_PKG_")
        || name.starts_with("CARGO_MANIFEST_")
        || matches!(
            name,
            "CARGO_CRATE_NAME" | "CARGO_PRIMARY_PACKAGE" | "CARGO_TARGET_TMPDIR" | "OUT_DIR"
        )
}

/// Panics unless every client is installed (the legacy C++ driver too).
pub fn require_clients() {
    for client in Client::ALL {
        client.require_installed();
    }
    Client::CxxLegacy.require_installed();
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
    if client == Client::Rust {
        command.env("MONGOTAPE_RUST_WORKLOAD", rust_workload_bin());
    }
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
