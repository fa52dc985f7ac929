"""What the tools share: finding the server and the mongotape binaries, starting and stopping the
processes they run (secantusd-rs, `mongotape record`), and running commands that must succeed.

The tools import it by path:

    sys.path.insert(0, os.path.join(ROOT, "tools", "lib"))
    import harness

The server binary is found the way the Rust tests find it (tests/common/server.rs):
$MONGOTAPE_SECANTUSD, else what tools/setup installed under ${MONGOTAPE_TOOLS:-/opt/mongotape}
(the version tools/setup pins first, else the newest), else secantusd-rs on PATH.
`python3 tools/lib/harness.py secantusd` prints that path.

Every process is started here, stopped by its own pid (SIGTERM, then SIGKILL) and reaped; its output
goes to a log file, never to a pipe nobody drains.
"""
import glob
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# The running tool's name, for messages: compare-drivers, bench-replay, check-equal, ...
PROG = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else "mongotape-tools"
# How long a server or the proxy may take to print its listening line, and to exit after SIGTERM.
START_TIMEOUT_S = 30
STOP_TIMEOUT_S = 20


def log(msg):
    print("%s: %s" % (PROG, msg), file=sys.stderr, flush=True)


def die(msg):
    sys.exit("%s: %s" % (PROG, msg))


# ------------------------------------------------------------------------------------------------
# Finding binaries

def _pinned_secantus_version():
    """SECANTUS_VERSION="..." from tools/setup."""
    try:
        with open(os.path.join(ROOT, "tools", "setup")) as f:
            for line in f:
                if line.startswith("SECANTUS_VERSION="):
                    return line[len("SECANTUS_VERSION="):].strip().strip('"')
    except OSError:
        pass
    return None


def find_secantusd():
    """The secantusd-rs binary, or None (see the module's docstring for the order)."""
    path = os.environ.get("MONGOTAPE_SECANTUSD")
    if path:
        if not os.path.isfile(path):
            die("MONGOTAPE_SECANTUSD=%s is not a file: run tools/setup server" % path)
        return path
    tools = os.environ.get("MONGOTAPE_TOOLS", "/opt/mongotape")
    installed = sorted(p for p in glob.glob(os.path.join(tools, "secantus-*", "bin", "secantusd-rs"))
                       if os.path.isfile(p))
    pinned = _pinned_secantus_version()
    if pinned:
        path = os.path.join(tools, "secantus-" + pinned, "bin", "secantusd-rs")
        if path in installed:
            return path
    if installed:
        return installed[-1]
    return shutil.which("secantusd-rs")


def secantusd():
    """The secantusd-rs binary; exits with a pointer to tools/setup when there is none."""
    path = find_secantusd()
    if not path:
        die("secantusd-rs not found: run tools/setup server (or set MONGOTAPE_SECANTUSD)")
    return path


def target_dir():
    return os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))


def mongotape():
    """$MONGOTAPE, else the release build in the target directory."""
    return os.environ.get("MONGOTAPE") or os.path.join(target_dir(), "release", "mongotape")


def release_example(name):
    return os.path.join(target_dir(), "release", "examples", name)


def rust_workload():
    """The Rust driver's workload client (examples/workload.rs), built in release first, and exported
    as $MONGOTAPE_RUST_WORKLOAD so tools/workloads/run starts it without a cargo check each time."""
    path = os.environ.get("MONGOTAPE_RUST_WORKLOAD")
    if not path:
        cargo_build_release("--example", "workload")
        path = release_example("workload")
        os.environ["MONGOTAPE_RUST_WORKLOAD"] = path
    return path


def cargo_build_release(*args):
    """`cargo build --release --quiet ARGS` in the checkout; exits when it fails."""
    subprocess.run(["cargo", "build", "--release", "--quiet", *args], cwd=ROOT, check=True)


# ------------------------------------------------------------------------------------------------
# Processes

def run(argv, **kw):
    """Runs a command to completion; its stdout. Exits with the ends of its output when it fails."""
    r = subprocess.run(argv, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        die("%s failed (%d):\n%s\n%s" % (" ".join(argv), r.returncode, r.stdout[-3000:], r.stderr[-3000:]))
    return r.stdout


def tail(path, chars=3000):
    """The end of a log file ("" when it cannot be read)."""
    try:
        with open(path, errors="replace") as f:
            return f.read()[-chars:]
    except OSError:
        return ""


class Process:
    """A long-running child started by us that prints `PATTERN 127.0.0.1:PORT` once it listens.

    Output goes to `log_path`. Stopped by its own pid: SIGTERM, then SIGKILL after STOP_TIMEOUT_S.
    Usable as a context manager (stopped on exit)."""

    def __init__(self, argv, pattern, log_path):
        self.argv = argv
        self.log_path = log_path
        self.log = open(log_path, "w+")
        self.proc = subprocess.Popen(argv, stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        deadline = time.time() + START_TIMEOUT_S
        while time.time() < deadline:
            with open(log_path) as f:
                m = re.search(re.escape(pattern) + r" (127\.0\.0\.1:(\d+))", f.read())
            if m:
                self.addr, self.port = m.group(1), int(m.group(2))
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.02)
        self.stop()
        die("%s did not start; see %s:\n%s" % (argv[0], log_path, tail(log_path)))

    @property
    def pid(self):
        return self.proc.pid

    def stop(self, sig=signal.SIGTERM):
        """Signals the process (SIGTERM by default) and waits for it; returns its exit status."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if not self.log.closed:
            self.log.close()
        return self.proc.returncode

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


class Server(Process):
    """secantusd-rs on an ephemeral 127.0.0.1 port, its storage and log in `work`
    (NAME.server.log). Stopping it removes the storage."""

    def __init__(self, work, name, args=()):
        self.storage = tempfile.mkdtemp(prefix="db-", dir=work)
        super().__init__([secantusd(), "--host", "127.0.0.1", "--port", "0", "--storage-path", self.storage,
                          *args], "listening on", os.path.join(work, name + ".server.log"))

    def uri(self, addr=None):
        """The connection string of this server (or of `addr`, e.g. a proxy in front of it)."""
        return uri_for(addr or self.addr)

    def stop(self, sig=signal.SIGTERM):
        status = super().stop(sig)
        shutil.rmtree(self.storage, ignore_errors=True)
        return status


class Recorder(Process):
    """`mongotape record --listen 127.0.0.1:0 --upstream ADDR --out CAPTURE --quiet`, its log at
    `log_path`. Stop it with stop() (SIGTERM: it flushes and closes the capture)."""

    def __init__(self, upstream, capture, log_path, binary=None):
        super().__init__([binary or mongotape(), "record", "--listen", "127.0.0.1:0", "--upstream", upstream,
                          "--out", capture, "--quiet"], "mongotape: listening on", log_path)

    def uri(self):
        return uri_for(self.addr)


def uri_for(addr):
    """A connection string every client accepts; directConnection=true keeps a driver from following
    the replica-set member list in `hello` past whatever listens at `addr` (the proxy)."""
    return "mongodb://%s/?directConnection=true" % addr


if __name__ == "__main__":
    if sys.argv[1:] == ["secantusd"]:
        print(secantusd())
    else:
        sys.exit("usage: tools/lib/harness.py secantusd   (prints the server binary the tools use)")
