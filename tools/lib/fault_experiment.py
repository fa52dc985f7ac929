"""tools/compare-drivers --experiment faults: what each client does when the server fails.

Every client runs the `lookup` seed workload (inserts, then lookups by a non-_id field, then the
`views` counter's upserts, writes that a resend applies twice) with MONGOTAPE_WORKLOAD_TALLY=1, so
an operation that fails is counted instead of ending the workload, and prints {"tally": {"ok",
"failed", "app_retried"}} at the end (tools/workloads/README.md); with --app-retry N, also
MONGOTAPE_WORKLOAD_APP_RETRY=N: the workload retries a failed operation itself, as an application
does. Each round, each client runs it twice, each time against a fresh server through `mongotape
record`: once with the fault plan (--fault-plan, default tools/fault-plans/resilience.json,
--fault-seed FAULT_SEED) and once without a rule, back to back, the order alternating from round
to round. --uri-options adds to every client's URI (retryWrites=false turns the drivers' retries
off).

Per client and round: operations that succeeded and failed (the workload's own count), faults
fired per rule, requests the driver retried itself (`analyze --json`'s faults: the faulted request
sent again with the same lsid and txnNumber, the spec's retry) and faults given up to the
application, retries the application made itself, writes applied twice (the insert step's count
against the inserts the workload meant, plus the views counter against its upserts),
and the time lost (the workload's own step time with faults minus without, in the same round).
Medians over the rounds with distribution-free intervals (harness.median_interval), the ratio of
the time with faults over without with its bootstrap interval, and a verdict per client.
"""
import json
import os

import harness
from driver_figures import cell, num, stat, table
from harness import bootstrap_ratio, log, median_interval, run

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RUNNER = os.path.join(ROOT, "tools", "workloads", "run")
PLAN = os.path.join(ROOT, "tools", "fault-plans", "resilience.json")
FAULT_SEED = 7
WORKLOAD = "lookup"
# The clients whose lookup workload has the tally mode (MONGOTAPE_WORKLOAD_TALLY): all six.
TALLY_CLIENTS = ("pymongo", "mongosh", "php", "node", "rust", "cxx-legacy")
# No sessions, no retryable writes or reads: everything it is told fails reaches the application.
NO_RETRIES = ("cxx-legacy",)
# A real stepdown answers the monitors' awaitable hello at once; the proxy cannot, so the drivers
# check the server every 500 ms (the least PHP accepts) instead of waiting up to 10 s for it.
URI_OPTIONS = "directConnection=true&heartbeatFrequencyMS=500"
FIGURES = ("ok", "failed", "faults", "failing", "retried", "read_retried", "given_up", "app_retried",
           "applied_twice", "applied_twice_seen", "reconnected", "own_s", "clean_s", "lost_s")


class FaultRecorder(harness.Process):
    """`mongotape record` in front of `upstream`, with the fault plan when `plan` is given."""

    def __init__(self, binary, upstream, capture, log_path, plan=None):
        argv = [binary, "record", "--listen", "127.0.0.1:0", "--upstream", upstream, "--out", capture, "--quiet"]
        if plan:
            argv += ["--faults", plan, "--fault-seed", str(FAULT_SEED)]
        super().__init__(argv, "mongotape: listening on", log_path)


def one_run(ctx, client, rnd, faulted):
    """One run of the workload; its figures, or None when the client failed (named in the log)."""
    name = "faults-%s-r%d-%s" % (client, rnd, "faulted" if faulted else "clean")
    capture = os.path.join(ctx.work, name + ".mtape")
    env = dict(os.environ, MONGOTAPE_WORKLOAD_TALLY="1", MONGOTAPE_WORKLOAD_APP_RETRY=str(ctx.app_retry))
    with harness.Server(ctx.work, name) as server:
        with FaultRecorder(ctx.mongotape, server.addr, capture, os.path.join(ctx.work, name + ".proxy.log"),
                           ctx.fault_plan if faulted else None) as proxy:
            uri = "mongodb://%s/?%s&appName=faults-%s" % (proxy.addr, uri_options(ctx), client)
            try:
                client_run = harness.ClientRun([RUNNER, client, WORKLOAD, "--uri", uri, "--db", "bench",
                                                "--scale", str(ctx.scale)], env,
                                               os.path.join(ctx.work, name + ".client.log"))
            except SystemExit as e:
                log("faults: %s failed in round %d (%s), left out of that round: %s" % (
                    client, rnd + 1, "with faults" if faulted else "without", str(e)[-500:]))
                return None
    lines = [json.loads(line) for line in client_run.lines if line.startswith("{")]
    tally = next((line["tally"] for line in lines if "tally" in line), None)
    insert = next((line for line in lines if line.get("step") == "insert"), None)
    views = next((line for line in lines if line.get("step") == "views"), None)
    if tally is None or insert is None or views is None:
        log("faults: %s printed no tally, insert or views step in round %d: left out of that round" % (
            client, rnd + 1))
        return None
    analyze_json = os.path.join(ctx.out, name + ".analyze.json")
    with open(analyze_json, "w") as f:
        f.write(run([ctx.mongotape, "analyze", "--json", "--label", name, capture]))
    os.remove(capture)
    with open(analyze_json) as f:
        faults = json.load(f).get("faults") or {"total": 0, "rules": []}
    rules = faults["rules"]
    # A delay is not a failure: nothing to retry or give up.
    failing = [r for r in rules if not r["action"].startswith("delay")]
    after = lambda key: sum((r.get("after") or {}).get(key, 0) for r in failing)
    return {"client": client, "round": rnd, "faulted": faulted, "wall_s": client_run.wall_s,
            "own_s": sum(line["seconds"] for line in lines if "step" in line),
            "ok": tally["ok"], "failed": tally["failed"], "app_retried": tally.get("app_retried", 0),
            "intended_inserts": insert["ops"], "documents": insert["result"]["count"],
            "intended_views": views["ops"], "views": views["result"]["n"],
            "applied_twice": max(0, insert["result"]["count"] - insert["ops"]) + max(0, views["result"]["n"] - views["ops"]),
            "faults": faults["total"], "failing": sum(r["count"] for r in failing), "per_rule": {r["name"] or str(r["rule"]): r["count"] for r in rules},
            "forwarded": sum(r["forwarded"] for r in rules),
            # analyze's faults.rules[].after (docs/faults.md, "What the client did next").
            "retried": after("write_retried"), "read_retried": after("read_retried"),
            "given_up": after("given_up"), "applied_twice_seen": after("applied_twice"),
            "reconnected": after("reconnected"),
            "analyze": analyze_json}


def uri_options(ctx):
    """The clients' URI options: URI_OPTIONS, then --uri-options."""
    return URI_OPTIONS + ("&" + ctx.uri_options.lstrip("&?") if ctx.uri_options else "")


def experiment(ctx, clients):
    """Every round: each client with faults and without, back to back (which goes first alternates)."""
    runs = []
    for rnd in range(ctx.rounds):
        for i, client in enumerate(clients[rnd % len(clients):] + clients[:rnd % len(clients)]):
            for faulted in ((True, False) if (rnd + i) % 2 == 0 else (False, True)):
                log("faults: round %d/%d, %s %s faults (scale %s)" % (
                    rnd + 1, ctx.rounds, client, "with" if faulted else "without", ctx.scale))
                r = one_run(ctx, client, rnd, faulted)
                if r is not None:
                    runs.append(r)
    return runs


def rounds_of(runs, client):
    """A client's rounds that have both runs: the faulted run's figures with the clean time."""
    out = []
    for rnd in sorted({r["round"] for r in runs if r["client"] == client}):
        f = next((r for r in runs if r["client"] == client and r["round"] == rnd and r["faulted"]), None)
        c = next((r for r in runs if r["client"] == client and r["round"] == rnd and not r["faulted"]), None)
        if f and c:
            out.append(dict(f, clean_s=c["own_s"], lost_s=f["own_s"] - c["own_s"]))
    return out


def with_interval(values):
    s = stat(values)
    found = median_interval(values)
    s["interval"] = found and list(found[:2])
    s["coverage"] = found and found[2]
    return s


def figures(runs, clients, seed, ctx):
    per_client, left_out = {}, []
    for c in clients:
        rs = rounds_of(runs, c)
        if not rs:
            left_out.append(c)
            continue
        f = {k: with_interval([r[k] for r in rs]) for k in FIGURES}
        slow = bootstrap_ratio([r["own_s"] for r in rs], [r["clean_s"] for r in rs], seed)
        ratio = harness.median([r["own_s"] / r["clean_s"] for r in rs if r["clean_s"]])
        f["slowdown"] = {"median": ratio, "interval": slow and list(slow),
                         "beyond_noise": slow is not None and slow[0] > 1}
        f["per_rule"] = {k: harness.median([r["per_rule"].get(k, 0) for r in rs])
                         for k in sorted({k for r in rs for k in r["per_rule"]})}
        f["rounds"] = len(rs)
        per_client[c] = f
    figs = {"workload": WORKLOAD, "plan": os.path.relpath(os.path.abspath(ctx.fault_plan), ROOT),
            "fault_seed": FAULT_SEED, "uri_options": uri_options(ctx), "app_retry": ctx.app_retry,
            "clients": list(per_client), "left_out": left_out, "per_client": per_client}
    figs["verdict"] = [verdict(c, f, ctx.app_retry) for c, f in per_client.items()]
    return figs


def verdict(c, f, app_retry=0):
    m = lambda k: f[k]["median"]
    ops = m("ok") + m("failed")
    line = "%s: %s of %s operations succeeded, %s failed to the application" % (
        c, num(m("ok")), num(ops), num(m("failed")))
    if c in NO_RETRIES:
        line += ("; it has no sessions and no retryable writes or reads: of the %s faults that were not delays it "
                 "retried none and gave %s up to the application" % (num(m("failing")), num(m("given_up"))))
    else:
        line += ("; of the %s faults that were not delays, it retried %s writes itself the spec's way (same lsid "
                 "and txnNumber) and %s reads, and gave %s up" % (
                     num(m("failing")), num(m("retried")), num(m("read_retried")), num(m("given_up"))))
    if app_retry:
        line += "; the application ran %s failed operations again itself (up to %d times each)" % (
            num(m("app_retried")), app_retry)
    line += "; %s" % ("no write applied twice" if not f["applied_twice"]["max"] else
                      "%s writes applied twice" % num(m("applied_twice")))
    if f["applied_twice_seen"]["max"] != f["applied_twice"]["max"]:
        line += " (analyze saw %s resends applied twice)" % num(m("applied_twice_seen"))
    s = f["slowdown"]
    line += "; the faults cost it %.2f s (%.2fx its fault-free time%s)." % (
        m("lost_s"), s["median"] or 0, ", 95%% interval %.2f-%.2fx, %s" % (
            s["interval"][0], s["interval"][1], "beyond noise" if s["beyond_noise"] else "within noise")
        if s["interval"] else "; one round, no interval")
    if m("failed") == 0:
        line += " Nothing reached the application: it rode out the whole plan."
    return line


def render(figs):
    pc = figs["per_client"]
    out = ["", "Resilience: the %s workload under %s (--fault-seed %d, URI options %s%s), median (min-max) "
           "over the rounds" % (figs["workload"], figs["plan"], figs["fault_seed"], figs["uri_options"],
                                ", application retries up to %d" % figs["app_retry"] if figs["app_retry"] else ""), ""]
    rows = [[c, cell(f["ok"], "%.0f"), cell(f["failed"], "%.0f"), cell(f["faults"], "%.0f"),
             cell(f["retried"], "%.0f"), cell(f["read_retried"], "%.0f"), cell(f["given_up"], "%.0f"),
             cell(f["app_retried"], "%.0f"), cell(f["applied_twice"], "%.0f"), cell(f["applied_twice_seen"], "%.0f"),
             cell(f["clean_s"], "%.2f"), cell(f["lost_s"], "%.2f")] for c, f in pc.items()]
    out.append(table(["client", "ok", "failed", "faults", "retried", "read retried", "given up", "app retried",
                      "applied twice",
                      "(analyze)", "clean s", "lost s"], rows))
    out.append("ok/failed: the workload's operations as it counted them; faults: fired by the plan; retried: "
               "failing faults (not delays) whose write the driver sent again with the same lsid and txnNumber; "
               "read retried: whose read it sent again; given up: neither retried nor resent (analyze's "
               "faults.rules[].after); app retried: operations the workload itself ran again; applied twice: "
               "documents beyond the inserts meant plus counter increments beyond the upserts meant, (analyze): resends "
               "the server acknowledged after a write went through; "
               "clean s: the workload's own time without faults; lost s: with faults minus without, same round.")
    if figs["left_out"]:
        out.append("Left out (no complete round): %s." % ", ".join(figs["left_out"]))
    out += ["", "Verdict:"] + ["  - " + line for line in figs["verdict"]]
    return "\n".join(out)


def main(ctx, clients, seed):
    """Runs the experiment; its figures (with the runs) for compare-drivers.json."""
    have = []
    for c in clients:
        if c in TALLY_CLIENTS:
            have.append(c)
        else:
            log("faults: %s's %s workload has no tally mode (MONGOTAPE_WORKLOAD_TALLY): left out" % (c, WORKLOAD))
    runs = experiment(ctx, have)
    figs = figures(runs, have, seed, ctx)
    figs["left_out"] = [c for c in clients if c not in figs["clients"]]
    print(render(figs), flush=True)
    return dict(figs, runs=runs)
