"""The figures of tools/compare-drivers: from the runs of one experiment (every client, every
round) to medians, spreads, ratios with bootstrap intervals (the clients' time and CPU) or paired
distribution-free ones (the server's CPU), a verdict in words, and tables.

A run is what compare-drivers records for one client in one round: its step lines with their CPU,
`step_times` (each step as the client timed it, recorded and replayed), the analyze and replay
summaries, the client's CPU and the machine's load. Everything here is pure: no processes.
"""
from harness import DISTURBED_CORES, bootstrap_ratio, median, median_interval, spread

TITLES = {
    "embedded": "1. Embedded vs separate documents ($push of 1 KB comments)",
    "docsize": "2. Small (~130 B) and large (~2,300 B) documents, inserted one by one",
    "writeconcern": "3. Write concerns w:0, w:1, j:true; _id index only vs three more indexes",
    "randstring": "4. Random 26-letter strings: insert, look up, delete one, delete all; without and with an index",
    "lookup": "5. Insert, random lookups by a non-_id field, remove all",
}
# CPU is read in clock ticks (10 ms): below this a step's CPU per operation means nothing.
MIN_CPU_S = 0.02
# A client whose own time is this many times the replay of its traffic is client-bound (the server
# worked at most half of the client's time); above PARTLY, partly client-bound.
CLIENT_BOUND, PARTLY = 2.0, 1.25
# A difference beyond noise but smaller than this is reported as such, not as a different cost.
MATERIAL = 0.10
# The server's cost is the same for the same operations, and a full run makes 20 such comparisons
# (4 clients against the first, 5 workloads): a difference is claimed at this level, so that noise
# alone rarely claims one. Resampled from 60 measured blocks of two identical captures replayed back
# to back, 9 blocks at 99% with MATERIAL called a difference 0.2-0.3% of the time, against 8.4% for
# the earlier three unpaired replays at 95% (tools/server-noise, docs/compare-drivers.md).
SERVER_LEVEL = 0.99
# A difference found at SERVER_LEVEL is measured again on as many new blocks and claimed only when
# that second measurement, at this level, finds it too: the second stage only has to confirm.
# Identical traffic passed both stages in none of 20,000 resampled comparisons.
CONFIRM_LEVEL = 0.95
# The server's CPU is read in clock ticks at the start and the end of each replay: a difference of
# less than this many seconds between two clients' whole replays is below what can be measured.
CPU_RESOLUTION_S = 0.03


def stat(values):
    """{"median", "min", "max", "values"} over the rounds (None where nothing was measured)."""
    s = spread(values)
    return {"median": median(values), "min": s and s[0], "max": s and s[1], "values": values}


def ratio(a, b, seed):
    """a's median over b's, with the bootstrap interval; beyond noise when the interval excludes 1."""
    ma, mb = median(a), median(b)
    if ma is None or not mb:
        return None
    interval = bootstrap_ratio(a, b, seed)
    beyond = interval is not None and (interval[0] > 1 or interval[1] < 1)
    return {"median": ma / mb, "interval": interval, "beyond_noise": beyond}


def paired(a, b, level=SERVER_LEVEL):
    """a over b block by block (a and b map a block to a value: replays that ran back to back),
    the median of those ratios with its distribution-free interval at `level`
    (harness.median_interval). Beyond noise when the interval excludes 1 and truly covers `level`
    (with 9 blocks at 99%: all nine ratios on the same side of 1). Whatever drifts on the machine
    from one block to the next cancels out of each ratio."""
    ratios = [a[k] / b[k] for k in sorted(set(a) & set(b)) if a[k] is not None and b[k]]
    if not ratios:
        return None
    found = median_interval(ratios, level)
    interval = found and found[:2]
    beyond = found is not None and found[2] >= level and (interval[0] > 1 or interval[1] < 1)
    return {"median": median(ratios), "interval": interval, "level": level, "coverage": found and found[2],
            "beyond_noise": beyond, "blocks": len(ratios)}


def _cpu_per_op(cpu_s, ops):
    return cpu_s / ops * 1e6 if cpu_s is not None and cpu_s >= MIN_CPU_S and ops else None


def _sum(values):
    values = [v for v in values if v is not None]
    return sum(values) if values else None


def _div(a, b):
    return a / b if a is not None and b else None


def per_step(runs):
    """Step name -> figure -> the value in each run (in round order)."""
    steps = {}
    for r in runs:
        for s in r["step_times"]:
            f = steps.setdefault(s["step"], {"ops": s["ops"], "client_s": [], "recorded_s": [], "replayed_s": [],
                                             "own_over_replay": [], "client_cpu_us_per_op": [],
                                             "server_cpu_us_per_op": []})
            f["client_s"].append(s["client_s"])
            f["recorded_s"].append(s["recorded_s"])
            f["replayed_s"].append(s["replayed_s"])
            f["own_over_replay"].append(_div(s["client_s"], s["replayed_s"]))
            f["client_cpu_us_per_op"].append(_cpu_per_op(s.get("client_cpu_s"), s["ops"]))
            f["server_cpu_us_per_op"].append(_cpu_per_op(s["server_cpu_s"], s.get("server_cpu_ops")))
    return steps


def totals(r):
    """One run's figures for the whole experiment: its recording, and its replays' medians."""
    own = _sum(s["client_s"] for s in r["step_times"])
    rep = _sum(s["replayed_s"] for s in r["step_times"])
    a = r["analyze"]
    return {
        "own_s": own, "replay_s": rep, "own_over_replay": _div(own, rep),
        "client_cpu_us_per_op": r["client_cpu"]["us_per_op"] if (r["client_cpu"]["s"] or 0) >= MIN_CPU_S else None,
        "client_bound_pct": a["client_bound_share"] * 100 if a.get("client_bound_share") is not None else None,
        "client_wall_s": r["client_wall_s"], "ops": a["ops"], "recorded_ops_per_s": a["ops_per_s"],
    }


def replay_totals(p):
    """One replay's figures."""
    s = p["summary"]
    # Net of the server's idle rate when the replay read it (docs/replay.md), else gross.
    server = s.get("server_cpu_net_s_per_1k_ops")
    if server is None:
        server = s.get("server_cpu_s_per_1k_ops")
    return {"server_cpu_us_per_op": server * 1000 if server is not None else None,
            "replay_ops_per_s": s["ops_per_s"], "replayer_cpu_us_per_op": s.get("client_cpu_us_per_op")}


def by_block(replays, figure):
    """Block -> a figure of the replay in that block."""
    return {p["block"]: replay_totals(p)[figure] for p in replays}


def experiment(runs, clients, seed):
    """The figures of one experiment: per client (totals, steps), ratios against the first client,
    load, verdict. A client's recordings give one value per round; its replays one per replay
    (rounds x --replays)."""
    by_client = {c: sorted((r for r in runs if r["client"] == c), key=lambda r: r["round"]) for c in clients}
    replays = {c: [p for r in rs for p in r["replays"]] for c, rs in by_client.items()}
    per_client = {}
    for c, rs in by_client.items():
        t = [totals(r) for r in rs]
        pt = [replay_totals(p) for p in replays[c]]
        figures = {k: stat([x[k] for x in t]) for k in t[0]}
        figures.update({k: stat([x[k] for x in pt]) for k in pt[0]})
        per_client[c] = {"totals": figures,
                         "steps": {name: dict({k: stat(v) for k, v in f.items() if k != "ops"}, ops=f["ops"])
                                   for name, f in per_step(rs).items()}}
    base = clients[0]
    ratios = {}
    for c in clients[1:]:
        ratios[c] = {k: ratio(per_client[c]["totals"][k]["values"], per_client[base]["totals"][k]["values"], seed)
                     for k in ("own_s", "client_cpu_us_per_op")}
        ratios[c]["server_cpu_us_per_op"] = paired(by_block(replays[c], "server_cpu_us_per_op"),
                                                   by_block(replays[base], "server_cpu_us_per_op"))
    loads = [dict(r["load"], client=r["client"], round=r["round"], run="record") for r in runs]
    loads += [dict(p["load"], client=r["client"], round=r["round"], run="replay %d" % p["pass"])
              for r in runs for p in r["replays"]]
    loads += [dict(p["load"], client=r["client"], round=r["round"], run="confirmation %d" % p["pass"])
              for r in runs for p in r.get("confirm_replays", [])]
    figs = {"clients": clients, "per_client": per_client, "ratios": ratios, "loads": loads,
            "steps": step_order(runs)}
    figs["server_differences"] = server_differences(replays, clients)
    figs["confirmations"] = {}
    for c in clients[1:]:
        # The confirmation of c: its replays and the base's made for it ("pair"), block by block.
        again = lambda who: [p for r in by_client[who] for p in r.get("confirm_replays", []) if p.get("pair") == c]
        if again(c) and again(base):
            figs["confirmations"][c] = paired(by_block(again(c), "server_cpu_us_per_op"),
                                              by_block(again(base), "server_cpu_us_per_op"), CONFIRM_LEVEL)
    figs["verdict"] = verdict(figs)
    return figs


def server_classes(figs):
    """Each client after the first, by what its server cost ratio says: `same` (within noise),
    `small` (beyond noise but under MATERIAL or the clock's resolution), `unconfirmed` (a
    difference that a second measurement did not find again), `differ`."""
    clients, ratios, base = figs["clients"], figs["ratios"], figs["clients"][0]
    classes = {"same": [], "small": [], "unconfirmed": [], "differ": []}
    for c in clients[1:]:
        r = ratios[c]["server_cpu_us_per_op"]
        if r is None or not r["beyond_noise"]:
            classes["same"].append((c, r))
        elif abs(r["median"] - 1) < MATERIAL or not measurable(figs["per_client"], base, c):
            classes["small"].append((c, r))
        elif c in figs.get("confirmations", {}) and not confirmed(r, figs["confirmations"][c]):
            classes["unconfirmed"].append((c, r))
        else:
            classes["differ"].append((c, r))
    return classes


def confirmed(first, again):
    """Whether a second measurement finds the first one's difference again: beyond noise, in the
    same direction, and material."""
    return (again is not None and again["beyond_noise"] and abs(again["median"] - 1) >= MATERIAL
            and (again["median"] > 1) == (first["median"] > 1))


def to_confirm(figs):
    """The clients whose server cost differs beyond noise and has not been measured again yet."""
    return [c for c, _ in server_classes(figs)["differ"] if c not in figs.get("confirmations", {})]


def step_order(runs):
    order = []
    for r in runs:
        for s in r["step_times"]:
            if s["step"] not in [x[0] for x in order]:
                order.append((s["step"], s["ops"]))
    return order


def server_differences(replays, clients):
    """Where the server's cost differs between the first client and each other one: steps whose
    server CPU per operation differs beyond noise (paired by block, like the whole replay), and
    commands whose count differs."""
    base = clients[0]

    def step_cpu(reps):
        out = {}
        for p in reps:
            for s in p["steps"]:
                out.setdefault(s["step"], {})[p["block"]] = _cpu_per_op(s["server_cpu_s"], s["replayed_ops"])
        return out

    base_steps = step_cpu(replays[base])
    out = {}
    for c in clients[1:]:
        steps = []
        for name, blocks in step_cpu(replays[c]).items():
            if name not in base_steps:
                continue
            r = paired(blocks, base_steps[name])
            if r and r["beyond_noise"] and abs(r["median"] - 1) >= MATERIAL:
                steps.append(dict(r, step=name))
        commands = []
        counts = lambda reps, cmd: median([p["summary"]["per_command"].get(cmd, {}).get("count", 0) for p in reps])
        names = {k for p in replays[c] + replays[base] for k in p["summary"]["per_command"]}
        for cmd in sorted(names):
            n, nb = counts(replays[c], cmd), counts(replays[base], cmd)
            if n != nb:
                commands.append({"command": cmd, "count": n, "base_count": nb})
        out[c] = {"steps": steps, "commands": commands}
    return out


def pct(r):
    return "%+.0f%%" % ((r - 1) * 100)


def interval(r):
    if r and "blocks" in r and not r["interval"]:
        return "%d paired replay: no interval" % r["blocks"]
    if not r or not r["interval"]:
        return "no interval: fewer than 2 rounds"
    if "blocks" in r:
        if r["coverage"] < r["level"]:
            return "%d paired replays, %.2f-%.2fx: too few to tell noise from a difference" % (
                (r["blocks"],) + tuple(r["interval"]))
        return "%d paired replays, %.0f%% interval %.2f-%.2fx" % (
            (r["blocks"], r["level"] * 100) + tuple(r["interval"]))
    return "95%% interval %.2f-%.2fx" % tuple(r["interval"])


def verdict(figs):
    """Plain sentences derived from the figures."""
    clients, pc, ratios, base = figs["clients"], figs["per_client"], figs["ratios"], figs["clients"][0]
    lines = []
    ranked = sorted(clients, key=lambda c: -(pc[c]["totals"]["own_over_replay"]["median"] or 0))
    for c in ranked:
        t = pc[c]["totals"]
        oor = t["own_over_replay"]
        if oor["median"] is None:
            lines.append("%s: no replayed time to compare its own time with." % c)
            continue
        kind = ("client-bound" if oor["median"] >= CLIENT_BOUND else
                "partly client-bound" if oor["median"] >= PARTLY else "server-bound")
        line = ("%s is %s: its own time is %.1fx what the server needed for the same traffic (replayed; "
                "%.1f-%.1fx over %d rounds), so %.0f%% of it was spent in the client; client CPU %s µs/op, "
                "server CPU %s µs/op." % (c, kind, oor["median"], oor["min"], oor["max"], len(oor["values"]),
                                         100 * (1 - 1 / oor["median"]) if oor["median"] > 1 else 0,
                                         num(t["client_cpu_us_per_op"]["median"]),
                                         num(t["server_cpu_us_per_op"]["median"])))
        if c != base and ratios[c]["own_s"]:
            r = ratios[c]["own_s"]
            line += " It takes %.2fx %s's time (%s): %s." % (
                r["median"], base, interval(r), "beyond noise" if r["beyond_noise"] else "within noise")
        lines.append(line)
    lines.append(server_verdict(figs))
    return lines


def server_verdict(figs):
    clients, base = figs["clients"], figs["clients"][0]
    if len(clients) < 2:
        return "Server cost: one client, nothing to compare."
    classes = server_classes(figs)
    same, small, differ = classes["same"], classes["small"], classes["differ"]
    again = figs.get("confirmations", {})
    parts = []
    if same or small or classes["unconfirmed"]:
        desc = ["%s %s (%s)" % (c, "unmeasured" if r is None else "%.2fx" % r["median"], interval(r)) for c, r in same]
        desc += ["%s %.2fx (%s; beyond this run's noise but under %.0f%% or the clock's resolution)" % (
            c, r["median"], interval(r), MATERIAL * 100) for c, r in small]
        desc += ["%s %.2fx (%s) at first, not found again: %s (%s)" % (
            c, r["median"], interval(r), "unmeasured" if again[c] is None else "%.2fx" % again[c]["median"],
            interval(again[c])) for c, r in classes["unconfirmed"]]
        parts.append("the server's CPU per operation is the same as with %s within noise for %s" % (
            base, "; ".join(desc)))
    for c, r in differ:
        d = figs["server_differences"][c]
        where = ["step %s %s" % (s["step"], pct(s["median"])) for s in d["steps"]]
        where += ["%s: %s commands against %s" % (x["command"], num(x["count"]), num(x["base_count"]))
                  for x in d["commands"]]
        found = (" and again %.2fx (%s)" % (again[c]["median"], interval(again[c]))) if c in again else ""
        parts.append("with %s the server's CPU per operation differs beyond noise: %.2fx %s's (%s)%s%s" % (
            c, r["median"], base, interval(r), found, "; where: " + ", ".join(where) if where else ""))
    return "Server cost: " + parts[0] + "".join(". " + x[0].upper() + x[1:] for x in parts[1:]) + "."


def measurable(per_client, base, c):
    """Whether the server CPU of c's replays and of base's differ by more than the clock can tell."""
    def seconds(who):
        t = per_client[who]["totals"]
        us, ops = t["server_cpu_us_per_op"]["median"], t["ops"]["median"]
        return us * ops / 1e6 if us is not None and ops else None
    a, b = seconds(c), seconds(base)
    return a is not None and b is not None and abs(a - b) >= CPU_RESOLUTION_S


def num(v, spec="%.0f"):
    return "-" if v is None else spec % v


def cell(s, spec="%.3f"):
    """median (min-max), or the median alone for one round."""
    if s["median"] is None:
        return "-"
    if len([v for v in s["values"] if v is not None]) < 2:
        return spec % s["median"]
    return (spec + " (" + spec + "-" + spec + ")") % (s["median"], s["min"], s["max"])


def table(headers, rows, left=1):
    """Columns padded to their widest cell; the first `left` columns flush left, the rest right."""
    widths = [max(len(str(x)) for x in col) for col in zip(headers, *rows)]
    line = lambda r: "  ".join((str(c).ljust(w) if i < left else str(c).rjust(w))
                               for i, (c, w) in enumerate(zip(r, widths)))
    return "\n".join([line(headers), line(["-" * w for w in widths])] + [line(r) for r in rows])


def render(workload, figs):
    clients, pc = figs["clients"], figs["per_client"]
    rounds = max(len(pc[c]["totals"]["own_s"]["values"]) for c in clients)
    replays = max(len(pc[c]["totals"]["server_cpu_us_per_op"]["values"]) for c in clients)
    out = ["", "%s (median (min-max) over %d rounds, %d replays)" % (TITLES.get(workload, workload), rounds,
                                                                    replays), ""]
    rows = []
    for step, ops in figs["steps"]:
        for i, c in enumerate(clients):
            f = pc[c]["steps"].get(step)
            if f is None:
                continue
            rows.append([step if i == 0 else "", str(ops) if i == 0 else "", c, cell(f["client_s"]),
                         cell(f["recorded_s"]), cell(f["replayed_s"]), cell(f["own_over_replay"], "%.1f"),
                         cell(f["client_cpu_us_per_op"], "%.0f"), cell(f["server_cpu_us_per_op"], "%.0f")])
    out.append(table(["step", "ops", "client", "own s", "rec s", "replay s", "own/rep", "client CPU µs/op",
                      "server CPU µs/op"], rows, left=3))
    out.append("own s: the client's own time for the step; rec s: the step in the recording (from its marker "
               "to the next); replay s: the step replayed --fast into a fresh server; own/rep: own s over "
               "replay s; client CPU µs/op: the client's process tree, start-up excluded; server CPU µs/op: "
               "the server in the replayed step, over the round's replays (- under %d ms of CPU). replay s "
               "is the median of the round's replays." % (MIN_CPU_S * 1000))
    out.append("")
    rows = []
    for c in clients:
        t = pc[c]["totals"]
        rows.append([c, num(t["ops"]["median"]), cell(t["own_s"], "%.2f"), cell(t["replay_s"], "%.2f"),
                     cell(t["own_over_replay"], "%.1f"), cell(t["client_cpu_us_per_op"], "%.0f"),
                     cell(t["server_cpu_us_per_op"], "%.0f"),
                     cell(t["client_bound_pct"], "%.0f"),
                     cell(t["replayer_cpu_us_per_op"], "%.0f")])
    out.append(table(["client", "ops", "own s", "replay s", "own/rep", "client CPU µs/op",
                      "server CPU µs/op", "client-bound %", "replayer CPU µs/op"], rows))
    out.append("server CPU µs/op and replayer CPU µs/op: over every replay; the rest over the rounds.")
    if len(clients) > 1:
        out.append("")
        rows = [[c, ratio_cell(figs["ratios"][c]["own_s"]),
                 ratio_cell(figs["ratios"][c]["client_cpu_us_per_op"]),
                 ratio_cell(figs["ratios"][c]["server_cpu_us_per_op"])] for c in clients[1:]]
        out.append(table(["vs %s" % clients[0], "own time", "client CPU/op", "server CPU/op"], rows))
        out.append("own time, client CPU/op: ratio of medians [95% bootstrap interval over the rounds]; server "
                   "CPU/op: median of the ratios of replays run back to back [its 99% interval]; * beyond noise "
                   "(interval excludes 1)")
    out.append("")
    out += ["Verdict:"] + ["  - " + line for line in figs["verdict"]]
    out += load_lines(figs["loads"])
    return "\n".join(out)


def ratio_cell(r):
    if r is None:
        return "-"
    if r["interval"] is None:
        return "%.2fx" % r["median"]
    return "%.2fx [%.2f-%.2f]%s" % (r["median"], r["interval"][0], r["interval"][1], " *" if r["beyond_noise"] else "")


def load_lines(loads):
    if not loads:
        return []
    before = [l["load_before"] for l in loads]
    other = [l["other_cores"] for l in loads]
    lines = ["Load: 1-min load average %.1f-%.1f; other processes used %.2f-%.2f cores (median %.2f) during "
             "the %d runs." % (min(before), max(before), min(other), max(other), median(other), len(loads))]
    bad = [l for l in loads if l["disturbed"]]
    if bad:
        lines.append("WARNING: %d of %d runs were disturbed (other processes above %.2f of a core: %s); "
                     "trust only differences beyond noise." % (
                         len(bad), len(loads), DISTURBED_CORES,
                         ", ".join("%s %s r%d %.2f" % (l["client"], l["run"], l["round"], l["other_cores"])
                                   for l in bad[:6]) + (", ..." if len(bad) > 6 else "")))
    return lines
