"""A fair-share habit, learned where a machine serves users rather than submits.

Under fair share, a user who ran much lately waits behind those who ran little, whatever
their submit order, and the scheduler's configuration (or an SWF trace) does not say so. What
the history does show is its effect: a user whose jobs waited long lately will wait long again.

* A user's **standing** at time ``t``: the mean wait (start − queue date) of the user's jobs
  that started in the ``LAG_DAYS`` before ``t``, shrunk by ``SHRINK`` jobs toward the
  machine's mean, less the machine's mean: positive for users who waited longer than most.
* **The evidence** (``WaitIndex.evidence``): at the same time of day on each of the last
  ``EVIDENCE_DAYS`` days, the pairs of jobs of two users that waited together with the same
  request shape (size class and wall class, so that backfilling does not decide their order)
  and have both started by now. In how many did the earlier-submitted one start first, and in
  how many the one ahead by its queue date plus ``WEIGHT`` × its user's standing then?
* Where the standing order explains more of those pairs (``MIN_PAIRS`` at least), the learned
  simulation orders waiting jobs as if each were queued ``WEIGHT`` × its user's standing later
  (``user_lags``); elsewhere it keeps the submit order. Over every daily snapshot of HPC2N
  (Maui with fair share) the standing order held 62.4 % of the pairs, the submit order 42.1 %,
  and it is learned on 845 of 1,268 days; on KTH's SP2 (first come, first served EASY) the
  submit order held 89.0 %, the standing order 58.8 %, and it is learned on none
  (``docs/forecasting.md``).
"""

from __future__ import annotations

import bisect
import itertools
from collections import defaultdict
from collections.abc import Iterable

from ..engine.windows import DAY
from ..io.accounting import JobRecord
from .runtime import size_class

LAG_DAYS = 7  # a user's standing: the waits of the user's jobs that started in this many days
SHRINK = 5  # jobs: a user's mean wait is shrunk by this many toward the machine's
EVIDENCE_DAYS = 49  # days of evidence: with LAG_DAYS before them, within what a run reads (LOOKBACK)
WEIGHT = 16  # a second of standing counts as this many seconds of queue date
MIN_PAIRS = 100  # fewer pairs of the evidence decide nothing: the submit order stays
GROUP_JOBS = 60  # jobs of one shape waiting at one time that the evidence pairs (the first to start)


class WaitIndex:
    """The jobs' waits by start time, overall and per user, so that a user's standing at any
    time is two binary searches (prefix sums of the waits).

    >>> recs = [JobRecord(str(i), "ann" if i % 2 else "bob", wall=600, submit=0, start=100 * i, end=100 * i + 1)
    ...         for i in range(1, 7)]  # ann waited 100, 300 and 500 s; bob 200, 400 and 600 s
    >>> index = WaitIndex(recs)
    >>> round(index.standing("ann", 1000), 1), round(index.standing("bob", 1000), 1), index.standing("eve", 1000)
    (-18.8, 18.8, 0.0)
    """

    def __init__(self, records: Iterable[JobRecord]) -> None:
        jobs = []
        for r in records:
            start, wall, queued = r.start, r.wall, r.queued
            if start is None or not wall or queued is None or start < queued:
                continue
            jobs.append((start, queued, r.user, size_class(r.cores), wall.bit_length()))  # by start: the shape last
        jobs.sort()
        self.jobs = jobs
        self.starts = [j[0] for j in jobs]
        self.sums = [0, *itertools.accumulate(j[0] - j[1] for j in jobs)]
        user_starts: dict[str, list[int]] = defaultdict(list)
        user_sums: dict[str, list[int]] = defaultdict(lambda: [0])
        for start, queued, user, _, _ in jobs:
            user_starts[user].append(start)
            sums = user_sums[user]
            sums.append(sums[-1] + start - queued)
        self.user_starts, self.user_sums = dict(user_starts), dict(user_sums)

    def _mean(self, at: int) -> float:
        """The machine's mean wait of the jobs started in the ``LAG_DAYS`` before ``at``.  O(log n)."""
        lo, hi = bisect.bisect_left(self.starts, at - LAG_DAYS * DAY), bisect.bisect_left(self.starts, at)
        return (self.sums[hi] - self.sums[lo]) / (hi - lo) if hi > lo else 0.0

    def standing(self, user: str, at: int, mean: float | None = None) -> float:
        """How much longer than the machine's the user's jobs that started in the ``LAG_DAYS``
        before ``at`` waited, shrunk toward none by ``SHRINK`` jobs; 0 for a user with none.
        O(log n)."""
        m = self._mean(at) if mean is None else mean
        starts = self.user_starts.get(user)
        if not starts:
            return 0.0
        lo, hi = bisect.bisect_left(starts, at - LAG_DAYS * DAY), bisect.bisect_left(starts, at)
        sums = self.user_sums[user]
        return (sums[hi] - sums[lo] + SHRINK * m) / (hi - lo + SHRINK) - m

    def evidence(self, now: int) -> tuple[int, int, int]:
        """``(pairs, in submit order, in standing order)`` over the last ``EVIDENCE_DAYS``: at
        ``now`` less each whole day, the pairs of two users' jobs of one shape that both waited
        then and started before ``now`` (the first ``GROUP_JOBS`` of a shape to start), and how
        many of them started in the order of their queue dates, and of their queue dates plus
        ``WEIGHT`` × their users' standings then. Nothing started from ``now`` on is read.
        O(jobs of the window + pairs).

        >>> def day(d, first, late):  # three jobs each of users a and b, b's submitted first, started later
        ...     return [JobRecord(f"{d}{u}{i}", u, wall=600, submit=d * DAY - (600 if u == first else 300) + i,
        ...                       start=d * DAY + (4000 if u == late else 600) + i) for i in range(3) for u in "ab"]
        >>> fair = [job for d in range(60) for job in day(d, "b", "b")]
        >>> WaitIndex(fair).evidence(60 * DAY)  # 49 days of 3 × 3 pairs: b waited longer, and still does
        (441, 0, 441)
        >>> fcfs = [job for d in range(60) for job in day(d, "b", "a")]  # first come, first served: here both explain it
        >>> WaitIndex(fcfs).evidence(60 * DAY)
        (441, 441, 441)
        """
        lo = bisect.bisect_left(self.starts, now - EVIDENCE_DAYS * DAY)
        hi = bisect.bisect_left(self.starts, now)
        groups: dict[tuple[int, int, int], list[tuple]] = defaultdict(list)
        for job in self.jobs[lo:hi]:  # in start order: a group keeps the first to start
            start, queued = job[0], job[1]
            first = (now - start) // DAY + 1  # the days back whose time lies in [queued, start)
            last = min(EVIDENCE_DAYS, (now - queued) // DAY)
            for day in range(first, last + 1):
                group = groups[(day, job[3], job[4])]
                if len(group) < GROUP_JOBS:
                    group.append(job)
        pairs = by_submit = by_standing = 0
        standings: dict[tuple[str, int], float] = {}
        means: dict[int, float] = {}
        for (day, _, _), group in groups.items():
            at = now - day * DAY
            if at not in means:
                means[at] = self._mean(at)
            keys = []
            for job in group:
                key = (job[2], day)
                if key not in standings:
                    standings[key] = self.standing(job[2], at, means[at])
                keys.append(job[1] + WEIGHT * standings[key])
            for x, y in itertools.combinations(range(len(group)), 2):
                a, b = group[x], group[y]
                if a[2] == b[2] or a[0] == b[0]:
                    continue
                pairs += 1
                first_a = a[0] < b[0]
                by_submit += (a[1] < b[1]) == first_a
                by_standing += (keys[x] < keys[y]) == first_a
        return pairs, by_submit, by_standing

    def lags(self, now: int, evidence: tuple[int, int, int] | None = None) -> dict[str, int]:
        """Seconds to add to the queue date of each user's waiting jobs at ``now`` (``WEIGHT``
        × the user's standing), where the evidence shows the machine serving users before
        submits; none (the submit order) elsewhere. Users not named get none. ``evidence``:
        ``evidence(now)``, if already at hand.  O(evidence).

        >>> def day(d, late):  # b's jobs submitted first; ``late``'s start later
        ...     return [JobRecord(f"{d}{u}{i}", u, wall=600, submit=d * DAY - (600 if u == "b" else 300) + i,
        ...                       start=d * DAY + (4000 if u == late else 600) + i) for i in range(3) for u in "ab"]
        >>> WaitIndex([job for d in range(60) for job in day(d, "b")]).lags(60 * DAY)
        {'a': -23908, 'b': 23908}
        >>> WaitIndex([job for d in range(60) for job in day(d, "a")]).lags(60 * DAY)  # the submit order explains as much
        {}
        """
        pairs, by_submit, by_standing = self.evidence(now) if evidence is None else evidence
        if pairs < MIN_PAIRS or by_standing <= by_submit:
            return {}
        mean = self._mean(now)
        lo = bisect.bisect_left(self.starts, now - LAG_DAYS * DAY)
        users = sorted({job[2] for job in self.jobs[lo:bisect.bisect_left(self.starts, now)]})
        return {user: round(WEIGHT * self.standing(user, now, mean)) for user in users}


def user_lags(records: Iterable[JobRecord], now: int) -> dict[str, int]:
    """``WaitIndex.lags`` of ``records`` (what a history knew at ``now``) at ``now``."""
    return WaitIndex(records).lags(now)
