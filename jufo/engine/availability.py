"""Step functions of resources over time, and sliding-window combinations of them.

A ``Profile`` holds one resource value per segment ``[times[i], times[i+1])`` (the last
segment lasts forever). AttributeState keeps the free core count in one (every allocation
subtracts over its interval); NodeState keeps the resources *reserved* by planned
allocations (running jobs only ever release, so they need no profile there).

A job asks "what is free throughout ``[t, t+w)``" for a rising sequence of ``t``: the
combination (minimum of free counts, union of reserved sets) of the segments overlapping the
window. ``Window`` answers such queries with a queue built from two stacks of partial
combinations: amortised O(1) combinations per segment over a whole scan, instead of
O(segments in the window) per query.

The profile does not know what a resource value is: an ``Algebra`` gives it copy, add and
subtract; the caller gives the combining function.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Iterator
from itertools import accumulate, chain, islice
from typing import Any, Protocol


FOREVER = 2**62  # no end


class Algebra(Protocol):
    """Operations on one kind of resource value."""

    def copy(self, a: Any) -> Any: ...
    def add(self, a: Any, b: Any) -> Any: ...  # may change and return a
    def subtract(self, a: Any, b: Any) -> Any: ...  # may change and return a


class Counts:
    """Core counts: add and subtract are arithmetic."""

    def copy(self, a: int) -> int:
        return a

    def add(self, a: int, b: int) -> int:
        return a + b

    def subtract(self, a: int, b: int) -> int:
        return a - b


def first_fit(segments: Iterable[tuple[int, int]], need: int, span: int, before: int) -> int | None:
    """The first-fit scan of ``Profile.first_fit`` and ``Changes.first_fit`` over ``(start,
    count)`` segments: a run of segments with at least ``need`` that lasts ``span`` (or
    reaches ``before``) starts at its first breakpoint.  O(segments before the answer)."""
    start = None
    for t, value in segments:
        if t >= before or (start is not None and t >= start + span):
            return start
        if value >= need:
            if start is None:
                start = t
        else:
            start = None
    return start


class Changes:
    """A count over time (free units, say) kept as its value now and the sorted points where
    it changes: an interval update is two point updates, a bisection and a list insert (a
    memmove), with no Python loop over the segments it spans, unlike ``Profile``. Reading
    it costs a running sum, which a scan does anyway.

    >>> c = Changes(0, 5)
    >>> c.subtract(0, 4, 2); c.subtract(0, 9, 1); c.subtract(4, 6, 3)
    >>> c.segments()
    [(0, 2), (4, 1), (6, 4), (9, 5)]
    >>> c.first_fit(2, 3), c.first_fit(2, 5), c.first_fit(2, 5, 4), c.first_fit(3, 3, 4)
    (0, 6, 0, None)
    >>> c.add(4, 6, 1); c.segments()  # equal neighbours: the change at 4 cancels
    [(0, 2), (6, 4), (9, 5)]
    >>> c.advance(5); c.segments()
    [(5, 2), (6, 4), (9, 5)]
    """

    def __init__(self, now: int, initial: int) -> None:
        self.now = now
        self.value = initial  # at ``now``
        self.times: list[int] = []  # > now, ascending, each with a non-zero change
        self.deltas: list[int] = []

    def segments(self) -> list[tuple[int, int]]:
        """``(start, value)`` of every segment.  O(changes)."""
        out, value = [(self.now, self.value)], self.value
        for t, d in zip(self.times, self.deltas):
            value += d
            out.append((t, value))
        return out

    def _put(self, t: int, d: int) -> None:
        if t <= self.now:
            self.value += d
            return
        times = self.times
        i = bisect_left(times, t)
        if i < len(times) and times[i] == t:
            d += self.deltas[i]
            if d:
                self.deltas[i] = d
            else:  # the change cancels: drop the point, so scans see fewer
                del times[i]
                del self.deltas[i]
        else:
            times.insert(i, t)
            self.deltas.insert(i, d)

    def add(self, start: int, end: int, amount: int) -> None:
        """Add ``amount`` during ``[start, end)`` (from now on).  O(log n) + a memmove."""
        if end > max(start, self.now):
            self._put(start, amount)
            self._put(end, -amount)

    def subtract(self, start: int, end: int, amount: int) -> None:
        """Subtract ``amount`` during ``[start, end)`` (from now on).  O(log n) + a memmove."""
        self.add(start, end, -amount)

    def advance(self, now: int) -> None:
        """Fold the changes up to ``now`` into the value.  O(changes dropped)."""
        i = bisect_right(self.times, now)
        if i:
            self.value += sum(self.deltas[:i])
            del self.times[:i]
            del self.deltas[:i]
        self.now = max(self.now, now)

    def first_fit(self, need: int, span: int, before: int = FOREVER, since: int = 0) -> int | None:
        """The earliest ``t`` in ``[since, before)`` with at least ``need`` throughout ``[t,
        min(t+span, before))``, as ``Profile.first_fit``: the value at ``since`` is a sum (in
        C), the scan goes on from there.  O(changes from ``since`` to the answer).

        >>> c = Changes(0, 5); c.subtract(0, 4, 2); c.subtract(4, 6, 3)
        >>> c.first_fit(3, 3), c.first_fit(3, 3, since=1), c.first_fit(3, 3, since=5)
        (0, 1, 6)
        """
        now = max(self.now, since)
        i = bisect_right(self.times, now)
        values = accumulate(islice(self.deltas, i, None), initial=self.value + sum(self.deltas[:i]))
        return first_fit(zip(chain((now,), islice(self.times, i, None)), values), need, span, before)

    def fits(self, need: int, span: int, before: int = FOREVER, since: int = 0) -> Iterator[tuple[int, int]]:
        """Every ``t`` that ``first_fit`` could answer, as closed intervals ``(first, last)``
        in ascending order: ``first_fit(need, span, before, t)`` is ``t`` inside one, else the
        next interval's ``first``. For a search that asks at many rising times: one scan in
        all, instead of one per time.  O(changes from ``since``) for all of them.

        >>> c = Changes(0, 5); c.subtract(0, 4, 2); c.subtract(4, 6, 3); c.subtract(10, 12, 4)
        >>> list(c.fits(3, 3, before=20)), list(c.fits(3, 3, before=11)), list(c.fits(2, 1, 20, since=5))
        ([(0, 1), (6, 7), (12, 19)], [(0, 1), (6, 7)], [(5, 9), (12, 19)])
        >>> list(c.fits(3, 3))[-1] == (12, FOREVER)  # the last run never ends
        True
        """
        now = max(self.now, since)
        i = bisect_right(self.times, now)
        value = self.value + sum(self.deltas[:i])
        start = now if value >= need else None  # the run of enough that holds the scan
        for t, d in zip(islice(self.times, i, None), islice(self.deltas, i, None)):
            if t >= before:
                break
            value += d
            if value >= need:
                if start is None:
                    start = t
            elif start is not None:
                if t - start >= span:
                    yield start, t - span
                start = None
        if start is not None and start < before:
            yield start, (before - 1 if before < FOREVER else FOREVER)


class Profile:
    """A resource value as a step function of time, from the simulated now on.

    >>> p = Profile(0, 5, Counts())
    >>> p.subtract(0, 4, 2); p.subtract(0, 9, 1); p.subtract(4, 6, 3)
    >>> p.segments()
    [(0, 2), (4, 1), (6, 4), (9, 5)]
    >>> [(t, free) for t, free in p.windows(0, 3, min)]
    [(0, 2), (4, 1), (6, 4), (9, 5)]
    >>> p.advance(5); p.segments()
    [(5, 1), (6, 4), (9, 5)]
    >>> m = Profile(0, 5, Counts(), merge=True)
    >>> m.subtract(0, 4, 2); m.subtract(4, 8, 2); m.segments()
    [(0, 3), (8, 5)]
    """

    def __init__(self, now: int, initial: Any, algebra: Algebra, merge: bool = False) -> None:
        self.algebra = algebra
        self.times: list[int] = [now]
        self.values: list[Any] = [initial]
        self.merge = merge  # counts only: drop breakpoints between equal values
        self.counts = isinstance(algebra, Counts)

    def segments(self) -> list[tuple[int, Any]]:
        """``(start, value)`` of every segment.  O(segments)."""
        return list(zip(self.times, self.values))

    def _split(self, t: int) -> int:
        """Index of the segment starting at ``t``, splitting the one that holds it.  O(segments)."""
        times = self.times
        i = bisect_right(times, t) - 1
        if times[i] == t:
            return i
        times.insert(i + 1, t)
        self.values.insert(i + 1, self.algebra.copy(self.values[i]))
        return i + 1

    def add(self, start: int, end: int, amount: Any) -> None:
        """Add ``amount`` during ``[start, end)``.  O(segments in it) operations."""
        if self.counts:
            self.count_change(start, end, amount)
        else:
            self._change(start, end, amount, self.algebra.add)

    def subtract(self, start: int, end: int, amount: Any) -> None:
        """Subtract ``amount`` during ``[start, end)``.  O(segments in it) operations."""
        if self.counts:
            self.count_change(start, end, -amount)
        else:
            self._change(start, end, amount, self.algebra.subtract)

    def _change(self, start: int, end: int, amount: Any, op: Callable[[Any, Any], Any]) -> None:
        """Apply ``op(value, amount)`` over ``[start, end)`` (values that are not counts, which
        never merge)."""
        times, values = self.times, self.values
        if start < times[0]:
            start = times[0]
        if end <= start:
            return
        first, last = self._split(start), self._split(end)
        for i in range(first, last):
            values[i] = op(values[i], amount)

    def count_change(self, start: int, end: int, delta: int) -> None:
        """Counts only: add ``delta`` over ``[start, end)``, the splits inline (a count needs no
        copy), one list comprehension and no call per segment; compression calls it directly.
        O(segments in it).

        >>> p = Profile(0, 5, Counts(), merge=True)
        >>> p.count_change(2, 6, -2); p.count_change(6, 9, -2); p.segments()
        [(0, 5), (2, 3), (9, 5)]
        """
        times, values = self.times, self.values
        if start < times[0]:
            start = times[0]
        if end <= start:
            return
        first = bisect_right(times, start) - 1
        if times[first] != start:
            first += 1
            times.insert(first, start)
            values.insert(first, values[first - 1])
        last = bisect_right(times, end, first) - 1
        if times[last] != end:
            last += 1
            times.insert(last, end)
            values.insert(last, values[last - 1])
        if last - first == 1:
            values[first] += delta
        else:
            values[first:last] = [v + delta for v in values[first:last]]
        if self.merge:  # only the edges can now equal their neighbours: scans see fewer segments
            if last < len(values) and values[last] == values[last - 1]:
                del times[last]
                del values[last]
            if first and values[first] == values[first - 1]:
                del times[first]
                del values[first]

    def advance(self, now: int) -> None:
        """Forget the time before ``now``.  O(segments dropped)."""
        i = bisect_right(self.times, now) - 1
        if i > 0:
            del self.times[:i]
            del self.values[:i]
        if now > self.times[0]:
            self.times[0] = now

    def first_fit(self, need: int, span: int, before: int = FOREVER) -> int | None:
        """Counts only: the earliest ``t < before`` with at least ``need`` free throughout
        ``[t, min(t+span, before))``: a run of segments with enough that lasts ``span``, or
        reaches ``before``, starts at its first breakpoint.  O(segments before the answer).

        For compression ``before`` is the job's own reservation's start: from there on what
        it holds is free for it, and a start before it ends before the reservation does, so
        only the time before it needs a look (and the profile is not touched).

        >>> p = Profile(0, 4, Counts())
        >>> p.subtract(0, 10, 3); p.subtract(20, 30, 2)
        >>> p.first_fit(3, 15), p.first_fit(3, 15, 20), p.first_fit(3, 15, 10)
        (30, 10, None)

        Compression asks this of every reservation in turn, and most move nowhere; the usual
        no is found from the end: where the segments just before ``before`` lack ``need``, no
        run reaches it, and one lasting ``span`` must end where they begin. (AttributeState's
        compression inlines this method: keep the two alike.)
        """
        if before < FOREVER:
            times, values = self.times, self.values
            last = j = bisect_left(times, before) - 1  # the last segment before ``before``
            while j >= 0 and values[j] < need:
                j -= 1
            if j < 0 or (j < last and times[j + 1] - times[0] < span):
                return None
        return first_fit(zip(self.times, self.values), need, span, before)

    def window(self, combine: Callable[[Any, Any], Any], read: Callable[[Any], Any] | None = None) -> Window:
        """A sliding window over this profile (valid until the profile changes), over
        ``read(value)`` of each segment if given."""
        return Window(self.times, self.values, combine, read)

    def windows(self, start: int, duration: int, combine: Callable[[Any, Any], Any]) -> Iterator[tuple[int, Any]]:
        """``(t, combination over [t, t+duration))`` for ``t = start`` and every later
        segment start, ascending.  Amortised O(1) combinations per segment."""
        window = self.window(combine)
        t = max(start, self.times[0])
        i = bisect_right(self.times, t)
        while True:
            yield t, window.over(t, t + duration)
            if i >= len(self.times):
                return
            t = self.times[i]
            i += 1


class Window:
    """Combination of the segments overlapping ``[t, end)``, for rising ``t`` and ``end``.

    A zero-length window is the instant ``t``. Queries must not move backwards. With ``read``,
    the window combines ``read(value)`` of each segment: NodeState's whole-node sets as their
    bits, so that ``combine`` can be ``operator.or_``, a C call (KTH conservative with node
    sets: 9.6 million unions).

    >>> import operator
    >>> w = Window([0, 10, 20], [{1}, {2}, {3}], operator.or_)
    >>> w.over(0, 15), w.over(12, 25), w.over(25, 25)
    ({1, 2}, {2, 3}, {3})
    >>> w = Window([0, 10, 20], [[0b01], [0b10], [0b100]], operator.or_, operator.itemgetter(0))
    >>> w.over(0, 15), w.over(12, 25)
    (3, 6)
    """

    def __init__(self, times: list[int], values: list[Any], combine: Callable[[Any, Any], Any],
                 read: Callable[[Any], Any] | None = None) -> None:
        self.times, self.values, self.combine, self.read = times, values, combine, read
        self.first = 0  # oldest segment in the window
        self.next = 0  # first segment not yet in the window
        self.front: list[Any] = []  # combinations of the oldest segments; top = oldest alone onward
        self.back: list[Any] = []  # the newest segments, in order
        self.back_total: Any = None

    def over(self, t: int, end: int) -> Any:
        """The combination over ``[t, max(end, t+1))``.  Amortised O(1) combinations per
        segment passed (each enters the back once and the front once), in locals: a
        compression search asks this at every time it tries."""
        times, combine = self.times, self.combine
        n = len(times)
        if end <= t:
            end = t + 1
        nxt = self.next
        if nxt < n and times[nxt] <= t:
            # every segment held ends by t (a caller skipped ahead): start afresh at t's
            # segment instead of combining the skipped ones
            first = nxt = bisect_right(times, t) - 1
            front: list[Any] = []
            back: list[Any] = []
            total = None
        else:
            first, front, back, total = self.first, self.front, self.back, self.back_total
        if nxt < n and times[nxt] < end:
            values, read = self.values, self.read
            while nxt < n and times[nxt] < end:
                value = values[nxt] if read is None else read(values[nxt])
                back.append(value)
                total = value if total is None else combine(total, value)
                nxt += 1
        # drop segments that end at or before t; the front empties: the back turns into it
        while first + 1 < nxt and times[first + 1] <= t:
            if not front:
                front, back, total = self._refill(back), [], None
            front.pop()
            first += 1
        if not front:
            front, back, total = self._refill(back), [], None
        self.first, self.next, self.front, self.back, self.back_total = first, nxt, front, back, total
        return front[-1] if total is None else combine(front[-1], total)

    def _refill(self, back: list[Any]) -> list[Any]:
        """The front made from ``back``: each segment combined with all newer ones."""
        front, acc, combine = [], None, self.combine
        for value in reversed(back):
            acc = value if acc is None else combine(value, acc)
            front.append(acc)
        return front


class UnionProfile(Profile):
    """A profile of sets whose ``add`` is a union (NodeState's reserved resources) that also
    answers "the union over ``[t, end)``" from unions kept per time bucket: the segments at
    the two edges are united directly, the buckets between from their kept union. A long
    window over a busy future then costs O(segments per bucket + buckets) unions instead of
    O(segments in the window) (160,000-node conservative: 300 segments per window). A kept
    union grows with every ``add`` over its bucket and is dropped by a ``subtract``. The clock
    needs nothing: the bucket holding now (and its forgotten segments) is always an edge.

    >>> from jufo.engine.ranges import NodeCores
    >>> from jufo.engine.node_state import NodeAlgebra
    >>> p = UnionProfile(0, NodeCores(), NodeAlgebra([1] * 8))
    >>> for i in range(64): p.add(10 * i, 10 * i + 15, NodeCores(1 << i % 8))
    >>> bin(p.union_over(0, 640).full), bin(p.union_over(300, 301).full), p.width, sorted(p.buckets)
    ('0b11111111', '0b1100000', 32, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18])
    >>> p.subtract(0, 1000, NodeCores(0b1000000)); bin(p.union_over(0, 640).full), sorted(p.buckets)
    ('0b10111111', [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18])
    """

    def __init__(self, now: int, initial: Any, algebra: Any) -> None:
        super().__init__(now, initial, algebra)
        self.buckets: dict[int, Any] = {}  # bucket number → union of the segments overlapping it
        self.width = 0  # seconds per bucket; 0: choose at the next query (``_tune``)
        self._tuned_at = 0  # segments when the width was chosen

    def _change(self, start: int, end: int, amount: Any, op: Callable[[Any, Any], Any]) -> None:
        super()._change(start, end, amount, op)
        buckets = self.buckets
        start = max(start, self.times[0])
        if not buckets or end <= start:
            return
        lo, hi = start // self.width, (end - 1) // self.width
        keys = range(lo, hi + 1) if hi - lo < len(buckets) else [b for b in buckets if lo <= b <= hi]
        grow = op == self.algebra.add
        for b in keys:
            kept = buckets.get(b)
            if kept is not None:
                if grow:
                    buckets[b] = self.algebra.union(kept, amount)
                else:
                    del buckets[b]

    def drop_breakpoint(self, t: int) -> bool:
        """Drop the breakpoint at ``t`` if the segments on either side hold equal sets (what
        is held there was given back): the profile is the same function of time, and every
        later change and scan passes one segment fewer. Never the first one (now).
        O(log segments) and one deletion.

        >>> from jufo.engine.ranges import NodeCores
        >>> from jufo.engine.node_state import NodeAlgebra
        >>> p = UnionProfile(0, NodeCores(), NodeAlgebra([1] * 4))
        >>> p.add(10, 30, NodeCores(0b1)); p.add(20, 40, NodeCores(0b10)); p.subtract(20, 40, NodeCores(0b10))
        >>> p.times
        [0, 10, 20, 30, 40]
        >>> p.drop_breakpoint(20), p.drop_breakpoint(40), p.drop_breakpoint(10), p.times
        (True, True, False, [0, 10, 30])
        """
        times = self.times
        i = bisect_left(times, t)
        if 0 < i < len(times) and times[i] == t and self.values[i] == self.values[i - 1]:
            del times[i]
            del self.values[i]
            return True
        return False

    def _tune(self) -> None:
        """Bucket width: the power of two above 4 mean gaps between breakpoints (ignoring one
        at FOREVER); chosen again, and the unions forgotten, when the breakpoints grew or
        shrank fourfold."""
        times = self.times
        n = bisect_left(times, FOREVER // 2)
        gap = (times[n - 1] - times[0]) // max(1, n - 1) if n > 1 else 1
        self.width = 1 << max(0, (4 * gap).bit_length())
        self.buckets = {}
        self._tuned_at = len(times)

    def _fold(self, t: int, end: int) -> Any:
        """A new union of the segments overlapping ``[t, end)``.  O(those segments) unions."""
        times, values, union = self.times, self.values, self.algebra.union
        i = bisect_right(times, t) - 1
        acc = self.algebra.copy(values[i])
        for j in range(i + 1, bisect_left(times, end, i + 1)):
            acc = union(acc, values[j])
        return acc

    def union_over(self, t: int, end: int) -> Any:
        """A new union of the segments overlapping ``[t, max(end, t+1))`` (``t`` from now on).
        O(segments in the two edge buckets + buckets between) unions."""
        end = max(end, t + 1)
        n = len(self.times)
        if not self.width or n > 4 * self._tuned_at or 4 * n < self._tuned_at:
            self._tune()
        width, buckets, union = self.width, self.buckets, self.algebra.union
        first, last = t // width, (end - 1) // width
        # buckets pay only where each holds several segments of the window (a dense stretch
        # can make buckets narrower than a long window's segments are apart)
        if last - first < 2 or 2 * (last - first) > bisect_left(self.times, end) - bisect_right(self.times, t):
            return self._fold(t, end)
        acc = union(self._fold(t, (first + 1) * width), self._fold(last * width, end))
        for b in range(first + 1, last):
            kept = buckets.get(b)
            if kept is None:
                kept = buckets[b] = self._fold(b * width, (b + 1) * width)
            acc = union(acc, kept)
        return acc
