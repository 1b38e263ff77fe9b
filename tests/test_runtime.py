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
