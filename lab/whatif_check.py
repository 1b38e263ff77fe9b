"""``jufo whatif`` against Slurm's own answer to the same question: on a running lab, for
candidates of several sizes and limits, ``sbatch --test-only`` and ``jufo whatif`` on a snapshot
taken the same moment; optionally each candidate is then submitted for real, and both are
compared with the start Slurm's backfill plans for it at its first pass (its ``StartTime``
then: what ``jufo whatif``'s walltime answer reproduces) and with its actual start.
``sbatch --test-only`` ignores pending jobs (``job_start_data``), so it answers another question.

    SLURM_CONF=DIR/etc/slurm.conf python lab/whatif_check.py [--rounds 3] [--submit] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

from jufo.io import lml
from jufo.io.dates import parse_date

SIZES = (1, 2, 4, 8, 16)
LIMITS = (1, 3, 10)
_ANSWER = re.compile(r"to start at (\S+) using \d+ processors on nodes \S+ in partition (\S+)")


def test_only(user: str, nodes: int, limit: int, partition: str | None) -> int | None:
    cmd = ["runuser", "-u", user, "--", "sbatch", "--test-only", "-N", str(nodes), "--exclusive", "-t", str(limit),
           "--wrap", "sleep 1"] + (["-p", partition] if partition else [])
    done = subprocess.run(cmd, capture_output=True, text=True, cwd="/tmp")
    m = _ANSWER.search(done.stderr)
    return parse_date(m.group(1))[0] if m else None


def submit(user: str, nodes: int, limit: int, partition: str | None) -> str:
    cmd = ["runuser", "-u", user, "--", "sbatch", "--parsable", "-N", str(nodes), "--exclusive", "-t", str(limit),
           "-J", "whatif", "-o", "/dev/null", "--wrap", f"sleep {limit * 30}"] + (["-p", partition] if partition else [])
    return subprocess.run(cmd, capture_output=True, text=True, cwd="/tmp").stdout.strip().split(";")[0]


def last_pass() -> int | None:
    """When Slurm's backfill last began a pass (sdiag), or None."""
    out = subprocess.run(["sdiag"], capture_output=True, text=True).stdout
    m = re.search(r"Last cycle when:.*\((\d+)\)", out.partition("Backfilling stats")[2])
    return int(m.group(1)) if m else None


def planned_start(job: str, after: int | None, wait: float = 60) -> int | None:
    """The start Slurm's backfill planned for ``job`` at its first pass after ``after``
    (epoch), or its start if it started before; None if no pass came within ``wait`` seconds."""
    end = time.time() + wait
    while time.time() < end:
        now_pass = last_pass()
        out = subprocess.run(["scontrol", "show", "job", job], capture_output=True, text=True).stdout
        state = re.search(r"JobState=(\S+)", out)
        start = re.search(r"StartTime=(\S+)", out)
        if state and state.group(1) != "PENDING" and start and start.group(1)[:1].isdigit():
            return parse_date(start.group(1))[0]
        if now_pass is not None and after is not None and now_pass > after and start and start.group(1)[:1].isdigit():
            return parse_date(start.group(1))[0]
        time.sleep(1)
    return None


def actual_starts(rows: list[dict], wait: float = 1800) -> None:
    """Wait until every submitted candidate has started; its start, relative to the question."""
    end = time.time() + wait
    while True:
        left = 0
        for r in rows:
            if "actual" in r or not r.get("job"):
                continue
            out = subprocess.run(["scontrol", "show", "job", r["job"]], capture_output=True, text=True).stdout
            state = re.search(r"JobState=(\S+)", out)
            start = re.search(r"StartTime=(\S+)", out)
            if state and state.group(1) != "PENDING" and start and start.group(1)[:1].isdigit():
                r["actual"] = parse_date(start.group(1))[0] - r["at"]
            elif state:
                left += 1
            else:  # finished and purged (MinJobAge) before it was looked at: its start is unknown
                r["actual"] = None
        if not left or time.time() >= end:
            return
        time.sleep(5)


def jufo(*args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "jufo", *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"jufo {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python lab/whatif_check.py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--pause", type=float, default=60.0, help="seconds between rounds")
    p.add_argument("--partition", default=None)
    p.add_argument("--user", default="jlab1")
    p.add_argument("--submit", action="store_true",
                   help="each round, one candidate (sizes and limits in turn) is also submitted for real "
                        "(sleeping half its limit), and its actual start is compared with both answers")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        site, snap = os.path.join(tmp, "site.xml"), os.path.join(tmp, "snap.xml")
        jufo("slurm", "config", "-o", site, "-q")
        for k in range(args.rounds):
            jufo("slurm", "snapshot", "-o", snap)
            # now in the clock scontrol prints its dates in, as the snapshot has it
            now = parse_date(lml.read(snap).of_type("system")[0].data["system_time"])[0]
            candidates = [(n, t) for n in SIZES for t in LIMITS]
            if args.submit:
                candidates = [candidates[k % len(candidates)]]
            for nodes, limit in candidates:
                slurm = test_only(args.user, nodes, limit, args.partition)
                answer = json.loads(jufo("whatif", snap, "--config", site, "-N", str(nodes), "-t", str(limit),
                                         "--user", args.user, "--json", "--test-only",
                                         *(["-p", args.partition] if args.partition else [])))["answers"][0]
                mine = parse_date(answer["start"])[0] if answer["start"] else None
                quick = parse_date(answer["start_test_only"])[0] if answer.get("start_test_only") else None
                row = {"round": k, "nodes": nodes, "limit_min": limit, "slurm": slurm - now if slurm else None,
                       "jufo": mine - now if mine else None, "jufo_test_only": quick - now if quick else None,
                       "reason": answer["reason"], "at": now}
                if args.submit:
                    before = last_pass()
                    row["job"] = submit(args.user, nodes, limit, args.partition)
                    planned = planned_start(row["job"], before) if row["job"] else None
                    row["planned"] = planned - now if planned is not None else None
                    actual_starts([r for r in rows if "actual" not in r], wait=0)  # before they are purged
                rows.append(row)
            if k + 1 < args.rounds:
                time.sleep(args.pause)
    if args.submit:
        actual_starts(rows)
    both = [r for r in rows if r["slurm"] is not None and r["jufo"] is not None]
    within = sum(abs(r["slurm"] - r["jufo"]) <= 60 for r in both)
    summary = {"candidates": len(rows), "compared": len(both), "within_60s": within / len(both) if both else None,
               "differ": [r for r in both if abs(r["slurm"] - r["jufo"]) > 60]}
    quick = [r for r in rows if r["slurm"] is not None and r.get("jufo_test_only") is not None]
    if quick:  # jufo whatif --test-only against sbatch --test-only itself
        summary["test_only"] = {"compared": len(quick),
                                "within_60s": sum(abs(r["slurm"] - r["jufo_test_only"]) <= 60 for r in quick) / len(quick),
                                "differ": [r for r in quick if abs(r["slurm"] - r["jufo_test_only"]) > 60]}
    planned = [r for r in rows if r.get("planned") is not None and r["jufo"] is not None]
    if planned:
        summary["plan"] = {"compared": len(planned),
                           "within_60s": sum(abs(r["planned"] - r["jufo"]) <= 60 for r in planned) / len(planned),
                           "exact": sum(r["planned"] == r["jufo"] for r in planned) / len(planned),
                           "differ": [r for r in planned if abs(r["planned"] - r["jufo"]) > 60]}
    real = [r for r in both if r.get("actual") is not None]
    if real:
        names = ("slurm", "jufo", "planned") if all(r.get("planned") is not None for r in real) else ("slurm", "jufo")
        summary["actual"] = {name: {"median_abs_error": sorted(abs(r["actual"] - r[name]) for r in real)[len(real) // 2],
                                    "within_60s": sum(abs(r["actual"] - r[name]) <= 60 for r in real) / len(real)}
                             for name in names}
        summary["actual"]["submitted"] = len(real)
    if args.json:
        print(json.dumps({**summary, "rows": rows}))
    else:
        print(f"{len(rows)} candidates, {len(both)} with both answers; jufo whatif within 60 s of sbatch --test-only: "
              f"{within} ({summary['within_60s']:.1%})" if both else "no answers to compare")
        for r in summary["differ"]:
            print("  differ:", r)
        if "test_only" in summary:
            print(f"jufo whatif --test-only within 60 s of sbatch --test-only: {summary['test_only']['within_60s']:.1%} "
                  f"of {summary['test_only']['compared']}")
        if "plan" in summary:
            plan = summary["plan"]
            print(f"jufo whatif within 60 s of the start Slurm's backfill planned for the submitted candidate: "
                  f"{plan['within_60s']:.1%} of {plan['compared']} (to the second: {plan['exact']:.1%})")
        if "actual" in summary:
            print("submitted for real:", json.dumps(summary["actual"]))


if __name__ == "__main__":
    main()
