"""The fair-share habit (``jufo.learn.fairshare``): learned on HPC2N, whose scheduler served
users before submits, and not on KTH's SP2 (first come, first served); learned from what was
known at the snapshot only; and applied by the simulation only where the priority is the
submit order."""

from __future__ import annotations

import json
import random
from dataclasses import replace

import pytest
from click.testing import CliRunner

from conftest import predictions, running, snapshot, waiting
from jufo.cli import main
from jufo.engine.prediction import Behaviour, simulate
from jufo.engine.snapshot import prepare
from jufo.io import lml
from jufo.io.errors import Report
from jufo.learn.backtest import Settings, TraceSource, _load
from jufo.learn.fairshare import WaitIndex, user_lags

from test_history import TRACES, needs_traces

DAY = 86400
HPC2N = TRACES / "HPC2N-2002-2.1-cln.swf.gz"
KTH = TRACES / "KTH-SP2-1996-2.1-cln.swf.gz"


def sample_days(records, count: int, seed: int) -> list[int]:
    rng = random.Random(seed)
    return sorted(rng.sample(range(records[0].submit + 60 * DAY, records[-1].submit, DAY), count))


@needs_traces
@pytest.mark.parametrize("trace, learned", [(HPC2N, True), (KTH, False)], ids=["HPC2N", "KTH"])
def test_learned_where_the_machine_served_users_and_only_from_what_was_known(trace, learned):
    """The backtest's index over the whole trace answers as the records a history knew then
    (``TraceSource.records``, starts only before the snapshot) do; HPC2N shows the habit on
    most days, KTH on none."""
    _, records, submits, _ = _load(Settings(str(trace)))
    index, source = WaitIndex(records), TraceSource(records, 90, submits)
    days = sample_days(records, 12, 7)
    found = 0
    for now in days:
        lags = index.lags(now)
        assert lags == user_lags(source.records(now), now), now
        found += bool(lags)
        pairs, by_submit, by_standing = index.evidence(now)
        assert bool(lags) == (pairs >= 100 and by_standing > by_submit)
    if learned:
        assert found >= len(days) // 2, found
        assert any(v > 3600 for v in lags.values()) and any(v < 0 for v in lags.values())  # ahead and behind
    else:
        assert found == 0


@needs_traces
def test_nothing_that_started_at_or_after_the_snapshot_is_read():
    _, records, _, _ = _load(Settings(str(HPC2N)))
    now = sample_days(records, 1, 3)[0]
    rng = random.Random(1)
    scrambled = [replace(r, start=now + rng.randint(0, 9 * DAY), user=f"x{rng.randint(1, 9)}")
                 if r.start is not None and r.start >= now else r for r in records]
    assert WaitIndex(records).lags(now)
    assert WaitIndex(scrambled).lags(now) == WaitIndex(records).lags(now)
    assert WaitIndex(scrambled).evidence(now) == WaitIndex(records).evidence(now)


def forecast(settings: dict | None, lags: dict[str, int], priorities: bool = True) -> dict[str, int | None]:
    """Two one-node jobs behind a running one: ann's queued first, then bob's (with the batch
    system's priorities, bob's the higher)."""
    prio = ({"userprio": "5"}, {"userprio": "9"}) if priorities else ({}, {})
    raw = snapshot({"r": running(4, ends_in=600),
                    "a": waiting(4, 3600, queued="01/10/12-10:00:00", owner="ann", **prio[0]),
                    "b": waiting(4, 3600, queued="01/10/12-11:00:00", owner="bob", **prio[1])},
                   scheduler=settings)
    snap, config = prepare(lml.parse(raw), Report(quiet=True), None)
    done = simulate(snap, config, Report(quiet=True), behaviour=Behaviour(user_lags=lags))
    return {job.id: job.start for job in done.jobs if not job.running}


def test_the_simulation_orders_by_standing_only_where_the_priority_is_the_submit_order():
    order = {"system_sysprio": "-DATEqueuedate"}
    assert forecast(order, {}) == {"a": 600, "b": 4200}
    assert forecast(order, {"ann": 3 * 3600}) == {"a": 4200, "b": 600}  # ann's users waited long lately
    assert forecast(order, {"ann": 1800}) == {"a": 600, "b": 4200}  # not long enough to pass bob's hour
    assert forecast(order, {"bob": -3 * 3600}) == {"a": 4200, "b": 600}
    # the batch system's own priorities (or any formula of the site's) already rank the users
    assert forecast({"system_sysprio": "userprio"}, {"bob": 3 * 3600}) == {"a": 4200, "b": 600}
    assert forecast({"system_sysprio": "userprio"}, {}) == {"a": 4200, "b": 600}
    # ... but where no waiting job carries them (a backtest of sacct, configured by jufo slurm
    # config for a fair-share site), every priority is 0 and the order is the submit order
    assert forecast({"system_sysprio": "userprio"}, {}, priorities=False) == {"a": 600, "b": 4200}
    assert forecast({"system_sysprio": "userprio"}, {"ann": 3 * 3600}, priorities=False) == {"a": 4200, "b": 600}
    # a formula of the site's that ranks the jobs by what they carry: the standing stays out
    assert forecast({"system_sysprio": "-wall"}, {"ann": 3 * 3600}, priorities=False) == {"a": 600, "b": 4200}


@needs_traces
@pytest.mark.parametrize("trace, learned", [(HPC2N, True), (KTH, False)], ids=["HPC2N", "KTH"])
def test_history_show_says_whether_the_users_standing_was_learned(tmp_path, trace, learned):
    db = str(tmp_path / "h.db")
    runner = CliRunner()
    assert runner.invoke(main, ["history", "import", str(trace), "--history", db, "--cores", "2"]).exit_code == 0
    shown = runner.invoke(main, ["history", "show", "--history", db])
    assert shown.exit_code == 0, shown.output
    text = shown.output[shown.output.index("Users' standing"):]
    section = text.split("\n\n")[0]
    assert ("  learned: where the priority is the submit order" in section) == learned
    info = runner.invoke(main, ["history", "show", "--history", db, "--json"])
    standing = json.loads(info.output)["users_standing"]
    assert standing["learned"] == learned
    if learned:
        assert standing["pairs"] >= 100 and standing["in_standing_order"] > standing["in_submit_order"]
        assert "+" in section.split("standing later")[1]  # each user's standing, in hours
    else:  # the end of KTH's trace: too few pairs to tell
        assert "not learned yet" in section or "none: the submit order explains as much" in section


@needs_traces
def test_a_forecast_on_hpc2n_says_it_ordered_by_the_users_standing(tmp_path):
    """``predict --history`` at a snapshot of HPC2N whose last 49 days showed the fair share
    (571 pairs, 72 % in standing order): the waiting jobs' model says so."""
    at, snap, out, db = "30000000", str(tmp_path / "snap.xml"), str(tmp_path / "out.xml"), str(tmp_path / "h.db")
    runner = CliRunner()
    assert runner.invoke(main, ["swf2lml", str(HPC2N), "--at", at, "--cores", "2", "-o", snap, "-q"]).exit_code == 0
    assert runner.invoke(main, ["history", "import", str(HPC2N), "--until", at, "--history", db,
                                "--cores", "2"]).exit_code == 0
    assert runner.invoke(main, ["predict", snap, "-o", out, "--history", db, "-q"]).exit_code == 0
    models = [m["jufo_model"] for m in predictions(open(out, "rb").read()).values() if "start=" in m.get("jufo_model", "")]
    assert models and all("users' standing" in m for m in models)


@needs_traces
def test_the_study_counts_no_day_learned_on_kth():
    from benchmarks.standing_study import study
    found = study(str(KTH))
    assert found["days"] > 300 and found["learned"] == 0 and found["pairs"] > 50_000
    assert found["in_submit_order"] > 0.8 > 0.65 > found["in_standing_order"]
