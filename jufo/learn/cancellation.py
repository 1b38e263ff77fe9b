"""How likely a waiting job is to be cancelled before it starts, learned per user.

A job cancelled while pending never takes its nodes, so the jobs behind it start earlier than
a simulation that runs it. Of a user's jobs that had waited at least as long as a waiting job
has, over the last ``CANCEL_DAYS`` days, the share that left the queue cancelled is the odds
that it will be too. Each share is shrunk by ``PRIOR`` jobs toward the one above it (the
user's toward the machine's at that age, that toward the machine's over all ages), so that
one cancellation among a user's three jobs is not taken for a habit. A machine whose history shows
no job cancelled while pending gets no odds, and its forecast is as before.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from collections.abc import Iterable

from ..engine.windows import DAY
from ..io.accounting import JobRecord

CANCEL_DAYS = 30
PRIOR = 10


class CancelOdds:
    """The odds that a user's job waiting at a given age is cancelled before it starts, from
    the jobs that left the queue in the ``days`` days before ``now``.

    >>> recs = [JobRecord(str(i), "u", submit=0, start=60 * i) for i in range(1, 5)]
    >>> recs += [JobRecord("5", "u", submit=0, end=300), JobRecord("6", "v", submit=0, start=30)]
    >>> odds = CancelOdds(recs, now=1000)
    >>> round(odds.odds("u", 0), 3), round(odds.odds("u", 250), 3), round(odds.odds("u", 300), 3)
    (0.178, 0.311, 0.167)
    >>> CancelOdds(recs[:4], now=1000).odds("u", 0), bool(CancelOdds(recs[:4], now=1000))
    (0.0, False)
    """

    def __init__(self, records: Iterable[JobRecord], now: int, days: int = CANCEL_DAYS) -> None:
        lo = now - days * DAY
        left: dict[str, list[int]] = defaultdict(list)  # user → how long each job waited before it left
        cancelled: dict[str, list[int]] = defaultdict(list)
        for rec in records:
            when = rec.left_queue
            if rec.submit is None or when is None or not lo <= when < now:
                continue
            age = max(0, when - rec.submit)
            left[rec.user].append(age)
            if rec.never_ran:
                cancelled[rec.user].append(age)
        self.left = {user: sorted(ages) for user, ages in left.items()}
        self.cancelled = {user: sorted(ages) for user, ages in cancelled.items()}
        self.all_left = sorted(age for ages in left.values() for age in ages)
        self.all_cancelled = sorted(age for ages in cancelled.values() for age in ages)

    def __bool__(self) -> bool:
        """Whether any job was cancelled while pending in the window (else every odds is 0)."""
        return bool(self.all_cancelled)

    def odds(self, user: str, age: int) -> float:
        """The share of ``user``'s jobs that had waited longer than ``age`` seconds and then left
        cancelled, shrunk toward the machine's share.  O(log n)."""
        if not self.all_cancelled:
            return 0.0
        base = len(self.all_cancelled) / len(self.all_left)
        machine = (_beyond(self.all_cancelled, age) + PRIOR * base) / (_beyond(self.all_left, age) + PRIOR)
        mine = _beyond(self.left.get(user, []), age)
        return (_beyond(self.cancelled.get(user, []), age) + PRIOR * machine) / (mine + PRIOR)


def _beyond(ages: list[int], age: int) -> int:
    """How many of the sorted ``ages`` exceed ``age``."""
    return len(ages) - bisect.bisect_right(ages, age)


class CancelIndex:
    """``CancelOdds`` as of any time, for a trace's snapshots: the jobs sorted by when they left
    the queue, so that each snapshot reads its window's slice instead of every record. What a
    backtest's history shows at ``now`` (``backtest.TraceSource`` keeping ``keep`` seconds) is
    the slice less the jobs submitted over ``2 * keep`` ago and the runs ended over ``keep`` ago.

    >>> recs = [JobRecord("1", "u", submit=0, start=100), JobRecord("2", "u", submit=0, end=200)]
    >>> index = CancelIndex(recs, keep=90 * DAY)
    >>> index.as_of(150), round(index.as_of(250).odds("u", 0), 3), CancelIndex(recs[:1], 90 * DAY).as_of(250)
    (None, 0.5, None)
    """

    def __init__(self, records: Iterable[JobRecord], keep: int) -> None:
        self.left = sorted((r for r in records if r.submit is not None and r.left_queue is not None),
                           key=lambda r: (r.left_queue, r.id))
        self.times = [r.left_queue for r in self.left]
        self.keep = keep
        self.any = any(r.never_ran for r in self.left)

    def as_of(self, now: int, days: int = CANCEL_DAYS) -> CancelOdds | None:
        """The odds as the records known at ``now`` give them; None where none of them was
        cancelled while pending.  O(k log k) for the k jobs that left in the window."""
        if not self.any:
            return None
        lo, hi = bisect.bisect_left(self.times, now - days * DAY), bisect.bisect_left(self.times, now)
        oldest, ended = now - 2 * self.keep, now - self.keep
        known = [r for r in self.left[lo:hi] if r.submit >= oldest
                 and (r.never_ran or r.end is None or r.end >= ended)]
        odds = CancelOdds(known, now, days)
        return odds if odds else None
