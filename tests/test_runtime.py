"""Run-time prediction for running jobs that outlived their predictions: raised to where the
recent jobs that overran as far went on to end, doubled where too few did."""

from __future__ import annotations

from jufo.io.accounting import JobRecord
from jufo.learn.runtime import RAISE_JOBS, RuntimePredictor, in_end_order


def _repeating(runs: list[int], wall: int = 1000, times: int = 20) -> list[JobRecord]:
    """One user's repeated request, its run times cycling through ``runs``, one after another."""
    out, t = [], 0
    for i in range(times * len(runs)):
        run = runs[i % len(runs)]
        out.append(JobRecord(str(i), "u", queue="q", cores=4, wall=wall, submit=t, start=t, end=t + run))
        t += run + 10
    return out


def test_a_job_past_its_prediction_is_raised_to_where_the_jobs_that_overran_as_far_ended():
    # one killed at its wall, then two short runs: after two short ones the prediction is 100 s,
    # and every job that ran past such a prediction ran to its wall
    predictor, overruns = RuntimePredictor.learning(in_end_order(_repeating([1000, 100, 100])))
    assert sum(o == 1.0 for o in overruns if o is not None) >= RAISE_JOBS
    assert predictor.predict("u", "q", 1000, 4) == (100, "same request")
    assert predictor.predict("u", "q", 1000, 4, elapsed=200) == (1000, "same request, raised")
    assert predictor.predict("u", "q", 1000, 4, elapsed=50) == (100, "same request")  # not yet past it


def test_a_job_past_its_prediction_ends_soon_where_the_jobs_that_overran_ended_soon():
    # runs of 300, 100, 100: the 300 s ones overran a prediction of 100 s by 2/9 of the way to the wall
    predictor, _ = RuntimePredictor.learning(in_end_order(_repeating([300, 100, 100])))
    assert predictor.predict("u", "q", 1000, 4, elapsed=150) == (300, "same request, raised")


def test_without_enough_jobs_that_overran_as_far_a_prediction_is_doubled_until_a_minute_ahead():
    predictor, overruns = RuntimePredictor.learning(in_end_order(_repeating([300, 100, 100], times=1)))
    assert sum(o is not None and o > 0 for o in overruns) < RAISE_JOBS
    assert predictor.predict("u", "q", 1000, 4, elapsed=150) == (400, "same request, raised")
    # a plain predictor (no overruns learned) doubles too, capped at the wall
    assert RuntimePredictor(_repeating([100, 100], times=1)).predict("u", "q", 1000, 4, elapsed=900) == \
        (1000, "same request, raised")


# -- learned ends on a grid (job.end_grid) -------------------------------------------------------

def test_the_end_grid_is_as_fine_as_an_end_is_far_ahead_and_shared_by_near_ends():
    import random

    from jufo.engine.job import end_grid

    rng = random.Random(11)
    times = [*range(-5, 2000), *(rng.randrange(1, 10 ** 9) for _ in range(20_000))]
    for t in times:
        g = end_grid(t)
        assert g == t if t < 128 else abs(g - t) <= t / 128, t  # exact at first, then to 1/128 of t
        assert end_grid(g) == g, t  # a grid point stays
        assert end_grid(t + 1) >= g, t  # never earlier for a later end
    # what it is for: a second's worth of different ends share few seconds
    assert len({end_grid(t) for t in range(0, 1 << 20, 3)}) <= 128 + 64 * 13 + 1


def test_a_learned_run_time_ends_on_the_grid_within_its_wall_and_a_given_one_exactly():
    import random

    from jufo.engine.job import Job, end_grid

    rng = random.Random(5)
    for _ in range(5000):
        wall = rng.randint(1, 200_000)
        actual, start = rng.randint(0, wall), rng.randint(-wall, 500_000)
        given = Job("g", 0, {}, "Idle", wall=wall, actual=actual)
        learned = Job("l", 0, {}, "Idle", wall=wall, actual=actual, learned=True)
        assert given.end_at(start) == start + actual
        end = learned.end_at(start)
        if actual == 0:
            assert end == start  # over at once, as a given run time of 0 is
        else:
            assert start < end <= start + wall
            assert end in (end_grid(start + actual), start + wall, start + 1)


def test_a_history_that_teaches_no_run_time_gives_the_walltime_forecast_and_one_that_does_ends_on_the_grid():
    """Jobs predicted at their walls end there, as in the walltime-only forecast (a grid would
    move some by seconds, and a history with nothing learned must change nothing); a learned
    run time ends on the grid."""
    from conftest import T0, running, snapshot, waiting
    from jufo.engine.job import end_grid
    from jufo.engine.snapshot import prepare
    from jufo.io import lml
    from jufo.io.dates import parse_date
    from jufo.io.errors import Report
    from jufo.learn.outlook import outlook

    epoch = parse_date(T0)[0]

    class Past:
        def __init__(self, records):
            self.recs = records

        def records(self, now):
            return list(self.recs)

        def scored(self, now):
            return []

    jobs = {"r": running(2, ends_in=700, wall=3000)}
    jobs.update({f"w{k}": waiting(1 + k % 2, 3000 + 600 * k, queued="01/10/12-11:50:00", owner="u")
                 for k in range(12)})
    raw = snapshot(jobs, nodes={"n1": 2})
    for records, learned in (([], False),
                             ([JobRecord(f"h{k}", "u", queue="batch", cores=1 + k % 2, wall=3000 + 600 * (k % 12),
                                         submit=epoch - 90_000 + 100 * k, start=epoch - 80_000 + 100 * k,
                                         end=epoch - 80_000 + 100 * k + 1234 + 7 * k) for k in range(48)], True)):
        snap, config = prepare(lml.parse(raw), Report(quiet=True))
        look = outlook(snap, config, Report(quiet=True), Past(records))
        waited = [job for job in look.learned.jobs if not job.running]
        assert all(job.start is not None for job in waited)
        if not learned:
            assert {job.id: job.start for job in waited} == {job: look.wall[job] for job in look.wall if job != "r"}
            assert all(job.end == job.start + job.wall for job in waited)
        else:
            ends = [(job, job.end - job.start) for job in waited if job.learned]
            assert len(ends) == len(waited)  # every one learned a run time short of its wall
            assert all(job.end == end_grid(job.start + job.actual) for job, _ in ends)
            assert any(job.end != job.start + job.actual for job, _ in ends)  # the grid moved some
