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

It also measures (see each function): the CPU of a process tree from the kernel's accounting
(`tree_cpu_s`, `ClientRun`), the load other processes put on the machine during a run
(`MachineLoad`), and the figures of repeated runs (`median`, `spread`, `bootstrap_ratio`).
"""
import glob
import math
import os
import random
import re
import resource
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


# ------------------------------------------------------------------------------------------------
# CPU accounting

CLK_TCK = os.sysconf("SC_CLK_TCK")


def _proc_stat(pid):
    """(ppid, CPU seconds of the process and of the children it reaped) from /proc/PID/stat, or None
    when it is gone."""
    try:
        with open("/proc/%s/stat" % pid) as f:
            text = f.read()
    except OSError:
        return None
    # The command name may hold spaces and parentheses: the fields start after the last ')'.
    rest = text[text.rindex(")") + 2:].split()
    utime, stime, cutime, cstime = (int(x) for x in rest[11:15])
    return int(rest[1]), (utime + stime + cutime + cstime) / CLK_TCK


def tree_cpu_s(pid):
    """CPU seconds (user + system) used so far by `pid` and all its live descendants, plus what the
    children they already reaped used (the kernel's cutime/cstime). 10 ms resolution."""
    stats = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            st = _proc_stat(entry)
            if st:
                stats[int(entry)] = st
    children = {}
    for p, (ppid, _) in stats.items():
        children.setdefault(ppid, []).append(p)
    total, todo = 0.0, [pid]
    while todo:
        p = todo.pop()
        if p in stats:
            total += stats[p][1]
        todo.extend(children.get(p, []))
    return total


class ClientRun:
    """Runs a client to completion, reading its stdout line by line, and measures its own CPU.

    At every line that starts with `{` (a workload's step line) the CPU of the client's process tree
    is sampled (`tree_cpu_s`), so the CPU between two step lines belongs to the later step. The
    first step line comes after the interpreter has started, loaded its driver and connected:
    everything before it is start-up and is excluded by taking differences from that sample. The
    last sample is taken at the last step line, so shutdown is excluded too. `total_cpu_s` (from
    wait4, the whole tree with start-up and shutdown) is kept for reference.

    Attributes: lines (stdout lines), samples (CPU seconds at each step line), wall_s, total_cpu_s.
    Exits with the client's stderr when it fails."""

    def __init__(self, argv, env=None, log_path=None):
        err = open(log_path, "w+") if log_path else tempfile.TemporaryFile("w+")
        t = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=err, stdin=subprocess.DEVNULL,
                                env=env, text=True)
        self.lines, self.samples = [], []
        for line in proc.stdout:
            if line.startswith("{"):
                self.samples.append(tree_cpu_s(proc.pid))
            self.lines.append(line.rstrip("\n"))
        proc.stdout.close()
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        self.wall_s = time.perf_counter() - t
        self.total_cpu_s = usage.ru_utime + usage.ru_stime
        err.seek(0)
        stderr = err.read()
        err.close()
        if proc.returncode != 0:
            die("%s failed (%d):\n%s" % (" ".join(argv), proc.returncode, stderr[-3000:]))

    def step_cpu_s(self):
        """CPU seconds per step line: None for the first (it holds the start-up), then the
        difference between consecutive samples."""
        return [None] + [b - a for a, b in zip(self.samples, self.samples[1:])]


def _busy_s():
    """CPU seconds the whole machine spent busy (every core), from /proc/stat."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    # user nice system idle iowait irq softirq steal (guest is already in user).
    idle = fields[3] + fields[4]
    return (sum(fields[:8]) - idle) / CLK_TCK


def _ours_s():
    """CPU seconds of this process and of every child it has reaped (and theirs)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


# On average, other processes using more than this share of one core during a run disturb it.
DISTURBED_CORES = 0.25


class MachineLoad:
    """The machine's load around a run (a context manager): the 1-minute load average before and
    after, and the CPU that other processes used meanwhile: the busy time of /proc/stat minus our
    own CPU and that of every child we started and reaped inside the block (all of them must have
    exited by its end, as harness.Server and ClientRun ensure). `result()` gives the figures and
    `disturbed` (other processes averaged more than DISTURBED_CORES of a core)."""

    def __enter__(self):
        self.load_before = os.getloadavg()[0]
        self.t, self.busy, self.ours = time.perf_counter(), _busy_s(), _ours_s()
        return self

    def __exit__(self, *exc):
        self.wall_s = time.perf_counter() - self.t
        ours = _ours_s() - self.ours
        self.other_cpu_s = max(0.0, _busy_s() - self.busy - ours)
        self.load_after = os.getloadavg()[0]

    def result(self):
        other = self.other_cpu_s / self.wall_s if self.wall_s > 0 else 0.0
        return {"load_before": self.load_before, "load_after": self.load_after, "wall_s": self.wall_s,
                "other_cpu_s": self.other_cpu_s, "other_cores": other, "disturbed": other > DISTURBED_CORES}


# ------------------------------------------------------------------------------------------------
# Repeated runs

def median(xs):
    xs = sorted(x for x in xs if x is not None)
    if not xs:
        return None
    m = len(xs) // 2
    return xs[m] if len(xs) % 2 else (xs[m - 1] + xs[m]) / 2


def spread(xs):
    """(min, max) of the values that exist, or None."""
    xs = [x for x in xs if x is not None]
    return (min(xs), max(xs)) if xs else None


def bootstrap_ratio(a, b, seed=1, resamples=2000, level=0.95):
    """Interval of median(a) / median(b) over the rounds: each side's rounds are resampled with
    replacement, independently (two clients' runs of one round happen at different moments, so
    nothing pairs them). Missing values are left out. Returns (low, high), or None when a side has
    fewer than two values or a median is zero. Seeded: the same figures give the same interval.
    With 3 rounds a side, the interval spans from the lowest to the highest ratio of their values:
    it excludes 1 exactly when the two sides' ranges do not overlap."""
    a = [x for x in a if x is not None]
    b = [x for x in b if x is not None]
    if len(a) < 2 or len(b) < 2:
        return None
    rng = random.Random(seed)
    ratios = []
    for _ in range(resamples):
        den = median([rng.choice(b) for _ in b])
        if not den:
            return None
        ratios.append(median([rng.choice(a) for _ in a]) / den)
    ratios.sort()
    cut = (1 - level) / 2
    return ratios[int(cut * resamples)], ratios[min(resamples - 1, int((1 - cut) * resamples))]


def median_interval(xs, level=0.95):
    """Distribution-free interval of the median of `xs` (the sign test's): the k-th smallest and
    k-th largest value, k the largest for which the interval still covers the median with at least
    `level` probability (binomial(n, 1/2) tails). Returns (low, high, coverage), or None for fewer
    than two values. Below 6 values no k reaches 95%: the interval is then (min, max), and the
    coverage says how much less it is (75% for 3 values)."""
    xs = sorted(x for x in xs if x is not None)
    n = len(xs)
    if n < 2:
        return None
    # P(Binomial(n, 1/2) < k): the chance that the median lies below the k-th smallest value.
    tail = lambda k: sum(math.comb(n, i) for i in range(k)) / 2 ** n
    k = 1
    while k + 1 <= n // 2 and 1 - 2 * tail(k + 1) >= level:
        k += 1
    return xs[k - 1], xs[n - k], 1 - 2 * tail(k)


if __name__ == "__main__":
    if sys.argv[1:] == ["secantusd"]:
        print(secantusd())
    else:
        sys.exit("usage: tools/lib/harness.py secantusd   (prints the server binary the tools use)")
