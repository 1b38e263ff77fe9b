"""Sites run Slurm 23.02 to 26.05, the lab Debian's 22.05.8: every saved capture, printed as the
later releases print it (``lab/versions.py``, from Slurm's own printing code), gives the same
snapshot and the same forecast as it does as 22.05 printed it."""

from __future__ import annotations

import doctest
import sys
from pathlib import Path

import pytest

from conftest import ROOT
from jufo.io import scontrol

sys.path.insert(0, str(ROOT / "lab"))
import versions  # noqa: E402

DATA = ROOT / "tests" / "data" / "slurm"
CAPTURES = sorted(p.parent for p in DATA.rglob("job.txt"))


def _objects(directory: Path) -> list:
    return scontrol.snapshot_objects(scontrol.capture(str(directory)))


def test_the_renderer_says_what_it_does():
    assert doctest.testmod(versions).failed == 0


@pytest.mark.parametrize("release", versions.VERSIONS[1:])
@pytest.mark.parametrize("capture", CAPTURES, ids=lambda p: str(p.relative_to(DATA)))
def test_a_capture_reads_alike_as_every_release_prints_it(capture, release, tmp_path):
    """Before jufo read ``ReqTRES``/``AllocTRES`` (23.02) and ``Exclusive`` (26.05), the 23.02
    form lost the GPUs and the node counts a pending job's TRES gives, and under 26.05 every
    ordinary job (``OverSubscribe=NO Exclusive=NO``) took whole nodes while the exclusive
    partitions (``OverSubscribe=NO Exclusive=NODE``) were read as core-shared."""
    versions.render_capture(capture, tmp_path, release)
    assert (tmp_path / "job.txt").read_text() != (capture / "job.txt").read_text()  # the form did change
    assert _objects(tmp_path) == _objects(capture)


def test_the_mixed_lab_as_slurm_26_05_prints_it_is_forecast_as_before(tmp_path):
    """The forecast itself, end to end: ``jufo slurm snapshot --from`` and ``jufo predict`` on
    the mixed lab's capture (an exclusive and a core-shared partition) as 26.05 prints it."""
    from click.testing import CliRunner

    from jufo.cli import main

    versions.render_capture(DATA / "mixed", tmp_path / "new", "26.05")
    outputs = []
    for where in (DATA / "mixed", tmp_path / "new"):
        raw, out = tmp_path / f"{where.name}-raw.xml", tmp_path / f"{where.name}-out.xml"
        assert CliRunner().invoke(main, ["slurm", "snapshot", "--from", str(where), "-o", str(raw)]).exit_code == 0
        assert CliRunner().invoke(main, ["predict", str(raw), "-o", str(out), "-q"]).exit_code == 0
        outputs.append(out.read_bytes())
    assert outputs[0] == outputs[1]


@pytest.mark.parametrize("line, exclusive", [
    ("PartitionName=p Nodes=n1 Exclusive=NODE OverSubscribe=NO", "yes"),
    ("PartitionName=p Nodes=n1 Exclusive=TOPO OverSubscribe=NO", "yes"),
    ("PartitionName=p Nodes=n1 Exclusive=USER OverSubscribe=NO", None),
    ("PartitionName=p Nodes=n1 Exclusive=NO OverSubscribe=FORCE:4", None),
    ("PartitionName=p Nodes=n1 ExclusiveUser=NO ExclusiveTopo=YES OverSubscribe=NO", "yes"),
])
def test_a_partition_of_whole_nodes_is_known_in_every_release(line, exclusive):
    parts = scontrol.parse_records(line + "\n", "partition.txt", "PartitionName")
    config = {"SchedulerType": "sched/backfill", "SelectType": "select/cons_tres", "PriorityType": "priority/basic"}
    settings, queues, _ = scontrol.site_settings(config, parts)
    assert queues[0][1].get("exclusive") == exclusive
    assert settings["exclusive_queues"] == ("p" if exclusive else "none")


def test_an_unknown_exclusive_word_is_refused_naming_the_partition_line_and_value():
    from jufo.io.errors import InputError

    parts = scontrol.parse_records("PartitionName=a Nodes=n1\nPartitionName=p Nodes=n2 Exclusive=SOMETIMES\n",
                                   "partition.txt", "PartitionName")
    config = {"SchedulerType": "sched/backfill", "SelectType": "select/cons_tres", "PriorityType": "priority/basic"}
    with pytest.raises(InputError) as err:
        scontrol.site_settings(config, parts)
    assert str(err.value).startswith("partition.txt, line 2") and "Exclusive" in str(err.value) \
        and "SOMETIMES" in str(err.value)


@pytest.mark.parametrize("state, word", [("SIGNALING", "Running"), ("RESIZING", "Running"),
                                         ("EXPEDITING", "Pending"), ("REQUEUE_HOLD", "Held"),
                                         ("STAGE_OUT", "Completed"), ("CONFIGURING", "Pending")])
def test_every_job_state_slurm_prints_is_read_by_its_meaning(state, word):
    """``job_state_string`` prints a flag in place of the base state (a running job being
    signalled shows ``SIGNALING``): such a job was read as neither running nor waiting, so its
    nodes were free in the forecast."""
    line = (f"JobId=5 UserId=u(1) JobState={state} Reason=None Partition=p TimeLimit=00:10:00 RunTime=00:01:00 "
            "SubmitTime=2026-11-25T15:00:00 StartTime=2026-11-25T15:01:00 EndTime=2026-11-25T15:11:00 "
            "NodeList=n1 NumNodes=1 NumCPUs=1 CPUs/Task=1\n")
    job = scontrol.parse_records(line, "job.txt", "JobId")[0]
    assert scontrol._job_data(job, "job.txt", 1, {}, {})["state"] == word
