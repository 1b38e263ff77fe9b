"""Baranov's adequacy of jufo as a model of a real Slurm: P = sqrt(mean((V − v)²)) over the
jobs' residence times (end − submit), for ``jufo replay`` of the stream a lab submitted against
what Slurm really did, next to P_ideal, the same measure between two Slurm runs of the very
same stream (what a perfect model of a nondeterministic system could reach).

    python lab/adequacy.py RUN_A RUN_B [--json]

RUN_A and RUN_B are two ``slurmlab.py run --accounting`` folders of the same workload. The
stream replayed is RUN_A's as Slurm saw it: submit times, limits, sizes and the real run times
(``sacct``'s end − start).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from jufo.io import accounting, lml

EXTRA: list[str] = []  # more --set KEY=VALUE for the replay (tries)
from jufo.io.dates import parse_date


def runs(lab: Path) -> dict[str, dict]:
    """Per trace job: Slurm's submit, start and end (epoch), nodes, cores and limit."""
    records, _ = accounting.read_sacct(accounting.text_lines(str(lab / "sacct.txt")), str(lab / "sacct.txt"))
    by_slurm = {r.id: r for r in records if r.start is not None and r.end is not None}
    out = {}
    with open(lab / "submitted.tsv") as fh:
        header = fh.readline().rstrip("\n").split("\t")
        for line in fh:
            row = dict(zip(header, line.rstrip("\n").split("\t")))
            rec = by_slurm.get(row["slurm_id"])
            if rec is not None:
                out[row["trace_id"]] = {"submit": rec.submit, "start": rec.start, "end": rec.end,
                                        "nodes": rec.nodes, "cores": rec.cores, "wall": rec.wall}
    return out


def p_of(a: dict[str, int], b: dict[str, int]) -> tuple[float, int]:
    both = sorted(set(a) & set(b))
    if not both:
        return math.nan, 0
    return math.sqrt(sum((a[k] - b[k]) ** 2 for k in both) / len(both)), len(both)


def replay(run_a: dict[str, dict], lab: Path, nodes: int, cores: int) -> dict[str, int]:
    """``jufo replay`` of RUN_A's stream with the lab's own settings: residence per trace job."""
    zero = min(j["submit"] for j in run_a.values())
    numbers = {tid: k + 1 for k, tid in enumerate(sorted(run_a, key=lambda t: (run_a[t]["submit"], t)))}
    with tempfile.TemporaryDirectory() as tmp:
        swf = os.path.join(tmp, "stream.swf")
        with open(swf, "w") as fh:
            fh.write(f"; MaxProcs: {nodes * cores}\n; UnixStartTime: {zero}\n")
            for tid, j in run_a.items():
                submit, run = j["submit"] - zero, j["end"] - j["start"]
                fh.write(f"{numbers[tid]} {submit} {j['start'] - j['submit']} {run} {j['cores']} -1 -1 {j['cores']} "
                         f"{j['wall'] or run} -1 1 1 1 -1 -1 -1 -1 -1\n")
        site, out = os.path.join(tmp, "site.xml"), os.path.join(tmp, "out.xml")
        first = sorted((lab / "capture").iterdir())[0]
        subprocess.run([sys.executable, "-m", "jufo", "slurm", "config", "--from", str(first), "-o", site, "-q"],
                       check=True)
        subprocess.run([sys.executable, "-m", "jufo", "replay", swf, "--config", site, *EXTRA, "--set",
                        "system_state=NodeState", "--nodes", str(nodes), "--cores", str(cores), "-q", "-o", out,
                        "--json"], check=True, stdout=subprocess.DEVNULL)
        by_number = {str(v): k for k, v in numbers.items()}
        result = {}
        for obj in lml.read(out).of_type("job"):
            d = obj.data
            tid = by_number.get(d.get("step", ""))
            end = d.get("jufo_endtime")
            if tid is not None and end:
                result[tid] = parse_date(end)[0] - run_a[tid]["submit"]
        return result


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python lab/adequacy.py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("run_a", type=Path)
    p.add_argument("run_b", type=Path)
    p.add_argument("--nodes", type=int, required=True)
    p.add_argument("--cores", type=int, default=1)
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    a, b = runs(args.run_a), runs(args.run_b)
    res_a = {k: v["end"] - v["submit"] for k, v in a.items()}
    res_b = {k: v["end"] - v["submit"] for k, v in b.items()}
    ideal, n_ideal = p_of(res_a, res_b)
    jufo_res = replay(a, args.run_a, args.nodes, args.cores)
    p_jufo, n_jufo = p_of(res_a, jufo_res)
    p_jufo_b, _ = p_of(res_b, jufo_res)
    result = {"p_jufo_vs_a": p_jufo, "p_jufo_vs_b": p_jufo_b, "p_ideal": ideal, "jobs": n_jufo,
              "jobs_ideal": n_ideal, "mean_residence_a": sum(res_a.values()) / len(res_a)}
    if args.json:
        print(json.dumps(result))
    else:
        print(f"Baranov's P over residence times: jufo replay vs Slurm run A {p_jufo:.1f} s, vs run B "
              f"{p_jufo_b:.1f} s ({n_jufo} jobs); P_ideal (Slurm run A vs run B) {ideal:.1f} s ({n_ideal} jobs); "
              f"mean residence {result['mean_residence_a']:.0f} s")


if __name__ == "__main__":
    main()
