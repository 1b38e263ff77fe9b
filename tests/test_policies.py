"""Start windows and user caps in the engine: the same starts as the naive reference simulator
on random snapshots measured in hours, and the rules hold at every start."""

import os
import random

import pytest

from conftest import T0, snapshot
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
