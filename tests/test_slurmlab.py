"""The Slurm lab's configuration and workload, without a Slurm: what ``slurmlab.slurm_conf`` writes and
``slurmlab.workload`` submits."""

from __future__ import annotations

import sys
from pathlib import Path

from conftest import ROOT

sys.path.insert(0, str(ROOT / "lab"))
import slurmlab  # noqa: E402


def _conf(**shape) -> list[str]:
    return slurmlab.slurm_conf(slurmlab.Lab(Path("/var/lib/jufo-lab"), accounting=True, **shape)).splitlines()


def test_fair_share_usage_decays_with_the_half_life_asked_in_lab_minutes():
    """Slurm's default half-life, 7 days, is 101 lab minutes at --scale 100; the labs before
    --halflife decayed usage in 10."""
    assert "PriorityDecayHalfLife=0-00:10:00" in _conf(priority="fairshare")
    assert "PriorityDecayHalfLife=0-01:41:00" in _conf(priority="fairshare", halflife=101)
    assert "PriorityDecayHalfLife=1-00:01:00" in _conf(priority="fairshare", halflife=1441)
    assert not any(line.startswith("PriorityDecayHalfLife") for line in _conf(priority="multifactor"))



def test_with_timeouts_the_trace_jobs_that_ran_into_their_limit_sleep_past_it(tmp_path):
    """``--timeouts``: a trace job that ran 98 % of its limit or more was killed at it, so in the
    lab it sleeps past its limit and Slurm kills it (state TIMEOUT); the others, and every job
    without the option, end 5 s before their limit at the latest."""
    import gzip

    trace = tmp_path / "t.swf.gz"
    lines = [f"{k} {k * 60} 0 {run} 1 -1 -1 1 {limit} -1 1 {k % 3} 1 -1 1 -1 -1 -1"
             for k, (run, limit) in enumerate([(12000, 12000), (11900, 12000), (10800, 12000), (6000, 12000)], 1)]
    with gzip.open(trace, "wt") as fh:
        fh.write("\n".join(lines) + "\n")
    lab = slurmlab.Lab(tmp_path, nodes=4, cores=1)
    plain = [j.sleep for j in slurmlab.workload(str(trace), lab, 4, 0, 100.0, 4)]
    killed = [j.sleep for j in slurmlab.workload(str(trace), lab, 4, 0, 100.0, 4, timeouts=True)]
    assert plain == [115, 115, 108, 60]  # limits of 2 min, each run at its ratio, 5 s before the limit at most
    assert killed == [120 + slurmlab.TIMEOUT_SLEEP, 120 + slurmlab.TIMEOUT_SLEEP, 108, 60]

def test_gpu_jobs_are_a_share_of_the_shared_partitions_jobs_chosen_by_trace_number():
    """``--gpu-jobs SHARE``: that share of the shared partition's jobs asks ``--gres=gpu:1``
    (replacing a GPU ask ``--shapes`` gave), the same jobs every time; the exclusive
    partition's jobs, the array and the dependency chain ask none."""
    def jobs() -> list:
        out = [slurmlab.Submit(k, "u", 1, 5, 60, "shared", 2, str(k)) for k in range(400)]
        out[0].extra = ["--gres=gpu:2"]
        out += [slurmlab.Submit(1, "u", 2, 5, 60, "batch", trace_id="b"),
                slurmlab.Submit(1, "u", 1, 2, 70, "shared", tasks=2, trace_id="array", array="1-8%2"),
                slurmlab.Submit(1, "u", 2, 3, 100, "batch", trace_id="chain0")]
        return out

    first, again = slurmlab.gpu_bound(jobs(), 0.6), slurmlab.gpu_bound(jobs(), 0.6)
    asking = [j.trace_id for j in first if "--gres=gpu:1" in j.extra]
    assert asking == [j.trace_id for j in again if "--gres=gpu:1" in j.extra]
    assert 0.55 * 400 <= len(asking) <= 0.65 * 400 and not {"b", "array", "chain0"} & set(asking)
    assert first[0].extra == (["--gres=gpu:1"] if "0" in asking else ["--gres=gpu:2"])


def test_a_gpu_share_out_of_range_or_without_gpus_is_refused_before_anything_starts(tmp_path):
    import pytest

    for args, says in ((["--gpu-jobs", "2"], "a share from 0 to 1"),
                       (["--gpu-jobs", "0.5"], "needs --gpus and --partitions mixed"),
                       (["--gpu-jobs", "0.5", "--gpus", "1"], "needs --gpus and --partitions mixed")):
        with pytest.raises(SystemExit, match=says):
            slurmlab.main(["run", "trace.swf", "--dir", str(tmp_path / "lab"), *args])
    assert not (tmp_path / "lab").exists()


def test_gpu_models_go_to_the_gpu_nodes_in_turn():
    """``--gpu-types a100,v100``: each GPU node gets its own line with its model, in turn, as
    the captures in ``tests/data/slurm/gpus/types`` were made."""
    lines = _conf(nodes=8, gpus=2, partitions="mixed", gpu_types=("a100", "v100"))
    gres = [line.split()[0] + " " + next(w for w in line.split() if w.startswith("Gres=")) for line in lines
            if "Gres=" in line]
    assert gres == ["NodeName=n05 Gres=gpu:a100:2", "NodeName=n06 Gres=gpu:v100:2", "NodeName=n07 Gres=gpu:a100:2",
                    "NodeName=n08 Gres=gpu:v100:2"]
    assert any(line.startswith("NodeName=n[01-04] ") and "Gres" not in line for line in lines)
    assert [line for line in _conf(nodes=8, gpus=2, partitions="mixed") if "Gres=" in line][0].startswith(
        "NodeName=n[05-08] ")


def test_stop_finds_the_lab_jobs_processes_left_alive_and_no_other(tmp_path):
    """A job's processes outlive a slurmctld that died: stop ends those of its own lab's jobs (SLURM_CONF the
    lab's, SLURM_JOB_ID set), not a shell that only points at the lab, nor another lab's job."""
    import os
    import subprocess

    conf = tmp_path / "etc" / "slurm.conf"
    other = tmp_path / "other" / "slurm.conf"
    base = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    job = subprocess.Popen(["sleep", "60"], env={**base, "SLURM_CONF": str(conf), "SLURM_JOB_ID": "7"})
    shell = subprocess.Popen(["sleep", "60"], env={**base, "SLURM_CONF": str(conf)})
    elsewhere = subprocess.Popen(["sleep", "60"], env={**base, "SLURM_CONF": str(other), "SLURM_JOB_ID": "7"})
    try:
        assert slurmlab.lab_steps(conf) == [job.pid]
    finally:
        for p in (job, shell, elsewhere):
            p.kill()
            p.wait()
    assert slurmlab.lab_steps(conf) == []
