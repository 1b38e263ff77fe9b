"""NodeState's free windows (what is free throughout ``[now, end)``, cached per state version)
are what a fresh count gives, through every change a simulation makes: starts with and without
a reservation, new reservations, early ends, dropped reservations and the clock, where a window
with many reservations is read off the reserved profile's union instead of counted one by one."""

import random

import pytest

from jufo.engine.job import Job
from jufo.engine.node import Machine, Node
from jufo.engine.node_state import NodeState
from jufo.engine.ranges import NodeCores
from jufo.engine.state import Allocation


def fresh_window(state: NodeState, end: int) -> NodeCores:
    """Free now, less every reservation that begins before ``end`` and holds something."""
    window = state.free.copy()
    for alloc in state.planned:
        if alloc.start < max(end, state.now + 1) and alloc.end > state.now and alloc.end > alloc.start:
            window.subtract(alloc.resources, state.machine.shape)
    return window


def same(a: NodeCores, b: NodeCores) -> bool:
    return a.full == b.full and a.part == b.part


@pytest.mark.parametrize("union_from", [0, NodeState.UNION_FROM])
@pytest.mark.parametrize("sharing", [True, False])
@pytest.mark.parametrize("seed", range(40))
def test_cached_windows_are_what_a_fresh_count_gives(seed, sharing, union_from, monkeypatch):
    """``union_from`` 0: every window is read off the reserved profile (small cases have few
    reservations in a window), else only those with more reservations than the default."""
    monkeypatch.setattr(NodeState, "UNION_FROM", union_from)
    rng = random.Random(seed)
    machine = Machine([Node(i, f"n{i}", f"n{i}", 4, None) for i in range(rng.randint(2, 12))])
    state = NodeState(machine, {}, sharing=sharing)
    running: list[Allocation] = []
    planned: list[tuple[Job, Allocation]] = []
    checked = 0
    for step in range(rng.randint(20, 120)):
        op = rng.random()
        per_node = rng.randint(1, 4) if sharing else 4
        nodes = rng.randint(1, 3)
        job = Job(f"j{step}", step, {}, "Idle", wall=rng.choice([1, 60, 600, 3600]), nodes=nodes,
                  cores_per_node=per_node, total_cores=nodes * per_node)
        if op < 0.3:  # a start now, where it fits
            where = state.is_insertable(job)
            if where is not None:
                alloc = Allocation(state.now, state.now + job.wall, where, state.request_cores(job), "", "u", job)
                state.insert(alloc)
                running.append(alloc)
        elif op < 0.55:  # a reservation at the job's earliest start
            found = state.earliest(job)
            if found is not None:
                t, where = found
                alloc = Allocation(t, t + job.wall, where, state.request_cores(job), "", "u", job, home=state)
                state.plan(alloc)
                planned.append((job, alloc))
        elif op < 0.75 and planned:  # a reservation dropped
            j, a = planned.pop(rng.randrange(len(planned)))
            state.unplan(a)
        elif op < 0.88 and running:  # a job ends early
            alloc = running.pop(rng.randrange(len(running)))
            state.finish(alloc)
        else:  # the clock moves to the next end or reservation, as the simulation's events do: jobs end
            # there, and top dogs start on their reservations when these begin
            times = [a.end for a in running if a.end > state.now] + [a.start for _, a in planned if a.start > state.now]
            if times:
                t = min(times)
                state.advance(t)
                for alloc in [a for a in running if a.end <= t]:
                    running.remove(alloc)
                    state.finish(alloc)
                for j, a in [(j, a) for j, a in planned if a.start <= t]:
                    planned.remove((j, a))
                    alloc = Allocation(t, t + j.wall, a.resources, a.cores, "", "u", j)
                    state.insert(alloc, a)
                    running.append(alloc)
        for end in (state.now + 1, state.now + 60, state.now + 600, state.now + 3600, state.now + 10 ** 6):
            cached, count = state._window(end)
            expected = fresh_window(state, end)
            assert same(cached, expected), (step, end)
            assert count == expected.node_count()
            checked += 1
    assert checked
