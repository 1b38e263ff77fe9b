"""Start windows and user caps in the engine: the same starts as the naive reference simulator
on random snapshots measured in hours, and the rules hold at every start."""

import os
import random

import pytest

from click.testing import CliRunner

from conftest import T0, snapshot, waiting
from jufo.cli import main
from jufo import lml
from jufo.behaviour import Behaviour
from jufo.dates import format_date, parse_date
from jufo.errors import Report
from jufo.forecast import prepare, simulate
from jufo.ranges import bits_of
from jufo.windows import HOUR, SLOTS, WeeklyWindows, slot_of
from reference import Reference
from test_invariants import settings_all

EPOCH = parse_date(T0)[0]  # a Tuesday, 12:00
FMT = "%m/%d/%y-%H:%M:%S"


def random_case(seed: int):
    rng = random.Random(seed)
    nodes = {f"n{i}": {"ncores": rng.choice([1, 2, 4])} for i in range(rng.randint(1, 4))}
    room = [n["ncores"] for n in nodes.values()]
    jobs = {}
    for i in range(rng.randint(0, 3)):
        if max(room) == 0:
            break
        cores = rng.randint(1, max(room))
        node = next((k for k, free in enumerate(room) if free >= cores), None)
        if node is None:
            continue
        room[node] -= cores
        wall = rng.randint(1, 12) * HOUR
        jobs[f"r{i}"] = {"state": "Running", "owner": rng.choice(["r", "u1"]), "queue": "q", "wall": wall,
                         "queuedate": format_date(EPOCH - wall, FMT),
                         "dispatchdate": format_date(EPOCH - rng.randint(0, wall - 1), FMT),
                         "nummachines": 1, "taskspernode": cores, "nodelist": f"({node + 1})"}
    for i in range(rng.randint(1, 10)):
        queued = EPOCH + (rng.randint(1, 6) * 1800 if rng.random() < 0.3 else -rng.randint(1, 600))
        jobs[f"w{i}"] = {"state": "Idle", "owner": rng.choice(["u1", "u2", "u3"]), "queue": "q",
                         "queuedate": format_date(queued, FMT), "wall": rng.randint(1, 40) * 1800,
                         "nummachines": 1, "taskspernode": rng.randint(1, max(n["ncores"] for n in nodes.values()))}
    closed = set()
    for _ in range(rng.randint(0, 3)):  # hours of the day closed to walls of a class and longer
        c, first = rng.randint(0, 4), rng.randint(0, 23)
        day = rng.choice([0, 24, 48])
        closed |= {(c, day + h % 24) for h in range(first, first + rng.randint(1, 10))}
    caps = {u: rng.randint(1, 2) for u in ("u1", "u2", "u3") if rng.random() < 0.5}
    return snapshot(jobs, nodes=nodes), closed, caps


def run(raw: bytes, settings: dict, windows: WeeklyWindows, caps: dict):
    snap, config = prepare(lml.parse(raw), Report(quiet=True), settings)
    return simulate(snap, config, Report(quiet=True), behaviour=Behaviour(windows, caps, {}))


@pytest.mark.parametrize("seed", range(int(os.environ.get("JUFO_SEEDS", "40"))))
def test_windows_and_caps_match_the_reference(seed):
    raw, closed, caps = random_case(seed)
    windows = WeeklyWindows(closed, EPOCH)
    for full in settings_all():
        forecast = run(raw, full, windows, caps)
        snap = forecast.snapshot
        attribute = full["system_state"] == "AttributeState"
        cores = lambda r: frozenset((n, c) for n, m in r.pairs(snap.machine.shape) for c in bits_of(m))
        waiting = [j for j in snap.jobs if not j.running]
        running = [j for j in snap.jobs if j.running]
        # a cap is never below what the user runs already (the snapshot beats the history)
        caps = {u: max(c, sum(j.owner == u for j in running)) for u, c in caps.items()}
        expected = Reference(snap.machine, {}, full, rules=windows if windows.active else None,
                             user_caps=caps).run(running, [], waiting)
        got = {j.id: (j.start, j.resources if attribute else cores(j.resources), j.topdog, j.backfilled)
               for j in waiting if j.start is not None}
        assert got == expected, full
        for job in waiting:
            assert job.start is not None, (job, job.reason)
            assert windows.next_start(job, job.start) == job.start, f"{job} starts in a closed slot"
            if job.owner in caps:
                at_once = [j for j in snap.jobs if j.owner == job.owner and (j.running and job.start < j.end or
                           not j.running and j.start <= job.start < j.end)]
                assert len(at_once) <= caps[job.owner], f"{job.owner} over its cap"


def test_a_long_job_waits_for_the_night():
    """Walls over 4 h may not start on weekdays 00:00-16:00: at Tuesday 12:00 an 8 h job on an
    empty machine starts at 16:00, a 1 h job at once; the reason names the window when the
    job can never fit it."""
    raw = snapshot({"long": {"state": "Idle", "owner": "a", "queue": "q", "queuedate": T0, "wall": 8 * HOUR,
                             "nummachines": 1, "taskspernode": 1},
                    "short": {"state": "Idle", "owner": "b", "queue": "q", "queuedate": T0, "wall": HOUR,
                              "nummachines": 1, "taskspernode": 1}})
    windows = WeeklyWindows({(3, h) for h in range(16)}, EPOCH)
    forecast = run(raw, {}, windows, {})
    starts = {j.id: j.start for j in forecast.jobs}
    assert starts == {"long": 4 * HOUR, "short": 0}
    assert windows.why(forecast.jobs[0]).startswith("Window: jobs of 4-8 h do not start on Mon-Fri 00:00-16:00")


def test_a_capped_user_takes_no_reservation():
    """u1 may run one job at once: its second job waits for the first without holding the only
    top-dog slot, so u2's big job gets the reservation and b follows it."""
    jobs = {"a": {"state": "Idle", "owner": "u1", "queue": "q", "queuedate": "01/10/12-11:00:00", "wall": 3600,
                  "nummachines": 1, "taskspernode": 1},
            "b": {"state": "Idle", "owner": "u1", "queue": "q", "queuedate": "01/10/12-11:00:01", "wall": 600,
                  "nummachines": 1, "taskspernode": 1},
            "c": {"state": "Idle", "owner": "u2", "queue": "q", "queuedate": "01/10/12-11:00:02", "wall": 600,
                  "nummachines": 1, "taskspernode": 4}}
    forecast = run(snapshot(jobs), {}, WeeklyWindows(set(), EPOCH), {"u1": 1})
    got = {j.id: (j.start, j.topdog) for j in forecast.jobs}
    assert got == {"a": (0, False), "b": (4200, False), "c": (3600, True)}


def test_slots_cover_the_week():
    seen = {slot_of(EPOCH + h * HOUR) for h in range(168)}
    assert seen == set(range(SLOTS))


# node_allocation on four 4-core nodes; n2 is busy until 100 s with 2 of its cores, n4 until 50 s
ALLOC_NODES = {f"n{i}": 4 for i in range(1, 5)}


def allocation_run(tmp_path, allocation: str, jobs: dict) -> dict:
    from conftest import running as run_job

    base = {"r2": run_job(2, 100, nodelist="(n2,2)"), "r4": run_job(4, 50, nodelist="(n4,4)")}
    src, out = tmp_path / f"{allocation}.xml", tmp_path / f"{allocation}-out.xml"
    src.write_bytes(snapshot({**base, **jobs}, nodes=ALLOC_NODES,
                             scheduler={"node_allocation": allocation, "maxtopdogs": "all"}))
    result = CliRunner().invoke(main, ["predict", str(src), "-o", str(out)])
    assert result.exit_code == 0, result.stderr
    return {o.id: o.data for o in lml.read(str(out)).of_type("job")}


@pytest.mark.parametrize("allocation, nodes", [
    ("lowest", "(n1,2)"),  # the lowest node
    ("bestfit", "(n2,2)"),  # the tightest: n2 has exactly the 2 free cores asked for
    ("contiguous", "(n1,2)"),
    ("latest_released", "(n1,2)"),  # starting now, every candidate is free now: lowest
])
def test_node_allocation_picks(tmp_path, allocation, nodes):
    jobs = allocation_run(tmp_path, allocation, {"a": waiting(2, 30)})
    assert jobs["a"]["jufo_nodelist"] == nodes


def test_contiguous_waits_for_a_run_and_refuses_without_one(tmp_path):
    # 2 whole nodes: n1 and n3 are free now but not adjacent; n3-n4 are adjacent once r4 ends at 50 s
    lowest = allocation_run(tmp_path, "lowest", {"a": waiting(4, 30, nodes=2)})
    contiguous = allocation_run(tmp_path, "contiguous", {"a": waiting(4, 30, nodes=2)})
    assert lowest["a"]["jufo_nodelist"] == "(n1,4)(n3,4)" and lowest["a"]["jufo_starttime"] == T0
    assert contiguous["a"]["jufo_nodelist"] == "(n3,4)(n4,4)"
    assert contiguous["a"]["jufo_starttime"] == "01/10/12-12:00:50"
    # queue batch may not use n2: no 3 consecutive nodes for it, ever
    nodes = {"n1": 4, "n2": {"ncores": 4, "avail_classes": "(other,4)"}, "n3": 4, "n4": 4}
    for allocation, starts in (("lowest", True), ("contiguous", False)):
        src, out = tmp_path / "gap.xml", tmp_path / f"gap-{allocation}.xml"
        src.write_bytes(snapshot({"c": waiting(4, 30, nodes=3)}, nodes=nodes, scheduler={"node_allocation": allocation}))
        assert CliRunner().invoke(main, ["predict", str(src), "-o", str(out)]).exit_code == 0
        job = {o.id: o.data for o in lml.read(str(out)).of_type("job")}["c"]
        assert ("jufo_starttime" in job) == starts
        if not starts:
            assert job["jufo_reason"].startswith("ExceedsSystem: asks 3 consecutive nodes")


def test_latest_released_keeps_free_nodes_for_backfilling(tmp_path):
    """n4 and n5 are busy until 100 s; "head" needs 4 whole nodes from then, "small" one node
    for 200 s. lowest reserves n1-n4, so small cannot start before 100 s; latest_released
    reserves n4, n5 (released at 100 s) and n1, n2, so small starts at once on n3."""
    from conftest import running as run_job

    nodes = {f"n{i}": 4 for i in range(1, 6)}
    jobs = {"r4": run_job(4, 100, nodelist="(n4,4)"), "r5": run_job(4, 100, nodelist="(n5,4)"),
            "head": waiting(4, 100, nodes=4, queued="01/10/12-10:00:00"), "small": waiting(4, 200)}
    got = {}
    for allocation in ("lowest", "latest_released"):
        src, out = tmp_path / "in.xml", tmp_path / f"{allocation}.xml"
        src.write_bytes(snapshot(jobs, nodes=nodes, scheduler={"node_allocation": allocation, "maxtopdogs": "all"}))
        assert CliRunner().invoke(main, ["predict", str(src), "-o", str(out)]).exit_code == 0
        got[allocation] = {o.id: o.data for o in lml.read(str(out)).of_type("job")}
    assert got["lowest"]["head"]["jufo_nodelist"] == "(n1,4)(n2,4)(n3,4)(n4,4)"
    assert got["lowest"]["small"]["jufo_starttime"] == "01/10/12-12:01:40"
    assert got["latest_released"]["head"]["jufo_nodelist"] == "(n1,4)(n2,4)(n4,4)(n5,4)"
    assert got["latest_released"]["small"]["jufo_starttime"] == T0
    assert got["latest_released"]["head"]["jufo_starttime"] == got["lowest"]["head"]["jufo_starttime"]
