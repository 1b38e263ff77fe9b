"""``jufo whatif``: a job not yet submitted, answered per partition and system — start, end,
walltime-only start, why it waits or can never run — on LLview 2's sample and on a real Slurm
lab's capture."""

from __future__ import annotations


import pytest
from click.testing import CliRunner

from conftest import ROOT, SAMPLES, dump, snapshot, waiting
from jufo.cli import main
from test_json import conforms

LLVIEW2 = [str(SAMPLES / "llview2" / f) for f in ("jobs_LML.xml", "nodes_LML.xml", "sysinfo_LML.xml",
                                                    "reservation_LML.xml", "classes_LML.xml")]
LAB = ROOT / "tests" / "data" / "slurm" / "mixed"


def run(*args: str):
    return CliRunner().invoke(main, list(args))


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    out = tmp_path_factory.mktemp("lab") / "raw.xml"
    assert run("slurm", "snapshot", "--from", str(LAB), "-o", str(out)).exit_code == 0
    return str(out)


def answers(*args: str) -> list[dict]:
    done = run("whatif", *args, "--json")
    assert done.exit_code == 0, done.output
    return conforms(done.stdout, "whatif")["answers"]


def test_llview2_sample_small_job_starts_now_big_one_waits_for_the_het_job():
    now = answers(*LLVIEW2, "-N", "1", "-t", "60")
    assert [(a["partition"], a["start"], a["reason"]) for a in now] == [("batch", "2025-06-03T09:00:00", "starts now")]
    later = answers(*LLVIEW2, "-N", "2", "-t", "2:00:00")[0]
    # the het job 1200+1201 holds 3 nodes until 10:00 and job 1001 one until 11:00, the array's
    # tasks follow at 11:00: two whole nodes for 2 h fit before the 14:00 maintenance at 11:00
    assert later["start"] == "2025-06-03T11:00:00" and later["end"] == "2025-06-03T13:00:00"
    assert later["start_wall"] == later["start"] and later["start_lo"] is None
    assert later["reason"].startswith("waits for jobs") and "1200" in later["reason"]


def test_a_long_job_waits_for_the_maintenance_reservation():
    a = answers(*LLVIEW2, "-N", "4", "-t", "5:00:00")[0]
    assert a["start"] == "2025-06-03T18:00:00" and a["reason"] == "waits for reservation maint to end"


def test_every_partition_of_a_slurm_lab_and_sorting(lab):
    rows = answers(lab, "-n", "6", "-t", "3")
    assert [r["partition"] for r in rows] == ["batch", "shared"]  # by start
    shared = rows[1]
    assert shared["start"] == "2026-11-25T15:39:47" and "maint" in shared["reason"]  # after the maintenance
    by_end = answers(lab, "-n", "6", "-t", "3", "--by", "end")
    assert [r["end"] for r in by_end] == sorted(r["end"] for r in by_end)
    only = answers(lab, "-N", "2", "-t", "3", "-p", "batch")
    assert [r["partition"] for r in only] == ["batch"] and only[0]["start"] == "2026-11-25T15:28:47"


def test_what_can_never_run_gets_the_reason_instead_of_a_time(lab, tmp_path):
    rows = answers(lab, "-N", "9", "-t", "3")
    assert all(r["start"] is None and r["reason"].startswith("PartitionNodeLimit") for r in rows)
    raw = open(lab, encoding="utf-8").read()
    down = tmp_path / "down.xml"
    # the shared partition down, and the batch one limited to one hour
    down.write_text(raw.replace('<data key="name" value="shared"/>\n<data key="state" value="UP"/>',
                                '<data key="name" value="shared"/>\n<data key="state" value="DOWN"/>')
                       .replace('<data key="name" value="batch"/>', '<data key="name" value="batch"/>\n'
                                '<data key="maxtime" value="3600"/>'), encoding="utf-8")
    rows = {r["partition"]: r["reason"] for r in answers(str(down), "-N", "1", "-t", "2:00:00")}
    assert rows["shared"] == "PartitionDown: partition shared is DOWN"
    assert rows["batch"].startswith("PartitionTimeLimit: asks 7,200 s")


@pytest.mark.parametrize("args, flag", [
    (["-t", "3"], "-N/--nodes or -n/--ntasks"),
    (["-N", "1", "-n", "2", "-t", "3"], "-N/--nodes or -n/--ntasks"),
    (["-N", "1", "-t", "soon"], "-t/--time"),
    (["-N", "1", "-t", "0"], "-t/--time"),
    (["-N", "1", "-t", "3", "-p", "nope"], "-p/--partition"),
    (["-N", "0", "-t", "3"], "--nodes"),
])
def test_malformed_requests_are_exit_2_naming_the_flag(lab, args, flag):
    done = run("whatif", lab, *args)
    assert done.exit_code == 2 and flag in done.stderr and "Traceback" not in done.stderr


def test_two_systems_side_by_side(lab, tmp_path):
    rows = answers("--system", f"lab={lab}", "--system", f"juelich={','.join(LLVIEW2)}", "-N", "1", "-t", "1")
    assert {r["system"] for r in rows} == {"lab", "juelich"}
    starts = [r["start"] for r in rows]
    assert starts == sorted(starts)
    done = run("whatif", "--system", "broken", "-N", "1", "-t", "1")
    assert done.exit_code == 2 and "--system" in done.stderr


def test_the_table_and_the_same_answer_twice(lab):
    first, second = run("whatif", lab, "-N", "2", "-t", "3"), run("whatif", lab, "-N", "2", "-t", "3")
    assert first.exit_code == 0 and first.stdout == second.stdout
    header = first.stdout.splitlines()[0].split()
    assert header == ["SYSTEM", "PARTITION", "START", "END", "START_WALL", "RANGE", "WHY"]


def test_a_history_is_read_never_changed(tmp_path):
    jobs = {"w": waiting(4, 600)}
    src = tmp_path / "in.xml"
    src.write_bytes(snapshot(jobs, {"n1": 4, "n2": 4}))
    history = tmp_path / "h.db"
    assert run("predict", str(src), "--history", str(history), "-o", str(tmp_path / "o.xml")).exit_code == 0
    before = dump(history)
    rows = answers(str(src), "-N", "1", "-t", "10", "--history", str(history))
    assert rows[0]["start"] is not None and rows[0]["start_wall"] is not None
    assert dump(history) == before
