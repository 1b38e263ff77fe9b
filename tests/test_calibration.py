"""Calibrated ranges: the ratio intervals, and the level raised when the latest ranges held
less than they promised (adaptive conformal inference, widen-only)."""

from __future__ import annotations

import math
import random

from jufo.learn.backtest import Forecast, Raw, _settled
from jufo.learn.calibration import (HORIZONS, Calibration, Scored, ScoredWindow, bucket, held, km_quantiles,
                                    samples_of, settled, wait_ratio)

DAY = 86400


def _past(held_share: float, jobs: int = 200, seed: int = 1) -> list[Scored]:
    """``jobs`` past "starts within the hour" forecasts, newest first, each with the range it
    was given: ``held_share`` of them held their real start."""
    rng = random.Random(seed)
    out = []
    for k in range(jobs):
        made = k * 3600
        predicted = made + 1800
        start = made + rng.randrange(0, 7200)
        inside = k % 100 < held_share * 100
        lo, hi = (start - 60, start + 60) if inside else (start + 60, start + 120)
        out.append(Scored(made, predicted, start, start, lo, hi, f"j{k}"))
    return out[::-1]


def test_ranges_widen_when_the_latest_held_less_than_promised():
    short = Calibration(_past(0.6), 0.8)
    assert short.held_lately == 0.6 and short.level == 0.99
    plain = Calibration([Scored(s.made, s.predicted, s.start, s.seen, job=s.job) for s in _past(0.6)], 0.8)
    assert plain.level == 0.8 and plain.held_lately is None  # no range given before: nothing to adapt to
    now = 300 * 3600
    _, lo, hi, _ = short.range(now, now + 1800)
    _, plain_lo, plain_hi, _ = plain.range(now, now + 1800)
    assert lo <= plain_lo and hi >= plain_hi and hi - lo > plain_hi - plain_lo


def test_ranges_are_never_narrowed_for_holding_more():
    """Ranges settle when their job starts, so the latest settled ones are mostly of jobs that
    started soon, which hold more often: lowering the level on them would break the promise."""
    full = Calibration(_past(1.0), 0.8)
    assert full.held_lately == 1.0 and full.level == 0.8
    plain = Calibration([Scored(s.made, s.predicted, s.start, s.seen, job=s.job) for s in _past(1.0)], 0.8)
    now = 300 * 3600
    assert full.range(now, now + 1800) == plain.range(now, now + 1800)


def test_a_range_reaches_as_far_as_jobs_still_waiting_have_waited():
    """Half of 40 "starts now" forecasts started within an hour, half still wait: the ratios
    above the median are hidden (censored), each at least the longest wait seen. The range
    reaches that far, and says so, rather than giving no range (as before 2026-11-29)."""
    now = 100 * DAY
    past = [Scored(d * DAY, d * DAY, d * DAY + d * 100 if d % 2 else None, now, job=str(d)) for d in range(40)][::-1]
    best, lo, hi, label = Calibration(past, 0.8).range(now, now)
    assert now <= lo <= best < now + 3600
    assert hi == now + now  # the job forecast at 0 has waited ``now`` seconds so far
    assert label == "now, reaching the longest wait seen so far"
    started = [s for s in past if s.start is not None] * 2  # the same ratios, none hidden
    assert "longest" not in Calibration(started, 0.8).range(now, now)[3]


def test_a_job_still_waiting_past_its_range_counts_as_a_miss_and_one_inside_it_not_yet():
    waiting = [Scored(0, 100, None, 5000, 50, 4000, "late"), Scored(0, 100, None, 3000, 50, 4000, "open")]
    assert list(settled(waiting)) == [("late", False)]


def test_a_backtest_settles_ranges_as_a_history_does():
    """The backtest's phase 2 and a history read the same settled ranges from the same forecasts."""
    rng = random.Random(7)
    done, scored, now = [], [], 50 * DAY
    for k in range(300):
        made = k * 3 * 3600
        actual = made + rng.randrange(0, 2 * DAY)
        lo, hi = (None, None) if k % 7 == 0 else (made + rng.randrange(0, DAY), made + rng.randrange(DAY, 3 * DAY))
        done.append(Forecast(Raw(made, f"j{k}", made + 600, made + 900, actual, made - 60), made + 600, lo, hi))
        known = actual if actual < now else None
        scored.append(Scored(made, made + 600, known, now if known is None else made, lo, hi, f"j{k}"))
    assert list(_settled(done, now, 0)) == list(settled(reversed(scored)))
    assert sum(1 for _ in _settled(done, now, 0)) > 200


def test_a_raised_level_widens_the_range_around_the_plain_one():
    """The shortest interval holding more may lie elsewhere than the shortest holding less; a
    widened range must hold every start the plain one held, so it grows around it."""
    rng = random.Random(3)
    for case in range(200):
        past = []
        for k in range(rng.randrange(30, 120)):
            made = k * 600
            predicted = made + rng.choice((0, 300, 2400, 7200))
            start = made + int(rng.lognormvariate(7, 1.5)) if rng.random() < 0.9 else None
            past.append(Scored(made, predicted, start, made + 9000, job=f"j{k}"))
        plain = Calibration(past, 0.8)
        for level in (0.85, 0.9, 0.99):
            raised = Calibration(past, 0.8)
            raised.level = level
            for b in plain.groups:
                p, r = plain.band(b), raised.band(b)
                assert (p is None) == (r is None), case
                if p is not None:
                    assert r.low <= p.low and r.high >= p.high, (case, level, b)


def test_overruns_are_each_predicted_from_the_jobs_that_ended_before():
    """The reach's evidence: each of the latest finished jobs against what the predictor said
    before it ended; the predictor afterwards is the one learned from all of them."""
    from jufo.io.accounting import JobRecord
    from jufo.learn.runtime import RuntimePredictor, early_share, reach, shortfall

    recs = [JobRecord(str(k), "u", queue="q", wall=1000, submit=k * 10, start=k * 10, end=k * 10 + 100 + 50 * (k % 3))
            for k in range(40)]
    predictor, overruns = RuntimePredictor.learning(recs, recent=5)
    assert len(overruns) == 5
    before = RuntimePredictor(recs[:35])
    predicted, _ = before.predict("u", "q", 1000, 1)
    assert overruns[0] == (recs[35].runtime - predicted) / (1000 - predicted)
    assert predictor.shortfalls[0] == shortfall(predicted, recs[35].runtime) and len(predictor.shortfalls) == 5
    assert early_share(predictor.shortfalls) == 0.0  # five say nothing: no reach toward now
    learned = RuntimePredictor.learning(recs)[0]
    assert 0 < early_share(learned.shortfalls) == sum(learned.shortfalls) / 40 < 1
    assert predictor.predict("u", "q", 1000, 1) == RuntimePredictor(recs).predict("u", "q", 1000, 1)
    assert reach(overruns, 0.8) == 1.0  # five say nothing: a range reaches all the way
    assert 0 < reach(RuntimePredictor.learning(recs)[1], 0.8) < 1


def test_a_range_reaches_toward_the_walltime_forecast_only_beyond_its_own_end():
    from jufo.learn.calibration import reach_toward

    day = 86400
    past = [Scored(d * day, d * day, d * day + d * 100, d * day, job=str(d)) for d in range(40)]
    calibration = Calibration(past, 0.8)
    plain = calibration.range(100 * day, 100 * day + 600)
    assert calibration.range(100 * day, 100 * day + 600, reach_toward(100 * day + 600, 100 * day + 700, 0.5)) == plain
    far = calibration.range(100 * day, 100 * day + 600, reach_toward(100 * day + 600, 100 * day + 40_600, 0.5))
    assert far[:3] == (plain[0], plain[1], 100 * day + 20_600) and far[3].endswith("toward the walltime forecast")


def test_a_range_reaches_toward_now_only_below_its_own_start():
    from jufo.learn.calibration import reach_toward_now

    day = 86400
    past = [Scored(d * day, d * day + 900, d * day + 900 + d % 5, d * day, job=str(d)) for d in range(40)]
    calibration = Calibration(past, 0.8)
    now, predicted = 100 * day, 100 * day + 900
    plain = calibration.range(now, predicted)
    assert plain[1] == predicted  # forecasts came true to the second: the range starts at the forecast
    assert calibration.range(now, predicted, lower=reach_toward_now(now, predicted, 0.0)) == plain
    low = calibration.range(now, predicted, lower=reach_toward_now(now, predicted, 0.2))
    assert low[:3] == (plain[0], now + 720, plain[2]) and low[3].endswith("reaching toward now")


def test_a_range_of_starts_now_reaches_now_where_real_starts_came_later():
    """Earlier "starts now" forecasts all started 1,000–2,000 s late, so the calibrated range
    of a new one begins after now; reaching toward now (any share) takes it back to now."""
    from jufo.learn.calibration import reach_toward_now

    day = 86400
    past = [Scored(d * day, d * day, d * day + 1000 + 25 * d, d * day, job=str(d)) for d in range(40)]
    calibration = Calibration(past, 0.8)
    now = 100 * day
    plain = calibration.range(now, now)
    assert plain[1] > now  # the range lies wholly later than the forecast
    reached = calibration.range(now, now, lower=reach_toward_now(now, now, 0.1))
    assert reached[1] == now and reached[2] == plain[2] and reached[3].endswith("reaching toward now")


def test_a_backtest_gives_each_range_the_planning_grid_its_snapshot_had():
    """Forecasts that came true to the second calibrate to ranges of no width; with the
    snapshot's planning grid (``Raw.step``, Slurm's bf_resolution) the backtest's ranges span
    half a step either side, as ``predict --history``'s do."""
    from jufo.learn.backtest import calibrate

    def snapshots(step: int) -> list[list[Raw]]:
        return [[Raw(k * 3600, f"j{k}", k * 3600 + 600, k * 3600 + 900, k * 3600 + 600, k * 3600 - 60, None, step)]
                for k in range(60)]

    plain, grid = calibrate(snapshots(0), 0.8), calibrate(snapshots(60), 0.8)
    ranged = [(p, g) for p, g in zip(plain, grid) if p.lo is not None]
    assert len(ranged) > 20
    assert all((p.lo, p.hi) == (p.best, p.best) for p, _ in ranged)
    assert all((g.lo, g.hi) == (g.best - 30, g.best + 30) for _, g in ranged)


def test_the_best_estimate_moves_halfway_in_log_ratio_toward_where_real_starts_fell():
    """Forecasts of a 30-min wait whose jobs really waited about four times as long (in ``wait
    + C``): the next such forecast's best estimate is twice its ``wait + C``, inside its range.
    Where real starts fell about where the simulation said, or only the older half of the
    forecasts started late, it stays there."""
    now = 100 * DAY

    def past(scale: float) -> list[Scored]:
        rng = random.Random(3)
        out = []
        for k in range(60):
            made = k * DAY
            ratio = scale * rng.uniform(0.8, 1.25)
            out.append(Scored(made, made + 1800, made + round(ratio * 2400 - 600), made, job=f"j{k}"))
        return out[::-1]

    best, lo, hi, _ = Calibration(past(4), 0.8).range(now, now + 1800)
    assert abs((best - now + 600) / 2400 - 2) < 0.1  # the median ratio's square root
    assert lo <= best <= hi and lo > now + 1800  # the range, from the same ratios, lies beyond the simulation
    best, lo, hi, _ = Calibration(past(1), 0.8).range(now, now + 1800)
    assert abs(best - (now + 1800)) < 0.05 * 2400 and lo <= best <= hi
    passing = past(0.9)[:30] + past(4)[30:]  # only the older half started late: a passing queue
    assert Calibration(passing, 0.8).range(now, now + 1800)[0] == now + 1800


def _km_step_by_step(samples: list[tuple[float, bool]], levels: list[float]) -> list[float]:
    """The Kaplan–Meier quantiles value by value (the estimate's definition, as jufo computed
    it before ``km_sorted``): the reference for the arithmetic between censored values."""
    ordered = sorted(samples, key=lambda s: (s[0], not s[1]))
    n, at_risk, surviving, i = len(ordered), len(ordered), 1.0, 0
    result = [math.inf] * len(levels)
    wanted = sorted(range(len(levels)), key=lambda k: levels[k])
    w = 0
    while i < n and w < len(wanted):
        value, events, censored = ordered[i][0], 0, 0
        while i < n and ordered[i][0] == value:
            events += ordered[i][1]
            censored += not ordered[i][1]
            i += 1
        if events:
            surviving *= 1 - events / at_risk
        at_risk -= events + censored
        while w < len(wanted) and 1 - surviving >= levels[wanted[w]] - 1e-12:
            result[wanted[w]] = value
            w += 1
    return result


def test_kaplan_meier_quantiles_equal_the_step_by_step_estimate():
    """Ties among and between observed and censored values, all or none censored, a level
    the data cannot reach: ``km_quantiles`` (arithmetic between censored values) gives what
    the value-by-value product gives."""
    rng = random.Random(7)
    levels = [k / 100 for k in range(1, 101)] + [0.333, 0.5, 0.999]
    for case in range(400):
        n = rng.randint(1, 120)
        spread = rng.choice([3, 10, 1000])  # few distinct values: many ties
        censored_share = rng.choice([0.0, 0.1, 0.5, 0.9, 1.0])
        samples = [(rng.randint(1, spread) / 4, rng.random() >= censored_share) for _ in range(n)]
        assert km_quantiles(samples, levels) == _km_step_by_step(samples, levels), case


def test_a_window_calibrates_as_the_forecasts_it_keeps_would():
    """A backtest's phase 2 keeps its forecasts in a ``ScoredWindow`` between snapshots: at
    every snapshot each horizon's band (interval, median, counts, lasting bias; thin buckets
    borrowing from their neighbours) equals the one calibrated afresh from the same forecasts,
    as a history gives them: newest first, the last ``keep`` seconds, at most ``limit``."""
    rng = random.Random(11)
    keep, limit = 20 * 3600, 150
    window = ScoredWindow(keep, limit)
    past: list[tuple[int, int, int, str]] = []  # made, predicted, start, job
    for step in range(150):
        now = step * 1800
        window.advance(now)
        samples = []
        for made, predicted, start, job in reversed(past):
            if made < now - keep or len(samples) >= limit:
                break
            reached = start if start < now else now
            samples.append((bucket(max(0, predicted - made)), (wait_ratio(made, predicted, reached), start < now), job))
        fresh = Calibration.of_samples(samples, 0.8)
        kept = window.calibration(now, 0.8)
        assert kept.total == len(samples)
        for b in range(len(HORIZONS) + 1):
            assert kept.band(b) == fresh.band(b), (step, b)
        for _ in range(rng.randint(0, 12)):
            job = f"j{rng.randrange(60)}"  # a job is forecast again and again while it waits
            wait = rng.choice([0, 0, 300, 2000, 7000, 30000, 200000])
            start = now + round(rng.lognormvariate(math.log(wait + 600), 1.0)) - 600 if rng.random() < 0.9 else now + 10**7
            past.append((now, now + wait, max(now, start), job))
            window.add(now, now + wait, max(now, start), job)


def test_a_history_hands_the_calibration_its_rows_as_the_scored_forecasts_would(tmp_path):
    """``History.scored_samples`` (what a forecast calibrates on, read without a ``Scored`` for
    each) gives the samples, settled ranges and so the bands that ``Calibration(scored)`` does:
    forecasts with and without ranges, of jobs started, still waiting, and gone."""
    from benchmarks.bench import EPOCH, Shape, synthetic_history
    from jufo.learn.history import History

    db = str(tmp_path / "h.db")
    synthetic_history(db, Shape(nodes=100, jobs=50), days=4, per_day=120)
    rng = random.Random(3)
    with History.open(db) as h:
        with h.transaction() as c:
            ids = [r[0] for r in c.execute("SELECT id FROM jobs ORDER BY id")]
            for job in ids:
                pick = rng.random()
                if pick < 0.5:
                    c.execute("UPDATE forecasts SET lo = predicted - ?, hi = predicted + ? WHERE job = ?",
                              (rng.randint(0, 3000), rng.randint(0, 9000), job))
                if pick < 0.15:  # still waiting: last seen before, at or after the forecast, or never
                    c.execute("UPDATE jobs SET start = NULL, end = NULL, state = 'queued', "
                              "seen = CASE WHEN ? THEN NULL ELSE submit + ? END WHERE id = ?",
                              (pick < 0.03, rng.randint(-600, 20_000), job))
                elif pick > 0.95:
                    c.execute("UPDATE jobs SET start = NULL, end = NULL, state = 'gone' WHERE id = ?", (job,))
        starts = sorted(r[0] for r in h.db.execute("SELECT start FROM jobs WHERE start IS NOT NULL"))
        for now in (EPOCH - 3 * 86400, starts[len(starts) // 2], EPOCH + 1):  # (a job starts at the second)
            scored = h.scored(now)
            expected = []  # what was known at now, read from the rows as they stand
            for job, made, predicted, lo, hi, start, seen in h.db.execute(
                    "SELECT f.job, f.made, f.predicted, f.lo, f.hi, j.start, j.seen FROM forecasts f "
                    "JOIN jobs j ON j.id = f.job WHERE f.made < ? AND (j.state != 'gone' OR j.start IS NOT NULL) "
                    "ORDER BY f.made DESC, f.job", (now,)):
                start = start if start is not None and start < now else None
                expected.append((made, predicted, start, max(min(made if seen is None else seen, now), made), lo, hi, job))
            assert [(s.made, s.predicted, s.start, s.seen, s.lo, s.hi, s.job) for s in scored] == expected
            assert any(s.seen < now and s.start is None for s in scored) and any(s.start is not None for s in scored)
            samples, outcomes = h.scored_samples(now)
            assert len(samples) == len(scored) > 100
            assert (samples, outcomes) == samples_of([(s.made, s.predicted, s.start, s.seen, s.lo, s.hi, s.job)
                                                      for s in scored])
            assert outcomes == list(settled(scored)) == [
                (s.job or str(s.made), held(s.lo, s.hi, s.start, s.seen)) for s in scored
                if held(s.lo, s.hi, s.start, s.seen) is not None]
            assert any(ok for _, ok in outcomes) and not all(ok for _, ok in outcomes)
            plain, fast = Calibration(scored, 0.8), Calibration.of_samples(samples, 0.8, outcomes)
            assert (fast.level, fast.held_lately, fast.total) == (plain.level, plain.held_lately, plain.total)
            assert [fast.band(b) for b in range(len(HORIZONS) + 1)] == [plain.band(b) for b in range(len(HORIZONS) + 1)]
            assert [s[1] for s in samples] == [s.ratio() for s in scored]
            assert [s[0] for s in samples] == [bucket(s.wait) for s in scored]
