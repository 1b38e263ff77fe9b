"""Conservative backfilling with early completions keeps its promise: when jobs end before
their wall, top dogs may move to earlier slots, never later (compression)."""

import random

import pytest

from conftest import snapshot
from jufo import lml
from jufo.errors import Report
from jufo.forecast import prepare, simulate


def case(seed: int) -> bytes:
    rng = random.Random(seed)
    nodes = {f"n{i}": 4 for i in range(rng.randint(2, 8))}
    jobs = {}
    for i in range(rng.randint(10, 60)):
        wall = rng.randint(1, 48) * 600
        jobs[f"j{i}"] = {"state": "Idle", "owner": f"u{rng.randint(1, 5)}", "queue": "q",
                         "queuedate": f"01/10/12-{11 + i // 60:02d}:{i % 60:02d}:00", "wall": wall,
                         "nummachines": rng.randint(1, len(nodes)), "taskspernode": rng.randint(1, 4),
                         "actualruntime": rng.randint(0, wall)}
    return snapshot(jobs, nodes=nodes)


@pytest.mark.parametrize("seed", range(30))
@pytest.mark.parametrize("state", ["NodeState", "AttributeState"])
@pytest.mark.parametrize("topdogs", ["all", "3", "1"])
def test_no_job_starts_after_its_first_reservation(seed, state, topdogs):
    settings = {"scheduling_algorithm": "Backfilling", "maxtopdogs": topdogs, "system_state": state}
    snap, config = prepare(lml.parse(case(seed)), Report(quiet=True), settings)
    forecast = simulate(snap, config, Report(quiet=True))
    promised = forecast.simulation.promised
    assert promised, "no job took a reservation: the case tests nothing"
    late = {j.id: (j.start, t) for j, t in promised.items() if j.start is None or j.start > t}
    assert not late
    assert all(j.start is not None for j in forecast.jobs)
