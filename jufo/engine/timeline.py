"""The timeline: a heap of events ordered by (time, kind, counter).

At one second, completions come before reservation ends, arrivals and wake-ups (a top
dog's planned start is no event here: the simulation keeps those, see ``Backfilling.next_start``);
the counter breaks remaining ties in insertion order, so every run is deterministic.
"""

from __future__ import annotations

import heapq
from collections import deque
from itertools import chain
from enum import IntEnum
from typing import Any


class Kind(IntEnum):
    """Event kinds, in the order they are processed within one second."""

    END = 0  # a running job completes
    RESERVATION_END = 1  # an advance reservation expires
    ARRIVAL = 2  # a job joins the queue (future queue date)
    WAKE = 3  # schedule again: the first pass, a start window opens, a switch ask lapses


class Timeline:
    """Events ordered by ``(time, kind, counter)``: a min-heap, beside a sorted run of the
    events pushed in order (the queue dates of a trace, pushed ascending at the start).
    Those stay out of the heap, so its pushes and pops cost O(log of the few events pushed
    out of order: ends, wake-ups) instead of O(log of every future arrival).

    >>> t = Timeline()
    >>> t.push(5, Kind.ARRIVAL, "b"); t.push(5, Kind.END, "a"); t.push(3, Kind.WAKE, None)
    >>> t.pop_second()
    (3, [(<Kind.WAKE: 3>, None)])
    >>> t.pop_second()
    (5, [(<Kind.END: 0>, 'a'), (<Kind.ARRIVAL: 2>, 'b')])
    >>> bool(t)
    False
    """

    def __init__(self) -> None:
        self._heap: list[tuple[int, int, int, Any]] = []
        self._run: deque[tuple[int, int, int, Any]] = deque()  # ascending; each after every earlier push
        self._counter = 0
        self._wakes: set[tuple[int, Any]] = set()  # (time, payload) of the wake-ups ``wake_once`` set

    def __bool__(self) -> bool:
        return bool(self._heap) or bool(self._run)

    def __len__(self) -> int:
        return len(self._heap) + len(self._run)

    def push(self, time: int, kind: Kind, payload: Any) -> None:
        """Add an event.  O(1) if it sorts after the run's last, else O(log heap)."""
        event = (time, kind, self._counter, payload)  # counters differ: payloads are never compared
        self._counter += 1
        run = self._run
        if not run or event > run[-1]:
            run.append(event)
        else:
            heapq.heappush(self._heap, event)

    def wake_once(self, time: int, payload: Any) -> None:
        """A wake-up at ``time``, unless this one was set before (many jobs may ask for the
        same second, and one job at every pass).  O(1), else as ``push``.

        >>> t = Timeline(); t.wake_once(7, "aged"); t.wake_once(7, "aged"); len(t)
        1
        """
        if (time, payload) not in self._wakes:
            self._wakes.add((time, payload))
            self.push(time, Kind.WAKE, payload)

    def next_time(self) -> int | None:
        """Time of the next event, None when there is none (no separate emptiness test: the
        run loop asks once per step).  O(1)."""
        heap, run = self._heap, self._run
        if not heap:
            return run[0][0] if run else None
        return heap[0][0] if not run or heap[0][0] <= run[0][0] else run[0][0]

    def payloads(self, kind: Kind) -> list[Any]:
        """Payloads of the events of one kind still waiting, in no particular order.  O(n)."""
        return [payload for _, k, _, payload in chain(self._heap, self._run) if k == kind]

    def pop_second(self) -> tuple[int, list[tuple[Kind, Any]]]:
        """Remove and return every event of the earliest second, in processing order.  O(k log heap)."""
        time = self.next_time()
        heap, run = self._heap, self._run
        batch = []
        while True:
            if heap and heap[0][0] == time and (not run or heap[0] < run[0]):
                _, kind, _, payload = heapq.heappop(heap)
            elif run and run[0][0] == time:
                _, kind, _, payload = run.popleft()
            else:
                return time, batch
            batch.append((kind, payload))  # pushed as a Kind
