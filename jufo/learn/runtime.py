"""Run-time prediction from finished jobs: users ask for far more time than their jobs use.

After Tsafrir, Etsion and Feitelson ("Backfilling using system-generated predictions rather
than user runtime estimates", 2007): a job's run time is the mean of the last two run times
of the same user — here first of the user's jobs with the *same request* (queue, wall and
size: repeated runs of one script), which on the KTH and HPC2N traces halves the error of the
user-only rule. Fallbacks: the user's last two in that queue, the user's last two, then for
users without history the queue's and the size class's median share of the wall used. Every
prediction is capped at the wall; with no history at all it is the wall. A running job that
outlives its prediction is raised: to where the recent jobs that overran as far went on to end,
the median of their ``overrun`` (how far toward the wall), if there are ``RAISE_JOBS`` of them;
else doubled until it lies ahead (Tsafrir's correction); again capped at the wall. The model
name says which rule decided.
"""

from __future__ import annotations

import bisect
import math
import statistics
from collections import defaultdict, deque
from collections.abc import Callable, Iterable, Sequence

from ..io.accounting import JobRecord

RAISE_MIN = 60  # a prediction raised by doubling lies at least this far beyond the elapsed time
RAISE_JOBS = 5  # recent jobs that overran as far as a running job: fewer, and its prediction is doubled
REACH_JOBS = 100  # the latest finished jobs whose overruns give the reach
MIN_REACH_JOBS = 30  # fewer say nothing: a range reaches all the way up, and not down toward now


def size_class(cores: int) -> int:
    """Powers of two: 1, 2-3, 4-7, ...

    >>> [size_class(c) for c in (1, 2, 3, 4, 100)]
    [0, 1, 1, 2, 6]
    """
    return max(cores, 1).bit_length() - 1


class RuntimeRules:
    """The prediction rules over what some store of finished jobs answers: the last run
    times per request key, the last shares of the wall per queue and size class."""

    RUNS = 2  # run times averaged per key (Tsafrir's last two)
    SHARES = 20  # shares of the wall whose median a queue or size class gives
    overran: Sequence[float] = ()  # the latest finished jobs' overruns, sorted (``learned_overruns``)
    shortfalls: Sequence[float] = ()  # the same jobs' shortfalls (``shortfall``), in the order they ended

    def learned_overruns(self, overruns: Iterable[float | None], shortfalls: Iterable[float] = ()) -> None:
        """Keep the latest finished jobs' overruns (``overrun``; None left out), which raise
        the predictions of running jobs that outlived theirs, and their shortfalls, which
        tell how far a range reaches toward now (``early_share``).  O(n log n)."""
        self.overran = sorted(o for o in overruns if o is not None)
        self.shortfalls = list(shortfalls)

    def raised(self, predicted: int, elapsed: int, wall: int) -> int:
        """The run time of a job still running at ``elapsed`` seconds, past its ``predicted``
        one (``predicted < wall``): the median of the overruns beyond its own among the kept
        ones, if at least ``RAISE_JOBS``; else doubled until ``RAISE_MIN`` ahead. Never
        beyond the wall.  O(log n).

        >>> r = RuntimeRules()
        >>> r.raised(100, 250, 1000)  # no overruns kept: doubled to 400
        400
        >>> r.learned_overruns([-0.2, None, 0.1, 0.5, 0.6, 0.9, 1.0, 1.0])
        >>> r.raised(100, 250, 1000)  # beyond 1/6: 0.5, 0.6, 0.9, 1.0, 1.0; median 0.9
        910
        >>> r.raised(100, 700, 1000)  # beyond 2/3: only three, so doubled until 60 s ahead
        800
        """
        beyond_at = bisect.bisect_right(self.overran, (elapsed - predicted) / (wall - predicted))
        beyond = len(self.overran) - beyond_at
        if beyond >= RAISE_JOBS:
            share = self.overran[beyond_at + beyond // 2]
            return min(wall, max(predicted + round(share * (wall - predicted)), elapsed + 1))
        seconds = predicted
        while seconds < elapsed + RAISE_MIN:
            seconds *= 2
        return min(seconds, wall)

    def _runs(self, key: tuple) -> list[int] | deque:
        """The last ``RUNS`` run times of ``key`` (a request, user+queue or user key)."""
        raise NotImplementedError

    def _shares(self, key: tuple) -> list[float] | deque:
        """The last ``SHARES`` shares of the wall used under ``key`` (queue or size class)."""
        raise NotImplementedError

    def predict(self, user: str, queue: str, wall: int, cores: int, elapsed: int | None = None) -> tuple[int, str]:
        """``(seconds, model)`` for a job asking ``wall`` seconds on ``cores`` cores; for a
        running job, ``elapsed`` seconds after its start.  O(1)."""
        seconds, model = wall, "wall"
        for key in (("same request", user, queue, wall, cores), ("user+queue", user, queue), ("user", user)):
            runs = self._runs(key)
            if runs:
                seconds, model = round(sum(runs) / len(runs)), key[0]
                break
        else:
            for key in (("queue", queue), ("size class", size_class(cores))):
                shares = self._shares(key)
                if shares and len(shares) >= 3:
                    seconds, model = round(wall * statistics.median(shares)), key[0]
                    break
        seconds = max(1, min(seconds, wall)) if wall > 0 else 0
        if elapsed is not None and seconds <= elapsed and seconds < wall:
            seconds, model = self.raised(seconds, elapsed, wall), f"{model}, raised"
        return seconds, model


def in_end_order(records: Iterable[JobRecord]) -> list[JobRecord]:
    """The finished jobs of ``records`` in the order they ended (ties by id): the order a
    predictor learns them in.  O(n log n).

    >>> [r.id for r in in_end_order([JobRecord("b", start=0, end=5), JobRecord("c", start=0),
    ...                              JobRecord("a", start=1, end=5), JobRecord("d", start=0, end=2)])]
    ['d', 'a', 'b']
    """
    return sorted((r for r in records if r.end is not None and r.start is not None), key=lambda r: (r.end, r.id))


def overrun(predicted: int, run: int, wall: int) -> float | None:
    """Where a run time fell between its prediction and its wall: 0 at the prediction, 1 at
    the wall, negative when shorter than predicted; None where the prediction was the wall.

    >>> overrun(100, 400, 1000), overrun(100, 50, 1000), overrun(1000, 900, 1000)
    (0.3333333333333333, -0.05555555555555555, None)
    """
    return None if wall <= predicted else (run - predicted) / (wall - predicted)


def shortfall(predicted: int, run: int) -> float:
    """How far short of its prediction a run time ended, as a share of the prediction: 0 at
    or beyond it, 1 for a job that ended at once (or a prediction of nothing).

    >>> shortfall(400, 100), shortfall(400, 500), shortfall(0, 10)
    (0.75, 0.0, 0.0)
    """
    return max(0.0, (predicted - run) / predicted) if predicted > 0 else 0.0


def early_share(shortfalls: Sequence[float]) -> float:
    """How far a range's lower end reaches toward now (``calibration.reach_toward_now``): the
    mean share by which the latest jobs ended short of their predictions (``shortfall``),
    those that did not counted as 0. The mean, not a high quantile as ``reach`` takes for
    overruns: a start waits on the sum of the run times ahead of it, whose shortfalls
    average out, and the quantile of single jobs' (0.5–0.57 at 80 % on the KTH labs) made the
    ranges hold 85–91 %. 0 (no reach) from fewer than ``MIN_REACH_JOBS`` jobs.  O(n).

    >>> early_share([0.5, 0.0] * 20), early_share([0.5] * 10)
    (0.25, 0.0)
    """
    if len(shortfalls) < MIN_REACH_JOBS:
        return 0.0
    return min(1.0, sum(shortfalls) / len(shortfalls))


def reach(overruns: Iterable[float | None], level: float) -> float:
    """How far toward their walls the latest jobs ran beyond their predictions: the ``level``
    quantile of their overruns (``overrun``), between 0 and 1; 1 (all the way: not known yet)
    from fewer than ``MIN_REACH_JOBS`` jobs with an overrun, as in a history's first minutes,
    where a range cut from a few quick starters would promise what nothing has shown.
    O(n log n).

    >>> reach([k / 100 for k in range(100)], 0.8), reach([-1.0] * 50, 0.8), reach([0.5] * 10, 0.8)
    (0.79, 0.0, 1.0)
    """
    known = sorted(o for o in overruns if o is not None)
    if len(known) < MIN_REACH_JOBS:
        return 1.0
    return min(1.0, max(0.0, known[min(len(known) - 1, max(0, math.ceil(level * len(known)) - 1))]))


def reach_candidate(rec: JobRecord) -> bool:
    """A finished job whose overrun the reach may look at: a wall and a run time."""
    return bool(rec.wall) and rec.runtime is not None and rec.runtime >= 0


def run_keys(rec: JobRecord) -> tuple[tuple, tuple, tuple]:
    """The keys a finished job's run time is learned under, most specific first."""
    return (("same request", rec.user, rec.queue, rec.wall, rec.cores), ("user+queue", rec.user, rec.queue),
            ("user", rec.user))


def share_keys(rec: JobRecord) -> tuple[tuple, tuple]:
    """The keys a finished job's share of its wall is learned under."""
    return ("queue", rec.queue), ("size class", size_class(rec.cores))


class RuntimePredictor(RuntimeRules):
    """Predicts run times from finished jobs, fed in the order they ended.

    >>> p = RuntimePredictor()
    >>> for user, run in (("alice", 100), ("alice", 300), ("dave", 50)):
    ...     p.add(JobRecord("1", user, queue="batch", cores=4, wall=3600, start=0, end=run))
    >>> p.predict("alice", "batch", 3600, 4)
    (200, 'same request')
    >>> p.predict("alice", "batch", 7200, 8), p.predict("bob", "batch", 1000, 1)
    ((200, 'user+queue'), (28, 'queue'))
    >>> p.predict("alice", "batch", 3600, 4, elapsed=250)
    (400, 'same request, raised')
    >>> p.predict("carol", "other", 500, 1)
    (500, 'wall')
    """

    def __init__(self, records: Iterable[JobRecord] = ()) -> None:
        self._last: dict[tuple, deque] = defaultdict(lambda: deque(maxlen=self.RUNS))
        self._share: dict[tuple, deque] = defaultdict(lambda: deque(maxlen=self.SHARES))
        for rec in records:
            self.add(rec)

    def add(self, rec: JobRecord) -> None:
        """Learn from one finished job.  O(1)."""
        run = rec.runtime
        if run is None or run < 0:
            return
        for key in run_keys(rec):
            self._last[key].append(run)
        if rec.wall:
            share = min(run / rec.wall, 1.0)
            for key in share_keys(rec):
                self._share[key].append(share)

    @classmethod
    def learning(cls, finished: list[JobRecord], recent: int = REACH_JOBS) -> tuple[RuntimePredictor, list[float | None]]:
        """The predictor of ``finished`` (in the order they ended) and the overruns of the last
        ``recent`` of them with a wall (``reach_candidate``), each predicted from the jobs that
        ended before it: what the reach is read from (their shortfalls the predictor keeps,
        ``shortfalls``).  O(n)."""
        tail = len(finished)
        seen = 0
        while tail > 0 and seen < recent:
            tail -= 1
            seen += reach_candidate(finished[tail])
        predictor = cls(finished[:tail])
        overruns: list[float | None] = []
        shortfalls: list[float] = []
        for rec in finished[tail:]:
            if reach_candidate(rec):
                predicted, _ = predictor.predict(rec.user, rec.queue, rec.wall, rec.cores)
                overruns.append(overrun(predicted, rec.runtime, rec.wall))
                shortfalls.append(shortfall(predicted, rec.runtime))
            predictor.add(rec)
        predictor.learned_overruns(overruns, shortfalls)
        return predictor, overruns

    def _runs(self, key: tuple) -> deque | None:
        return self._last.get(key)

    def _shares(self, key: tuple) -> deque | None:
        return self._share.get(key)


def accuracy(records: Iterable[JobRecord], group: Callable[[JobRecord], str]) -> dict[str, dict[str, float]]:
    """How well the predictor did: every finished job predicted from the jobs that had ended
    by its submit, as it would have been then. Per ``group(record)``: jobs, median absolute
    error, bias (median of predicted − real: negative means too short), the share within
    10 % (+1 min), and the same median error for the wall.

    >>> recs = [JobRecord(str(i), "u", queue="q", wall=1000, submit=i * 100, start=i * 100, end=i * 100 + 50)
    ...         for i in range(4)]
    >>> a = accuracy(recs, lambda r: r.user)["u"]  # the first is predicted at its wall, the rest exactly
    >>> a["jobs"], a["median_abs_error"], a["wall_median_abs_error"]
    (4, 0.0, 950.0)
    """
    events: list[tuple[int, int, JobRecord]] = []
    for rec in records:
        if rec.runtime is None or rec.submit is None or rec.wall is None:
            continue
        events.append((rec.submit, 1, rec))
        events.append((rec.end, 0, rec))  # ends first: a job ended at a submit is known then
    events.sort(key=lambda e: (e[0], e[1], e[2].id))
    predictor = RuntimePredictor()
    errors: dict[str, list[tuple[int, int, int]]] = defaultdict(list)
    for _, kind, rec in events:
        if kind == 0:
            predictor.add(rec)
        else:
            predicted, _ = predictor.predict(rec.user, rec.queue, rec.wall, rec.cores)
            errors[group(rec)].append((predicted, rec.runtime, rec.wall))
    out = {}
    for key, rows in errors.items():
        out[key] = {
            "jobs": len(rows),
            "median_abs_error": statistics.median(abs(p - r) for p, r, _ in rows),
            "bias": statistics.median(p - r for p, r, _ in rows),
            "within_10pct": sum(abs(p - r) <= 0.1 * r + 60 for p, r, _ in rows) / len(rows),
            "wall_median_abs_error": statistics.median(abs(w - r) for _, r, w in rows),
        }
    return out
