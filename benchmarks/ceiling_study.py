"""How far could better knowledge take the history forecast? ``python -m benchmarks.ceiling_study
TRACE [--every 86400] [--ahead 86400] [-P 2] [--cases learned,exact,...]``.

It runs ``jufo backtest``'s protocol (a snapshot every ``--every`` seconds, the history knowing
only the past, phase 2 as shipped) with the learned simulation given knowledge a forecast cannot
have, and prints the figures of each case next to the forecast as made:

- ``learned``: the forecast as ``jufo backtest`` makes it;
- ``past``: plus the jobs submitted in the ``--ahead`` seconds before the snapshot, submitted
  again as many seconds later (a guess at the arrivals from what is known; learned run times);
- ``arrivals``: plus the jobs really submitted in the next ``--ahead`` seconds (their learned
  run times);
- ``exact``: every job's real run time in place of the learned one;
- ``exact+arrivals``: both: with ``--ahead`` long enough, a replay of the real future from the
  snapshot, so what is left is where the scheduler model differs from the machine.

The oracle enters through ``backtest.behaviour_for``, the one place the learned simulation takes
its run times from, so the snapshot, the walltime-only forecast and the calibration are those of
``jufo backtest`` (the ``learned`` case gives its figures to the digit). Not a forecast: it
measures what better run times or a model of arrivals could win at most.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from math import ceil

from jufo.engine.job import WAITING, Job
from jufo.learn import backtest as bt

CASES = ("learned", "past", "arrivals", "exact", "exact+arrivals")
_SHIPPED = bt.behaviour_for
_SIMULATE = bt.simulate
ARRIVAL = "arrival"  # the id prefix of the jobs this study adds
_CASE: dict[str, object] = {"name": "learned", "ahead": 0, "settings": None}


def arrivals(trace, at: int, ahead: int, since: int, shift: int, cores: int, first_index: int,
             exact: bool) -> list[Job]:
    """The trace's jobs submitted in ``(at + since, at + since + ahead]`` that fit the machine,
    each as a waiting job that arrives ``shift`` seconds after its submit (seconds from the
    snapshot) on nodes of ``cores`` cores, as the backtest's snapshot draws a job; with
    ``exact`` its real run time, else none (the learned one is given it).

    >>> from jufo.io.swf import Trace, TraceJob
    >>> t = Trace([TraceJob(1, 50, 0, 30, 4, 100, 1, 1, 1), TraceJob(2, 150, 0, 30, 4, 100, 1, 1, 1)], {"MaxProcs": "8"})
    >>> [(j.id, j.queued, j.actual) for j in arrivals(t, 100, 100, 0, 0, 1, 0, True)]
    [('arrival1', 50, 30)]
    >>> [(j.id, j.queued, j.actual) for j in arrivals(t, 100, 100, -100, 100, 1, 0, False)]
    [('arrival0', 50, None)]
    """
    out = []
    largest = trace.max_procs or max((job.procs for job in trace.jobs), default=0)
    for k, job in enumerate(trace.jobs):
        if not at + since < job.submit <= at + since + ahead or job.requested <= 0 or not 0 < job.procs <= largest:
            continue
        owner, group, queue = trace.owner(job), trace.group_of(job), trace.queue_of(job)
        nodes = ceil(job.procs / cores)
        data = {"step": f"{ARRIVAL}{k}", "owner": owner, "group": group, "queue": queue, "state": "Idle",
                "wall": str(job.requested), "nummachines": str(nodes), "taskspernode": str(ceil(job.procs / nodes)),
                "totalcores": str(job.procs)}
        run = max(1, min(job.run, job.requested)) if exact else None
        out.append(Job(f"{ARRIVAL}{k}", first_index + len(out), data, WAITING, owner, group, queue,
                       job.submit + shift - at, job.requested, run, nodes, ceil(job.procs / nodes), job.procs))
    return out


def behaviour_with_oracle(snap, learned):
    """``behaviour_for`` of the learned simulation's snapshot, after the case's knowledge is
    added to it: real run times and/or arrivals (learned run times unless ``exact``)."""
    name, ahead, settings = _CASE["name"], int(_CASE["ahead"]), _CASE["settings"]
    trace, _, _, by_number = bt._load(settings)
    at = snap.epoch - trace.epoch
    exact = name.startswith("exact")
    if exact:
        for job in snap.jobs:
            real = by_number.get(job.key)
            if real is not None:
                job.actual = max(1, min(real.run, job.wall))
    first = max((job.index for job in snap.jobs), default=0) + 1
    if name in ("arrivals", "exact+arrivals"):
        snap.jobs.extend(arrivals(trace, at, ahead, 0, 0, settings.cores, first, exact))
    elif name == "past":
        snap.jobs.extend(arrivals(trace, at, ahead, -ahead, ahead, settings.cores, first, False))
    return _SHIPPED(snap, learned)


def simulate_then_drop(snap, config, report, progress=None, behaviour=None):
    """``simulate``, with the added jobs taken out of the snapshot afterwards: they are not
    forecasts to score."""
    done = _SIMULATE(snap, config, report, progress, behaviour=behaviour)
    snap.jobs[:] = [job for job in snap.jobs if not job.id.startswith(ARRIVAL)]
    return done


def run_case(settings: bt.Settings, every: int, name: str, ahead: int, workers: int) -> dict:
    """The backtest's figures with the case's knowledge (processes fork with it set)."""
    _CASE.update(name=name, ahead=ahead, settings=settings)
    bt.behaviour_for, bt.simulate = behaviour_with_oracle, simulate_then_drop
    try:
        started = time.perf_counter()
        summary, forecasts = bt.backtest(settings, every, workers=workers)
    finally:
        bt.behaviour_for, bt.simulate = _SHIPPED, _SIMULATE
    history, wall = summary.overall["history"], summary.overall["walltime"]
    simulated = [abs(f.raw.actual - f.raw.learned) for f in forecasts if f.raw.learned is not None]
    return {"case": name, "median_abs_error": history["median_abs_error"],
            "ratio": history["median_abs_error"] / wall["median_abs_error"],
            "simulated_median_abs_error": statistics.median(simulated) if simulated else None,
            "within_1h": history["within_1h"],
            "coverage": history.get("coverage"), "seconds": round(time.perf_counter() - started, 1)}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks.ceiling_study", description=__doc__.split("\n\n")[0])
    p.add_argument("trace")
    p.add_argument("--every", type=int, default=86400)
    p.add_argument("--ahead", type=int, default=86400, help="seconds of arrivals (past, arrivals cases)")
    p.add_argument("-P", "--processes", type=int, default=1)
    p.add_argument("--cases", default=",".join(CASES))
    args = p.parse_args(argv)
    cases = args.cases.split(",")
    unknown = [c for c in cases if c not in CASES]
    if unknown:
        p.error(f"unknown case {unknown[0]!r}: one of {', '.join(CASES)}")
    settings = bt.Settings(args.trace)
    print(f"{args.trace}, a snapshot every {args.every} s, arrivals {args.ahead} s ahead")
    print(f"{'case':16} {'median abs. error':>18} {'x walltime':>10} {'simulated start':>16} "
          f"{'within 1 h':>10} {'range held':>10} {'seconds':>8}")
    for case in cases:
        r = run_case(settings, args.every, case, args.ahead, args.processes)
        print(f"{case:16} {r['median_abs_error']:>16,.0f} s {r['ratio']:>9.3f}x {r['simulated_median_abs_error']:>14,.0f} s "
              f"{r['within_1h']:>10.1%} {r['coverage']:>10.1%} {r['seconds']:>8}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
