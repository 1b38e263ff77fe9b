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
    # after the maintenance (to 15:39:47), where Slurm's pass plans the array's tasks 3-6 first
    # (its record shows 15:39:47), each holding a whole node of the four to 15:41:00 (their ends
    # at 15:41:47 rounded down to bf_resolution)
    assert shared["start"] == "2026-11-25T15:41:00" and shared["reason"] == "waits for jobs 10_4, 10_5 to end"
    by_end = answers(lab, "-n", "6", "-t", "3", "--by", "end")
    assert [r["end"] for r in by_end] == sorted(r["end"] for r in by_end)
    only = answers(lab, "-N", "2", "-t", "3", "-p", "batch")
    # Slurm's plan: jobs 1 and 8 hold the partition's four nodes until 15:30:00 (their ends at
    # 15:30:47 rounded down to bf_resolution), job 3 then holds n01 for a minute
    assert [r["partition"] for r in only] == ["batch"] and only[0]["start"] == "2026-11-25T15:30:00"
    assert only[0]["reason"] == "waits for jobs 1, 8 to end"  # their holds, on Slurm's grid


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
    (["-N", "1", "-G", "-1", "-t", "3"], "--gpus-per-node"),
    (["-N", "1", "-G", "a100:0", "-t", "3"], "--gpus-per-node"),
    (["-N", "1", "-G", "a100:", "-t", "3"], "--gpus-per-node"),
    (["-N", "1", "--mem", "lots", "-t", "3"], "--mem"),
    (["-N", "1", "--mem", "1G", "--mem-per-cpu", "100", "-t", "3"], "--mem or --mem-per-cpu"),
])
def test_malformed_requests_are_exit_2_naming_the_flag(lab, args, flag):
    done = run("whatif", lab, *args)
    assert done.exit_code == 2 and flag in done.stderr and "Traceback" not in done.stderr


def test_a_job_asking_gpus_waits_where_they_are_held(tmp_path):
    """``-G``/``--gpus-per-node``, on a live Slurm's capture where cores are free on both GPU
    nodes of ``shared`` but only one GPU is (``tests/data/slurm/gpus/README.md``): one GPU
    starts now, three wait for the pending job 7 (planned from 20:29:55 on both nodes, 2 GPUs
    each), in Slurm's plan to its end rounded down to ``bf_resolution`` and in the simulation
    to its end; five exceed every node."""
    folder = ROOT / "tests" / "data" / "slurm" / "gpus" / "shared"
    site, raw = tmp_path / "site.xml", tmp_path / "raw.xml"
    assert run("slurm", "config", "--from", str(folder), "-o", str(site)).exit_code == 0
    assert run("slurm", "snapshot", "--from", str(folder), "-o", str(raw)).exit_code == 0
    ask = (str(raw), "--config", str(site), "-n", "1", "-t", "5", "-p", "shared")
    assert [(a["start"], a["reason"]) for a in answers(*ask)] == [("2026-11-28T20:20:19", "starts now")]
    assert answers(*ask, "-G", "1")[0]["reason"] == "starts now"
    three = answers(*ask, "-G", "3")[0]
    assert (three["start"], three["reason"]) == ("2026-11-28T20:35:00", "waits for job 7 to end")
    assert answers(*ask, "-G", "3", "--set", "plan=simulate")[0]["start"] == "2026-11-28T20:35:55"
    assert answers(*ask, "-G", "5")[0]["reason"].startswith("ExceedsSystem: asks 1 nodes with 1 cores and 5 GPUs")
    done = run("whatif", *ask, "-G", "3", "--json")
    assert conforms(done.stdout, "whatif")["request"]["gpus_per_node"] == 3


def test_a_job_asking_a_gpu_model_waits_for_gpus_of_that_model(tmp_path):
    """``-G MODEL:G`` (``--gres=gpu:a100:1``), on a live Slurm's capture whose ``shared``
    partition has A100 and V100 nodes (``tests/data/slurm/gpus/types``): every A100 is held and
    three jobs wait for them, V100s are free. Any GPU and a V100 start now; an A100 waits
    behind the three (for job 5's end, 18:29 in Slurm's plan); a model no node has never runs."""
    folder = ROOT / "tests" / "data" / "slurm" / "gpus" / "types"
    site, raw = tmp_path / "site.xml", tmp_path / "raw.xml"
    assert run("slurm", "config", "--from", str(folder), "-o", str(site)).exit_code == 0
    assert run("slurm", "snapshot", "--from", str(folder), "-o", str(raw)).exit_code == 0
    ask = (str(raw), "--config", str(site), "-n", "1", "-t", "5", "-p", "shared")
    assert answers(*ask, "-G", "1")[0]["reason"] == "starts now"
    assert answers(*ask, "-G", "v100:1")[0]["reason"] == "starts now"
    a100 = answers(*ask, "-G", "a100:1")[0]
    assert (a100["start"], a100["reason"]) == ("2026-12-01T18:29:00", "waits for job 5 to end")
    assert answers(*ask, "-G", "h100:1")[0]["reason"].startswith("ExceedsSystem: asks 1 nodes with 1 cores and 1 h100 GPUs")
    done = run("whatif", *ask, "-G", "a100:1", "--json")
    request = conforms(done.stdout, "whatif")["request"]
    assert (request["gpus_per_node"], request["gpu_model"]) == (1, "a100")


def test_a_job_gets_the_partitions_memory_where_slurm_counts_it(tmp_path):
    """Under ``CR_Core_Memory`` with ``DefMemPerCPU=100`` (``tests/data/slurm/memory/per-node``:
    the shared partition's two nodes have 100 and 300 of their 1,000 MB free), a job asking no
    memory gets 100 MB a core, as Slurm gives it (``jufo slurm snapshot`` writes the partition's
    ``defmempercpu``): 4 cores (400 MB) wait for job 6 to end, where counting none started them
    at once; ``--mem``, ``--mem-per-cpu`` ask otherwise, and more than a node has never runs."""
    folder = ROOT / "tests" / "data" / "slurm" / "memory" / "per-node"
    site, raw = tmp_path / "site.xml", tmp_path / "raw.xml"
    assert run("slurm", "config", "--from", str(folder), "-o", str(site)).exit_code == 0
    assert run("slurm", "snapshot", "--from", str(folder), "-o", str(raw)).exit_code == 0
    ask = (str(raw), "--config", str(site), "-t", "3", "-p", "shared")
    now = "2026-11-28T20:44:27"
    assert answers(*ask, "-n", "2")[0]["start"] == now  # 200 MB: the node with 300 free
    four = answers(*ask, "-n", "4")[0]
    assert (four["start"], four["reason"]) == ("2026-11-28T20:59:00", "waits for job 6 to end")
    assert answers(*ask, "-n", "4", "--mem", "1")[0]["start"] == now
    assert answers(*ask, "-n", "1", "--mem-per-cpu", "300")[0]["start"] == now
    assert answers(*ask, "-n", "1", "--mem", "900")[0]["start"] == "2026-11-28T20:59:00"
    assert answers(*ask, "-n", "1", "--mem", "2G")[0]["reason"].startswith("ExceedsSystem")
    done = run("whatif", *ask, "-n", "1", "--mem", "1G", "--json")
    assert conforms(done.stdout, "whatif")["request"]["memory"] == 1024


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


@pytest.mark.skipif(not (ROOT.parent / "shared" / "traces").exists(), reason="../shared/traces is not beside the project")
def test_backtest_at_submit_gives_whatifs_own_answer(tmp_path):
    """``backtest --at-submit`` scores, at each job's submit, the forecast of that job: the same
    answer ``jufo whatif`` gives for the job's request on the snapshot without it."""
    from lxml import etree

    from jufo.io.dates import parse_date
    from jufo.learn import backtest as bt

    kth = ROOT.parent / "shared" / "traces" / "KTH-SP2-1996-2-filtered-sc15.swf.gz"
    summary, forecasts = bt.backtest(bt.Settings(str(kth)), 86400, 3_000_000, 3_060_000, at_submit=True)
    assert summary.forecasts == len(forecasts) > 20
    trace = bt._load(bt.Settings(str(kth)))[0]
    submits = [f.raw.submit for f in forecasts]
    checked = 0
    for f in forecasts[::4]:
        if submits.count(f.raw.submit) > 1:
            continue  # two jobs in one second: the order between them is the ids', not the request's
        at = f.raw.submit - trace.epoch
        snap = tmp_path / "s.xml"
        assert run("swf2lml", str(kth), "--at", str(at), "-o", str(snap), "-q").exit_code == 0
        root = etree.parse(str(snap)).getroot()
        job = next(d for d in root.iter("{*}info") if d.get("oid") == f"j{f.raw.job}")
        data = {d.get("key"): d.get("value") for d in job}
        for el in [o for o in root.iter("{*}object", "{*}info") if f"j{f.raw.job}" in (o.get("id"), o.get("oid"))]:
            el.getparent().remove(el)
        snap.write_bytes(etree.tostring(root, xml_declaration=True, encoding="UTF-8"))
        wall = int(data["wall"])
        got = answers(str(snap), "-n", data["totalcores"], "-t", f"{wall // 3600}:{wall % 3600 // 60:02}:{wall % 60:02}",
                      "--user", data["owner"], "-p", data["queue"])
        assert parse_date(got[0]["start_wall"])[0] == f.raw.wall, (f.raw.job, got[0])
        checked += 1
    assert checked >= 4
