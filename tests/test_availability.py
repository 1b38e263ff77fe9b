"""The availability profile and its sliding window, against brute force."""

import random

import pytest

from jufo.engine.availability import Changes, Counts, Profile
from jufo.engine.ranges import NodeCores
from jufo.engine.node_state import NodeAlgebra


def brute(profile: Profile, t: int, end: int, combine):
    end = max(end, t + 1)
    times = profile.times + [10**12]
    values = [v for i, v in enumerate(profile.values) if times[i] < end and times[i + 1] > t]
    out = values[0]
    for v in values[1:]:
        out = combine(out, v)
    return out


@pytest.mark.parametrize("seed", range(300))
def test_sliding_minimum_of_counts(seed):
    rng = random.Random(seed)
    profile = Profile(0, 100, Counts())
    for _ in range(rng.randint(0, 12)):
        start = rng.randint(0, 50)
        profile.subtract(start, start + rng.randint(1, 30), rng.randint(1, 9))
    profile.advance(rng.randint(0, 10))
    duration = rng.randint(0, 25)
    window = profile.window(min)
    t = profile.times[0]
    for _ in range(20):
        t += rng.choice([0, 1, 3, 6, 40])  # 40: past every segment held (the window starts afresh)
        assert window.over(t, t + duration) == brute(profile, t, t + duration, min)


@pytest.mark.parametrize("seed", range(300))
def test_changes_agree_with_the_profile(seed):
    """The change-point count (NodeState's free units) reads as the segment profile does, and
    its first fit is the profile's, after any mix of updates and advances."""
    rng = random.Random(seed)
    profile, changes = Profile(0, 50, Counts(), merge=True), Changes(0, 50)
    now = 0
    for _ in range(rng.randint(0, 25)):
        step = rng.random()
        if step < 0.15:
            now += rng.randint(0, 8)
            profile.advance(now)
            changes.advance(now)
            continue
        start = rng.randint(now - 5, now + 40)
        end, amount = start + rng.randint(0, 30), rng.randint(1, 9)
        for p in (profile, changes):
            (p.add if step < 0.4 else p.subtract)(max(start, now) if step < 0.4 else start, end, amount)
    assert changes.segments() == profile.segments()
    for _ in range(10):
        need, span = rng.randint(30, 70), rng.randint(1, 30)
        before, since = rng.choice([2**62, now + rng.randint(0, 50)]), now + rng.choice([0, 0, rng.randint(0, 40)])
        copy = Profile(0, 0, Counts(), merge=True)  # the profile from ``since`` on
        copy.times, copy.values = list(profile.times), list(profile.values)
        copy.advance(since)
        expected = copy.first_fit(need, span, before)
        assert changes.first_fit(need, span, before, since) == expected, (need, span, before, since)
        # ``fits`` lists every answer at once: at each later t, the first_fit from t
        runs = list(changes.fits(need, span, before, since))
        assert all(a <= b for a, b in runs) and all(b < c for (_, b), (c, _) in zip(runs, runs[1:]))
        for t in range(since, since + 80):
            want = changes.first_fit(need, span, before, t)
            assert next((max(a, t) for a, b in runs if b >= t), None) == want, (need, span, before, since, t)


@pytest.mark.parametrize("seed", range(100))
def test_sliding_union_of_reserved_sets(seed):
    rng = random.Random(seed)
    shape = [0b1111] * 6
    algebra = NodeAlgebra(shape)
    profile = Profile(0, NodeCores(), algebra)
    used: list[tuple[int, int, NodeCores]] = []
    for _ in range(rng.randint(0, 8)):
        start = rng.randint(0, 40)
        end = start + rng.randint(1, 20)
        node = rng.randrange(6)
        mask = rng.randint(1, 15)
        res = NodeCores.from_pairs([(node, mask)], shape)
        # reservations never overlap at one instant: keep only disjoint ones
        if all(e <= start or s >= end or res.isdisjoint(r, shape) for s, e, r in used):
            used.append((start, end, res))
            profile.add(start, end, res)
    if used and rng.random() < 0.5:  # and removing one undoes it exactly
        s, e, r = used.pop(rng.randrange(len(used)))
        profile.subtract(s, e, r)
    duration = rng.randint(0, 15)
    window = profile.window(algebra.union)
    t = 0
    for _ in range(15):
        t += rng.randint(0, 5)
        want = NodeCores()
        for s, e, r in used:
            if s < max(t + duration, t + 1) and e > t:
                want.update(r, shape)
        assert window.over(t, t + duration) == want


@pytest.mark.parametrize("seed", range(100))
@pytest.mark.parametrize("sharing", [False, True])
def test_free_at_from_checkpoints(seed, sharing):
    """What is free at t from the running jobs' view, read from checkpoints kept through starts
    and ends, equals free now plus every release by t."""
    from jufo.engine.node import Machine, Node
    from jufo.engine.node_state import NodeState
    from jufo.engine.state import Allocation

    rng = random.Random(seed)
    machine = Machine([Node(i, f"n{i}", f"n{i}", 4, None) for i in range(12)])
    state = NodeState(machine, {}, sharing=sharing)
    state.CHECKPOINT = rng.choice([1, 2, 3])
    running: list[Allocation] = []
    for step in range(60):
        state.advance(step)
        ending = [a for a in running if a.end <= step]
        if rng.random() < 0.3 and running:
            ending.append(rng.choice(running))  # an early end
        for alloc in set(ending):
            state.finish(alloc)
            running.remove(alloc)
        free_nodes = [n for n in range(12) if state.free.mask(n, machine.shape)]
        if free_nodes and rng.random() < 0.6:
            n = rng.choice(free_nodes)
            mask = state.free.mask(n, machine.shape) if not sharing else (state.free.mask(n, machine.shape) & rng.randint(1, 15))
            if mask:
                alloc = Allocation(step, step + rng.randint(1, 30), NodeCores.from_pairs([(n, mask)], machine.shape),
                                   mask.bit_count(), "", "", None)
                state.insert(alloc)
                running.append(alloc)
        t = step + rng.randint(0, 35)
        want = state.free.copy()
        for alloc in running:
            if alloc.end <= t:
                want.update(alloc.resources, machine.shape)
        assert state._free_at(t) == want
    assert sharing or state.checkpoints[0], "no checkpoint was kept: the case tests nothing"


def test_lowest_bits_agree_with_counting_bit_by_bit():
    """``ranges.lowest`` searches a prefix from the lowest set bit by doubling and halving;
    it must pick what walking the bits one by one picks, for sparse, dense, empty and
    high-lying masks, machine-sized ones too, and for more bits than the mask holds."""
    from jufo.engine.ranges import lowest

    def one_by_one(mask: int, k: int) -> int | None:
        ones = [i for i, bit in enumerate(reversed(bin(mask)[2:])) if bit == "1"]  # positions, lowest first
        if len(ones) < k:
            return None
        return 0 if k == 0 else mask & ((1 << (ones[k - 1] + 1)) - 1)  # the mask up to its k-th set bit

    rng = random.Random(7)
    cases = [(0, 0), (0, 1), (1, 1), (1, 2), ((1 << 64) - 1, 64), ((1 << 64) - 1, 65), (1 << 4000, 1)]
    for _ in range(3000):
        bits = rng.choice([1, 3, 8, 63, 64, 65, 200, 1000])
        mask = rng.getrandbits(bits) if rng.random() < 0.7 else rng.getrandbits(8) << rng.randint(0, 300)
        cases.append((mask, rng.randint(0, bits + 2)))
    big = sum(1 << n for n in rng.sample(range(160_000), 48_000))
    cases += [(big, k) for k in (1, 17, 4096, 48_000, 48_001)]
    cases += [(((1 << 160_000) - 1) >> 144_000 << 144_000, k) for k in (1, 16_000, 16_001)]
    for mask, k in cases:
        assert lowest(mask, k) == one_by_one(mask, k), (hex(mask)[:40], k)


def test_union_profile_buckets_match_segments():
    """``UnionProfile.union_over`` (kept unions per time bucket, grown by adds, dropped by
    subtracts and by the clock) equals the plain union of the segments over random windows,
    through random reservations, removals and clock moves."""
    import random

    from jufo.engine.availability import UnionProfile
    from jufo.engine.ranges import NodeCores
    from jufo.engine.node_state import NodeAlgebra

    rng = random.Random(5)
    profile, held, now, used = UnionProfile(0, NodeCores(), NodeAlgebra([0b1111] * 40)), [], 0, 0
    for step in range(3000):
        roll = rng.random()
        if roll < 0.5:  # a reservation on nodes free throughout its interval
            start = now + rng.randint(0, 2000)
            end = start + rng.randint(1, 1500)
            busy = profile._fold(start, end)
            free = [n for n in range(40) if not (busy.full >> n) & 1]
            if free:
                res = NodeCores(sum(1 << n for n in rng.sample(free, min(len(free), rng.randint(1, 3)))))
                profile.add(start, end, res)
                held.append((start, end, res))
        elif roll < 0.65 and held:
            start, end, res = held.pop(rng.randrange(len(held)))
            profile.subtract(start, end, res)
        elif roll < 0.7:
            now += rng.randint(0, 200)
            profile.advance(now)
            held = [(max(s, now), e, r) for s, e, r in held if e > now]
        else:
            t = now + rng.randint(0, 2500)
            end = t + rng.randint(0, 3000)
            got = profile.union_over(t, end)
            used += len(profile.buckets) > 0
            assert got == profile._fold(t, max(end, t + 1)), (step, t, end)
    assert used > 100, "the buckets were hardly used: the test tests little"


@pytest.mark.parametrize("seed", range(40))
def test_the_reserved_profile_keeps_only_the_edges_of_what_it_holds(seed):
    """Through random reservations, removals, moves to earlier starts, top dogs starting on
    theirs and ending early, and clock moves, a NodeState's reserved profile is the union of
    what it holds (planned reservations, and those a running job started on) at every time,
    and each of its breakpoints but now is where a held span begins or ends: reservations
    dropped and made anew leave none behind (``NodeState._unhold``)."""
    from jufo.engine.node import Machine, Node
    from jufo.engine.node_state import NodeState
    from jufo.engine.state import Allocation

    rng = random.Random(seed)
    machine = Machine([Node(i, f"n{i}", f"n{i}", 4, None) for i in range(12)])
    state = NodeState(machine, {}, sharing=False)
    job = type("J", (), {"array": None, "nodes": 1})()  # a job's allocation moves in place (``replan``)
    held: dict[Allocation, tuple[int, int, int]] = {}  # planned or started-on reservation -> (start, end, nodes)
    running: dict[Allocation, Allocation] = {}  # running allocation -> the reservation it started on
    now, dropped, moved = 0, 0, 0

    def clear(mask: int, start: int, end: int, but: Allocation | None = None) -> bool:
        return all(not (m & mask) or e <= start or s >= end for a, (s, e, m) in held.items() if a is not but)

    for step in range(400):
        roll = rng.random()
        planned = [a for a in held if a not in running.values()]
        if roll < 0.35:
            start = now + rng.randint(0, 300)
            end = start + rng.randint(1, 200)
            mask = sum(1 << n for n in rng.sample(range(12), rng.randint(1, 3)))
            if clear(mask, start, end):
                alloc = Allocation(start, end, NodeCores(mask), mask.bit_count() * 4, "q", "u", job)
                state.plan(alloc)
                held[alloc] = (start, end, mask)
        elif roll < 0.55 and planned:
            alloc = rng.choice(planned)
            state.unplan(alloc)
            del held[alloc]
            dropped += 1
        elif roll < 0.7 and planned:
            alloc = rng.choice(planned)
            start = max(now, alloc.start - rng.randint(1, 150))
            if start < alloc.start and clear(alloc.resources.full, start, start + alloc.end - alloc.start, alloc):
                new = state.replan(alloc, start, alloc.resources)
                del held[alloc]
                held[new] = (new.start, new.end, new.resources.full)
                moved += 1
        elif roll < 0.8:
            due = [a for a in planned if a.start == now]
            if due:  # a top dog starts on its reservation
                alloc = rng.choice(due)
                run = Allocation(now, alloc.end, alloc.resources, alloc.cores, "q", "u", job)
                state.insert(run, alloc)
                running[run] = alloc
        elif roll < 0.9 and running:
            run = rng.choice(sorted(running, key=lambda a: a.seq))  # it ends, early or at its wall
            state.finish(run)
            del held[running.pop(run)]
        else:
            ended = [run for run in running if run.end <= now + 50]
            now = min([now + rng.randint(1, 50)] + [run.end for run in ended])
            for run in ended:
                if run.end <= now:
                    state.finish(run)
                    del held[running.pop(run)]
            for alloc in [a for a in planned if a.start < now]:  # a reservation is due or gone by now
                state.unplan(alloc)
                del held[alloc]
            state.advance(now)
        profile = state.reserved
        edges = {t for s, e, _ in held.values() for t in (s, e)}
        assert set(profile.times[1:]) <= edges, (step, sorted(set(profile.times[1:]) - edges))
        for t in (now, *(rng.randint(now, now + 600) for _ in range(5))):
            want = 0
            for s, e, m in held.values():
                if s <= t < e:
                    want |= m
            assert profile._fold(t, t + 1) == NodeCores(want), (step, t)
    assert dropped > 30 and moved > 10 and not state.edges.keys() - edges, (dropped, moved)
