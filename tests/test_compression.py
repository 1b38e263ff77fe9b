"""Conservative backfilling with early completions keeps its promise: when jobs end before
their wall, top dogs may move to earlier slots, never later (compression)."""

import random

import pytest

from conftest import snapshot
from jufo.io import lml
from jufo.io.errors import Report
from jufo.engine.prediction import simulate
from jufo.engine.snapshot import prepare


def case(seed: int, whole: bool = False) -> bytes:
    """Random jobs with early ends on 2-8 nodes of 4 cores; ``whole``: each takes whole nodes."""
    rng = random.Random(seed)
    nodes = {f"n{i}": 4 for i in range(rng.randint(2, 8))}
    jobs = {}
    for i in range(rng.randint(10, 60)):
        wall = rng.randint(1, 48) * 600
        jobs[f"j{i}"] = {"state": "Idle", "owner": f"u{rng.randint(1, 5)}", "queue": "q",
                         "queuedate": f"01/10/12-{11 + i // 60:02d}:{i % 60:02d}:00", "wall": wall,
                         "nummachines": rng.randint(1, len(nodes)), "taskspernode": 4 if whole else rng.randint(1, 4),
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


def counts_compression(seed: int) -> tuple[list, list]:
    """The moves and the profile after compressing a random count state's reservations, with
    AttributeState's loop and with the plain ``earlier`` then ``replan`` of each in turn."""
    from jufo.engine.job import Job
    from jufo.engine.node import Machine, Node
    from jufo.engine.attribute_state import AttributeState
    from jufo.engine.state import Allocation, SystemState

    rng = random.Random(seed)
    machine = Machine([Node(i, f"n{i}", f"n{i}", 4, None) for i in range(rng.randint(1, 6))])
    total = machine.total_cores
    tick = rng.choice([1, 10])  # on a coarse grid, runs and walls often end at the same second
    running = [(rng.randint(1, total), tick * rng.randint(1, 30), tick * rng.randint(0, 15))
               for _ in range(rng.randint(1, 6))]
    requests = [(rng.randint(1, total), rng.choice([1, tick * rng.randint(1, 5), tick * rng.randint(1, 40)]))
                for _ in range(rng.randint(1, 25))]
    now = tick * rng.randint(0, 10)
    moves, profiles = [], []
    for compress in (AttributeState.compress, SystemState.compress):  # the loop, the plain way
        state = AttributeState(machine, {})
        ran = []
        for cores, wall, _ in running:
            if state.is_insertable(Job("r", 0, {}, "Running", wall=wall, total_cores=cores)) is not None:
                ran.append(Allocation(0, wall, cores, cores, "", "", None))
                state.insert(ran[-1])
        planned = []
        for i, (cores, wall) in enumerate(requests):
            job = Job(f"j{i}", i, {}, "Idle", wall=wall, total_cores=cores)
            t, resources = state.earliest(job)
            planned.append((job, Allocation(t, t + wall, resources, cores, "", "", job, home=state)))
            state.plan(planned[-1][1])
        state.advance(now)
        for alloc, (_, _, actual) in zip(ran, running):  # some end early, now
            if actual <= now < alloc.end:
                state.finish(alloc)
        moves.append([(job.id, a.start, a.end) for job, a in compress(state, [p for p in planned if p[1].start > now])])
        profiles.append(state.profile.segments())
    return moves, profiles


@pytest.mark.parametrize("seed", range(200))
def test_counts_compression_is_earlier_then_replan(seed):
    """AttributeState's one-loop compression (its early no read from the segments before each
    reservation) moves exactly the reservations, to exactly the slots, that asking ``earlier``
    and then ``replan`` of each in turn does, and leaves the same profile."""
    moves, profiles = counts_compression(seed)
    assert moves[0] == moves[1]
    assert profiles[0] == profiles[1]


def test_counts_compression_cases_move_jobs():
    moved = sum(bool(counts_compression(seed)[0][0]) for seed in range(200))
    assert moved >= 60, f"only {moved} of 200 cases move a reservation: they test little"


def test_counts_compression_takes_a_gap_exactly_as_long_as_the_wall():
    """4 cores; a job on all of them ends at 0 instead of 10, a reservation holds 3 cores over
    [10, 30): the 2-core 10 s job reserved at 30 moves to 0, into a gap exactly its wall long."""
    from jufo.engine.job import Job
    from jufo.engine.node import Machine, Node
    from jufo.engine.attribute_state import AttributeState
    from jufo.engine.state import Allocation

    state = AttributeState(Machine([Node(0, "n0", "n0", 4, None)]), {})
    running = Allocation(0, 10, 4, 4, "", "", None)
    state.insert(running)
    state.plan(Allocation(10, 30, 3, 3, "", "", None))
    job = Job("j", 1, {}, "Idle", wall=10, total_cores=2)
    assert state.earliest(job) == (30, 2)
    alloc = Allocation(30, 40, 2, 2, "", "", job, home=state)
    state.plan(alloc)
    state.finish(running)
    assert [(j.id, a.start, a.end) for j, a in state.compress([(job, alloc)])] == [("j", 0, 10)]
    assert state.profile.segments() == [(0, 2), (10, 1), (30, 4)]


def test_a_refused_job_gets_its_look_when_the_top_dog_moves_to_now_and_starts():
    """EASY, 4 cores. A (priority 10) runs [0, 10) though its wall says 100; T (5) holds the
    reservation at 100; B (8) arrives at 10. At 10 compression moves T to 10, and the pass
    walks B first: it cannot start beside T's reservation and is refused one (T holds the only
    one); then T starts. B is owed a look in the next pass, and there is one pass per second:
    the moved reservation makes no second pass at 10 (T is due in this one). At 60 T ends and
    B starts, no top dog (T's old wake-up at 100 makes no pass), as tests/reference.py has it."""
    from conftest import T0, waiting
    from jufo.io.dates import format_date, parse_date

    at = lambda s: format_date(parse_date(T0)[0] + s, "%m/%d/%y-%H:%M:%S")
    jobs = {"A": waiting(4, 100, at(0), userprio=10, actualruntime=10),
            "T": waiting(4, 50, at(0), userprio=5),
            "B": waiting(4, 50, at(10), userprio=8)}
    settings = {"scheduling_algorithm": "Backfilling", "maxtopdogs": "1", "system_state": "AttributeState",
                "system_sysprio": "userprio"}
    snap, config = prepare(lml.parse(snapshot(jobs, system_time=T0)), Report(quiet=True), settings)
    forecast = simulate(snap, config, Report(quiet=True))
    got = {j.id: (j.start, j.topdog) for j in forecast.jobs}
    assert got == {"A": (0, False), "T": (10, True), "B": (60, False)}
    assert {j.id: t for j, t in forecast.simulation.promised.items()} == {"T": 100}


def node_compression(seed: int) -> int:
    """NodeState's search for an earlier slot reads its own nodes as free from its start on; where
    every reservation holds whole nodes its windows unite bits, else sets. All three ways (bits,
    sets, and dropping the reservation to search afresh) find the same slot on the same nodes.
    Returns how many reservations moved."""
    from jufo.engine.job import Job
    from jufo.engine.node import Machine, Node
    from jufo.engine.node_state import NodeState
    from jufo.engine.state import Allocation, SystemState

    rng = random.Random(seed)
    cores = rng.choice([1, 4])
    machine = Machine([Node(i, f"n{i}", f"n{i}", cores, None) for i in range(rng.randint(2, 10))])
    state = NodeState(machine, {}, sharing=rng.random() < 0.5)
    tick = rng.choice([1, 60])

    def job(name: str) -> Job:
        nodes = rng.randint(1, len(machine.nodes))
        per_node = rng.randint(1, cores)
        return Job(name, 0, {}, "Idle", wall=tick * rng.randint(1, 40), nodes=nodes,
                   cores_per_node=per_node, total_cores=nodes * per_node)

    running = []
    for i in range(rng.randint(1, 6)):
        j = job(f"r{i}")
        where = state.is_insertable(j)
        if where is not None:
            running.append((Allocation(0, j.wall, where, j.total_cores, "", "", None), tick * rng.randint(0, 10)))
            state.insert(running[-1][0])
    planned = []
    for i in range(rng.randint(1, 25)):
        j = job(f"j{i}")
        t, where = state.earliest(j)
        planned.append((j, Allocation(t, t + j.wall, where, j.total_cores, "", "", j)))
        state.plan(planned[-1][1])
    now = tick * rng.randint(0, 8)
    state.advance(now)
    for alloc, actual in running:
        if actual <= now < alloc.end:
            state.finish(alloc)
    moved = 0
    for j, alloc in planned:
        if alloc.start <= now:
            continue
        whole = state.whole_reserved
        bits = state.earlier(j, alloc)
        alloc.looked = -1  # a second look with nothing given back since would stop at once
        state.whole_reserved = False
        sets = state.earlier(j, alloc)
        state.whole_reserved = whole
        afresh = SystemState.earlier(state, j, alloc)
        assert bits == sets == afresh, (j.id, bits, sets, afresh)
        if bits is not None:
            state.replan(alloc, *bits)
            moved += 1
    return moved


@pytest.mark.parametrize("seed", range(150))
def test_node_compression_bits_sets_and_replan_agree(seed):
    node_compression(seed)


def test_node_compression_cases_move_jobs():
    moved = sum(bool(node_compression(seed)) for seed in range(150))
    assert moved >= 30, f"only {moved} of 150 cases move a reservation: they test little"


def node_schedule(seed: int, whole: bool, settings: dict) -> dict:
    snap, config = prepare(lml.parse(case(seed, whole)), Report(quiet=True), settings)
    forecast = simulate(snap, config, Report(quiet=True))
    return {j.id: (j.start, repr(j.resources)) for j in forecast.jobs}


@pytest.mark.parametrize("seed", range(60))
@pytest.mark.parametrize("topdogs", ["all", "2"])
@pytest.mark.parametrize("whole", [False, True])
def test_node_compression_looks_only_where_something_came_back(seed, topdogs, whole, monkeypatch):
    """After a look for an earlier slot that found nothing, NodeState's next look stops where
    the intervals given back since then end, or where reservations take their nodes again less
    the wall (``Freed``). Whole runs with early ends give the same starts on the same nodes
    with that bound and without it."""
    from jufo.engine.node_state import Freed
    from jufo.engine.state import NEVER

    settings = {"scheduling_algorithm": "Backfilling", "maxtopdogs": topdogs, "system_state": "NodeState"}
    bounded = node_schedule(seed, whole, settings)
    monkeypatch.setattr(Freed, "bound", lambda self, *args, **kwargs: NEVER)
    assert node_schedule(seed, whole, settings) == bounded


@pytest.mark.parametrize("state", ["NodeState", "AttributeState"])
def test_replan_makes_reservations_anew_in_priority_order(state):
    """Four nodes, conservative backfilling. R1 (2 nodes) runs [0, 10) though its wall says 100,
    R2 (2 nodes) [0, 50). A (all 4 nodes) is planned at 100, B (2 nodes, 45 s) before it at 50.
    At 10 R1 ends. Compression keeps B's slot and moves A only as far as B allows (95; then B
    moves onto R1's nodes, at 10). With
    ``replan`` (Slurm's backfill, planning from scratch) A goes first and takes 50; B, which
    would no longer end before A, is planned after it: later than its first slot."""
    from conftest import T0, waiting
    from jufo.io.dates import format_date, parse_date

    at = lambda s: format_date(parse_date(T0)[0] + s, "%m/%d/%y-%H:%M:%S")
    jobs = {"R1": waiting(1, 100, at(0), nodes=2, userprio=100, actualruntime=10),
            "R2": waiting(1, 50, at(0), nodes=2, userprio=90),
            "A": waiting(1, 100, at(0), nodes=4, userprio=50),
            "B": waiting(1, 45, at(0), nodes=2, userprio=10)}
    nodes = {f"n{i}": 1 for i in range(1, 5)}
    starts = {}
    for replan in ("no", "yes"):
        settings = {"scheduling_algorithm": "Backfilling", "maxtopdogs": "all", "system_state": state,
                    "system_sysprio": "userprio", "replan": replan}
        snap, config = prepare(lml.parse(snapshot(jobs, nodes=nodes, system_time=T0)), Report(quiet=True), settings)
        forecast = simulate(snap, config, Report(quiet=True))
        starts[replan] = {j.id: j.start for j in forecast.jobs}
        assert {j.id: t for j, t in forecast.simulation.promised.items()} == {"A": 100, "B": 50}
    assert starts["no"] == {"R1": 0, "R2": 0, "A": 95, "B": 10}  # B then moves to R1's nodes
    assert starts["yes"] == {"R1": 0, "R2": 0, "A": 50, "B": 150}
