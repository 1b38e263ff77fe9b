"""Calibrated start ranges: how far real starts fell from earlier forecasts, per horizon.

Every forecast the history kept is scored against what happened: the ratio
``r = (actual wait + C) / (simulated wait + C)`` (waits from the time the forecast was made,
``C`` = 10 minutes keeps "starts now" forecasts comparable). Forecasts of jobs still waiting
are *censored*: their ratio is at least what the wait so far gives. Per horizon bucket (the
simulated wait: under 15 min, 1 h, 4 h, 12 h, 1 day, 3 days, a week, longer) the
Kaplan–Meier estimate of the ratio's distribution gives, for a new forecast, the shortest
ratio interval holding the stated share of real starts — in the manner of split conformal
prediction: if the future resembles the recent past, the range holds the real start for that
share of jobs. Right-skewed waits make the shortest interval much narrower than the central
one (often ``[now, q80]``). The same ratios correct the best estimate: halfway (in log ratio)
from the simulated wait toward the median ratio, where it lasted the whole window (``lasting_bias``).
"""

from __future__ import annotations

import bisect
import functools
import math
import heapq
from collections.abc import Callable, Iterable, Iterator, Sequence
from collections import Counter, deque
from dataclasses import dataclass

from sortedcontainers import SortedList

DEFAULT_COVERAGE = 0.8  # the share of real starts a range should hold unless told otherwise

C = 600
HORIZONS = (1, 900, 3600, 4 * 3600, 12 * 3600, 86400, 3 * 86400, 7 * 86400)
MIN_SCORED = 30  # forecasts a bucket needs; thinner ones borrow from their neighbours
SHRINK = 0.5  # how far (in log ratio) the best estimate moves from the simulation to the lasting bias
_GRID = 100  # interval ends are searched on quantile levels k / 100
_LEVELS = [k / _GRID for k in range(1, _GRID + 1)]


def bucket(wait: int) -> int:
    """Horizon bucket of a simulated wait in seconds.

    >>> [bucket(w) for w in (0, 600, 3600, 10 * 86400)]
    [0, 1, 3, 8]
    """
    return bisect.bisect_right(HORIZONS, wait)


def bucket_label(b: int) -> str:
    """How reports name a horizon bucket.

    >>> bucket_label(0), bucket_label(2), bucket_label(8)
    ('now', '15 min-1 h', 'over 7 d')
    """
    names = ("now", "15 min", "1 h", "4 h", "12 h", "1 d", "3 d", "7 d")
    if b == 0:
        return "now"
    if b == 1:
        return "under 15 min"
    if b >= len(HORIZONS):
        return f"over {names[-1]}"
    return f"{names[b - 1]}-{names[b]}"


def wait_ratio(made: int, predicted: int, reached: int) -> float:
    """``(real wait + C) / (simulated wait + C)`` of a forecast made at ``made`` of a start at
    ``predicted``, the job having started (or still waited) at ``reached``.

    >>> wait_ratio(0, 600, 1800), wait_ratio(0, 0, 0)
    (2.0, 1.0)
    """
    return (max(reached - made, 0) + C) / (max(0, predicted - made) + C)


@dataclass(frozen=True)
class Scored:
    """A past forecast and what became of it (epoch seconds)."""

    made: int  # when the forecast was made
    predicted: int  # the simulated start
    start: int | None  # the real start, if it is known
    seen: int  # the job was still waiting at this time (when ``start`` is unknown)
    lo: int | None = None  # the range given then, if any
    hi: int | None = None
    job: str = ""  # which job: its forecasts err together, so jobs, not forecasts, are counted

    @property
    def wait(self) -> int:
        return max(0, self.predicted - self.made)

    def ratio(self) -> tuple[float, bool]:
        """``(ratio, observed)``; unobserved ratios are lower bounds (censored)."""
        return wait_ratio(self.made, self.predicted, self.start if self.start is not None else self.seen), \
            self.start is not None


def km_quantiles(samples: list[tuple[float, bool]], levels: list[float]) -> list[float]:
    """Kaplan–Meier quantiles of right-censored samples: for each level, the smallest value
    whose estimated distribution reaches it (inf where the data cannot say).  O(n log n).

    >>> km_quantiles([(1, True), (2, True), (3, True), (4, True)], [0.25, 0.5, 1.0])
    [1, 2, 4]
    >>> km_quantiles([(1, True), (2, False), (3, True), (4, False)], [0.5, 0.9])
    [3, inf]
    """
    observed = sorted(v for v, seen in samples if seen)
    censored = sorted(v for v, seen in samples if not seen)
    return km_sorted(observed, censored, levels, functools.partial(bisect.bisect_right, observed))


def km_sorted(observed: Sequence[float], censored: Sequence[float], levels: list[float],
              cut: Callable[[float], int]) -> list[float]:
    """``km_quantiles`` of samples given as their observed values and their censored ones,
    each sorted; ``cut(c)`` is how many observed values are at most ``c`` (a sorted list's
    bisect). Between two censored values the estimated survival falls by one at-risk share
    per observed value, so a level is found by arithmetic and one lookup, not by a pass over
    the values: O((censored + levels) · log n) with a ``SortedList`` (a backtest's phase 2
    keeps its scored forecasts so, ``ScoredWindow``).

    >>> km_sorted([1, 3], [2, 4], [0.5, 0.9], lambda c: bisect.bisect_right([1, 3], c))
    [3, inf]
    """
    result = [math.inf] * len(levels)
    wanted = sorted(range(len(levels)), key=lambda k: levels[k])
    at_risk, surviving = len(observed) + len(censored), 1.0
    pos = i = w = 0
    while w < len(wanted) and at_risk > 0:
        if i < len(censored):  # the observed values up to the next censored one (ties: observed first)
            value, j = censored[i], i
            while j < len(censored) and censored[j] == value:
                j += 1
            end = cut(value)
        else:
            j, end = i, len(observed)
        events = end - pos

        def reached(k: int) -> bool:  # the level's share reached after the k-th of these events
            return 1 - surviving * (at_risk - k) / at_risk >= levels[wanted[w]] - 1e-12

        while w < len(wanted) and events and reached(events):
            k = max(1, math.ceil(at_risk - (1 - levels[wanted[w]] + 1e-12) * at_risk / surviving))
            while k > 1 and reached(k - 1):
                k -= 1
            while k <= events and not reached(k):
                k += 1
            if k > events:
                break
            result[wanted[w]] = observed[pos + k - 1]
            w += 1
        surviving *= (at_risk - events) / at_risk
        at_risk -= events + j - i
        pos, i = end, j
        if i >= len(censored) and pos >= len(observed):
            break
    return result


def beyond_censored(q: list[float], top: float) -> tuple[list[float], int]:
    """Quantiles ``q`` with the levels the censored ratios hide (inf: more jobs still wait
    than the level leaves) read as ``top``, the largest ratio seen, started or still waiting
    (so no smaller than any quantile the data give), and how many levels that filled. Each
    such quantile is at least ``top``: a range that reaches it says the start is at least as
    late as the longest wait seen so far, where a band that stopped below the hidden levels
    gave many forecasts no range at all (the Slurm lab with fair share as Slurm's default
    decays it, ``lab-fairshare3``: 1,156 of 3,864 forecasts; their ranges, so made, held
    92.7 %).  O(levels).

    >>> beyond_censored([1.0, 2.0, math.inf, math.inf], 5.0), beyond_censored([1.0, 2.0], 5.0)
    (([1.0, 2.0, 5.0, 5.0], 2), ([1.0, 2.0], 0))
    """
    hidden = sum(1 for v in q if math.isinf(v))
    if not hidden:
        return q, 0
    return [top if math.isinf(v) else v for v in q], hidden


def conformal_level(coverage: float, independent: int) -> float:
    """The share of past errors a range must hold so that a new forecast falls inside with
    probability ``coverage``: split conformal prediction's ⌈(n+1)·coverage⌉ / n. A job's
    forecasts (one an hour while it waits) err together, so ``n`` counts jobs, not forecasts.
    (Counting days, as jufo did, held 98.9 % for an 80 % range after a lab's hour and was no
    nearer 80 % on KTH and HPC2N: 81.9 / 77.8 % against 79.8 / 76.4 % counting jobs.)

    >>> round(conformal_level(0.8, 13), 3), round(conformal_level(0.8, 90), 3), conformal_level(0.8, 2)
    (0.923, 0.811, 1.0)
    """
    if independent <= 0:
        return 1.0
    return min(1.0, math.ceil(round((independent + 1) * coverage, 9)) / independent)


KEEP_LONGEST = 3600  # a waiting job's forecast is kept for scoring at least once an hour
KEEP_SHORTEST = 60  # and at most once a minute
KEEP_SHARE = 4  # else every quarter of how long the job has waited


def keep_every(waited: float | None) -> int:
    """Seconds between the forecasts of a waiting job that the history keeps for scoring: a
    quarter of how long the job has waited so far, between a minute and an hour (an hour where
    its submit is unknown). Ranges learn from how kept forecasts fared; kept once an hour, a
    job that waits minutes has only its first forecast (at its submit) ever scored, and ranges
    given later in such waits are cut from how first forecasts fared (the mixed Slurm lab,
    whose time runs 75 times faster: 73.4 % held for an 80 % promise). Spaced by the job's own
    wait, a job waiting a day has about 20 forecasts more kept than hourly, not one a minute.

    >>> keep_every(None), keep_every(20_000), keep_every(390), keep_every(100)
    (3600, 3600, 97, 60)
    """
    if waited is None:
        return KEEP_LONGEST
    return int(min(KEEP_LONGEST, max(KEEP_SHORTEST, waited / KEEP_SHARE)))


RECENT_JOBS = 100  # the latest jobs with a settled range that the level looks back on
MIN_RECENT = 30  # fewer settled jobs say nothing: the level stays the stated coverage
MAX_LEVEL = 0.99  # a level of 1 would need the largest ratio ever seen, often still unknown (censored)


def held(lo: int | None, hi: int | None, start: int | None, seen: int) -> bool | None:
    """Did the range ``lo``..``hi`` hold its job's start? Settled once the job started (inside
    or not) or still waited at ``seen`` past ``hi`` (missed); None before, and without a range.

    >>> held(30, 120, 90, 0), held(30, 120, None, 200), held(30, 120, None, 100), held(None, None, 10, 0)
    (True, False, None, None)
    """
    if lo is None or hi is None:
        return None
    if start is not None:
        return lo <= start <= hi
    return False if seen > hi else None


def settled(scored: Iterable[Scored]) -> Iterator[tuple[str, bool]]:
    """``(job, held)`` of the past forecasts whose range is settled, in the order given.

    >>> list(settled([Scored(0, 60, 90, 0, 30, 120, "a"), Scored(0, 60, None, 200, 30, 120, "b"),
    ...               Scored(0, 60, None, 100, 30, 120, "c"), Scored(0, 60, 10, 0, job="d")]))
    [('a', True), ('b', False)]
    """
    yield from samples_of(_fields(scored))[1]


def _fields(scored: Iterable[Scored]) -> Iterator[tuple]:
    """Each forecast's fields in order, as ``samples_of`` takes them."""
    return ((s.made, s.predicted, s.start, s.seen, s.lo, s.hi, s.job) for s in scored)


def samples_of(forecasts: Iterable[tuple[int, int, int | None, int, int | None, int | None, str]]
               ) -> tuple[list[tuple[int, tuple[float, bool], str]], list[tuple[str, bool]]]:
    """What a calibration is cut from (``Calibration.of_samples``), in one pass over past
    forecasts given as ``Scored``'s fields in order, newest first: each one's horizon bucket,
    ``(ratio, observed)`` and job, and ``settled``'s ``(job, held)``. A history hands its rows
    here without a ``Scored`` for each (``History.scored_samples``).  O(n).

    >>> samples_of([(0, 600, 1800, 0, 500, 2000, "a"), (0, 0, None, 50, None, None, "")])
    ([(1, (2.0, True), 'a'), (0, (1.0833333333333333, False), '0')], [('a', True)])
    """
    samples, outcomes = [], []
    add, settle = samples.append, outcomes.append
    for made, predicted, start, seen, lo, hi, job in forecasts:
        job = job or str(made)
        add((bucket(max(0, predicted - made)),
             (wait_ratio(made, predicted, start if start is not None else seen), start is not None), job))
        if lo is not None and hi is not None:
            found = held(lo, hi, start, seen)
            if found is not None:
                settle((job, found))
    return samples, outcomes


def recent_share(outcomes: Iterable[tuple[str, bool]], jobs: int = RECENT_JOBS) -> tuple[float, int] | None:
    """``(share held, jobs)``: how often the latest ranges held the real start, over the first
    ``jobs`` jobs of ``outcomes`` (newest first), each job's forecasts averaged (they err
    together); None with fewer than ``MIN_RECENT`` jobs.  O(outcomes read).

    >>> recent_share([(str(k), k % 4 != 0) for k in range(200)])
    (0.75, 100)
    >>> recent_share([("a", True), ("a", False)]) is None
    True
    """
    per: dict[str, list[int]] = {}
    for job, held in outcomes:
        if job not in per:
            if len(per) >= jobs:
                break
            per[job] = [0, 0]
        per[job][0] += held
        per[job][1] += 1
    if len(per) < MIN_RECENT:
        return None
    return sum(h / n for h, n in per.values()) / len(per), len(per)


def adapted_level(coverage: float, outcomes: Iterable[tuple[str, bool]]) -> tuple[float, float | None]:
    """``(level, share held lately)``: the share of past errors a range is cut to hold, raised
    by what the latest ranges fell short of ``coverage`` (adaptive conformal inference, Gibbs
    and Candès 2021, in proportional form). Never lowered: ranges settle when their job starts,
    so the latest settled ones are mostly of jobs that started soon, which ranges hold more
    often; lowering on them narrowed KTH's ranges below their promise (80.2 -> 76.5 %).

    >>> adapted_level(0.8, [(str(k), k % 10 < 7) for k in range(100)])
    (0.9, 0.7)
    >>> adapted_level(0.8, [(str(k), k % 10 < 5) for k in range(100)])
    (0.99, 0.5)
    >>> adapted_level(0.8, [(str(k), k % 10 < 9) for k in range(100)])
    (0.8, 0.9)
    """
    found = recent_share(outcomes)
    if found is None:
        return coverage, None
    return min(MAX_LEVEL, max(coverage, round(2 * coverage - found[0], 9))), found[0]


def lasting_bias(samples: list[tuple[float, bool]]) -> float:
    """The median ratio of a bucket's forecasts (newest first) as far as its newer and its
    older half agree: the one nearer 1 where both lie on the same side of it, else 1 (also
    under ``MIN_SCORED`` forecasts, or a median the censored ratios hide). A bias that lasted
    the whole window is the simulation's; one only the older forecasts show was a passing
    queue (on the mixed Slurm lab, forecasts in its first half hour started 100 s late, and
    correcting the next hour's by them cost 6 s of median error).  O(n log n).

    >>> lasting_bias([(3.0, True)] * 20 + [(2.0, True)] * 20), lasting_bias([(3.0, True)] * 20 + [(0.5, True)] * 20)
    (2.0, 1.0)
    """
    if len(samples) < MIN_SCORED:
        return 1.0
    half = len(samples) // 2
    return agreed_bias(km_quantiles(samples[:half], [0.5])[0], km_quantiles(samples[half:], [0.5])[0])


def agreed_bias(newer: float, older: float) -> float:
    """``lasting_bias`` from the newer and the older half's median ratio.

    >>> agreed_bias(3.0, 2.0), agreed_bias(0.5, 0.8), agreed_bias(3.0, 0.5), agreed_bias(math.inf, 2.0)
    (2.0, 0.8, 1.0, 1.0)
    """
    if math.isinf(newer) or math.isinf(older) or (newer - 1) * (older - 1) <= 0:
        return 1.0
    return min(newer, older) if newer > 1 else max(newer, older)


@dataclass(frozen=True)
class Band:
    """Calibration of one horizon bucket: ratio bounds and what they rest on."""

    low: float
    high: float
    median: float
    scored: int  # forecasts it rests on
    resolved: int  # of which the real start is known
    label: str
    bias: float = 1.0  # the median ratio both halves of the bucket's own forecasts agree on (``lasting_bias``)


class Calibration:
    """Ratio intervals per horizon bucket from scored forecasts.

    >>> day = 86400  # "starts now" forecasts of 40 jobs; they started 0, 100, ... 3900 s later
    >>> past = [Scored(d * day, d * day, d * day + d * 100, d * day, job=str(d)) for d in range(40)]
    >>> Calibration(past, 0.8).range(100 * day, 100 * day)  # best, lo, hi, horizon
    (8640349, 8640000, 8643300, 'now')
    """

    def __init__(self, scored: Iterable[Scored], coverage: float) -> None:
        """From past forecasts, newest first (as ``History.scored`` gives them)."""
        samples, outcomes = samples_of(_fields(scored))
        self._group(samples, coverage, outcomes)

    @classmethod
    def of_samples(cls, samples: Iterable[tuple[int, tuple[float, bool], str]], coverage: float,
                   outcomes: Iterable[tuple[str, bool]] = ()) -> Calibration:
        """A calibration from ``(horizon bucket, (ratio, observed), job)`` samples, as
        ``Scored`` gives them, and the settled ranges' ``(job, held)``, newest first: for a
        caller that keeps buckets and ratios between calibrations (a backtest's phase 2)."""
        self = cls.__new__(cls)
        self._group(samples, coverage, outcomes)
        return self

    def _group(self, samples: Iterable[tuple[int, tuple[float, bool], str]], coverage: float,
               outcomes: Iterable[tuple[str, bool]]) -> None:
        groups: dict[int, list[tuple[float, bool]]] = {}
        jobs: dict[int, set[str]] = {}
        for b, sample, job in samples:
            groups.setdefault(b, []).append(sample)
            jobs.setdefault(b, set()).add(job)
        self.groups = groups
        self.jobs = jobs
        self._promise(coverage, outcomes, sum(len(g) for g in groups.values()))

    def _promise(self, coverage: float, outcomes: Iterable[tuple[str, bool]], total: int) -> None:
        """What every band shares: the share promised, the share cut to, the forecasts."""
        self.coverage = coverage  # the share promised
        self.level, self.held_lately = adapted_level(coverage, outcomes)  # the share the ratio intervals are cut to
        self.total = total
        self._bands: dict[int, Band | None] = {}

    def band(self, b: int) -> Band | None:
        """The ratio interval for bucket ``b`` (None without enough scored forecasts)."""
        if b not in self._bands:
            self._bands[b] = self._make_band(b)
        return self._bands[b]

    def _make_band(self, b: int) -> Band | None:
        pooled = self._pool(b)
        if pooled is None:
            return None
        q, scored, resolved, jobs, bias, reach, top = pooled
        q, hidden = beyond_censored(q, top)
        span = math.ceil(round(conformal_level(self.coverage, jobs) * _GRID, 6))
        first = min(range(_GRID - span + 1), key=lambda k: (q[k + span] - q[k], k))  # the shortest interval
        # a raised level widens that interval, never moves it: the wider range holds every start
        # the plain one held (the shortest interval at the higher level may lie elsewhere)
        wide = math.ceil(round(conformal_level(self.level, jobs) * _GRID, 6))
        k = min(range(max(0, first + span - wide), min(first, _GRID - wide) + 1), key=lambda k: (q[k + wide] - q[k], k))
        label = bucket_label(b) if reach == 0 else f"{bucket_label(b)} (with neighbouring horizons)"
        if k + wide > _GRID - hidden:
            label = f"{label}, reaching the longest wait seen so far"
        return Band(q[k], q[k + wide], q[_GRID // 2], scored, resolved, label, bias)

    def _pool(self, b: int) -> tuple[list[float], int, int, int, float, int, float] | None:
        """What bucket ``b``'s band is cut from: the ratio's smallest value and Kaplan–Meier
        quantiles at levels k / 100 (inf where the censored ratios hide them), the forecasts,
        how many started, the jobs, the lasting bias, how far it borrowed from neighbouring
        buckets and the largest ratio seen (None: too few forecasts)."""
        samples = self._samples(b)
        jobs = self._jobs_of(b)
        reach = 0
        while len(samples) < MIN_SCORED and reach < len(HORIZONS):
            reach += 1
            for near in (b - reach, b + reach):
                samples.extend(self._samples(near))
                jobs |= self._jobs_of(near)
        if len(samples) < MIN_SCORED:
            return None
        q = km_quantiles(samples, _LEVELS)
        q.insert(0, min(v for v, _ in samples))
        return (q, len(samples), sum(1 for _, seen in samples if seen), len(jobs),
                lasting_bias(samples) if reach == 0 else 1.0, reach, max(v for v, _ in samples))

    def _samples(self, b: int) -> list[tuple[float, bool]]:
        """Bucket ``b``'s ``(ratio, observed)``, newest first (a new list)."""
        return list(self.groups.get(b, []))

    def _jobs_of(self, b: int) -> set[str]:
        """The jobs of bucket ``b``'s forecasts (a new set)."""
        return set(self.jobs.get(b, ()))

    def range(self, now: int, predicted: int, upper: int | None = None,
              step: int = 0, lower: int | None = None) -> tuple[int, int, int, str] | None:
        """``(best, lo, hi, bucket label)`` for a forecast made at ``now`` of a start at
        ``predicted`` (epoch seconds), None when the history cannot calibrate this horizon.
        The best estimate moves the simulated wait halfway (``SHRINK``, in log ratio) toward
        where real starts at this horizon fell for the whole window (``Band.bias``): on the
        traces the simulation starts jobs too early for months (KTH's history forecast was
        9,540 s early in the median), and the bias read off a few weeks overshoots (daily
        backtests, the median absolute error over the walltime forecast's: KTH 0.684x
        uncorrected, 0.599x halfway, 0.608x all the way; HPC2N 0.658x, 0.609x, 0.644x).
        The range is widened to hold the best estimate where it lies outside.
        (Moving the forecast to the nearest end of the range instead tripled the what-if
        answer's error on an HPC2N week: 20,024 s against 6,916 s.) ``upper``, if given, is where the range
        should reach at least (``reach_toward``); the label then says so; ``lower`` likewise
        where it should reach down to (``reach_toward_now``). ``step``, the batch
        system's planning grid (Slurm's ``bf_resolution``), is the finest a start can be
        known: the range reaches at least half a step either side of the best estimate (not
        before ``now``), and the label says so where that widened it.

        >>> day = 86400
        >>> past = [Scored(d * day, d * day, d * day + d * 100, d * day, job=str(d)) for d in range(40)]
        >>> Calibration(past, 0.8).range(100 * day, 100 * day, upper=100 * day + 5000)
        (8640349, 8640000, 8645000, 'now, reaching toward the walltime forecast')
        >>> sharp = [Scored(d * day, d * day + 900, d * day + 900 + d % 5, d * day, job=str(d)) for d in range(40)]
        >>> Calibration(sharp, 0.8).range(100 * day, 100 * day + 900)
        (8640901, 8640900, 8640904, '15 min-1 h')
        >>> Calibration(sharp, 0.8).range(100 * day, 100 * day + 900, step=60)[1:]
        (8640871, 8640931, "15 min-1 h, at least half the planning grid's 60 s step either side")
        >>> Calibration(sharp, 0.8).range(100 * day, 100 * day + 900, lower=100 * day + 675)[1:]
        (8640675, 8640904, '15 min-1 h, reaching toward now')
        """
        wait = max(0, predicted - now)
        band = self.band(bucket(wait))
        if band is None:
            return None

        def at(ratio: float) -> int:
            return now + max(0, round(ratio * (wait + C) - C))

        best = at(band.bias ** SHRINK)
        lo, hi = at(band.low), at(band.high)
        label = band.label
        if upper is not None and upper > max(hi, best):
            hi, label = upper, f"{label}, reaching toward the walltime forecast"
        if lower is not None and lower < min(lo, best):
            lo, label = lower, f"{label}, reaching toward now"
        lo, hi = min(lo, best), max(hi, best)
        # Slurm plans starts on its grid, and a job held to a step by the plan may start at
        # the end before it: on the Slurm labs, ranges narrower than a step missed early
        half = step // 2
        if half and (lo > max(now, best - half) or hi < best + half):
            lo, hi = min(lo, max(now, best - half)), max(hi, best + half)
            label = f"{label}, at least half the planning grid's {step} s step either side"
        return best, lo, hi, label


class _Entry:
    """One forecast in a ``ScoredWindow``."""

    __slots__ = ("seq", "made", "predicted", "start", "job", "bucket", "index", "ratio", "started", "gone")

    def __init__(self, seq: int, made: int, predicted: int, start: int, job: str) -> None:
        self.seq, self.made, self.predicted, self.start, self.job = seq, made, predicted, start, job
        self.bucket = bucket(max(0, predicted - made))
        self.index = 0  # its place among its bucket's forecasts, oldest first (set as it joins them)
        self.ratio = wait_ratio(made, predicted, start)  # once started
        self.started = False
        self.gone = False  # left the window: not scored when its job starts


class _Half:
    """The newer or the older half of a bucket's forecasts: the started ones' ratios sorted,
    the waiting ones by sequence number."""

    def __init__(self) -> None:
        self.observed: SortedList = SortedList()
        self.waiting: dict[int, _Entry] = {}

    def put(self, e: _Entry) -> None:
        if e.started:
            self.observed.add(e.ratio)
        else:
            self.waiting[e.seq] = e

    def take(self, e: _Entry) -> None:
        if e.started:
            self.observed.remove(e.ratio)
        else:
            del self.waiting[e.seq]

    def censored(self, now: int) -> list[float]:
        """The waiting forecasts' ratios at ``now`` (lower bounds), sorted."""
        return sorted(wait_ratio(e.made, e.predicted, now) for e in self.waiting.values())

    def median(self, censored: list[float]) -> float:
        """The Kaplan–Meier median ratio of this half, with its ``censored`` ratios.
        O(censored · log n)."""
        return km_sorted(self.observed, censored, [0.5], self.observed.bisect_right)[0]


class _Bucket:
    """A horizon bucket's forecasts in a ``ScoredWindow``, oldest first, split into the older
    half (``items[head:split]``, one more where odd) and the newer, as ``lasting_bias`` halves them."""

    def __init__(self) -> None:
        self.items: list[_Entry | None] = []
        self.head = self.split = 0
        self.older, self.newer = _Half(), _Half()
        self.observed: SortedList = SortedList()  # every started forecast's ratio
        self.jobs: Counter[str] = Counter()

    def __len__(self) -> int:
        return len(self.items) - self.head

    def add(self, e: _Entry) -> None:
        e.index = len(self.items)
        self.items.append(e)
        self.newer.put(e)
        self.jobs[e.job] += 1
        self._balance()

    def drop(self, e: _Entry) -> None:
        """Drop the oldest forecast, ``e``."""
        self.older.take(e)
        if e.started:
            self.observed.remove(e.ratio)
        self.jobs[e.job] -= 1
        if not self.jobs[e.job]:
            del self.jobs[e.job]
        self.items[self.head] = None
        self.head += 1
        self._balance()

    def settle(self, e: _Entry) -> None:
        """``e``'s job started: its ratio is known."""
        half = self.older if e.index < self.split else self.newer
        half.take(e)
        e.started = True
        half.put(e)
        self.observed.add(e.ratio)

    def _balance(self) -> None:
        n = len(self)
        while self.split < self.head + n - n // 2:  # only ever forward: forecasts come in new, go out old
            e = self.items[self.split]
            assert e is not None
            self.newer.take(e)
            self.older.put(e)
            self.split += 1


class ScoredWindow:
    """The scored forecasts of the last ``keep`` seconds (at most ``limit``, the newest), kept
    per horizon bucket between calibrations, for a caller that calibrates again and again as
    time moves on (a backtest's phase 2, once a day of a trace's years). Each forecast is sorted
    in once, moved once when its job starts and dropped once, so a calibration costs the
    waiting forecasts' ratios (they grow with time) and a few lookups per quantile, not a pass
    over the window (HPC2N's daily phase 2: 24.2 s before, 4.5 s so). ``calibration`` gives what
    ``Calibration.of_samples`` gives from the same forecasts.

    >>> w = ScoredWindow(keep=365 * 86400)
    >>> for d in range(40):  # "starts now" forecasts of 40 jobs that started d * 100 s later
    ...     w.add(d * 86400, d * 86400, d * 86400 + d * 100, str(d))
    >>> w.advance(100 * 86400)
    >>> w.calibration(100 * 86400, 0.8).range(100 * 86400, 100 * 86400)
    (8640349, 8640000, 8643300, 'now')
    """

    def __init__(self, keep: int, limit: int | None = None) -> None:
        self.keep, self.limit = keep, limit
        self.buckets: dict[int, _Bucket] = {}
        self.order: deque[_Entry] = deque()  # every forecast kept, oldest first
        self.pending: list[tuple[int, int, _Entry]] = []  # heap of (start, seq, forecast) not yet started
        self.seq = 0

    def __len__(self) -> int:
        return len(self.order)

    def add(self, made: int, predicted: int, start: int, job: str) -> None:
        """A forecast made at ``made`` of a start at ``predicted``; its job really started at
        ``start`` (only read once time has passed it).  O(log n)."""
        e = _Entry(self.seq, made, predicted, start, job)
        self.seq += 1
        b = self.buckets.get(e.bucket)
        if b is None:
            b = self.buckets[e.bucket] = _Bucket()
        b.add(e)
        self.order.append(e)
        heapq.heappush(self.pending, (start, e.seq, e))

    def advance(self, now: int) -> None:
        """Move to ``now``: forecasts older than ``keep`` (or past ``limit``) leave, those whose
        job started before ``now`` are scored.  O(log n) per forecast moved."""
        while self.order and (self.order[0].made < now - self.keep
                              or (self.limit is not None and len(self.order) > self.limit)):
            e = self.order.popleft()
            self.buckets[e.bucket].drop(e)
            e.gone = True
        while self.pending and self.pending[0][0] < now:
            e = heapq.heappop(self.pending)[2]
            if not e.gone:
                self.buckets[e.bucket].settle(e)

    def calibration(self, now: int, coverage: float, outcomes: Iterable[tuple[str, bool]] = ()) -> Calibration:
        """The calibration at ``now`` (after ``advance(now)``) from the forecasts kept, with the
        settled ranges' ``(job, held)``, newest first, as ``Calibration.of_samples`` takes them."""
        return _WindowCalibration(self, now, coverage, outcomes)


class _WindowCalibration(Calibration):
    """A ``Calibration`` that reads its buckets from a ``ScoredWindow`` at ``now``."""

    def __init__(self, window: ScoredWindow, now: int, coverage: float, outcomes: Iterable[tuple[str, bool]]) -> None:
        self.window, self.now = window, now
        self.groups, self.jobs = {}, {}  # not kept: read from the window bucket by bucket
        self._promise(coverage, outcomes, len(window))

    def _pool(self, b: int) -> tuple[list[float], int, int, int, float, int, float] | None:
        found = self.window.buckets.get(b)
        if found is None or len(found) < MIN_SCORED:
            return super()._pool(b)  # a thin bucket borrows from its neighbours: read as lists
        newer, older = found.newer.censored(self.now), found.older.censored(self.now)
        censored = sorted(newer + older)  # two sorted runs: merged in one pass
        q = km_sorted(found.observed, censored, _LEVELS, found.observed.bisect_right)
        q.insert(0, min(found.observed[0] if found.observed else math.inf, censored[0] if censored else math.inf))
        bias = agreed_bias(found.newer.median(newer), found.older.median(older))
        top = max(found.observed[-1] if found.observed else 0.0, censored[-1] if censored else 0.0)
        return q, len(found), len(found.observed), len(found.jobs), bias, 0, top

    def _samples(self, b: int) -> list[tuple[float, bool]]:
        found = self.window.buckets.get(b)
        if found is None:
            return []
        return [(e.ratio, True) if e.started else (wait_ratio(e.made, e.predicted, self.now), False)
                for e in reversed(found.items[found.head:]) if e is not None]

    def _jobs_of(self, b: int) -> set[str]:
        found = self.window.buckets.get(b)
        return set(found.jobs) if found is not None else set()


def reach_toward(predicted: int, wall: int | None, reach: float) -> int | None:
    """Where a range should reach at least: ``reach`` of the way from the forecast with
    learned run times (``predicted``) to the walltime-only forecast (``wall``), as if the jobs
    ahead ran as far beyond their predictions toward their walls as most recent jobs did
    (``runtime.reach``). Past ranges cannot tell this when the queue changes faster than
    forecasts are scored: on the Slurm labs, forecasts behind a maintenance fell late
    together, while the ranges were cut from quick starters' forecasts. None without a
    walltime forecast or a reach.

    >>> reach_toward(1000, 3000, 0.5), reach_toward(1000, 800, 0.5), reach_toward(1000, None, 0.5)
    (2000, None, None)
    """
    if wall is None or reach <= 0 or wall <= predicted:
        return None
    return predicted + round(reach * (wall - predicted))


def reach_toward_now(now: int, predicted: int, share: float) -> int | None:
    """Where a range should reach down to at least: ``share`` of the way from the forecast with
    learned run times (``predicted``) back to ``now``, as if the jobs ahead ended as far short
    of their predictions as recent jobs did in the mean (``runtime.early_share``). The
    counterpart of ``reach_toward``: the ratios the ranges are cut from are of forecasts
    already scored, and where jobs start sooner than those did (on the KTH Slurm labs, behind a
    chain of wide jobs that ended early), the ranges missed early. A forecast of "starts now"
    reaches now itself, which the lasting bias may have moved the range past (KTH daily: jobs the
    simulation starts at once are moved hours later, and those that did start at once missed).
    None without a share.

    >>> reach_toward_now(1000, 1400, 0.25), reach_toward_now(1000, 1400, 0.0), reach_toward_now(1000, 1000, 0.5)
    (1300, None, 1000)
    """
    if share <= 0:
        return None
    return now + round((1 - share) * max(0, predicted - now))
