"""Where the time of ``jufo predict --history`` goes, phase by phase, in one process.

``python -m benchmarks.bench juropa-history`` times whole commands; this says which part of a
history run costs what, so the next optimisation starts from a measurement (the brief: profile
before optimising). It builds ``benchmarks.bench``'s case (a synthetic snapshot, its 90-day
history, a run on the same queue five minutes earlier, as cron would leave it), then runs plain
``predict`` and ``predict --history`` (on a fresh copy of that history each time) in this
process, with a stopwatch around each named phase, and prints each phase's median seconds.
With ``-P 2`` the phases the child process does (start windows and user caps, the walltime-only
simulation) are not seen here: what is left is the parent's path, the one the run waits for.

    python -m benchmarks.phases [--machine juropa] [--repeat 3] [-P 2] [--days 90] [--json]

No profiler runs, so the seconds are the code's own (pyinstrument's are 2-3 times these); the
phases do not sum to the total: the rest is reading and writing the LML and Python's own work.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterator

from benchmarks.bench import CASES, Shape, history_case
from jufo import cli
from jufo.learn import calibration, history, outlook

# (owner, attribute, label): what a stopwatch goes around; a simulation with habits (its
# fifth argument) is the learned one, the other the walltime-only one
PHASES = [
    (history.History, "open", "open the history (checks)"),
    (history.History, "record_snapshot", "record the snapshot"),
    (history.History, "runtimes", "run-time rules (indexes; asked later)"),
    (history.History, "records", "read the jobs of 8 weeks"),
    (history.History, "kept_caps", "read the kept cap days"),
    (history.History, "scored_samples", "read the scored forecasts"),
    (calibration.Calibration, "_group", "calibrate (group; bands cut with the ranges)"),
    (outlook, "CancelOdds", "cancellation odds"),
    (outlook, "habits_at", "user caps and start windows"),
    (outlook.Aside, "habits", "wait for the child's caps and windows"),
    (outlook.Aside, "starts", "wait for the child's walltime-only starts"),
    (outlook, "job_runtimes", "run times of the snapshot's jobs"),
    (outlook, "simulate", "simulation"),
    (calibration.Calibration, "range", "ranges"),
    (outlook, "results", "results"),
    (history.History, "record_forecasts", "record the forecasts"),
]


@contextlib.contextmanager
def stopwatches(seconds: dict[str, float]) -> Iterator[None]:
    """Add each phase's seconds to ``seconds`` while inside; the code as it was after."""
    saved = []
    for owner, name, label in PHASES:
        original = owner.__dict__[name]
        func = original.__func__ if isinstance(original, (classmethod, staticmethod)) else original

        def timed(*args, _func: Callable = func, _label: str = label, **kwargs):
            if _label == "simulation":
                learned = len(args) > 4 and args[4] is not None or kwargs.get("behaviour") is not None
                _label = "learned simulation" if learned else "walltime-only simulation"
            start = time.perf_counter()
            try:
                return _func(*args, **kwargs)
            finally:
                seconds[_label] += time.perf_counter() - start

        setattr(owner, name, classmethod(timed) if isinstance(original, classmethod) else timed)
        saved.append((owner, name, original))
    try:
        yield
    finally:
        for owner, name, original in saved:
            setattr(owner, name, original)


def run(args: list[str]) -> float:
    """Seconds of one jufo command in this process (its output discarded; a failure raises)."""
    start = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        try:
            cli.main(args, prog_name="jufo")
        except SystemExit as stop:
            if stop.code:
                raise RuntimeError(f"jufo {' '.join(args)} exited {stop.code}") from None
    return time.perf_counter() - start


def measure(machine: str = "juropa", repeat: int = 3, processes: int = 1, days: int = 90,
            shape: Shape | None = None) -> dict:
    """Median seconds of plain ``predict``, of ``predict --history`` and of each phase of the
    latter, on ``benchmarks.bench``'s ``machine`` (or ``shape``)."""
    shape = shape or CASES[machine]
    with tempfile.TemporaryDirectory() as tmp:
        copy, out = os.path.join(tmp, "h.db"), os.path.join(tmp, "out.xml")
        src, master = history_case(tmp, shape, run, days)
        plain = [run(["predict", src, "-o", out, "-q"]) for _ in range(repeat)]
        totals, phases = [], defaultdict(list)
        for _ in range(repeat):
            shutil.copy(master, copy)
            seconds: dict[str, float] = defaultdict(float)
            with stopwatches(seconds):
                totals.append(run(["predict", src, "-o", out, "-q", "--history", copy, "-P", str(processes)]))
            for label, value in seconds.items():
                phases[label].append(value)
    return {"machine": machine, "processes": processes, "repeat": repeat, "history_days": days,
            "plain_s": round(statistics.median(plain), 3), "history_s": round(statistics.median(totals), 3),
            "ratio": round(statistics.median(totals) / statistics.median(plain), 2),
            "phases_s": {label: round(statistics.median(values + [0.0] * (repeat - len(values))), 3)
                         for label, values in sorted(phases.items(), key=lambda kv: -statistics.median(kv[1]))}}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks.phases", description=__doc__.splitlines()[0])
    p.add_argument("--machine", default="juropa", choices=sorted(CASES), help="benchmarks.bench's snapshot shape")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("-P", "--processes", type=int, default=1, choices=(1, 2))
    p.add_argument("--days", type=int, default=90, help="days of synthetic history (600 jobs a day)")
    p.add_argument("--json", action="store_true")
    a = p.parse_args(argv)
    result = measure(a.machine, a.repeat, a.processes, a.days)
    if a.json:
        print(json.dumps(result, indent=1))
        return
    print(f"{a.machine}, -P {a.processes}: predict --history {result['history_s']:.3f} s, plain predict "
          f"{result['plain_s']:.3f} s ({result['ratio']}x), in one process, median of {a.repeat}")
    for label, value in result["phases_s"].items():
        print(f"  {label:42s} {value:6.3f} s")


if __name__ == "__main__":
    sys.exit(main())
