"""Expecting cancellations: in the history forecast a waiting job whose user cancels waiting
jobs holds its nodes for the share of its run time it can be expected to run, so the jobs
behind it are forecast to start earlier; the job's own forecast end stays its whole run."""

from __future__ import annotations

import pytest

from conftest import T0, running, snapshot, waiting
from jufo.engine.job import end_grid
from jufo.engine.snapshot import prepare
from jufo.engine.windows import DAY
from jufo.io import lml
from jufo.io.accounting import JobRecord
from jufo.io.dates import parse_date
from jufo.io.errors import Report
from jufo.learn.cancellation import CancelOdds
from jufo.learn.outlook import outlook, results

EPOCH = parse_date(T0)[0]


class Past:
    """A HistorySource of records all known before the snapshot, and no scored forecast."""

    def __init__(self, records: list[JobRecord]) -> None:
        self.recs = records

    def records(self, now: int) -> list[JobRecord]:
        return list(self.recs)

    def scored(self, now: int) -> list:
        return []


def history(b_cancels: bool) -> list[JobRecord]:
    """User b's eight jobs waited 900 s and were cancelled (or started then, ran 1,000 s); user
    c's ten jobs waited 400 s and ran 1,000 s."""
    out = []
    for k in range(8):
        submit = EPOCH - (k + 1) * DAY
        out.append(JobRecord(f"b{k}", "b", queue="batch", wall=1000, submit=submit,
                             **({"end": submit + 900} if b_cancels else {"start": submit + 900, "end": submit + 1900})))
    for k in range(10):
        submit = EPOCH - (k + 1) * DAY + 5000
        out.append(JobRecord(f"c{k}", "c", queue="batch", wall=1000, submit=submit, start=submit + 400,
                             end=submit + 1400))
    return out


def forecast(b_cancels: bool) -> dict[str, dict[str, int]]:
    """One core: r runs until 600 s; x (user b, waiting 300 s) and then y (user c) wait."""
    raw = snapshot({"r": running(1, ends_in=600, wall=600),
                    "x": waiting(1, 1000, queued="01/10/12-11:55:00", owner="b"),
                    "y": waiting(1, 1000, queued="01/10/12-11:56:40", owner="c")}, nodes={"n1": 1})
    snap, config = prepare(lml.parse(raw), Report(quiet=True))
    look = outlook(snap, config, Report(quiet=True), Past(history(b_cancels)))
    out = results(look)
    return {job: {k: parse_date(v)[0] - EPOCH for k, v in pairs if k in ("jufo_starttime", "jufo_endtime")}
            for job, pairs in out.items() if job in ("x", "y")}


def test_the_job_behind_one_its_user_is_likely_to_cancel_is_forecast_earlier():
    """b cancelled all eight of its jobs that had waited as long as x: with the machine's share
    (8 of 18 jobs that waited over 300 s) as the prior, x's odds are (8 + 10 × 0.444) / 18 =
    0.691, so the simulation holds the core for 309 of x's 1,000 s and y starts at 909 s (on the
    grid of learned ends, ``end_grid``: 912 s, the nearest 8 s), not 1,600 s. x's own forecast is
    unchanged: it starts at 600 s and, if it runs, ends 1,000 s later."""
    odds = CancelOdds(history(True), EPOCH)
    assert odds.odds("b", 300) == pytest.approx((8 + 10 * (8 + 10 * 8 / 18) / 28) / 18)
    assert end_grid(909) == 912
    assert forecast(b_cancels=True) == {"x": {"jufo_starttime": 600, "jufo_endtime": 1600},
                                        "y": {"jufo_starttime": 912, "jufo_endtime": 1912}}
    assert forecast(b_cancels=False) == {"x": {"jufo_starttime": 600, "jufo_endtime": 1600},
                                         "y": {"jufo_starttime": 1600, "jufo_endtime": 2600}}


def test_a_user_who_never_cancels_gets_small_odds_and_past_the_longest_patience_the_prior():
    """c never cancelled: its odds are the machine's share shrunk by c's own ten jobs; past every
    recorded wait (age 1,000 s) nothing is known but the machine's share over all ages."""
    odds = CancelOdds(history(True), EPOCH)
    machine = (8 + 10 * 8 / 18) / 28
    assert odds.odds("c", 300) == pytest.approx(10 * machine / 20)
    assert odds.odds("c", 1000) == odds.odds("b", 1000) == pytest.approx(8 / 18)
    assert not CancelOdds(history(False), EPOCH) and CancelOdds(history(False), EPOCH).odds("b", 0) == 0.0
