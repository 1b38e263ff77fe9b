"""Synthetic raw-LML snapshots of any size, and the benchmark that times ``jufo predict`` on them.

``python -m benchmarks.bench`` times the whole command (read, simulate, write) against lxml only
parsing and writing the same file, and prints both, their ratio and peak memory. Each case
runs in a fresh process several times; the median counts.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass

import jufo
from jufo.io import lml
from jufo.io.dates import format_date

EPOCH = 1_700_000_000  # 2023-11-14 22:13:20
FMT = "%m/%d/%y-%H:%M:%S"


@dataclass
class Shape:
    """What a synthetic snapshot looks like."""

    nodes: int = 3290
    cores: int = 8
    jobs: int = 1600
    running_share: float = 0.1
    queues: int = 2  # queues over disjoint node sets (avail_classes); the first gets 90 %
    seed: int = 1
    node_sharing: str = "no"
    algorithm: str = "Backfilling"
    state: str = "NodeState"
    maxtopdogs: str = "1"
    topdogs_per_queue: str = "yes"
    actual: int | None = None  # every job's real run time (at most its wall): early ends, compression
    array: int = 0  # tasks of one more, pending job array of one-node tasks, throttled to 10 at once
    per_user: int | None = None  # the first queue's ``maxjobsperuser``
    plan: str = "simulate"  # ``slurm``: the walltime-only forecast is Slurm's backfill plan (``bf_resolution`` 60 s)
    replan: str = "no"  # ``yes``: reservations made anew at every early end, as Slurm's backfill (``jufo slurm config``)
    formula: str | None = None  # ``system_sysprio``; one with AGE reorders the queue at every event
    waiting_tasks: int | None = None  # cores per node of every waiting job (None: mostly whole nodes)
    gpus: int = 0  # GPUs per node; half the waiting jobs ask one on each of their nodes
    qos_share: float | None = None  # every job of QOS normal, whose GrpTRES lets it hold this share of the cores


def _size(rng: random.Random, limit: int) -> int:
    """Job sizes in nodes: mostly small, some large (a power-of-two-heavy, long-tailed mix)."""
    if rng.random() < 0.5:
        n = 2 ** rng.randint(0, 6)
    else:
        n = int(rng.paretovariate(1.2))
    return max(1, min(n, limit))


def generate(shape: Shape) -> bytes:
    """A raw LML snapshot: nodes, queues on disjoint node sets, running jobs placed by node
    list until the machine is busy, waiting jobs with queue dates in the past."""
    rng = random.Random(shape.seed)
    objects: list[tuple[str, str, dict[str, str]]] = [
        ("sys", "system", {"system_time": format_date(EPOCH, FMT)}),
        ("sched", "scheduler", {
            "scheduling_algorithm": shape.algorithm, "system_state": shape.state,
            "node_sharing": shape.node_sharing, "maxtopdogs": shape.maxtopdogs,
            "topdogs_per_queue": shape.topdogs_per_queue,
            **({"plan": shape.plan, "resolution": "60"} if shape.plan != "simulate" else {}),
            **({"replan": shape.replan} if shape.replan != "no" else {}),
            **({"system_sysprio": shape.formula} if shape.formula else {}),
        }),
    ]
    names = [f"q{q}" for q in range(shape.queues)]
    # the first queue gets 90 % of the nodes, the others share the rest
    bounds = [0, max(1, int(shape.nodes * 0.9)) if shape.queues > 1 else shape.nodes]
    for q in range(1, shape.queues):
        bounds.append(bounds[-1] + (shape.nodes - bounds[1]) // (shape.queues - 1))
    bounds[-1] = shape.nodes
    node_queue = []
    for q in range(shape.queues):
        node_queue += [q] * (bounds[q + 1] - bounds[q])
    for i in range(shape.nodes):
        classes = f"({names[node_queue[i]]},{shape.cores})" if shape.queues > 1 else None
        data = {"ncores": str(shape.cores), **({"gpus": str(shape.gpus)} if shape.gpus else {})}
        if classes:
            data["avail_classes"] = classes
        objects.append((f"n{i:06d}", "node", data))
    for q, name in enumerate(names):
        objects.append((name, "queue", {"maxjobsperuser": str(shape.per_user)} if q == 0 and shape.per_user else {}))

    n_running = int(shape.jobs * shape.running_share)
    asks = random.Random(shape.seed + 7)  # its own draws: the other cases stay as they were
    free = {q: list(range(bounds[q], bounds[q + 1])) for q in range(shape.queues)}
    for j in range(shape.jobs):
        q = 0 if shape.queues == 1 or rng.random() < 0.9 else rng.randint(1, shape.queues - 1)
        span = bounds[q + 1] - bounds[q]
        nodes = _size(rng, max(1, span // 8 if q else span // 4))
        wall = rng.choice([1800, 3600, 7200, 14400, 43200, 86400])
        tasks = shape.cores if rng.random() < 0.8 else rng.randint(1, shape.cores)
        data = {
            "owner": f"user{rng.randint(1, 200):03d}", "group": "g", "queue": names[q],
            "queuedate": format_date(EPOCH - rng.randint(60, 3 * 86400), FMT),
            "wall": str(wall), "nummachines": str(nodes), "taskspernode": str(tasks),
            "totalcores": str(nodes * tasks),
        }
        if shape.actual is not None:
            data["actualruntime"] = str(min(shape.actual, wall))
        if shape.qos_share is not None:
            data["qos"] = "normal"
        if j < n_running and len(free[q]) >= nodes:
            placed, free[q] = free[q][:nodes], free[q][nodes:]
            data["state"] = "Running"
            data["dispatchdate"] = format_date(EPOCH - rng.randint(0, wall - 1), FMT)
            data["nodelist"] = "".join(f"(n{i:06d},{tasks})" for i in placed)
        else:
            data["state"] = "Idle"
            if shape.waiting_tasks:
                data["taskspernode"], data["totalcores"] = str(shape.waiting_tasks), str(nodes * shape.waiting_tasks)
            if shape.gpus and asks.random() < 0.5:
                data["totalgpus"] = str(nodes)
        objects.append((f"j{j:06d}", "job", data))
    if shape.array:
        objects.append(("array", "job", {
            "owner": "user000", "group": "g", "queue": names[0], "state": "Pending",
            "queuedate": format_date(EPOCH - 3600, FMT), "wall": "3600", "nummachines": "1",
            "taskspernode": str(shape.cores), "totalcores": str(shape.cores), "actualruntime": "1800",
            "ArrayJobId": "1000", "ArrayTaskId": f"0-{shape.array - 1}%10"}))
    if shape.qos_share is not None:
        objects.append(("c0", "class", {"name": "normal", "grp_tres": f"cpu={int(shape.qos_share * shape.nodes * shape.cores)}"}))
    return lml.build(objects)


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the project folder
TRACES = os.path.join(ROOT, "..", "shared", "traces")
KTH = os.path.join(TRACES, "KTH-SP2-1996-2-filtered-sc15.swf.gz")

AGE_FORMULA = "1000 * min(AGE, 604800) / 604800 + 1000 * (nummachines / 3290 + totalcores / 26320) / 2"
CASES: dict[str, Shape] = {
    "juropa": Shape(),
    "juropa-conservative": Shape(maxtopdogs="all"),
    # shared nodes, every waiting job on a quarter of each node's cores; with 2 GPUs a node, half
    # of them asking one on each node (the GPUs run out before the cores)
    "juropa-shared": Shape(node_sharing="yes", waiting_tasks=2),
    "juropa-gpus": Shape(node_sharing="yes", waiting_tasks=2, gpus=2),
    "large": Shape(nodes=160_000, cores=48, jobs=20_000),
    "large-conservative": Shape(nodes=160_000, cores=48, jobs=20_000, maxtopdogs="all"),
    "juropa-array": Shape(array=5000),  # a 5,000-task array throttled to 10 (``%10``) in the queue
    # the same array where Slurm's backfill reserves for its first 500 jobs (bf_max_job_test's
    # default, as jufo slurm config sets it): many tasks hold reservations, so the throttle is
    # full later than now for the tasks after them
    "juropa-array-500": Shape(array=5000, maxtopdogs="500", topdogs_per_queue="no", replan="yes"),
    "juropa-per-user": Shape(per_user=2),  # the big queue runs at most 2 jobs per user
    # every job of one QOS whose GrpTRES lets it hold half the machine's cores at once (Slurm's
    # group limit: every further job waits, without a reservation, for the QOS's jobs to end)
    "juropa-qos": Shape(qos_share=0.5),
    # Slurm's backfill plan as the walltime-only forecast: its default bf_max_job_test=500, and every job
    "juropa-slurm": Shape(plan="slurm", maxtopdogs="500", topdogs_per_queue="no"),
    "juropa-slurm-all": Shape(plan="slurm", maxtopdogs="all", topdogs_per_queue="no"),
    # as jufo slurm config sets it: with --history every job ends at its learned run time and
    # each early end makes the reservations anew (the learned simulation keeps at most 20)
    "juropa-slurm-replan": Shape(plan="slurm", maxtopdogs="500", topdogs_per_queue="no", replan="yes"),
    # Slurm's multifactor priority as jufo slurm config writes it (age over PriorityMaxAge's
    # default 7 days, job size): the order changes with time, so the queue is ordered anew at
    # every event; with EASY, and as jufo slurm config sets the rest
    "juropa-age": Shape(formula=AGE_FORMULA),
    "juropa-slurm-age": Shape(plan="slurm", maxtopdogs="500", topdogs_per_queue="no", replan="yes",
                              formula=AGE_FORMULA),
    **{f"growth-{n}": Shape(jobs=n, nodes=max(3290, n * 2)) for n in (1600, 3200, 6400, 12800)},
    # conservative on JUROPA's nodes where every job ends after 30 minutes: node-set
    # compression at every end, which grows much faster than the jobs (see the README)
    **{f"early-{n}": Shape(jobs=n, running_share=0.2, maxtopdogs="all", actual=1800) for n in (400, 800, 1200)},
}
SERIES = ("growth", "early")  # a name that stands for all its cases, with the growth exponent


# Runs a Python command and, at exit, writes its peak resident set (VmHWM, KiB) to a file. The
# figure belongs to the process image after exec: a forked child's ru_maxrss would also count
# the pages it shared with the benchmark process (which holds the generated snapshots).
_PEAK = (
    "import atexit, os, runpy, sys\n"
    "def _peak():\n"
    "    with open('/proc/self/status') as fh, open(os.environ['JUFO_PEAK_FILE'], 'w') as out:\n"
    "        out.write(next(l for l in fh if l.startswith('VmHWM:')).split()[1])\n"
    "atexit.register(_peak)\n"
    "mode, target, sys.argv = sys.argv[1], sys.argv[2], sys.argv[2:]\n"
    "if mode == '-m':\n"
    "    runpy.run_module(target, run_name='__main__', alter_sys=True)\n"
    "else:\n"
    "    sys.argv[0] = '-c'\n"
    "    exec(compile(target, '<bench>', 'exec'), {'__name__': '__main__'})\n"
)


def _time(cmd: list[str]) -> tuple[float, int]:
    """Wall time of a Python command (``[python, '-m', module, ...]`` or ``[python, '-c', code,
    ...]``) and its own peak resident memory in KiB, run through the ``_PEAK`` wrapper."""
    with tempfile.NamedTemporaryFile(suffix=".peak") as peak:
        began = time.perf_counter()
        subprocess.run([cmd[0], "-c", _PEAK, *cmd[1:]], check=True, stdout=subprocess.DEVNULL,
                       env={**os.environ, "JUFO_PEAK_FILE": peak.name})
        elapsed = time.perf_counter() - began
        text = open(peak.name).read().strip()
    return elapsed, int(text) if text else 0


_BASELINE = "from lxml import etree; import sys; t = etree.parse(sys.argv[1]); open(sys.argv[2], 'wb').write(etree.tostring(t))"


def bench_replay(repeat: int) -> dict:
    """The whole KTH-SP2 trace replayed (future queue dates, exact walls, EASY, AttributeState)."""
    times, peak = [], 0
    for _ in range(repeat):
        seconds, rss = _time([sys.executable, "-m", "jufo", "replay", KTH, "--exact", "-q"])
        times.append(seconds)
        peak = max(peak, rss)
    return {"case": "kth-replay", "jobs": 28481, "jufo_s": round(statistics.median(times), 3),
            "peak_mib": round(peak / 1024)}


def trace_snapshot(at: int = 15_000_000, nodes: int = 100) -> bytes:
    """A snapshot of the KTH-SP2 trace at ``at`` seconds: running, waiting and later jobs."""
    from jufo.io import swf

    data, _ = swf.snapshot(swf.read(KTH), swf.Conversion(at=at, future=True, actual=True, nodes=nodes,
                                                         settings={"system_state": "NodeState"}))
    return data


def synthetic_history(path: str, shape: Shape, days: int = 90, per_day: int = 600) -> None:
    """A history as ``days`` of cron runs on the ``shape`` machine would leave it: finished jobs
    of the same users and queues (run times a random share of the wall), and one scored
    forecast per job, so every learner and the calibration have their full load."""
    from jufo.io.accounting import JobRecord
    from jufo.learn.history import History

    rng = random.Random(shape.seed + 1)
    names = [f"q{q}" for q in range(shape.queues)]
    records, forecasts = [], []
    for k in range(days * per_day):
        submit = EPOCH - days * 86400 + k * 86400 // per_day
        wall = rng.choice([1800, 3600, 7200, 14400, 43200, 86400])
        wait = int(rng.expovariate(1 / 7200))
        start = submit + wait
        nodes = _size(rng, shape.nodes // 4)
        records.append(JobRecord(f"h{k:07d}", f"user{rng.randint(1, 200):03d}", "g", "", rng.choice(names), "",
                                 nodes, nodes * shape.cores, wall, submit, start,
                                 start + max(60, int(wall * rng.random()))))
        predicted = submit + int(wait * rng.uniform(0.3, 1.5))
        forecasts.append((submit, (f"h{k:07d}", predicted, predicted, predicted, None, None, None, None, "wall", None)))
    with History.open(path) as store:
        store.import_records(records, "sacct")
        with store.transaction() as db:
            db.executemany("INSERT INTO forecasts VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                           [(row[0], made, *row[1:]) for made, row in forecasts])
        store.set_meta("capacity", str(shape.nodes * shape.cores))


def _with_and_without_history(src: str, master: str, tmp: str, repeat: int,
                              options: tuple[str, ...] = ()) -> tuple[float, float, int]:
    """Median seconds of plain ``predict`` of ``src`` and of ``predict --history`` (with
    ``options``) on a fresh copy of the history ``master`` each time, and the latter's peak
    memory (KiB)."""
    import shutil

    out = os.path.join(tmp, "timed.xml")
    plain, learned, peak = [], [], 0
    for i in range(repeat):
        plain.append(_time([sys.executable, "-m", "jufo", "predict", src, "-o", out, "-q"])[0])
        copy = os.path.join(tmp, f"h{i}.db")
        shutil.copy(master, copy)
        seconds, rss = _time([sys.executable, "-m", "jufo", "predict", src, "-o", out, "-q", "--history", copy,
                              *options])
        learned.append(seconds)
        peak = max(peak, rss)
    return statistics.median(plain), statistics.median(learned), peak


def history_case(tmp: str, shape: Shape, jufo: Callable[[list[str]], object], days: int = 90) -> tuple[str, str]:
    """Write the ``shape`` snapshot and ``days`` of history (``synthetic_history``) into ``tmp``
    as a cron run five minutes before left it: that run (``jufo(args)``) on the same queue,
    then. Returns the snapshot's path and the history's."""
    src, earlier, master = (os.path.join(tmp, n) for n in ("in.xml", "earlier.xml", "master.db"))
    data = generate(shape)
    with open(src, "wb") as fh:
        fh.write(data)
    now = f'key="system_time" value="{format_date(EPOCH, FMT)}"'.encode()
    with open(earlier, "wb") as fh:
        fh.write(data.replace(now, f'key="system_time" value="{format_date(EPOCH - 300, FMT)}"'.encode(), 1))
    synthetic_history(master, shape, days=days)
    jufo(["predict", earlier, "-o", os.path.join(tmp, "earlier-out.xml"), "-q", "--history", master])
    return src, master


def bench_history(repeat: int, machine: str = "juropa") -> dict:
    """``predict --history`` on the ``machine`` snapshot (``juropa``, ``large``) with 90 days of
    history (54,000 jobs and forecasts, user caps learned from them) as a cron run five minutes
    before left it (the same queue then), against plain ``predict``; each run on a fresh copy of
    that history."""
    shape = CASES[machine]
    with tempfile.TemporaryDirectory() as tmp:
        src, master = history_case(tmp, shape, lambda args: subprocess.run(
            [sys.executable, "-m", "jufo", *args], check=True))
        p, h, peak = _with_and_without_history(src, master, tmp, repeat)
        p2, h2, _ = _with_and_without_history(src, master, tmp, repeat, ("-P", "2"))
        return {"case": f"{machine}-history", "jobs": shape.jobs, "nodes": shape.nodes, "history_jobs": 54_000,
                "jufo_s": round(h, 3), "plain_s": round(p, 3), "ratio": round(h / p, 2), "peak_mib": round(peak / 1024),
                "two_processes_s": round(h2, 3), "two_processes_ratio": round(h2 / p2, 2)}


def bench_trace_command(name: str, args: list[str], repeat: int) -> dict:
    """A whole command on a real trace (``history import``, ``backtest``)."""
    times, peak = [], 0
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(repeat):
            argv = [a.replace("{tmp}", os.path.join(tmp, f"r{i}")) for a in args]
            seconds, rss = _time([sys.executable, "-m", "jufo", *argv])
            times.append(seconds)
            peak = max(peak, rss)
    return {"case": name, "jufo_s": round(statistics.median(times), 3), "peak_mib": round(peak / 1024)}


HPC2N = os.path.join(TRACES, "HPC2N-2002-2.1-cln.swf.gz")
TRACE_COMMANDS = {
    "hpc2n-import": ["history", "import", HPC2N, "--history", "{tmp}.db"],
    "kth-backtest": ["backtest", KTH, "-P", "2", "--json"],
    "hpc2n-backtest": ["backtest", HPC2N, "-P", "2", "--json"],
    # conservative backfilling, real run times (compression at every early end) against exact ones
    "kth-conservative-real": ["replay", KTH, "--set", "maxtopdogs=all", "-q", "--json"],
    "kth-conservative-exact": ["replay", KTH, "--set", "maxtopdogs=all", "--exact", "-q", "--json"],
    "kth-easy-real": ["replay", KTH, "-q", "--json"],
}


def bench_hpc2n_cron(repeat: int) -> dict:
    """A cron run on 90 days of HPC2N: the trace's first year imported into a history (with 14
    days of retro-forecasts), one ``predict --history`` at the year's end (which keeps the last
    90 days: 18,035 jobs, 11,872 forecasts), then the timed run five minutes later on a fresh
    copy each time, refit included, against plain ``predict`` of the same snapshot."""
    year = 365 * 86400
    with tempfile.TemporaryDirectory() as tmp:
        db, first, snap, out = (os.path.join(tmp, n) for n in ("master.db", "first.xml", "snap.xml", "out.xml"))
        jufo = [sys.executable, "-m", "jufo"]
        subprocess.run([*jufo, "history", "import", HPC2N, "--history", db, "--until", str(year), "--retro", "14",
                        "--nodes", "120", "--cores", "2", "-P", "2"], check=True, capture_output=True)
        for path, at in ((first, year), (snap, year + 300)):
            subprocess.run([*jufo, "swf2lml", HPC2N, "--at", str(at), "--nodes", "120", "--cores", "2", "-o", path,
                            "-q"], check=True)
        subprocess.run([*jufo, "predict", first, "--history", db, "-o", out, "-q"], check=True)
        p, h, peak = _with_and_without_history(snap, db, tmp, repeat)
        return {"case": "hpc2n-cron", "jufo_s": round(h, 3), "plain_s": round(p, 3), "ratio": round(h / p, 2),
                "peak_mib": round(peak / 1024)}


def synthetic_sacct(folder: str, shape: Shape, jobs: int = 20_000, gap: float = 118.0) -> tuple[str, str]:
    """A site's accounting and a snapshot of its machine, for ``backtest --machine``: the
    ``shape`` machine's nodes in a big partition and a devel one of 10 nodes, and ``jobs``
    jobs (a mean ``gap`` seconds apart, about 28 days, the machine near full) started first
    come, first served per partition. Returns the two paths."""
    import datetime
    import heapq

    rng = random.Random(shape.seed + 2)
    names = [f"j{i:05d}" for i in range(1, shape.nodes + 1)]
    devel = set(names[-10:])
    objects = [(n, "node", {"ncores": str(shape.cores), "classes": f"[{'devel' if n in devel else 'batch'}:{shape.cores}]"})
               for n in names]
    machine = os.path.join(folder, "machine.xml")
    with open(machine, "wb") as fh:
        from jufo.io import lml
        fh.write(lml.build(objects))
    free = {"batch": (shape.nodes - 10) * shape.cores, "devel": 10 * shape.cores}
    t, wanted = EPOCH, []
    for k in range(jobs):
        t += int(rng.expovariate(1 / gap))
        part = "devel" if rng.random() < 0.05 else "batch"
        nodes = min(rng.choice([1, 1, 2, 4, 8, 16, 32, 64, 128]), 10 if part == "devel" else shape.nodes // 2)
        wall = rng.choice([1800, 3600, 7200, 14400, 43200, 86400]) if part == "batch" else 1800
        wanted.append((t, k, part, nodes, wall, max(60, int(wall * rng.random()))))
    events = [(submit, 1, k) for submit, k, *_ in wanted]
    heapq.heapify(events)
    queues: dict[str, list[int]] = {"batch": [], "devel": []}
    start: dict[int, int] = {}
    while events:
        now, kind, k = heapq.heappop(events)
        _, _, part, nodes, _, run = wanted[k]
        if kind == 0:
            free[part] += nodes * shape.cores
        else:
            queues[part].append(k)
        for p, queue in queues.items():
            while queue and free[p] >= wanted[queue[0]][3] * shape.cores:
                j = queue.pop(0)
                free[p] -= wanted[j][3] * shape.cores
                start[j] = now
                heapq.heappush(events, (now + wanted[j][5], 0, j))
    date = lambda x: datetime.datetime.fromtimestamp(x, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")
    lines = ["JobID|User|Group|Account|Partition|QOS|NNodes|NCPUS|Timelimit|Submit|Start|End|State"]
    for submit, k, part, nodes, wall, run in wanted:
        lines.append(f"{k + 1}|u{k % 150}|g|a|{part}|normal|{nodes}|{nodes * shape.cores}|{wall // 60}|{date(submit)}|"
                     f"{date(start[k])}|{date(start[k] + run)}|COMPLETED")
    sacct = os.path.join(folder, "sacct.txt")
    with open(sacct, "w") as fh:
        fh.write("\n".join(lines) + "\n")
    return sacct, machine


def bench_sacct_backtest(repeat: int) -> dict:
    """``backtest --machine`` of a JUROPA-size site's accounting (``synthetic_sacct``), a
    snapshot an hour, 2 processes."""
    with tempfile.TemporaryDirectory() as tmp:
        sacct, machine = synthetic_sacct(tmp, CASES["juropa"])
        return bench_trace_command("juropa-sacct-backtest", ["backtest", sacct, "--machine", machine, "--every", "3600",
                                                             "-P", "2", "--json"], repeat)


def bench_compression(repeat: int) -> dict:
    """``kth-conservative-real`` against ``kth-conservative-exact``, interleaved (a slow minute
    of the machine hits both): what compression at every early end costs. The ratio is the
    median of the pairs' ratios."""
    real, exact = [], []
    for _ in range(repeat):
        real.append(_time([sys.executable, "-m", "jufo", *TRACE_COMMANDS["kth-conservative-real"]])[0])
        exact.append(_time([sys.executable, "-m", "jufo", *TRACE_COMMANDS["kth-conservative-exact"]])[0])
    return {"case": "kth-compression", "jufo_s": round(statistics.median(real), 3),
            "exact_s": round(statistics.median(exact), 3),
            "ratio": round(statistics.median(r / e for r, e in zip(real, exact)), 2)}


def bench_kth_predict(repeat: int) -> dict:
    """``predict`` on the whole KTH-SP2 trace as one snapshot (``swf2lml --future --exact --set
    system_state=AttributeState``, 28,481 jobs) against ``replay --exact`` of the same jobs,
    which skips the XML: the two interleaved, so a slow minute of the machine hits both."""
    with tempfile.TemporaryDirectory() as tmp:
        src, out = os.path.join(tmp, "kth.xml"), os.path.join(tmp, "out.xml")
        subprocess.run([sys.executable, "-m", "jufo", "swf2lml", KTH, "--future", "--exact", "--set",
                        "system_state=AttributeState", "-o", src], check=True, stderr=subprocess.DEVNULL)
        predict, replay, peak = [], [], 0
        for _ in range(repeat):
            seconds, rss = _time([sys.executable, "-m", "jufo", "predict", src, "-o", out, "-q"])
            predict.append(seconds)
            peak = max(peak, rss)
            replay.append(_time([sys.executable, "-m", "jufo", "replay", KTH, "--exact", "-q", "--json"])[0])
    p, r = statistics.median(predict), statistics.median(replay)
    return {"case": "kth-predict", "jobs": 28481, "jufo_s": round(p, 3), "replay_s": round(r, 3),
            "ratio": round(p / r, 2), "peak_mib": round(peak / 1024)}


# the floor for pure Python: the minimal count-based EASY simulator the tests check replay
# against (in a checkout only), on the same trace with real run times as ``kth-easy-real``
FLOOR = os.path.join(ROOT, "tests", "easy_reference.py")
_FLOOR_RUN = ("import gzip, runpy, sys\n"
              "m = runpy.run_path(sys.argv[1])\n"
              "with gzip.open(sys.argv[2], 'rt') as fh:\n"
              "    total = next(int(l.split(':')[1]) for l in fh if l.startswith('; MaxProcs:'))\n"
              "m['simulate'](m['load'](sys.argv[2]), total)\n")


def bench_floor(repeat: int) -> dict:
    """``kth-easy-real`` against the minimal EASY simulator: jufo's time, the floor's, the ratio."""
    if not os.path.exists(FLOOR):
        raise SystemExit(f"kth-floor needs {FLOOR} (a checkout of the repository)")
    ours = [_time([sys.executable, "-m", "jufo", *TRACE_COMMANDS["kth-easy-real"]])[0] for _ in range(repeat)]
    floor = [_time([sys.executable, "-c", _FLOOR_RUN, FLOOR, KTH])[0] for _ in range(repeat)]
    j, f = statistics.median(ours), statistics.median(floor)
    return {"case": "kth-floor", "jufo_s": round(j, 3), "floor_s": round(f, 3), "ratio": round(j / f, 1)}


SLURM_CONFIG = os.path.join(ROOT, "tests", "data", "slurm", "mixed", "config.txt")  # a real Slurm 22.05's (the mixed lab)
# nodes, jobs, PriorityMaxAge: the mixed lab's hour (every job is past it within the forecast's
# first hour, and the order freezes) or Slurm's default of 7 days (the order changes throughout)
SLURM_SITE = {"slurm-site": (3000, 2000, None), "slurm-site-10k": (10_000, 8000, None),
              "slurm-site-7d": (3000, 2000, "7-00:00:00"), "slurm-site-10k-7d": (10_000, 8000, "7-00:00:00")}


def slurm_outputs(folder: str, nodes: int, jobs: int, seed: int = 1, max_age: str | None = None) -> None:
    """What ``scontrol show job/node/partition/reservation/config`` print on a Slurm site of
    ``nodes`` 128-core nodes in one exclusive partition, with ``jobs`` jobs (some running on
    contiguous node ranges until 95 % of the nodes are taken, the rest pending): the files
    ``jufo slurm snapshot --from`` reads. The configuration is the mixed lab's (backfill,
    multifactor priority with an age factor; ``max_age``, if given, its PriorityMaxAge)."""
    import shutil
    from datetime import datetime, timedelta

    rng = random.Random(seed)
    now = datetime(2026, 11, 25, 15, 26, 1)

    def stamp(d: datetime) -> str:
        return d.strftime("%Y-%m-%dT%H:%M:%S")

    width = len(str(nodes))

    def span(a: int, b: int) -> str:
        return f"n{a:0{width}d}" if a == b else f"n[{a:0{width}d}-{b:0{width}d}]"

    shutil.copy(SLURM_CONFIG, os.path.join(folder, "config.txt"))
    if max_age is not None:
        with open(SLURM_CONFIG) as fh:
            config = re.sub(r"(?m)^PriorityMaxAge(\s*)= .*$", rf"PriorityMaxAge\1= {max_age}", fh.read())
        with open(os.path.join(folder, "config.txt"), "w") as fh:
            fh.write(config)
    lines, busy, free = [], set(), 1
    rest = ("ReqB:S:C:T=0:0:*:* Socks/Node=* NtasksPerN:B:S:C=0:0:*:* CoreSpec=* MinCPUsNode=1 MinMemoryNode=0 "
            "MinTmpDiskNode=0 Features=(null) DelayBoot=00:00:00 OverSubscribe=NO Contiguous=0 Licenses=(null) "
            "Network=(null) Command=/home/u/job.sh WorkDir=/home/u StdErr=/home/u/o StdIn=/dev/null StdOut=/home/u/o Power=")
    for j in range(1, jobs + 1):
        size = min(nodes // 4, 2 ** rng.randint(0, 7) if rng.random() < 0.7 else rng.randint(1, 300))
        limit = rng.choice([30, 60, 120, 360, 720, 1440])
        user = rng.randint(1, 400)
        submit = now - timedelta(seconds=rng.randint(60, 3 * 86400))
        head = (f"JobId={j} JobName=job{j} UserId=user{user:03d}({1000 + user}) GroupId=grp(100) MCS_label=N/A "
                f"Priority={rng.randint(1000, 100000)} Nice=0 Account=acct{rng.randint(1, 30)} QOS=normal ")
        common = ("Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=0:0 DerivedExitCode=0:0 "
                  f"TimeLimit={limit // 60:02d}:{limit % 60:02d}:00 TimeMin=N/A ")
        sized = f"NumNodes={size} NumCPUs={size * 128} NumTasks={size} CPUs/Task=1 TRES=cpu={size * 128},node={size} "
        if free + size - 1 <= int(nodes * 0.95) and rng.random() < 0.4:
            a, b = free, free + size - 1
            free = b + 1
            busy.update(range(a, b + 1))
            ran = rng.randint(1, limit * 60 - 1)
            start = now - timedelta(seconds=ran)
            submit = min(submit, start)
            lines.append(head + "JobState=RUNNING Reason=None Dependency=(null) " + common
                         + f"RunTime={ran // 3600:02d}:{ran // 60 % 60:02d}:{ran % 60:02d} SubmitTime={stamp(submit)} "
                         f"EligibleTime={stamp(submit)} AccrueTime={stamp(submit)} StartTime={stamp(start)} "
                         f"EndTime={stamp(start + timedelta(minutes=limit))} Deadline=N/A Partition=batch "
                         f"NodeList={span(a, b)} BatchHost=n{a:0{width}d} " + sized
                         + f"Nodes={span(a, b)} CPU_IDs=0-127 Mem=0 GRES= " + rest)
        else:
            lines.append(head + f"JobState=PENDING Reason={'Priority' if j % 3 else 'Resources'} Dependency=(null) "
                         + common + f"RunTime=00:00:00 SubmitTime={stamp(submit)} EligibleTime={stamp(submit)} "
                         f"AccrueTime={stamp(submit)} StartTime=Unknown EndTime=Unknown Deadline=N/A Partition=batch "
                         "NodeList= " + sized + rest)
    with open(os.path.join(folder, "job.txt"), "w") as fh:
        fh.write("\n".join(lines) + "\n")
    with open(os.path.join(folder, "node.txt"), "w") as fh:
        for i in range(1, nodes + 1):
            state, used = ("ALLOCATED", 128) if i in busy else ("IDLE", 0)
            fh.write(f"NodeName=n{i:0{width}d} Arch=x86_64 CoresPerSocket=64 CPUAlloc={used} CPUEfctv=128 CPUTot=128 "
                     f"NodeAddr=n{i:0{width}d} Version=22.05.8 RealMemory=256000 Sockets=2 Boards=1 State={state} "
                     "ThreadsPerCore=1 Weight=1 Partitions=batch CfgTRES=cpu=128,mem=250G\n")
    with open(os.path.join(folder, "partition.txt"), "w") as fh:
        fh.write(f"PartitionName=batch AllowGroups=ALL Default=YES DefaultTime=NONE MaxNodes=UNLIMITED MaxTime=1-00:00:00 "
                 f"Nodes={span(1, nodes)} PriorityJobFactor=1 PriorityTier=1 OverSubscribe=EXCLUSIVE OverTimeLimit=NONE "
                 f"State=UP TotalCPUs={nodes * 128} TotalNodes={nodes}\n")
    with open(os.path.join(folder, "reservation.txt"), "w") as fh:
        fh.write("No reservations in the system\n")


def bench_slurm_site(name: str, repeat: int) -> dict:
    """A Slurm site's forecast from its ``scontrol`` outputs (``slurm_outputs``): ``jufo slurm
    snapshot --from``, then ``jufo predict`` with what ``jufo slurm config`` reads (Slurm's
    backfill plan, multifactor priority with its age factor)."""
    nodes, jobs, max_age = SLURM_SITE[name]
    with tempfile.TemporaryDirectory() as tmp:
        slurm_outputs(tmp, nodes, jobs, max_age=max_age)
        snap, site, out = (os.path.join(tmp, n) for n in ("snap.xml", "site.xml", "out.xml"))
        subprocess.run([sys.executable, "-m", "jufo", "slurm", "config", "--from", tmp, "-o", site, "-q"], check=True)
        read, forecast, peak = [], [], 0
        for _ in range(repeat):
            read.append(_time([sys.executable, "-m", "jufo", "slurm", "snapshot", "--from", tmp, "-o", snap])[0])
            seconds, rss = _time([sys.executable, "-m", "jufo", "predict", snap, "--config", site, "-o", out, "-q"])
            forecast.append(seconds)
            peak = max(peak, rss)
        pending = sum(1 for line in open(os.path.join(tmp, "job.txt")) if "JobState=PENDING" in line)
    return {"case": name, "nodes": nodes, "jobs": jobs, "pending": pending, "snapshot_s": round(statistics.median(read), 3),
            "jufo_s": round(statistics.median(forecast), 3), "peak_mib": round(peak / 1024)}


def bench_whatif(repeat: int) -> dict:
    """``jufo whatif`` on the JUROPA-size snapshot: a 4-node, 1-hour candidate in every
    partition, against plain ``predict``; the figure is seconds per partition asked."""
    shape = CASES["juropa"]
    with tempfile.TemporaryDirectory() as tmp:
        src, out = os.path.join(tmp, "in.xml"), os.path.join(tmp, "out.xml")
        with open(src, "wb") as fh:
            fh.write(generate(shape))
        asked, plain = [], []
        for _ in range(repeat):
            asked.append(_time([sys.executable, "-m", "jufo", "whatif", src, "-N", "4", "-t", "60", "--json"])[0])
            plain.append(_time([sys.executable, "-m", "jufo", "predict", src, "-o", out, "-q"])[0])
        partitions = shape.queues
    w, p = statistics.median(asked), statistics.median(plain)
    return {"case": "juropa-whatif", "partitions": partitions, "jufo_s": round(w, 3),
            "per_partition_s": round(w / partitions, 3), "plain_s": round(p, 3)}


def bench(name: str, shape: Shape | None, repeat: int) -> dict:
    if name == "juropa-whatif":
        return bench_whatif(repeat)
    if name in SLURM_SITE:
        return bench_slurm_site(name, repeat)
    if name == "kth-replay":
        return bench_replay(repeat)
    if name == "kth-floor":
        return bench_floor(repeat)
    if name == "kth-predict":
        return bench_kth_predict(repeat)
    if name == "kth-compression":
        return bench_compression(repeat)
    if name.endswith("-history"):
        return bench_history(repeat, name.removesuffix("-history"))
    if name == "juropa-sacct-backtest":
        return bench_sacct_backtest(repeat)
    if name == "hpc2n-cron":
        return bench_hpc2n_cron(repeat)
    if name in TRACE_COMMANDS:
        return bench_trace_command(name, TRACE_COMMANDS[name], repeat)
    with tempfile.TemporaryDirectory() as tmp:
        src, out = os.path.join(tmp, "in.xml"), os.path.join(tmp, "out.xml")
        with open(src, "wb") as fh:
            fh.write(generate(shape) if shape is not None else trace_snapshot())
        jufo, base, peak = [], [], 0
        for _ in range(repeat):
            seconds, rss = _time([sys.executable, "-m", "jufo", "predict", src, "-o", out, "-q"])
            jufo.append(seconds)
            peak = max(peak, rss)
            base.append(_time([sys.executable, "-c", _BASELINE, src, out])[0])
        j, b = statistics.median(jufo), statistics.median(base)
        return {"case": name, **(asdict(shape) if shape else {"jobs": "trace", "nodes": 100}),
                "file_mb": round(os.path.getsize(src) / 2**20, 1),
                "jufo_s": round(j, 3), "parse_write_s": round(b, 3), "ratio": round(j / b, 1),
                "peak_mib": round(peak / 1024)}


def growth_exponent(rows: list[dict]) -> float:
    """Least-squares slope of log(time) over log(jobs).

    >>> round(growth_exponent([{"jobs": 1000, "jufo_s": 1.0}, {"jobs": 2000, "jufo_s": 2.0}]), 3)
    1.0
    """
    import math

    xs = [math.log(r["jobs"]) for r in rows]
    ys = [math.log(r["jufo_s"]) for r in rows]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)


ALL_CASES = [*CASES, "juropa-whatif", "kth-snapshot", "kth-replay", "kth-predict", "kth-floor", "kth-compression", "juropa-history",
             "juropa-slurm-replan-history",
             "large-history", "juropa-sacct-backtest", "hpc2n-cron", *SLURM_SITE,
             *TRACE_COMMANDS]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench", description=__doc__)
    parser.add_argument("cases", nargs="*", default=["juropa"],
                        help=f"cases: {', '.join(ALL_CASES)}, {', '.join(SERIES)}")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--write", metavar="FILE", help="only write the first case's snapshot to FILE")
    args = parser.parse_args(argv)
    if args.write:
        with open(args.write, "wb") as fh:
            fh.write(generate(CASES[args.cases[0]]) if args.cases[0] in CASES else trace_snapshot())
        return
    names = [n for c in args.cases for n in (sorted((k for k in CASES if k.startswith(f"{c}-")),
                                                     key=lambda k: int(k.split("-")[1])) if c in SERIES else [c])]
    unknown = [n for n in names if n not in ALL_CASES]
    if unknown:
        parser.error(f"unknown case {unknown[0]!r}; cases: {', '.join(ALL_CASES)}, {', '.join(SERIES)}")
    # time jufo as installed (pip compiles it to bytecode): where PYTHONDONTWRITEBYTECODE is
    # set, each run would otherwise compile its 10,000 lines first (0.13 s here)
    compileall.compile_dir(os.path.dirname(os.path.abspath(jufo.__file__)), quiet=1)
    rows = []
    for name in names:
        row = bench(name, CASES.get(name), args.repeat)
        rows.append(row)
        if args.json:
            print(json.dumps(row))
        elif name == "hpc2n-cron":
            print(f"{name:22s} predict --history {row['jufo_s']:6.3f} s  plain predict {row['plain_s']:6.3f} s  "
                  f"peak {row['peak_mib']:6d} MiB  (90 days of HPC2N: 18,035 jobs, 11,872 forecasts)")
        elif name.endswith("-history"):
            print(f"{name:22s} jufo {row['jufo_s']:8.3f} s  predict without history {row['plain_s']:6.3f} s  "
                  f"ratio {row['ratio']:5.2f}  peak {row['peak_mib']:6d} MiB  (90 days, 54,000 jobs); "
                  f"-P 2 {row['two_processes_s']:.3f} s, ratio {row['two_processes_ratio']:.2f}")
        elif name == "juropa-whatif":
            print(f"{name:22s} jufo {row['jufo_s']:8.3f} s  {row['partitions']} partitions, "
                  f"{row['per_partition_s']:.3f} s each  predict {row['plain_s']:6.3f} s")
        elif name in TRACE_COMMANDS:
            print(f"{name:22s} jufo {row['jufo_s']:8.3f} s  peak {row['peak_mib']:6d} MiB  "
                  "(the whole trace)")
        elif name == "juropa-sacct-backtest":
            print(f"{name:22s} jufo {row['jufo_s']:8.3f} s  peak {row['peak_mib']:6d} MiB  "
                  "(20,000 jobs, 28 days, a snapshot an hour)")
        elif name == "kth-floor":
            print(f"{name:22s} jufo {row['jufo_s']:8.3f} s  minimal EASY simulator {row['floor_s']:6.3f} s  "
                  f"ratio {row['ratio']:5.1f}  (kth-easy-real)")
        elif name == "kth-compression":
            print(f"{name:22s} jufo {row['jufo_s']:8.3f} s  exact run times {row['exact_s']:6.3f} s  "
                  f"ratio {row['ratio']:5.2f}  (conservative, the whole trace, interleaved)")
        elif name == "kth-predict":
            print(f"{name:22s} jufo {row['jufo_s']:8.3f} s  replay --exact {row['replay_s']:6.3f} s  "
                  f"ratio {row['ratio']:5.2f}  peak {row['peak_mib']:6d} MiB  (the KTH trace as one snapshot)")
        elif name in SLURM_SITE:
            print(f"{name:22s} jufo {row['jufo_s']:8.3f} s  slurm snapshot {row['snapshot_s']:6.3f} s  "
                  f"peak {row['peak_mib']:6d} MiB  ({row['nodes']:,} nodes, {row['jobs']:,} jobs, "
                  f"{row['pending']:,} pending)")
        elif name == "kth-replay":
            print(f"{name:22s} jufo {row['jufo_s']:8.3f} s  (whole trace, 28,481 jobs)  peak {row['peak_mib']:6d} MiB")
        else:
            print(f"{name:22s} jufo {row['jufo_s']:8.3f} s  parse+write {row['parse_write_s']:6.3f} s  "
                  f"ratio {row['ratio']:6.1f}  peak {row['peak_mib']:6d} MiB  ({row['jobs']} jobs, "
                  + (f"an array of {row['array']} tasks, " if row.get("array") else "")
                  + f"{row['nodes']} nodes, {row['file_mb']} MB)")
    for series in SERIES:
        growth = [r for r in rows if r["case"].startswith(f"{series}-")]
        if len(growth) >= 2:
            print(f"{series} exponent (time ~ jobs^k): k = {growth_exponent(growth):.2f}")
    by_case = {r["case"]: r for r in rows}
    for slow, fast, what in (("juropa-conservative", "juropa", "conservative / EASY on the JUROPA-size snapshot"),
                             ("large-conservative", "large", "conservative / EASY on the 160,000-node snapshot"),
                             ("kth-conservative-real", "kth-conservative-exact",
                              "conservative on KTH, real / exact run times")):
        if slow in by_case and fast in by_case:
            print(f"{what}: {by_case[slow]['jufo_s'] / by_case[fast]['jufo_s']:.1f}x")


if __name__ == "__main__":
    main()
