"""What a whole trace taught as of any time, without relearning it at every snapshot.

A backtest forecasts a trace's queue at a thousand times; relearning run times, start windows
and user caps from the records each time cost three quarters of it. Here each learner is an
index built once over the whole trace and asked "as of ``now``": it answers from the records'
past only, exactly as ``outlook.learn`` over a ``TraceSource`` would (tests compare them
snapshot by snapshot), because what the accounting shows at ``now`` is the trace cut at
``now``: a job that starts later is a job still waiting then.

* ``RuntimeIndex``: the finished jobs of each request key in the order they ended; as of
  ``now``, the last ones that had ended (and were kept) by then.
* ``WindowIndex``: waiting seconds and starts per wall class and hour of the trace, summed over
  the eight weeks before ``now``.
* ``CancelIndex`` (``cancellation``): the jobs in the order they left the queue; as of ``now``,
  the slice of the last ``CANCEL_DAYS`` days.
* ``CapIndex``: the user-cap sweep (``behaviour.cap_segments``) run once, closed at every
  snapshot time and every snapshot time less ``CAP_DAYS``; a window is the sum of its segments,
  read off running sums and a range-maximum table per user. It needs the snapshot times in
  advance.
"""

from __future__ import annotations

import bisect
from collections import Counter, defaultdict
from collections.abc import Sequence

from ..engine.snapshot import Snapshot
from ..engine.windows import CLASSES, DAY, HOUR, SLOTS, WEEK, WeeklyWindows, slot_of, wall_class
from ..io.accounting import JobRecord
from .behaviour import (CAP_DAYS, MIN_WINDOW_WEEKS, WINDOW_WEEKS, cap_events, cap_segments, closed_slots,
                        learn_user_caps, user_caps)
from .calibration import Calibration
from .cancellation import CancelIndex
from .outlook import HistorySource, Learned
from .fairshare import WaitIndex
from .runtime import REACH_JOBS, RuntimeRules, overrun, reach, reach_candidate, run_keys, share_keys, shortfall


class RuntimeIndex:
    """Run-time prediction as of any time, from all of a trace's finished jobs.

    >>> recs = [JobRecord(str(i), "u", queue="q", wall=1000, submit=0, start=i * 100, end=i * 100 + 10 * i)
    ...         for i in range(1, 4)]  # runs of 10, 20 and 30 s, ended at 110, 220 and 330
    >>> index = RuntimeIndex(recs, keep=10_000)
    >>> [index.as_of(t).predict("u", "q", 1000, 1) for t in (100, 250, 400)]
    [(1000, 'wall'), (15, 'same request'), (25, 'same request')]
    """

    def __init__(self, records: Sequence[JobRecord], keep: int) -> None:
        finished = sorted((r for r in records if r.submit is not None and r.start is not None and r.end is not None
                           and r.end - r.start >= 0), key=lambda r: (r.end, r.id))
        self.keep = keep
        self.finished = finished
        self.ends = [r.end for r in finished]
        self.runs: dict[tuple, list[int]] = defaultdict(list)  # key → positions in ``finished``
        self.shares: dict[tuple, list[int]] = defaultdict(list)
        for i, rec in enumerate(finished):
            for key in run_keys(rec):
                self.runs[key].append(i)
            if rec.wall:
                for key in share_keys(rec):
                    self.shares[key].append(i)

    def as_of(self, now: int) -> RuntimeAsOf:
        """The predictor a history holding what was known at ``now`` would be.  O(log n)."""
        return RuntimeAsOf(self, now)


class RuntimeAsOf(RuntimeRules):
    """``RuntimeIndex`` at one time: the jobs that ended by ``now`` (and no longer ago than
    the history keeps), submitted no earlier than a history keeps a waiting job."""

    def __init__(self, index: RuntimeIndex, now: int, upto: int | None = None) -> None:
        self.index = index
        self.now = now
        # positions below this ended by now (or, given, the jobs that ended before one of them)
        self.upto = bisect.bisect_right(index.ends, now) if upto is None else upto

    def known(self, rec: JobRecord) -> bool:
        """Would a history at ``now`` hold this finished job (if it ended by then)?"""
        return rec.end >= self.now - self.index.keep and rec.start < self.now and \
            self.now - 2 * self.index.keep <= rec.submit <= self.now

    def recent_runs(self, recent: int = REACH_JOBS) -> tuple[list[float | None], list[float]]:
        """``RuntimePredictor.learning``'s overruns and shortfalls as of ``now``: of the last
        ``recent`` known finished jobs with a wall, each predicted from the known jobs that
        ended before it, in the order they ended.  O(recent × a prediction)."""
        finished, overruns, shortfalls = self.index.finished, [], []
        for i in range(self.upto - 1, -1, -1):
            rec = finished[i]
            if rec.end < self.now - self.index.keep or len(overruns) == recent:  # older ones are not known either
                break
            if self.known(rec) and reach_candidate(rec):
                predicted, _ = RuntimeAsOf(self.index, self.now, i).predict(rec.user, rec.queue, rec.wall, rec.cores)
                overruns.append(overrun(predicted, rec.end - rec.start, rec.wall))
                shortfalls.append(shortfall(predicted, rec.end - rec.start))
        overruns.reverse()
        shortfalls.reverse()
        return overruns, shortfalls

    def _last(self, positions: list[int] | None, count: int) -> list:
        """The last ``count`` known records among ``positions``.  O(log n + skipped)."""
        if not positions:
            return []
        floor, finished = self.now - self.index.keep, self.index.finished
        out = []
        for i in range(bisect.bisect_left(positions, self.upto) - 1, -1, -1):
            rec = finished[positions[i]]
            if rec.end < floor:
                break
            if self.known(rec):
                out.append(rec)
                if len(out) == count:
                    break
        out.reverse()
        return out

    def _runs(self, key: tuple) -> list[int]:
        return [r.end - r.start for r in self._last(self.index.runs.get(key), self.RUNS)]

    def _shares(self, key: tuple) -> list[float]:
        return [min((r.end - r.start) / r.wall, 1.0) for r in self._last(self.index.shares.get(key), self.SHARES)]


class WindowIndex:
    """Closed start windows as of any time: per wall class, the seconds jobs waited and the
    starts, per hour of the trace.

    >>> WindowIndex([]).closed(10 * WEEK)
    set()
    """

    def __init__(self, records: Sequence[JobRecord]) -> None:
        self.starts_all = sorted(r.start for r in records if r.start is not None)
        events: list[list[tuple[int, int]]] = [[] for _ in range(CLASSES)]
        self.starts: list[list[int]] = [[] for _ in range(CLASSES)]
        for rec in records:
            if rec.wall is None or rec.submit is None:
                continue
            c = wall_class(rec.wall)
            left = rec.left_queue  # its start, or its end if cancelled while pending
            if left is None:
                events[c].append((rec.submit, 1))
            elif left > rec.submit:
                events[c] += [(rec.submit, 1), (left, -1)]
            if rec.start is not None:
                self.starts[c].append(rec.start)
        times = [t for row in events for t, _ in row] + [t for row in self.starts for t in row]
        self.h0 = min(times) // HOUR if times else 0
        hours = (max(times) // HOUR - self.h0 + 2) if times else 1
        self.seconds = [[0] * hours for _ in range(CLASSES)]  # class → hour → seconds of waiting
        self.started = [[0] * hours for _ in range(CLASSES)]
        self.times: list[list[int]] = []  # class → event times; count after the events at each
        self.waiting: list[list[int]] = []
        for c in range(CLASSES):
            self.starts[c].sort()
            for t in self.starts[c]:
                self.started[c][t // HOUR - self.h0] += 1
            row, times_c, counts_c = self.seconds[c], [], []
            count, last = 0, None
            for t, delta in sorted(events[c]):
                if last is not None and count:
                    self._spread(row, count, last, t)
                if times_c and times_c[-1] == t:
                    counts_c[-1] += delta
                else:
                    times_c.append(t)
                    counts_c.append(count + delta)
                count += delta
                last = t
            self.times.append(times_c)
            self.waiting.append(counts_c)
        # sums over every 168th hour: a window's hours of one hour of the week are two lookups
        self.week_seconds = [self._by_week(row) for row in self.seconds]
        self.week_started = [self._by_week(row) for row in self.started]
        self.slot = [slot_of((self.h0 + r) * HOUR) for r in range(168)]  # slot of the r-th hour mod 168

    @staticmethod
    def _by_week(row: list[int]) -> list[int]:
        """Running sums of ``row`` over every 168th entry: ``out[i] = row[i] + out[i - 168]``."""
        out = row[:]
        for i in range(168, len(out)):
            out[i] += out[i - 168]
        return out

    def _hours(self, sums: list[int], i0: int, i1: int, row: list[int]) -> None:
        """Add each slot's total over hours ``[i0, i1)`` (offsets from ``h0``) to ``row``.  O(168)."""
        for r in range(168):
            hi, lo = i1 - 1 - (i1 - 1 - r) % 168, i0 - 1 - (i0 - 1 - r) % 168
            total = (sums[hi] if hi >= 0 else 0) - (sums[lo] if lo >= 0 else 0)
            if total:
                row[self.slot[r]] += total

    def _spread(self, row: list[int], count: int, start: int, end: int) -> None:
        """Add ``count`` waiting jobs over ``[start, end)`` to the hours they fall in."""
        t = start
        while t < end:
            step = min(end, t - t % HOUR + HOUR)
            row[t // HOUR - self.h0] += count * (step - t)
            t = step

    def _waited(self, c: int, start: int, end: int) -> int:
        """Seconds class ``c``'s jobs waited in ``[start, end)``, a part of one hour."""
        times, counts = self.times[c], self.waiting[c]
        i = bisect.bisect_right(times, start) - 1
        count = counts[i] if i >= 0 else 0
        total, t = 0, start
        for j in range(i + 1, bisect.bisect_left(times, end)):
            total += count * (times[j] - t)
            t, count = times[j], counts[j]
        return total + count * (end - t)

    def closed(self, now: int, weeks: int = WINDOW_WEEKS) -> set[tuple[int, int]]:
        """``behaviour.learn_windows`` as of ``now``.  O(168 × classes)."""
        counts = self.counts(now, weeks)
        return set() if counts is None else closed_slots(*counts)

    def counts(self, now: int, weeks: int = WINDOW_WEEKS) -> tuple[list[list[int]], list[list[int]]] | None:
        """``behaviour.window_counts`` as of ``now``.  O(168 × classes)."""
        lo = now - weeks * WEEK
        first = bisect.bisect_left(self.starts_all, lo)
        if first == len(self.starts_all) or self.starts_all[first] >= now \
                or now - self.starts_all[first] < MIN_WINDOW_WEEKS * WEEK:
            return None
        exposure = [[0] * SLOTS for _ in range(CLASSES)]
        starts = [[0] * SLOTS for _ in range(CLASSES)]
        begin, stop = -(-lo // HOUR), now // HOUR  # whole hours [begin, stop)
        i0 = min(max(begin, self.h0), self.h0 + len(self.seconds[0])) - self.h0
        i1 = max(min(stop, self.h0 + len(self.seconds[0])) - self.h0, i0)
        for c in range(CLASSES):
            ex, st = exposure[c], starts[c]
            self._hours(self.week_seconds[c], i0, i1, ex)
            self._hours(self.week_started[c], i0, i1, st)
            for a, b in ((lo, min(begin * HOUR, now)), (max(stop * HOUR, lo), now)):
                if b > a:
                    ex[slot_of(a)] += self._waited(c, a, b)
                    row = self.starts[c]
                    st[slot_of(a)] += bisect.bisect_left(row, b) - bisect.bisect_left(row, a)
        return exposure, starts


class CapIndex:
    """User caps as of given snapshot times.

    >>> recs = [JobRecord("a", "u", cores=1, submit=0, start=0, end=None),
    ...         JobRecord("b", "u", cores=1, submit=0, start=None, end=None)]  # u runs a, b waits
    >>> index = CapIndex(recs, 10, [CAP_DAYS * DAY, CAP_DAYS * DAY + 7 * HOUR])
    >>> index.window(CAP_DAYS * DAY + 7 * HOUR)[0]["u"], index.caps(CAP_DAYS * DAY + 7 * HOUR), index.caps(1)
    (2592000, {'u': 1}, None)
    """

    def __init__(self, records: Sequence[JobRecord], capacity: int, times: Sequence[int]) -> None:
        events = sorted(e for rec in records for e in cap_events(rec))
        self.bounds = sorted(set(times) | {t - CAP_DAYS * DAY for t in times})
        self.at = {t: k for k, t in enumerate(self.bounds)}
        # per user: the segments where it waited with room, running sums of its seconds there,
        # and a sparse table of its most jobs run (max over 2^j segments from each)
        where: dict[str, list[int]] = defaultdict(list)
        seconds: dict[str, list[int]] = defaultdict(lambda: [0])
        best: dict[str, list[int]] = defaultdict(list)
        for k, (sec, most) in enumerate(cap_segments(events, capacity, self.bounds)):
            for user, value in sec.items():
                where[user].append(k)
                seconds[user].append(seconds[user][-1] + value)
                best[user].append(most[user])
        self.where = dict(where)
        self.seconds = dict(seconds)
        self.tables: dict[str, list[list[int]]] = {}
        for user, row in best.items():
            table = [row]
            while 2 ** len(table) <= len(row):
                last, half = table[-1], 2 ** (len(table) - 1)
                table.append([max(last[i], last[i + half]) for i in range(len(last) - half)])
            self.tables[user] = table

    def caps(self, now: int) -> dict[str, int] | None:
        """``behaviour.learn_user_caps`` as of ``now``; None if ``now`` is not a snapshot time."""
        window = self.window(now)
        return None if window is None else user_caps(*window)

    def window(self, now: int) -> tuple[Counter, Counter] | None:
        """``behaviour.cap_window`` as of ``now``: the sums and maxima of the segments in it;
        None if ``now`` is not a snapshot time.  O(users log segments)."""
        k_lo, k_now = self.at.get(now - CAP_DAYS * DAY), self.at.get(now)
        if k_lo is None or k_now is None:
            return None
        seconds: Counter = Counter()
        best: Counter = Counter()
        for user, where in self.where.items():
            a, b = bisect.bisect_left(where, k_lo), bisect.bisect_left(where, k_now)
            if a == b:
                continue
            seconds[user] = self.seconds[user][b] - self.seconds[user][a]
            table = self.tables[user]
            j = (b - a).bit_length() - 1
            best[user] = max(table[j][a], table[j][b - 2 ** j])
        return seconds, best


class TraceKnowledge:
    """``outlook.learn`` for a trace's snapshots, from indexes built once."""

    def __init__(self, records: Sequence[JobRecord], keep: int, capacity: int, times: Sequence[int] | None) -> None:
        self.runtimes = RuntimeIndex(records, keep)
        self.windows = WindowIndex(records)
        self.caps = CapIndex(records, capacity, times) if times else None
        self.cancels = CancelIndex(records, keep)
        self.waits = WaitIndex(records)
        self.capacity = capacity

    def learn(self, source: HistorySource, snap: Snapshot, coverage: float) -> Learned:
        """What the history knew at ``snap``'s time; the caps relearned from ``source`` where
        the time is not one the index was built for."""
        now = snap.epoch
        caps = self.caps.caps(now) if self.caps is not None else None
        if caps is None:
            caps = learn_user_caps(source.records(now), now, self.capacity)
        runtimes = self.runtimes.as_of(now)
        overruns, shortfalls = runtimes.recent_runs()
        runtimes.learned_overruns(overruns, shortfalls)
        return Learned(runtimes, WeeklyWindows(self.windows.closed(now), now), caps,
                       Calibration(source.scored(now), coverage), reach(overruns, coverage), self.cancels.as_of(now),
                       self.waits.lags(now))
