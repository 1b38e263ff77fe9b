"""What the real machine does that its configuration does not say, learned from job records.

Two habits are learned, each only on clear evidence, so that a machine without them is
forecast as before:

* **Start windows** (``learn_windows``): per wall class and slot (hour of the day on Mon–Fri,
  Saturday, Sunday), over the last ``WINDOW_WEEKS`` weeks, the starts a slot should have seen
  if jobs of that class started at a steady rate while they waited (their waiting hours in
  the slot × the class's starts per waiting hour). A slot is closed to a class when that
  expectation is at least ``MIN_EXPECTED`` starts and it saw at most ``TOLERANCE`` of them.
  On KTH's SP2 this finds the documented policy (no job over 4 h on weekday daytime, none
  across 07:00 or 16:00); on HPC2N it closes nothing.
* **User caps** (``learn_user_caps``): the most jobs a user ran at once, over the last
  ``CAP_DAYS`` days, at times when the user had jobs waiting *and* the machine had room for
  the smallest of them — so the cap is the user's limit, not a full machine. Users with less
  than ``CAP_HOURS`` hours of such waiting get no cap.
"""

from __future__ import annotations

import bisect
import functools
import hashlib
import itertools
from collections import Counter
from collections.abc import Iterable
from operator import itemgetter

from ..io.accounting import JobRecord
from ..engine.windows import CLASSES, DAY, HOUR, SLOTS, WEEK, slot_of, wall_class

WINDOW_WEEKS = 8
MIN_EXPECTED = 5.0
TOLERANCE = 0.05
MIN_STARTS = 10
CAP_DAYS = 30
CAP_HOURS = 6
# hours of each slot in one week: Mon-Fri slots occur five times
_SLOT_HOURS = [5] * 24 + [1] * 48


# the slot of each hour since the epoch, by the hour's place in its week: ``slot_of`` of any
# second of hour h is ``_HOUR_SLOT[h % 168]`` (a day is 24 whole hours of the clock)
_HOUR_SLOT = [slot_of(h * HOUR) for h in range(7 * 24)]


def _add_exposure(row: list[int], start: int, end: int) -> None:
    """Add the seconds of ``[start, end)`` to the slots they fall in (whole seconds, so that
    sums in any order agree).  O(min(hours, 168)).

    >>> row = [0] * SLOTS; _add_exposure(row, 9 * HOUR - 60, 11 * HOUR + 30)  # Thursday 08:59-11:00:30
    >>> {s: v for s, v in enumerate(row) if v}
    {8: 60, 9: 3600, 10: 3600, 11: 30}
    """
    weeks = (end - start) // WEEK
    if weeks:
        for s in range(SLOTS):
            row[s] += weeks * _SLOT_HOURS[s] * HOUR
        start += weeks * WEEK
    if end <= start:
        return
    first, last = start // HOUR, (end - 1) // HOUR
    if first == last:
        row[_HOUR_SLOT[first % 168]] += end - start
        return
    row[_HOUR_SLOT[first % 168]] += (first + 1) * HOUR - start
    for hour in range(first + 1, last):
        row[_HOUR_SLOT[hour % 168]] += HOUR
    row[_HOUR_SLOT[last % 168]] += end - last * HOUR


MIN_WINDOW_WEEKS = 4  # starts over fewer weeks than this teach no windows: each weekday hour seen 4 times


def start_span(records: Iterable[JobRecord], now: int, weeks: int = WINDOW_WEEKS) -> int:
    """Seconds from the earliest start in the ``weeks`` before ``now`` to ``now`` (0: none)."""
    lo = now - weeks * WEEK
    first = min((r.start for r in records if r.start is not None and lo <= r.start < now), default=None)
    return 0 if first is None else now - first


def learn_windows(records: Iterable[JobRecord], now: int, weeks: int = WINDOW_WEEKS) -> set[tuple[int, int]]:
    """Closed ``(wall class, slot)`` pairs, from what started when over ``weeks`` weeks before
    ``now`` (epoch seconds). Jobs without a start are waiting until ``now``. Nothing while the
    starts span less than ``MIN_WINDOW_WEEKS`` weeks: a quiet Saturday seen twice is no habit."""
    counts = window_counts(records, now, weeks)
    return set() if counts is None else closed_slots(*counts)


def window_counts(records: Iterable[JobRecord], now: int,
                  weeks: int = WINDOW_WEEKS) -> tuple[list[list[int]], list[list[int]]] | None:
    """Per wall class and slot, the seconds jobs waited and the starts over ``weeks`` weeks
    before ``now``; None while the starts span less than ``MIN_WINDOW_WEEKS`` weeks."""
    records = list(records)
    if start_span(records, now, weeks) < MIN_WINDOW_WEEKS * WEEK:
        return None
    lo = now - weeks * WEEK
    exposure = [[0] * SLOTS for _ in range(CLASSES)]
    starts = [[0] * SLOTS for _ in range(CLASSES)]
    for rec in records:
        if rec.wall is None or rec.submit is None or rec.submit >= now:
            continue
        if rec.start is not None and rec.start < lo:
            continue
        c = wall_class(rec.wall)
        left = rec.left_queue
        begin, stop = max(rec.submit, lo), min(left if left is not None else now, now)
        if stop > begin:
            _add_exposure(exposure[c], begin, stop)
        if rec.start is not None and lo <= rec.start < now:
            starts[c][slot_of(rec.start)] += 1
    return exposure, starts


def closed_slots(exposure: list[list[int]], starts: list[list[int]]) -> set[tuple[int, int]]:
    """The closed ``(wall class, slot)`` pairs from each class's seconds of waiting and its
    starts per slot (each class alone; a class is judged with every longer one). Changes
    its arguments.  O(classes × slots)."""
    closed: set[tuple[int, int]] = set()
    for c in range(CLASSES - 1, -1, -1):  # class c counts every job of class c or longer
        if c < CLASSES - 1:
            for s in range(SLOTS):
                exposure[c][s] += exposure[c + 1][s]
                starts[c][s] += starts[c + 1][s]
        total_starts, total_seconds = sum(starts[c]), sum(exposure[c])
        if total_starts < MIN_STARTS or total_seconds <= 0:
            continue
        rate = total_starts / total_seconds  # starts per second of waiting
        for s in range(SLOTS):
            expected = rate * exposure[c][s]
            if expected >= MIN_EXPECTED and starts[c][s] <= TOLERANCE * expected:
                closed.add((c, s))
    return closed


class _LevelTime:
    """Seconds spent at each level of used cores, summed by prefix (a Fenwick tree): the time
    a level stayed at or below a threshold over any interval is two prefix queries apart.

    >>> t = _LevelTime(10)
    >>> t.add(3, 100); t.add(8, 50); t.add(20, 7)   # levels beyond the size count as the size
    >>> t.upto(2), t.upto(3), t.upto(9), t.upto(10), t.upto(-1)
    (0, 100, 150, 157, 0)
    """

    DENSE = 1 << 22  # levels up to this are a list (32 MiB at most); beyond, a dict

    def __init__(self, size: int) -> None:
        # a machine of 10^9 cores must not cost 8 GB here: beyond ``DENSE`` levels the tree is
        # sparse (each ``add`` touches O(log size) entries: memory O(adds × log size)); below,
        # a list, a third faster to walk
        self.size = max(0, size)
        self.tree: list[int] | dict[int, int] = [0] * (self.size + 2) if self.size <= self.DENSE else {}

    def add(self, level: int, seconds: int) -> None:
        """O(log size)."""
        i, limit, tree = min(max(level, 0), self.size) + 1, self.size + 2, self.tree
        if isinstance(tree, list):
            while i < limit:
                tree[i] += seconds
                i += i & -i
            return
        while i < limit:
            tree[i] = tree.get(i, 0) + seconds
            i += i & -i

    def upto(self, level: int) -> int:
        """Seconds spent at levels ``0..level``.  O(log size)."""
        if level < 0:
            return 0
        i, total, tree = min(level, self.size) + 1, 0, self.tree
        if isinstance(tree, list):
            while i > 0:
                total += tree[i]
                i -= i & -i
            return total
        while i > 0:
            total += tree.get(i, 0)
            i -= i & -i
        return total


def learn_user_caps(records: Iterable[JobRecord], now: int, capacity: int, days: int = CAP_DAYS,
                    evidence: dict[str, int] | None = None) -> dict[str, int]:
    """The most jobs each user ran at once while some of theirs waited and the machine had
    room (``capacity`` cores) for the smallest of them, over ``days`` days before ``now``;
    only users with ``CAP_HOURS`` of such time. ``evidence`` (if given) gets each capped
    user's seconds of it."""
    return user_caps(*cap_window(records, now, capacity, days), evidence)


def cap_window(records: Iterable[JobRecord], now: int, capacity: int,
               days: int = CAP_DAYS) -> tuple[Counter, Counter]:
    """Each user's seconds of waiting with room over ``days`` days before ``now``, and the
    most jobs the user ran at once during them (``cap_segments`` over that one window)."""
    lo = now - days * DAY
    events = []
    for rec in records:
        if rec.submit is None or rec.submit >= now:
            continue
        if rec.end is not None and rec.end < lo:
            continue
        events.extend(cap_events(rec, now))
    events.sort()
    return cap_segments(events, capacity, [lo, now])[0]


CapEvent = tuple[int, int, str, str, int]


def cap_events(rec: JobRecord, before: int | None = None) -> list[CapEvent]:
    """A job's events for ``cap_segments`` (those before ``before``, if given): ``(time, kind,
    id, user, cores)`` with kind 0 for its end, 1 its submit, 2 its start, -1 leaving the queue
    without a start (an end and no start: cancelled while pending) — so that at one second
    ends come before submits before starts, ties by job id (plain tuples sort without a key
    function)."""
    out: list[CapEvent] = []
    if rec.submit is None or (rec.never_ran and rec.end <= rec.submit):
        return out
    out.append((rec.submit, 1, rec.id, rec.user, rec.cores))
    if rec.start is not None and (before is None or rec.start < before):
        out.append((rec.start, 2, rec.id, rec.user, rec.cores))
        if rec.end is not None and (before is None or rec.end < before):
            out.append((rec.end, 0, rec.id, rec.user, rec.cores))
    elif rec.never_ran and (before is None or rec.end < before):
        out.append((rec.end, -1, rec.id, rec.user, rec.cores))
    return out


class CapState:
    """Who waits and who runs at one time of the cap sweep: each user's waiting jobs' cores
    (sorted: the smallest first), each waiting job's cores by id, each user's running jobs,
    and the cores in use; what the sweep knows of the past at a bound, so a sweep may start
    there (``cap_segments``'s ``state``)."""

    def __init__(self) -> None:
        from sortedcontainers import SortedList

        self.sorted = SortedList
        self.waiting: dict[str, SortedList] = {}
        self.waiting_ids: dict[str, int] = {}
        self.running: Counter = Counter()
        self.used = 0

    def apply(self, kind: int, job: str, user: str, cores: int) -> None:
        """One event (``cap_events``).  O(log jobs)."""
        if kind == 1:
            queue = self.waiting.get(user)
            if queue is None:
                queue = self.waiting[user] = self.sorted()
            queue.add(cores)
            self.waiting_ids[job] = cores
        elif kind == 2 or kind == -1:  # started, or left the queue without starting
            asked = self.waiting_ids.pop(job, None)
            if asked is not None:
                self.waiting[user].remove(asked)
            if kind == 2:
                self.running[user] += 1
                self.used += cores
        else:
            self.running[user] -= 1
            self.used -= cores

    @classmethod
    def before(cls, events: list[CapEvent], t: int) -> CapState:
        """The state after every event before ``t`` of sorted ``events``.  O(events log jobs)."""
        state = cls()
        state.advance(events, 0, t)
        return state

    def advance(self, events: list[CapEvent], i: int, t: int) -> None:
        """Apply the events from the ``i``-th of sorted ``events`` that come before ``t``."""
        apply = self.apply
        for when, kind, job, user, cores in itertools.islice(events, i, None):
            if when >= t:
                break
            apply(kind, job, user, cores)

    def copy(self) -> CapState:
        """A state of its own to sweep on.  O(jobs)."""
        other = CapState()
        other.waiting = {user: queue.copy() for user, queue in self.waiting.items()}
        other.waiting_ids, other.running, other.used = dict(self.waiting_ids), Counter(self.running), self.used
        return other


def cap_segments(events: list[CapEvent], capacity: int, bounds: list[int],
                 state: CapState | None = None) -> list[tuple[Counter, Counter]]:
    """Per segment ``[bounds[k], bounds[k+1])``: each user's seconds of waiting with room,
    and the most jobs the user ran at once during them; from sorted ``events``
    (``cap_events``). Sums and maxima over consecutive segments are what one segment
    spanning them would give, so a window is read off the segments inside it. Given the
    ``state`` at ``bounds[0]`` (``CapState.before``), ``events`` are those from then on: the
    same segments as a sweep from the first event.

    A user's state (jobs running, smallest waiting job) changes only at the user's own events
    and is closed at every bound; between them, the time with room is read off the machine's
    level-time tree, so the sweep is O((events + bounds × users) log capacity) however many
    users wait at once.

    >>> ev = [(0, 1, "a", "u", 1), (0, 1, "b", "u", 1), (0, 2, "a", "u", 1)]  # u runs a, b waits
    >>> [(dict(s), dict(b)) for s, b in cap_segments(ev, 10, [0, 100, 300])]
    [({'u': 100}, {'u': 1}), ({'u': 200}, {'u': 1})]
    >>> [(dict(s), dict(b)) for s, b in cap_segments([], 10, [100, 300], CapState.before(ev, 100))]
    [({'u': 200}, {'u': 1})]
    """
    levels = _LevelTime(capacity)
    upto = levels.upto
    fresh = state is None
    state = CapState() if state is None else state
    apply, waiting, running = state.apply, state.waiting, state.running
    # user → level-time below the user's threshold when its state began (a given state's: now)
    mark: dict[str, int] = {user: 0 for user, queue in waiting.items() if queue}
    segments = [(Counter(), Counter()) for _ in range(len(bounds) - 1)]
    current: list = [None, None]  # the current segment's (seconds, best); None outside every segment

    def settle(user: str) -> None:
        """Close the user's current state: its time with room, and its running count then."""
        queue = waiting.get(user)
        if queue:
            gained = upto(capacity - queue[0]) - mark[user]
            if gained > 0 and current[0] is not None:
                current[0][user] += gained
                current[1][user] = max(current[1][user], running[user])

    last, k = (None if fresh or not bounds else bounds[0]), -1  # the last event's time, the current segment
    end = bounds[-1] if bounds else None
    following = bounds[0] if bounds else None  # the next bound to pass

    def cross(t: int) -> None:
        """Pass every bound up to ``t``: the level held until each, each waiting user's state
        closed there, the next segment begun."""
        nonlocal last, k, following
        while following is not None and following <= t:
            if last is not None and following > last:
                levels.add(state.used, following - last)
                last = following
            for user, queue in waiting.items():
                if queue:
                    settle(user)
                    mark[user] = upto(capacity - queue[0])
            k += 1
            current[:] = segments[k] if k < len(segments) else (None, None)
            following = bounds[k + 1] if k + 1 < len(bounds) else None

    for t, kind, job, user, cores in events:
        if end is not None and t >= end:
            break
        if following is not None and t >= following:
            cross(t)
        if last is not None and t > last:  # the machine's level held since the last event
            levels.add(state.used, t - last)
        last = t
        settle(user)
        apply(kind, job, user, cores)
        queue = waiting.get(user)
        if queue:  # the user's new state begins
            mark[user] = upto(capacity - queue[0])
    if end is not None:
        cross(end)
    return segments


CAP_KEPT = "caps/1"  # the label of kept cap days: a change to how caps are learned must change it
KeptDay = tuple[str, dict[str, int], dict[str, int]]  # a whole day's digest, seconds and best (``kept_cap_window``)


def kept_cap_window(records: Iterable[JobRecord], now: int, capacity: int, kept: dict[int, KeptDay],
                    days: int = CAP_DAYS) -> tuple[Counter, Counter, dict[int, KeptDay]]:
    """``cap_window`` (the same sums and maxima), sweeping again only from the first whole UTC
    day of the window that ``kept`` (an earlier run's days: day start → the digest of every
    event before the day's end, and the day's segment) does not hold as it is now; and the
    whole days to keep for the next run. The window's first, partial day is swept each time;
    a new first day (once a day) changes every digest, so all are swept then.  O(events) to
    read and digest the events, O(events since the first day swept × log capacity) to sweep.

    >>> recs = [JobRecord("a", "u", cores=1, submit=0, start=0), JobRecord("b", "u", cores=1, submit=0)]
    >>> now = CAP_DAYS * DAY + 7 * HOUR
    >>> seconds, best, keep = kept_cap_window(recs, now, 10, {})
    >>> (seconds, best) == cap_window(recs, now, 10), len(keep)  # u ran a while b waited, the whole window
    (True, 29)
    >>> kept_cap_window(recs, now + HOUR, 10, keep)[:2] == cap_window(recs, now + HOUR, 10)  # from the days kept
    True
    """
    lo = now - days * DAY
    first, today = lo - lo % DAY, now - now % DAY
    if days < 2:
        return (*cap_window(records, now, capacity, days), {})
    events = sorted(e for rec in records if rec.submit is not None and rec.submit < now
                    and (rec.end is None or rec.end >= first) for e in cap_events(rec, now))
    at = functools.partial(bisect.bisect_left, events, key=itemgetter(0))
    digest = hashlib.blake2b(f"{CAP_KEPT};{capacity};{first}".encode(), digest_size=16)
    whole, digests, done = range(first + DAY, today, DAY), {}, 0  # the window's whole days
    swept = today  # the first whole day not kept as it is now
    for day in whole:
        upto = at(day + DAY)
        digest.update(repr(events[done:upto]).encode())
        done, digests[day] = upto, digest.hexdigest()
        if swept == today and (kept.get(day) or ("",))[0] != digests[day]:
            swept = day
    state = CapState.before(events, first)
    seconds, best = cap_segments(events[at(first):], capacity, sorted({first, lo, first + DAY}),
                                 state.copy())[-1]  # [lo, the first whole day)

    def add(day_seconds: dict[str, int], day_best: dict[str, int]) -> None:
        """A later segment's sums and maxima into the window's."""
        seconds.update(day_seconds)
        for user, most in day_best.items():
            best[user] = max(best[user], most)

    keep = {day: kept[day] for day in whole if day < swept}
    for _, day_seconds, day_best in keep.values():
        add(day_seconds, day_best)
    state.advance(events, at(first), swept)
    bounds = [*range(swept, today + 1, DAY), *([now] if now > today else [])]
    for day, (day_seconds, day_best) in zip(bounds, cap_segments(events[at(swept):], capacity, bounds, state)):
        add(day_seconds, day_best)
        if day < today:
            keep[day] = (digests[day], dict(day_seconds), dict(day_best))
    return seconds, best, keep


def user_caps(seconds: Counter, best: Counter, evidence: dict[str, int] | None = None) -> dict[str, int]:
    """Caps from a window's seconds of waiting with room and most jobs run then, per user.

    A user who waited with room while running nothing was held back by something else (a
    reservation, a dependency): that is no evidence of a cap, and no cap of 1 is made of it."""
    caps = {user: best[user] for user, s in sorted(seconds.items()) if s >= CAP_HOURS * HOUR and best[user] >= 1}
    if evidence is not None:
        evidence.update((user, seconds[user]) for user in caps)
    return caps
