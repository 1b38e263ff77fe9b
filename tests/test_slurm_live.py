"""A real Slurm 22.05: a 16-node lab on localhost (``lab/slurmlab.py``), a burst of jobs,
``jufo slurm config`` and ``jufo slurm snapshot`` read live (``sdiag`` too), and jufo's
walltime-only forecast — Slurm's own backfill plan — held against Slurm's own estimate. Runs where ``.ci/run`` installed Slurm as root
(``JUFO_SLURM_LAB=1``); skipped elsewhere with the reason. Every daemon the lab starts is
stopped by its pid, whatever the test's outcome.
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT / "lab"))
import slurmlab  # noqa: E402

from jufo.io import lml, scontrol  # noqa: E402
from jufo.io.dates import parse_date  # noqa: E402


def _why_not() -> str | None:
    if os.environ.get("JUFO_SLURM_LAB") != "1":
        return "JUFO_SLURM_LAB=1 not set (.ci/run sets it where it installed Slurm as root)"
    if os.geteuid() != 0:
        return "needs root to start Slurm's daemons"
    missing = [b for b in ("slurmctld", "slurmd", "scontrol", "sbatch", "munged") if not shutil.which(b)
               and not os.path.exists(f"/usr/sbin/{b}")]
    return f"Slurm not installed: {', '.join(missing)}" if missing else None


pytestmark = pytest.mark.skipif(_why_not() is not None, reason=_why_not() or "")


def _steps_of(lab_dir: Path) -> list[str]:
    """The lab's job steps still alive: slurmstepd processes whose environment names its
    configuration (they inherit slurmd's), so another lab on the machine does not count."""
    out = []
    for pid in subprocess.run(["pgrep", "slurmstepd"], capture_output=True, text=True).stdout.split():
        try:
            with open(f"/proc/{pid}/environ", "rb") as fh:
                if str(lab_dir).encode() in fh.read():
                    out.append(pid)
        except OSError:
            continue  # ended meanwhile
    return out


def _jufo(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "jufo", *args], env=env, capture_output=True, text=True, timeout=120)


def test_live_slurm_forecast_matches_slurms_own_estimate(tmp_path, monkeypatch):
    # not under pytest's own folder: its mode 700 keeps the munge user and the jobs' users out
    home = tempfile.mkdtemp(prefix="jufo-slurm-lab-")
    os.chmod(home, 0o755)
    lab = slurmlab.Lab(Path(home) / "lab", nodes=16, cores=2, ports=2000)
    env: dict[str, str] = {}
    try:
        env = slurmlab.start(lab)
        monkeypatch.setenv("SLURM_CONF", env["SLURM_CONF"])
        rng = random.Random(7)
        ids = []
        for k in range(30):
            limit = rng.choice([1, 2, 3])
            job = slurmlab.Submit(0, slurmlab.USERS[k % 3], rng.choice([1, 1, 2, 4, 8]), limit,
                                  int(limit * 60 * rng.uniform(0.2, 0.9)), trace_id=str(k))
            ids.append(slurmlab.submit(lab, env, job, ids))
        assert all(ids), "sbatch failed"
        # Slurm's backfill (bf_interval=5) gives every pending job its planned start
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            jobs = scontrol.parse_records(scontrol.run_scontrol("job"), "job", "JobId")
            pending = [j for j in jobs if j.get("JobState") == "PENDING"]
            if pending and all(j.get("StartTime", "Unknown")[:1].isdigit() for j in pending):
                break
            time.sleep(1)
        site = tmp_path / "site.xml"
        done = _jufo(env, "slurm", "config", "-o", str(site), "-q")
        assert done.returncode == 0, done.stderr
        clocks = {}
        # read in the lab's own zone (UTC) and where scontrol and sdiag print the time half an
        # hour off the hour (the site's local time, as they print it, with no zone), for a user
        # whose dates are set to print without seconds
        for zone, user in (("UTC", {}), ("Asia/Kolkata", {"SLURM_TIME_FORMAT": "%d.%m. %H:%M"})):
            snap, out = tmp_path / f"snap-{zone[:4]}.xml", tmp_path / f"out-{zone[:4]}.xml"
            done = _jufo({**env, "TZ": zone, **user}, "slurm", "snapshot", "-o", str(snap))
            assert done.returncode == 0, done.stderr
            done = _jufo(env, "predict", str(snap), "--config", str(site), "-o", str(out), "-q")
            assert done.returncode == 0, done.stderr
            doc = lml.read(str(out))
            clocks[zone] = parse_date(doc.of_type("system")[0].data["system_time"])[0]
            rows = [o.data for o in doc.of_type("job") if o.data.get("state") == "Pending"]
            assert rows, "no pending job at the capture"
            compared = []
            for d in rows:
                est, mine = d.get("starttime", ""), d.get("jufo_starttime")
                if est[:1].isdigit() and mine:
                    compared.append((int(d["userprio"]), d["step"], parse_date(mine)[0] - parse_date(est)[0]))
            assert compared, "Slurm gave no estimate to compare with"
            top = max(compared)
            print(f"{zone}: pending {len(rows)}, compared {len(compared)}, within 60 s "
                  f"{sum(abs(x[2]) <= 60 for x in compared)}, top job {top[1]} differs by {top[2]} s")
            assert abs(top[2]) <= 60, f"{zone}: the top job {top[1]}: jufo − Slurm = {top[2]} s"
            # the walltime-only forecast is Slurm's own plan (plan=slurm, as of its last pass by sdiag)
            share = sum(abs(x[2]) <= 60 for x in compared) / len(compared)
            assert share >= 0.8, f"{zone}: only {share:.0%} of {len(compared)} within 60 s of Slurm's estimate"
        # the snapshots a few seconds apart: Kolkata's clock 5 h 30 min ahead
        assert abs(clocks["Asia/Kolkata"] - clocks["UTC"] - 19800) <= 60, clocks
    finally:
        stopped = slurmlab.stop(lab.dir)
    assert "slurmctld" in stopped and sum(n.startswith("slurmd") for n in stopped) == 16
    left = subprocess.run(["pgrep", "-f", str(lab.dir)], capture_output=True, text=True).stdout.split()
    assert left == [], f"processes of the lab still run: {left}"
    steps = _steps_of(lab.dir)
    assert not steps, f"job steps of the lab left behind: {steps}"
    shutil.rmtree(home, ignore_errors=True)
