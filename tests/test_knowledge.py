"""The learners as of any time (``jufo.learn.knowledge``) against learning from scratch: on
real traces, at random snapshot days, the same run-time predictions, start windows and user
caps as ``outlook.learn`` over a ``TraceSource`` — and a backtest that uses them neither
changes its figures nor peeks."""

from __future__ import annotations

import random

import pytest

from jufo.learn import behaviour
from jufo.learn.backtest import Settings, TraceSource, _load, snapshot_forecasts, snapshot_times
from jufo.engine.windows import WEEK
from jufo.learn.knowledge import CapIndex, RuntimeIndex, WindowIndex
from jufo.learn.cancellation import CancelIndex, CancelOdds
from jufo.learn.runtime import RuntimePredictor
from jufo.io.accounting import JobRecord

from test_history import KTH, TRACES, needs_traces, scrambled_after

HPC2N = TRACES / "HPC2N-2002-2.1-cln.swf.gz"
DAY = 86400


@needs_traces
@pytest.mark.parametrize("trace", [KTH, TRACES / "KTH-SP2-1996-2.1-cln.swf.gz", HPC2N], ids=lambda p: p.name)
def test_indexes_answer_as_learning_from_scratch(trace):
    _, records, submits, _ = _load(Settings(str(trace)))
    keep, capacity = 90 * DAY, 128
    source = TraceSource(records, 90, submits)
    rng = random.Random(5)
    days = sorted(rng.sample(range(records[0].submit + DAY, records[-1].submit, DAY), 25))
    runtimes, windows, caps = RuntimeIndex(records, keep), WindowIndex(records), CapIndex(records, capacity, days)
    some_windows = some_caps = some_overruns = 0
    for now in days:
        known = source.records(now)
        finished = sorted((r for r in known if r.end is not None and r.start is not None), key=lambda r: (r.end, r.id))
        (scratch, overruns), asof = RuntimePredictor.learning(finished), runtimes.as_of(now)
        # the reach's evidence, what raises running jobs, and how far a range reaches toward now
        assert asof.recent_runs() == (overruns, scratch.shortfalls), now
        asof.learned_overruns(*asof.recent_runs())
        some_overruns += len(overruns) == 100
        for r in rng.sample(records, 200):
            for elapsed in (None, r.wall // 3, r.wall * 2 // 3):
                assert asof.predict(r.user, r.queue, r.wall, r.cores, elapsed) == \
                    scratch.predict(r.user, r.queue, r.wall, r.cores, elapsed), (now, r)
        closed = behaviour.learn_windows(known, now)
        assert windows.closed(now) == closed, now
        capped = behaviour.learn_user_caps(known, now, capacity)
        assert caps.caps(now) == capped, now
        some_windows += bool(closed)
        some_caps += bool(capped)
    assert some_caps >= 5 and some_overruns >= 5  # the comparison saw real caps and full overruns
    if trace != HPC2N:  # HPC2N has no start windows; KTH's SP2 has its daytime rule
        assert some_windows >= 5


def test_caps_off_the_snapshot_times_are_not_guessed():
    recs = [JobRecord("1", "u", cores=1, wall=3600, submit=0, start=0, end=3600)]
    index = CapIndex(recs, 4, range(40 * DAY, 50 * DAY + 1, DAY))
    assert index.caps(45 * DAY) == {} and index.caps(45 * DAY + 1) is None


def test_a_job_ended_long_ago_or_submitted_too_early_is_not_learned_from():
    """As a history keeps them: finished jobs of the last ``keep`` seconds, submitted within
    twice that."""
    recs = [JobRecord("old", "u", queue="q", wall=1000, submit=0, start=10, end=110),
            JobRecord("long", "v", queue="q", wall=10**6, submit=0, start=500_000, end=900_000)]
    index = RuntimeIndex(recs, keep=500_000)
    assert index.as_of(100).predict("u", "q", 1000, 1) == (1000, "wall")  # still running
    assert index.as_of(200).predict("u", "q", 1000, 1) == (100, "same request")
    assert index.as_of(600_000).predict("u", "q", 1000, 1) == (1000, "wall")  # ended 599,890 s ago
    assert index.as_of(900_000).predict("v", "q", 10**6, 1) == (400_000, "same request")
    assert index.as_of(1_000_001).predict("v", "q", 10**6, 1) == (10**6, "wall")  # submitted 1,000,001 s ago


@needs_traces
@pytest.mark.parametrize("kind", ["every", "submits"])
def test_a_backtest_with_indexed_caps_does_not_peek_and_matches_learning_from_scratch(tmp_path, kind):
    """A snapshot near 8,000,000 s, one of a daily series or of a series at each submit: the
    same forecasts from a trace scrambled after it, and from caps learned from scratch."""
    trace = _load(Settings(str(KTH)))[0]
    if kind == "every":
        at, when = 8_000_000, ("every", 8_000_000 - 20 * DAY, 8_000_000 + 20 * DAY, DAY)
    else:
        when = ("submits", 7_990_000, 8_010_000, 0)
        at = next(t for t in snapshot_times(trace, when) if t >= 8_000_000)
    assert at in snapshot_times(trace, when)
    other = tmp_path / "scrambled.swf"
    scrambled_after(KTH, other, at)
    strip = lambda rows: [(r.job, r.made, r.learned, r.wall) for r in rows]
    ours = strip(snapshot_forecasts(Settings(str(KTH), when=when), at))
    theirs = strip(snapshot_forecasts(Settings(str(other), when=when), at))
    scratch = strip(snapshot_forecasts(Settings(str(KTH)), at))  # caps learned from scratch
    assert ours == theirs == scratch and len(ours) >= 4


def synthetic(seed: int, jobs: int = 400, days: int = 120, cancelled: float = 0.0) -> list[JobRecord]:
    """Sane records (start at or after submit, end at or after start) whose times fall on a
    ten-minute grid, so that starts, ends and submits often meet snapshot times and one
    another: the ties where an index and learning from scratch could part. A ``cancelled``
    share of them leave the queue without running (an end, no start), some at their submit."""
    rng, leave = random.Random(seed), random.Random(seed + 1000)
    out = []
    for k in range(jobs):
        submit = 10 * DAY + rng.randrange(days * 144) * 600
        wall = rng.choice([600, 3600, 7200, 36000, 200_000])
        start = submit + rng.choice([0, 0, 600, 3600, rng.randrange(50) * 3600, rng.randrange(5 * 144) * 600])
        run = rng.choice([0, wall, rng.randrange(wall // 600 + 1) * 600])
        cores = rng.choice([1, 1, 2, 4, 8])
        out.append(JobRecord(f"{k}", f"u{rng.randrange(6)}", queue=rng.choice(["a", "b"]), cores=cores,
                             nodes=cores, wall=wall, submit=submit, start=start, end=start + run))
        if leave.random() < cancelled:
            out[-1] = JobRecord(out[-1].id, out[-1].user, queue=out[-1].queue, cores=cores, nodes=cores, wall=wall,
                                submit=submit, end=submit + leave.choice([0, 600, start - submit, 30 * 3600]))
    return out


@pytest.mark.parametrize("seed, cancelled", [(s, 0.0) for s in range(6)] + [(s, 0.2) for s in range(3)])
def test_indexes_match_learning_from_scratch_at_every_tie(seed, cancelled):
    """Every grid time of synthetic traces dense in ties: the index's run-time predictions,
    window counts (seconds waited and starts per class and slot) and cap window (seconds
    with room and most jobs run, per user) equal what learning from ``TraceSource`` gives;
    run times also with a history that keeps only ten days; also where a fifth of the jobs
    were cancelled while pending (they waited until they left, and ran nothing)."""
    records = synthetic(seed, cancelled=cancelled)
    capacity = 16
    snapshots = range(20 * DAY + 600 * seed, 135 * DAY + 1, DAY // 2)
    windows, caps = WindowIndex(records), CapIndex(records, capacity, snapshots)
    keys = [(r.user, r.queue, r.wall, r.cores) for r in records[:60]]
    compared = {"runs": 0, "windows": 0, "caps": 0, "overruns": 0, "cancels": 0}
    for keep_days in (90, 10):
        source, runtimes = TraceSource(records, keep_days), RuntimeIndex(records, keep_days * DAY)
        cancels = CancelIndex(records, keep_days * DAY)
        for now in snapshots:
            known = source.records(now)
            scratch_odds, indexed = CancelOdds(known, now), cancels.as_of(now)
            assert bool(indexed) == bool(scratch_odds), now
            for user in ("u0", "u3", "nobody"):
                for age in (0, 600, 3600, 30 * 3600):
                    assert (indexed.odds(user, age) if indexed else 0.0) == scratch_odds.odds(user, age), (now, user)
                    compared["cancels"] += bool(indexed)
            finished = sorted((r for r in known if r.end is not None and r.start is not None),
                              key=lambda r: (r.end, r.id))
            (scratch, overruns), asof = RuntimePredictor.learning(finished), runtimes.as_of(now)
            assert asof.recent_runs() == (overruns, scratch.shortfalls), (now, keep_days)  # the reach's evidence
            asof.learned_overruns(overruns, scratch.shortfalls)
            compared["overruns"] += len(overruns)
            for user, queue, wall, cores in keys:
                for elapsed in (None, 600, wall // 2):
                    assert asof.predict(user, queue, wall, cores, elapsed) == \
                        scratch.predict(user, queue, wall, cores, elapsed), (now, user, queue, wall, cores)
                    compared["runs"] += 1
            if keep_days != 90:
                continue
            assert windows.counts(now) == behaviour.window_counts(known, now), now
            compared["windows"] += windows.counts(now) is not None
            assert caps.window(now) == behaviour.cap_window(known, now, capacity), now
            compared["caps"] += bool(caps.window(now)[0])
    assert compared["windows"] > 100 and compared["caps"] > 100 and compared["overruns"] > 10_000, compared
    assert compared["cancels"] > 1000 if cancelled else compared["cancels"] == 0, compared


def test_waiting_seconds_fall_in_the_slots_of_the_hours_they_span():
    """``behaviour._add_exposure`` by hour-of-week table: the seconds a walk over every hour
    piece with ``slot_of`` gives, on random spans from seconds to weeks, before 1970 too."""
    import random

    from jufo.engine.windows import HOUR, SLOTS, slot_of
    from jufo.learn.behaviour import _add_exposure

    def walked(start, end):
        row, t = [0] * SLOTS, start
        while t < end:
            step = min(end, t - t % HOUR + HOUR)
            row[slot_of(t)] += step - t
            t = step
        return row

    rng = random.Random(2)
    for _ in range(3000):
        start = rng.randint(-10 ** 8, 2 * 10 ** 9)
        end = start + rng.choice([0, 1, rng.randint(1, 4000), rng.randint(1, 3 * 86400), rng.randint(1, 30 * 86400)])
        row = [0] * SLOTS
        _add_exposure(row, start, end)
        assert row == walked(start, end), (start, end)
