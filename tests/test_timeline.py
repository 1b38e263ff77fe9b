"""The timeline (a heap beside a sorted run of in-order pushes) against a plain heap."""

import heapq
import random

import pytest

from jufo.engine.timeline import Kind, Timeline


@pytest.mark.parametrize("seed", range(200))
def test_pops_in_the_order_of_a_plain_heap(seed):
    """Pushes in order, out of order and during the run (as the simulation makes them), with
    ties in time and kind: every second comes out as a plain heap of (time, kind, counter) gives it."""
    rng = random.Random(seed)
    timeline, plain, counter, now = Timeline(), [], 0, 0

    def push(t: int) -> None:
        nonlocal counter
        kind = rng.choice(list(Kind))
        timeline.push(t, kind, counter)
        heapq.heappush(plain, (t, kind, counter, counter))
        counter += 1

    for t in sorted(rng.randint(0, 50) for _ in range(rng.randint(0, 40))):  # queue dates, ascending
        push(t)
    while plain:
        assert len(timeline) == len(plain) and timeline.next_time() == plain[0][0]
        time, batch = timeline.pop_second()
        expected = []
        while plain and plain[0][0] == time:
            _, kind, _, payload = heapq.heappop(plain)
            expected.append((kind, payload))
        assert batch == expected
        now = time
        for _ in range(rng.randint(0, 3)):  # ends and wake-ups, at or after now
            push(now + rng.choice([0, 0, 1, rng.randint(0, 60)]))
    assert not timeline and timeline.payloads(Kind.END) == []
