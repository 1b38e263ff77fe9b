"""Mallmann's strategy study on real traces: ``python -m benchmarks.study [TRACE...]`` replays every
strategy preset of ``configs/`` (FCFS, SPTF, LPTF, SJSF, LJSF, SCDF, LCDF; each without and
with EASY backfilling) and prints mean wait, mean bounded slowdown (10 s) and utilisation as a
Markdown table. Traces without requested times (Lublin's model) are replayed with ``--exact``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

STRATEGIES = ["fcfs", "sptf", "lptf", "sjsf", "ljsf", "scdf", "lcdf"]
TRACES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "traces")
DEFAULT_TRACES = [os.path.join(TRACES, "KTH-SP2-1996-2-filtered-sc15.swf.gz"), os.path.join(TRACES, "lublin_256.swf.gz")]


def replay(trace: str, preset: str, exact: bool) -> dict:
    """One ``jufo replay --config PRESET --json`` in its own process."""
    args = [sys.executable, "-m", "jufo", "replay", trace, "--config", preset, "-q", "--json"]
    done = subprocess.run(args + (["--exact"] if exact else []), capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def table(trace: str, workers: int = 2) -> str:
    """The Markdown rows of one trace: a preset per row, without and with backfilling."""
    exact = replay(trace, "fcfs", False)["jobs"] == 0  # no requested times: plan with the real ones
    presets = [p for s in STRATEGIES for p in (s, f"{s}-bf")]
    with ThreadPoolExecutor(workers) as pool:
        results = dict(zip(presets, pool.map(lambda p: replay(trace, p, exact), presets)))
    name = os.path.basename(trace) + (" (--exact)" if exact else "")
    lines = [f"| {name} | mean wait (s) | mean bounded slowdown | utilisation | "
             "with EASY backfilling: mean wait (s) | mean bounded slowdown | utilisation |",
             "|---|---|---|---|---|---|---|"]
    for s in STRATEGIES:
        cells = []
        for p in (s, f"{s}-bf"):
            r = results[p]
            cells += [f"{r['mean_wait']:,.0f}", f"{r['mean_bsld']:,.1f}", f"{r['utilisation']:.1%}"]
        lines.append(f"| {s.upper()} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.study", description=__doc__)
    parser.add_argument("traces", nargs="*", default=DEFAULT_TRACES)
    parser.add_argument("-j", "--jobs", type=int, default=2, help="replays at once")
    args = parser.parse_args(argv)
    for trace in args.traces:
        print(table(trace, args.jobs))
        print()


if __name__ == "__main__":
    main()
