"""Would a conditional quantile model beat the calibrated ranges? ``python -m benchmarks.quantile_study
TRACE [--lower 0.1] [--refit-days 7]`` (needs ``pip install lightgbm scikit-learn``; not a
dependency of jufo).

It runs the backtest's phase 1 (a snapshot a day, both simulations, the history knowing only the
past), then replaces phase 2: for each snapshot, LightGBM quantile models (``--lower``, the
median and ``1 - --lower``), refitted every ``--refit-days`` on the forecasts of the last 90 days
whose real start was known by then, predict the log ratio of real to simulated wait from the
job's situation: its simulated wait, how far the walltime-only forecast and the range's upper
reach lie beyond it, how long it has waited, its size against the machine's largest job, its
requested time, the queue's length, its place in the queue and the hour of the week. Where the
latest 100 jobs' settled ranges held less or more than 80 %, both ends move out or in by
``--adapt`` times the difference, in log ratio (adaptive conformal inference, as the calibrated
ranges widen). It prints the backtest's figures for the calibrated ranges (``jufo backtest``)
and for the model's.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from dataclasses import replace

from jufo.learn import backtest as bt
from jufo.learn.calibration import C, recent_share

KEEP = 90 * 86400
MIN_TRAINING = 500


def features(raws: list[bt.Raw], jobs: dict, largest: int) -> list[list[float]]:
    """One row per forecast of a snapshot (``raws`` all have a learned start)."""
    order = sorted(range(len(raws)), key=lambda i: raws[i].learned)
    place = {i: k for k, i in enumerate(order)}
    rows = []
    for i, r in enumerate(raws):
        job = jobs[r.job]
        learned = math.log(max(0, r.learned - r.made) + C)
        wall = math.log(max(0, (r.wall if r.wall is not None else r.learned) - r.made) + C)
        upper = math.log(max(0, (r.upper if r.upper is not None else r.learned) - r.made) + C)
        rows.append([learned, wall - learned, upper - learned, math.log(r.made - r.submit + 60),
                     job.procs / largest, math.log(max(job.requested, 60)), math.log(len(raws) + 1),
                     place[i] / len(raws), (r.made // 3600) % 168])
    return rows


def model_forecasts(per_snapshot: list[list[bt.Raw]], jobs: dict, largest: int, lower: float,
                    refit_days: int, adapt: float) -> tuple[list[bt.Forecast], int]:
    """Each forecast's range from quantile models fitted on what was known at its snapshot."""
    import lightgbm
    import numpy

    seen: list[tuple[list[float], int, int]] = []  # features, made, real start
    models, fitted, fits, out, widen = None, None, 0, [], 0.0
    for raws in per_snapshot:
        raws = [r for r in raws if r.learned is not None]
        if not raws:
            continue
        now = raws[0].made
        rows = features(raws, jobs, largest)
        if fitted is None or now - fitted >= refit_days * 86400:
            known = [(x, made, start) for x, made, start in seen if made >= now - KEEP and start < now]
            if len(known) >= MIN_TRAINING:
                X = numpy.array([x for x, _, _ in known])
                y = numpy.array([math.log(start - made + C) - x[0] for x, made, start in known])
                models = [lightgbm.LGBMRegressor(objective="quantile", alpha=q, n_estimators=100, num_leaves=15,
                                                 min_child_samples=50, verbose=-1).fit(X, y)
                          for q in (lower, 1 - lower)]
                fitted, fits = now, fits + 1
        lately = recent_share(bt._settled(out, now, now - KEEP))  # as the backtest's ranges adapt
        if lately is not None:
            widen = max(0.0, widen + adapt * (bt.DEFAULT_COVERAGE - lately[0]))
        for r, x in zip(raws, rows):
            if models is None:
                out.append(bt.Forecast(r, r.learned, None, None))
                continue
            lo, hi = (m.predict(numpy.array([x]))[0] for m in models)
            lo, hi = lo - widen, hi + widen
            to_time = lambda v: int(now + max(0, math.exp(x[0] + v) - C))
            out.append(bt.Forecast(r, r.learned, min(to_time(lo), r.learned), max(to_time(hi), r.learned)))
        seen.extend((x, r.made, r.actual) for r, x in zip(raws, rows))
    return out, fits


def line(name: str, forecasts: list[bt.Forecast], snapshots: int) -> str:
    s = bt.summarize(forecasts, snapshots)
    h, w = s.overall["history"], s.overall["walltime"]
    classes = " / ".join(f"{g['history'].get('coverage', 0):.1%}" for g in s.by_wait.values())
    return (f"{name:18s} held {h['coverage']:.1%}, by real wait {classes}; median width "
            f"{h['median_width'] / s.median_wait:.2f}x the median wait; median |err| {h['median_abs_error'] / w['median_abs_error']:.3f}x the walltime forecast's")


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks.quantile_study", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("trace")
    p.add_argument("--lower", type=float, default=0.1, help="the lower quantile (the upper is 1 - it)")
    p.add_argument("--refit-days", type=int, default=7)
    p.add_argument("--adapt", type=float, default=1.0, help="how fast the ends follow the latest ranges' share held")
    p.add_argument("-P", "--workers", type=int, default=2)
    args = p.parse_args(argv)
    try:
        import lightgbm  # noqa: F401
        import sklearn  # noqa: F401
    except ImportError:
        sys.exit("the study needs lightgbm and scikit-learn: pip install lightgbm scikit-learn")
    settings = bt.Settings(trace=args.trace)
    trace = bt._load(settings)[0]
    settings = replace(settings, when=("every", None, None, 86400))
    ats = bt.snapshot_times(trace, settings.when)
    raw = bt.run_phase1(settings, ats, args.workers)
    print(line("calibrated ranges", bt.calibrate(raw, bt.DEFAULT_COVERAGE), len(ats)))
    started = time.perf_counter()
    forecasts, fits = model_forecasts(raw, {str(j.number): j for j in trace.jobs}, max(j.procs for j in trace.jobs),
                                      args.lower, args.refit_days, args.adapt)
    print(line(f"quantiles {args.lower:g}-{1 - args.lower:g}", forecasts, len(ats)),
          f"({fits} fits, {time.perf_counter() - started:.1f} s)")


if __name__ == "__main__":
    main()
