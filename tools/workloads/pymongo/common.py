"""Shared helpers for the pymongo workloads (see tools/workloads/README.md).

Every workload prints one JSON line per step on stdout and nothing else:
    {"step": NAME, "ops": INT, "seconds": FLOAT, "result": JSON}
Each step starts with start(NAME), which sends the step marker
{ping: 1, comment: "mongotape:step:NAME"} (mongotape cuts captures and replays into phases at
these) and then starts the step's clock; close() sends "mongotape:step:end".
The same helpers exist in mongosh/common.js and php/common.php and must stay
behaviourally identical (scaling, pseudo-random numbers, output format).

MONGOTAPE_WORKLOAD_SLEEP_MS=N (pymongo only, opt-in) makes this an artificially slow client: it
sleeps N ms after each reply before its next command (tools/compare-drivers' `pymongo-slow`). The
traffic is unchanged; only the client's think time grows.

MONGOTAPE_WORKLOAD_EXTRA_INDEXES=N (pymongo's `inserts` only, opt-in) makes a client whose traffic
costs the server more: before the timed inserts it creates N more indexes on the collection, so
every insert updates them (tools/compare-drivers' `pymongo-indexed`). Its operations are the same
but for those N createIndexes.

MONGOTAPE_WORKLOAD_TALLY=1 (opt-in, tools/compare-drivers --experiment faults): the operations a
workload wraps in attempt() no longer stop it when they fail; it counts them, and close() prints
one more line, {"tally": {"ok": N, "failed": M, "app_retried": R}}; `lookup` adds a step, `views`, of
non-idempotent writes (lookup.py). MONGOTAPE_WORKLOAD_APP_RETRY=N (with the tally) makes the
workload retry a failed operation itself, at once, up to N times, as an application does: R counts
those runs again; an operation that succeeds on a retry is ok, one that fails every time is failed.
"""
import argparse
import json
import math
import os
import sys
import time

from pymongo import MongoClient, monitoring
from pymongo.errors import PyMongoError
from pymongo.write_concern import WriteConcern

W0 = WriteConcern(w=0)
W1 = WriteConcern(w=1)
J1 = WriteConcern(w=1, j=True)
# A step marker's comment; mongotape recognises the ping (src/wire/marker.rs).
MARKER_PREFIX = "mongotape:step:"


def scaled(base, scale, minimum=1):
    """round(base * scale) with halves rounded up, at least `minimum`."""
    return max(minimum, int(math.floor(base * scale + 0.5)))


class Lcg:
    """Park-Miller "minimal standard" generator (multiplier 48271, modulus 2^31-1).

    Products stay below 2^47, so JavaScript doubles compute it exactly too.
    """

    MOD = 2147483647

    def __init__(self, seed):
        self.state = seed % self.MOD or 1

    def next(self):
        self.state = (self.state * 48271) % self.MOD
        return self.state

    def below(self, n):
        return self.next() % n

    def letters(self, count):
        return "".join(chr(97 + self.below(26)) for _ in range(count))


class SlowClient(monitoring.CommandListener):
    """Sleeps after every reply on the application's thread (pymongo publishes command events
    synchronously), so the next command leaves `seconds` later: time spent in the client."""

    def __init__(self, seconds):
        self.seconds = seconds

    def started(self, event):
        pass

    def succeeded(self, event):
        time.sleep(self.seconds)

    def failed(self, event):
        pass


def listeners():
    sleep_ms = float(os.environ.get("MONGOTAPE_WORKLOAD_SLEEP_MS") or 0)
    return [SlowClient(sleep_ms / 1000.0)] if sleep_ms > 0 else []


class Workload:
    def __init__(self, name):
        parser = argparse.ArgumentParser(prog=name)
        parser.add_argument("--uri", required=True)
        parser.add_argument("--db", default="bench")
        parser.add_argument("--scale", type=float, default=1.0)
        args = parser.parse_args()
        if not args.scale > 0:
            parser.error("--scale must be > 0")
        self.name = name
        self.scale = args.scale
        self.client = MongoClient(args.uri, event_listeners=listeners())
        self.db = self.client[args.db]
        self.marked = None
        self.tally = ({"ok": 0, "failed": 0, "app_retried": 0}
                      if os.environ.get("MONGOTAPE_WORKLOAD_TALLY") == "1" else None)
        retries = os.environ.get("MONGOTAPE_WORKLOAD_APP_RETRY") or "0"
        if not retries.isdigit():
            sys.exit("MONGOTAPE_WORKLOAD_APP_RETRY must be a whole number >= 0, not %r" % retries)
        self.app_retries = int(retries)

    def attempt(self, op):
        """op(), counted under MONGOTAPE_WORKLOAD_TALLY=1 (a failure returns None, after up to
        MONGOTAPE_WORKLOAD_APP_RETRY runs again); else just op()."""
        if self.tally is None:
            return op()
        for run in range(1 + self.app_retries):
            if run:
                self.tally["app_retried"] += 1
            try:
                result = op()
            except PyMongoError:
                continue
            self.tally["ok"] += 1
            return result
        self.tally["failed"] += 1
        return None

    @property
    def tallying(self):
        return self.tally is not None

    def scaled(self, base, minimum=1):
        return scaled(base, self.scale, minimum)

    @staticmethod
    def now():
        return time.perf_counter()

    def mark(self, step):
        """Sends the step marker on the workload's connection (outside any step's clock)."""
        self.client.admin.command("ping", comment=MARKER_PREFIX + step)
        self.marked = step

    def start(self, step):
        """Marks the beginning of `step`, then starts its clock: returns now()."""
        self.mark(step)
        return self.now()

    @staticmethod
    def since(started):
        return time.perf_counter() - started

    def emit(self, step, ops, seconds, result):
        """Print one step line. `seconds` comes from since(); it covers only the timed operations."""
        if step != self.marked:
            raise RuntimeError("step %r was not started with start() (last marker %r)" % (step, self.marked))
        seconds = round(seconds, 6)
        line = json.dumps({"step": step, "ops": int(ops), "seconds": seconds, "result": result},
                          separators=(",", ":"))
        sys.stdout.write(line + "\n")
        sys.stdout.flush()

    def drop_database(self):
        started = self.start("drop_database")
        self.client.drop_database(self.db.name)
        self.emit("drop_database", 1, self.since(started), None)

    def extra_indexes(self, collection):
        """MONGOTAPE_WORKLOAD_EXTRA_INDEXES=N: N more indexes on `collection` (name, value, and a
        field of its own each), created outside any step's clock."""
        n = int(os.environ.get("MONGOTAPE_WORKLOAD_EXTRA_INDEXES") or 0)
        for k in range(n):
            collection.create_index([("name", 1), ("value", 1), ("extra%d" % k, 1)])

    def close(self):
        self.mark("end")
        self.client.close()
        if self.tally is not None:
            sys.stdout.write(json.dumps({"tally": self.tally}, separators=(",", ":")) + "\n")
            sys.stdout.flush()

    def count(self, collection, query=None):
        """Acknowledged `count` command (also the barrier after w:0 writes)."""
        return int(self.db.command("count", collection, query=query or {})["n"])
