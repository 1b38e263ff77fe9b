"""The timeline: a heap of events ordered by (time, kind, counter).

At one second, completions come before reservation ends, arrivals and planned starts;
the counter breaks remaining ties in insertion order, so every run is deterministic.
"""

from __future__ import annotations

import heapq
from enum import IntEnum
from typing import Any


class Kind(IntEnum):
    """Event kinds, in the order they are processed within one second."""

    END = 0  # a running job completes
    RESERVATION_END = 1  # an advance reservation expires
    ARRIVAL = 2  # a job joins the queue (future queue date)
    WAKE = 3  # a planned start (top dog or reservation begins): schedule again


class Timeline:
    """Min-heap of ``(time, kind, counter, payload)``.

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
        self._counter = 0

    def __bool__(self) -> bool:
        return bool(self._heap)

    def __len__(self) -> int:
        return len(self._heap)

    def push(self, time: int, kind: Kind, payload: Any) -> None:
        """Add an event.  O(log n)."""
        heapq.heappush(self._heap, (time, kind, self._counter, payload))
        self._counter += 1

    def peek_time(self) -> int:
        """Time of the next event.  O(1)."""
        return self._heap[0][0]

    def payloads(self, kind: Kind) -> list[Any]:
        """Payloads of the events of one kind still waiting, in no particular order.  O(n)."""
        return [payload for _, k, _, payload in self._heap if k == kind]

    def pop_second(self) -> tuple[int, list[tuple[Kind, Any]]]:
        """Remove and return every event of the earliest second, in processing order.  O(k log n)."""
        time = self._heap[0][0]
        batch = []
        while self._heap and self._heap[0][0] == time:
            _, kind, _, payload = heapq.heappop(self._heap)
            batch.append((kind, payload))  # pushed as a Kind
        return time, batch
