"""Start windows and user caps in the engine: the same starts as the naive reference simulator
on random snapshots measured in hours, and the rules hold at every start."""

import os
import random

import pytest

from click.testing import CliRunner

from conftest import T0, snapshot, waiting
from jufo.cli import main
from jufo.io import lml
from jufo.engine.prediction import Behaviour
from jufo.io.dates import format_date, parse_date
from jufo.io.errors import Report
from jufo.engine.prediction import simulate
from jufo.engine.snapshot import prepare
from jufo.engine.ranges import bits_of
from jufo.engine.windows import HOUR, SLOTS, WEEK, QueueWindows, WeeklyWindows, parse_spans, second_of_week, slot_of
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
    queues = {}
    if rng.random() < 0.4:  # the queue's own windows, node caps by time, window_end
        windows, maxnodes, strict = random_queue_windows(rng)
        queues["q"] = {k: v for k, v in (("windows", windows), ("maxnodes", maxnodes),
                                         ("window_end", "strict" if strict else "start")) if v}
    return snapshot(jobs, nodes=nodes, queues=queues), closed, caps


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
        rules = forecast.simulation.rules  # learned and configured windows together, checked on their own
        waiting = [j for j in snap.jobs if not j.running and (rules is None or rules.next_start(j, 0) is not None)]
        running = [j for j in snap.jobs if j.running]
        # a cap is never below what the user runs already (the snapshot beats the history)
        caps = {u: max(c, sum(j.owner == u for j in running)) for u, c in caps.items()}
        assert rules is not None or not windows.active
        expected = Reference(snap.machine, {}, full, rules=rules, user_caps=caps).run(running, [], waiting)
        got = {j.id: (j.start, j.resources if attribute else cores(j.resources), j.topdog, j.backfilled)
               for j in waiting if j.start is not None}
        assert got == expected, full
        for job in snap.jobs:
            if not job.running and job not in waiting:  # no opening of its queue's windows fits it
                assert job.start is None and job.reason.startswith("Window:") and "never" in job.reason, job
        for job in waiting:
            assert job.start is not None, (job, job.reason)
            assert rules is None or rules.next_start(job, job.start) == job.start, f"{job} starts in a closed slot"
            if job.owner in caps:
                at_once = [j for j in snap.jobs if j.owner == job.owner and (j.running and job.start < j.end or
                           not j.running and j.start is not None and j.start <= job.start < j.end)]
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


def capped_queue(seed: int) -> tuple[bytes, dict[str, int]]:
    """A queue of 20-60 jobs of four users with caps of 1-2, on 2-6 nodes: some running, most
    ending before their wall, a third arriving later; caps bind at almost every pass."""
    rng = random.Random(seed)
    nodes = {f"n{i}": {"ncores": rng.choice([2, 4])} for i in range(rng.randint(2, 6))}
    users = ["u1", "u2", "u3", "u4"]
    jobs = {}
    for i, name in enumerate(nodes):
        if rng.random() < 0.5:
            wall = rng.randint(1, 8) * 1800
            jobs[f"r{i}"] = {"state": "Running", "owner": rng.choice(users), "queue": "q", "wall": wall,
                             "queuedate": format_date(EPOCH - wall, FMT),
                             "dispatchdate": format_date(EPOCH - rng.randint(0, wall - 1), FMT),
                             "nummachines": 1, "taskspernode": nodes[name]["ncores"], "nodelist": f"({i + 1})"}
    for i in range(rng.randint(20, 60)):
        queued = EPOCH + (rng.randint(1, 40) * 900 if rng.random() < 0.3 else -rng.randint(1, 600))
        wall = rng.randint(1, 16) * 900
        job = {"state": "Idle", "owner": rng.choice(users), "queue": "q", "queuedate": format_date(queued, FMT),
               "wall": wall, "nummachines": rng.choice([1, 1, 1, 2]), "taskspernode": rng.choice([1, 2, 2, 4])}
        if rng.random() < 0.7:  # mostly early (past the wall reads as the wall)
            job["actualruntime"] = rng.randint(1, wall + 1800)
        jobs[f"w{i:02d}"] = job
    return snapshot(jobs, nodes=nodes), {u: rng.randint(1, 2) for u in users}


@pytest.mark.parametrize("seed", range(int(os.environ.get("JUFO_SEEDS", "40")) // 2))
def test_parking_capped_users_changes_no_start(seed, monkeypatch):
    """A pass parks the jobs of users at their cap (out of the class walk until one of their
    jobs ends or moves, or the earliest-ending one reaches its wall): every start, resource,
    flag and reason equals a run that visits them at every pass, and parking does happen."""
    from jufo.engine.simulation import Backfilling
    from jufo.engine.sorter import WaitingQueue

    raw, caps = capped_queue(seed)
    parks = []
    park = WaitingQueue.park
    monkeypatch.setattr(WaitingQueue, "park", lambda self, owner: (parks.append(owner), park(self, owner)))

    def outcome(settings):
        forecast = run(raw, settings, WeeklyWindows(set(), EPOCH), caps)
        return {j.id: (j.start, j.end, str(j.resources), j.topdog, j.backfilled, j.reason) for j in forecast.jobs}

    for full in settings_all():
        if full["scheduling_algorithm"] != "Backfilling":
            continue
        parked = outcome(full)
        with monkeypatch.context() as m:
            m.setattr(Backfilling, "_park", lambda self, user, now: None)
            assert outcome(full) == parked, full
    assert parks, "no user was parked"


@pytest.mark.parametrize("seed", range(int(os.environ.get("JUFO_SEEDS", "40")) // 4))
def test_capped_users_under_a_priority_rising_with_age_start_as_with_the_whole_queue_sorted(seed, monkeypatch):
    """Slurm's age factor (here with a size factor and jobs that run a share of their wall,
    as in a learned simulation): the queue keeps its request classes, parks capped users and
    orders the classes' heads at each pass (``JobSorter.rising``); every start, resource,
    flag and reason equals sorting the whole queue at every pass and visiting every job."""
    from jufo.engine import sorter

    raw, caps = capped_queue(seed)
    parks = []
    park = sorter.WaitingQueue.park
    monkeypatch.setattr(sorter.WaitingQueue, "park", lambda self, owner: (parks.append(owner), park(self, owner)))

    def outcome(settings):
        forecast = run(raw, settings, WeeklyWindows(set(), EPOCH), caps)
        assert forecast.simulation.sorter.formula.rising == (sorter._rising is rising)
        return {j.id: (j.start, j.end, str(j.resources), j.topdog, j.backfilled, j.reason) for j in forecast.jobs}

    rising = sorter._rising
    for full in settings_all():
        settings = {**full, "system_sysprio": "1000 * min(AGE, 7200) / 7200 + 100 * nummachines * taskspernode"}
        classed = outcome(settings)
        with monkeypatch.context() as m:
            m.setattr(sorter, "_rising", lambda tree: False)
            assert outcome(settings) == classed, settings
    assert parks, "no user was parked"


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


# -- configured queue windows: windows, maxnodes, window_end ------------------------------------

def queue_run(tmp_path, queues: dict, jobs: dict, nodes: int = 4) -> dict:
    src, out = tmp_path / "qw.xml", tmp_path / "qw-out.xml"
    src.write_bytes(snapshot(jobs, nodes={f"n{i}": 1 for i in range(1, nodes + 1)}, queues=queues))
    result = CliRunner().invoke(main, ["predict", str(src), "-o", str(out)])
    assert result.exit_code == 0, result.stderr
    return {o.id: o.data for o in lml.read(str(out)).of_type("job")}


def job_in(queue: str, wall: int, nodes: int = 1) -> dict:
    return waiting(1, wall, nodes=nodes, queue=queue, queued="01/10/12-11:00:00")


def test_queue_windows_hold_jobs_until_their_queue_opens(tmp_path):
    """T0 is Tuesday 12:00: the night queue opens at 18:00, the day queue is open."""
    queues = {"day": {"windows": "Mon-Fri 08:00-18:00"},
              "night": {"windows": "Mon-Fri 18:00-08:00, Sat-Sun 00:00-24:00"}}
    jobs = queue_run(tmp_path, queues, {"d": job_in("day", 3600), "n": job_in("night", 3600)})
    assert jobs["d"]["jufo_starttime"] == T0
    assert jobs["n"]["jufo_starttime"] == "01/10/12-18:00:00"


def test_maxnodes_by_time_of_day(tmp_path):
    queues = {"batch": {"maxnodes": "Mon-Fri 08:00-18:00:2"}}
    jobs = queue_run(tmp_path, queues, {"small": job_in("batch", 3600, 2), "big": job_in("batch", 3600, 3)})
    assert jobs["small"]["jufo_starttime"] == T0
    assert jobs["big"]["jufo_starttime"] == "01/10/12-18:00:00"


def test_window_end_strict_and_a_job_that_never_fits(tmp_path):
    for end, start in (("start", T0), ("strict", "01/11/12-08:00:00")):
        queues = {"day": {"windows": "Mon-Fri 08:00-18:00", "window_end": end}}
        jobs = queue_run(tmp_path, queues, {"j": job_in("day", 8 * 3600)})
        assert jobs["j"]["jufo_starttime"] == start, end
    queues = {"day": {"windows": "Mon-Fri 08:00-18:00", "window_end": "strict"}}
    jobs = queue_run(tmp_path, queues, {"long": job_in("day", 11 * 3600)})
    assert "jufo_starttime" not in jobs["long"]
    reason = jobs["long"]["jufo_reason"]
    assert reason.startswith("Window: never (no opening is long or wide enough): queue day starts jobs "
                             "Mon-Fri 08:00-18:00")
    assert "window_end=strict" in reason


@pytest.mark.parametrize("key, value, says", [
    ("windows", "Mon-Fry 08:00-18:00", "days as Mon"),
    ("windows", "Mon-Fri 8-18", "HH:MM-HH:MM"),
    ("maxnodes", "Mon-Fri 08:00-18:00", "ends in :N"),
    ("window_end", "sometimes", "strict or start"),
])
def test_bad_queue_windows_are_exit_2(tmp_path, key, value, says):
    src, out = tmp_path / "bad.xml", tmp_path / "bad-out.xml"
    src.write_bytes(snapshot({"j": job_in("day", 60)}, queues={"day": {key: value}}))
    result = CliRunner().invoke(main, ["predict", str(src), "-o", str(out)])
    assert result.exit_code == 2 and key in result.stderr and value in result.stderr and says in result.stderr
    assert not out.exists()


def brute_next_start(windows: QueueWindows, job, t: int) -> int | None:
    """Minute by minute over four weeks: the first start the configured spans allow (the
    spans start on whole minutes, so a cap holds for a whole minute)."""
    windows_text, maxnodes, strict = windows.config[job.queue]
    opened = parse_spans(windows_text) if windows_text else [(0, WEEK, 0)]
    capped = parse_spans(maxnodes, True) if maxnodes else []
    first = t // 60
    minutes = range(first, first + 4 * WEEK // 60)

    def cap(minute: int) -> float:
        w = second_of_week(EPOCH + minute * 60)
        inside = lambda lo, hi: lo <= w < hi or lo <= w + WEEK < hi
        c = float("inf") if any(inside(lo, hi) for lo, hi, _ in opened) else 0
        return min([c] + [n for lo, hi, n in capped if inside(lo, hi)])

    good = [cap(m) >= job.nodes for m in minutes]
    next_bad = [len(good)] * (len(good) + 1)  # first bad minute at or after each one
    for k in range(len(good) - 1, -1, -1):
        next_bad[k] = k if not good[k] else next_bad[k + 1]
    for k in range(len(good) - 3 * WEEK // 60):  # a start in the first three weeks
        x = max(t, (first + k) * 60)
        if not good[k]:
            continue
        last = -(-(x + job.wall) // 60) - first  # minutes [k, last) hold the run
        if not strict or next_bad[k] >= last:
            return x
    return None


def random_queue_windows(rng: random.Random) -> tuple:
    def span():
        days = rng.choice(["Mon-Fri", "Sat", "Sun", "daily", "Fri-Mon", "Wed"])
        lo, hi = rng.randint(0, 23), rng.randint(0, 24)
        return f"{days} {lo:02d}:{rng.choice([0, 30]):02d}-{hi:02d}:00"
    windows = ", ".join(span() for _ in range(rng.randint(1, 3))) if rng.random() < 0.7 else None
    maxnodes = ", ".join(f"{span()}:{rng.randint(0, 3)}" for _ in range(rng.randint(1, 2))) \
        if rng.random() < 0.5 or windows is None else None
    return windows, maxnodes, rng.random() < 0.5


@pytest.mark.parametrize("seed", range(int(os.environ.get("JUFO_SEEDS", "40"))))
def test_queue_windows_match_a_minute_scan(seed):
    from types import SimpleNamespace

    rng = random.Random(seed)
    config = {"q": random_queue_windows(rng)}
    windows = QueueWindows(config, EPOCH)
    for _ in range(5):
        job = SimpleNamespace(queue="q", nodes=rng.randint(1, 3), wall=rng.choice([600, 3600, 5 * 3600, 20 * 3600]))
        t = rng.randint(0, WEEK)
        assert windows.next_start(job, t) == brute_next_start(windows, job, t), (config, job, t)


def test_maxnodes_counting_cores_compares_nodes_not_cores(tmp_path):
    """AttributeState: "wide" (2 nodes x 1 core) waits for the evening cap of 1 node; "fat"
    (1 node x 4 cores) is larger in cores but starts at once."""
    src, out = tmp_path / "in.xml", tmp_path / "out.xml"
    jobs = {"wide": waiting(1, 3600, nodes=2, queue="batch", queued="01/10/12-11:00:00", totalcores=2),
            "fat": waiting(4, 3600, nodes=1, queue="batch", queued="01/10/12-11:00:01", totalcores=4)}
    src.write_bytes(snapshot(jobs, nodes={f"n{i}": 4 for i in range(1, 4)},
                             queues={"batch": {"maxnodes": "Mon-Fri 08:00-18:00:1"}},
                             scheduler={"system_state": "AttributeState"}))
    assert CliRunner().invoke(main, ["predict", str(src), "-o", str(out)]).exit_code == 0
    got = {o.id: o.data.get("jufo_starttime") for o in lml.read(str(out)).of_type("job")}
    assert got == {"wide": "01/10/12-18:00:00", "fat": T0}


# -- leaf switches: Slurm's --switches=N@wait ------------------------------------------------------

def switch_run(tmp_path, ask: str, busy: dict[str, int]) -> dict:
    """Two leaf switches (s1: n1 n2, s2: n3 n4) of 4-core nodes; ``busy`` node -> seconds it
    stays busy; a 2-node job asking ``switches=ask``."""
    from conftest import running as run_job

    nodes = {f"n{i}": {"ncores": 4, "switch": "s1" if i <= 2 else "s2"} for i in range(1, 5)}
    jobs = {f"r{n}": run_job(4, ends, wall=ends, nodelist=f"({n},4)") for n, ends in busy.items()}
    jobs["j"] = waiting(4, 600, nodes=2, queued=T0, **({"switches": ask} if ask else {}))
    src, out = tmp_path / "sw.xml", tmp_path / "sw-out.xml"
    src.write_bytes(snapshot(jobs, nodes=nodes))
    result = CliRunner().invoke(main, ["predict", str(src), "-o", str(out)])
    assert result.exit_code == 0, result.stderr
    return {o.id: o.data for o in lml.read(str(out)).of_type("job")}["j"]


def test_switches_place_under_one_switch(tmp_path):
    assert switch_run(tmp_path, "", {"n2": 100})["jufo_nodelist"] == "(n1,4)(n3,4)"  # lowest: two switches
    job = switch_run(tmp_path, "1", {"n2": 100})
    assert job["jufo_nodelist"] == "(n3,4)(n4,4)" and job["jufo_starttime"] == T0


@pytest.mark.parametrize("ask, start, nodes", [
    ("1", "01/10/12-12:05:00", "(n1,4)(n3,4)"),  # Slurm's default wait, 300 s: then anywhere
    ("1@30", "01/10/12-12:16:40", "(n1,4)(n2,4)"),  # 30 minutes: one switch frees up first, at 1000 s
    ("2", T0, "(n1,4)(n3,4)"),  # two switches allowed: at once
])
def test_switches_wait_at_most_their_time(tmp_path, ask, start, nodes):
    job = switch_run(tmp_path, ask, {"n2": 1000, "n4": 1000})
    assert (job["jufo_starttime"], job["jufo_nodelist"]) == (start, nodes)


def test_a_bad_switches_value_is_a_warning(tmp_path):
    src, out = tmp_path / "in.xml", tmp_path / "out.xml"
    src.write_bytes(snapshot({"j": waiting(1, 60, switches="many")}, nodes={"n1": {"ncores": 4, "switch": "s1"}}))
    result = CliRunner().invoke(main, ["predict", str(src), "-o", str(out)])
    assert result.exit_code == 0 and "switches='many'" in result.stderr and "placed without it" in result.stderr


def test_greedy_fills_the_hole_best(tmp_path):
    """6 cores free now for 100 s before the head's reservation: priority order starts "a"
    (4 cores) and then neither 3-core job fits; greedy starts "b" and "c" (6 cores)."""
    from conftest import running as run_job

    jobs = {"r": run_job(2, 100, wall=100), "head": waiting(8, 100, queued="01/10/12-10:00:00", totalcores=8),
            "a": waiting(4, 50, queued="01/10/12-10:00:01", totalcores=4),
            "b": waiting(3, 50, queued="01/10/12-10:00:02", totalcores=3),
            "c": waiting(3, 50, queued="01/10/12-10:00:03", totalcores=3)}
    got = {}
    for order in ("priority", "greedy"):
        src, out = tmp_path / "in.xml", tmp_path / f"{order}.xml"
        src.write_bytes(snapshot(jobs, nodes={"n1": 8}, scheduler={"backfill_order": order}))
        assert CliRunner().invoke(main, ["predict", str(src), "-o", str(out)]).exit_code == 0
        got[order] = {o.id for o in lml.read(str(out)).of_type("job") if o.data.get("jufo_starttime") == T0}
    assert got == {"priority": {"a"}, "greedy": {"b", "c"}}


@pytest.mark.parametrize("seed", range(5 * int(os.environ.get("JUFO_SEEDS", "40"))))
def test_caps_with_early_ends_match_the_reference(seed):
    """User caps (as a history teaches them) and jobs that end before their wall, no start
    windows: compression under limits takes NodeState's own search, which skips a reservation
    when nothing came back since its last fruitless look; room a job of the same user gave
    back counts there too, as the reference, which searches afresh every time, finds. (Two
    mutants of that bound, ignoring the user's room or the job's own span, fail at seeds 183
    and 199: hence 200 seeds.)"""
    rng = random.Random(1000 + seed)
    nodes = {f"n{i}": {"ncores": rng.choice([1, 2, 4])} for i in range(rng.randint(1, 4))}
    biggest = max(n["ncores"] for n in nodes.values())
    jobs = {}
    for i in range(rng.randint(2, 14)):
        wall = rng.randint(1, 20) * 600
        queued = EPOCH + (rng.randint(1, 6) * 900 if rng.random() < 0.3 else -rng.randint(1, 600))
        jobs[f"w{i}"] = {"state": "Idle", "owner": rng.choice(["u1", "u2", "u3"]), "queue": "q",
                         "queuedate": format_date(queued, FMT), "wall": wall, "nummachines": 1,
                         "taskspernode": rng.randint(1, biggest), "actualruntime": rng.randint(0, wall)}
    caps = {u: rng.randint(1, 2) for u in ("u1", "u2", "u3") if rng.random() < 0.7}
    raw = snapshot(jobs, nodes=nodes)
    checked = 0
    for full in settings_all():
        if full["system_state"] != "NodeState" or full["scheduling_algorithm"] != "Backfilling":
            continue
        forecast = run(raw, full, WeeklyWindows(set(), EPOCH), caps)
        snap = forecast.snapshot
        cores = lambda r: frozenset((n, c) for n, m in r.pairs(snap.machine.shape) for c in bits_of(m))
        waiting = [j for j in snap.jobs if not j.running]
        expected = Reference(snap.machine, {}, full, user_caps=caps).run([], [], waiting)
        got = {j.id: (j.start, cores(j.resources), j.topdog, j.backfilled) for j in waiting if j.start is not None}
        assert got == expected, full
        checked += 1
    assert checked


# -- node weights: Slurm's select plugin takes the lightest nodes first ----------------------------

def weighted_run(tmp_path, weights: dict[str, str], sharing: bool = True) -> dict:
    """Four 4-core nodes of the given ``weight``s; a 1-node job of 4 cores and one of 2."""
    nodes = {f"n{i}": {"ncores": 4, **({"weight": weights[f"n{i}"]} if f"n{i}" in weights else {})}
             for i in range(1, 5)}
    jobs = {"whole": waiting(4, 600, nodes=1, queued=T0), "half": waiting(2, 600, nodes=1, queued=T0, totalcores=2)}
    src, out = tmp_path / "w.xml", tmp_path / "w-out.xml"
    src.write_bytes(snapshot(jobs, nodes=nodes, scheduler=None if sharing else {"node_sharing": "no"}))
    result = CliRunner().invoke(main, ["predict", str(src), "-o", str(out)])
    assert result.exit_code == 0, result.stderr
    return {o.id: o.data["jufo_nodelist"] for o in lml.read(str(out)).of_type("job")}


@pytest.mark.parametrize("sharing", [True, False])
def test_the_simulation_takes_the_lightest_nodes_first(tmp_path, sharing):
    assert weighted_run(tmp_path, {}, sharing) == {"whole": "(n1,4)", "half": "(n2,2)" if sharing else "(n2,4)"}
    heavy = {"n1": "10", "n2": "10", "n3": "5"}  # n4 weighs 1 (Slurm's default)
    assert weighted_run(tmp_path, heavy, sharing) == {"whole": "(n4,4)", "half": "(n3,2)" if sharing else "(n3,4)"}


def test_a_bad_node_weight_is_a_warning(tmp_path):
    src, out = tmp_path / "in.xml", tmp_path / "out.xml"
    src.write_bytes(snapshot({"j": waiting(1, 60)}, nodes={"n1": {"ncores": 4, "weight": "heavy"}}))
    result = CliRunner().invoke(main, ["predict", str(src), "-o", str(out)])
    assert result.exit_code == 0 and "weight='heavy'" in result.stderr and "taken as 1" in result.stderr
