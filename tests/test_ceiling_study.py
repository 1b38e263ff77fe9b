"""benchmarks.ceiling_study: the backtest given knowledge no forecast has (real run times, the
jobs yet to come). On a trace whose real starts are jufo's own EASY replay, that knowledge must
take the simulated starts to the real ones; without it, the study is ``jufo backtest``."""

from __future__ import annotations

import json
import random

import pytest
from click.testing import CliRunner

from benchmarks import ceiling_study as study
from jufo.cli import main
from jufo.io import lml
from jufo.io.dates import parse_date
from jufo.learn import backtest as bt

EPOCH = 1_000_000_000


@pytest.fixture(scope="module")
def replayed_trace(tmp_path_factory) -> str:
    """400 random jobs of a 16-processor machine whose waits are what ``jufo replay`` (EASY,
    real run times) gave them: a machine that behaves exactly as jufo's model of it."""
    tmp_path = tmp_path_factory.mktemp("replayed")
    rng = random.Random(5)
    rows, t = [], 0
    for i in range(1, 401):
        t += rng.randint(0, 900)
        wall = rng.choice([600, 1800, 3600, 7200])
        procs = rng.choice([1, 2, 4, 8, 16])
        rows.append([i, t, 0, rng.randint(60, wall), procs, -1, -1, procs, wall, -1, 1, rng.randint(1, 6),
                     1, -1, 1, -1, -1, -1])
    header = f"; MaxProcs: 16\n; MaxNodes: 16\n; UnixStartTime: {EPOCH}\n"
    submitted = tmp_path / "submitted.swf"
    submitted.write_text(header + "".join(" ".join(map(str, r)) + "\n" for r in rows))
    out = tmp_path / "replay.xml"
    done = CliRunner().invoke(main, ["replay", str(submitted), "-q", "-o", str(out)])
    assert done.exit_code == 0, done.output
    starts = {int(o.data["step"]): parse_date(o.data["jufo_starttime"])[0]
              for o in lml.read(str(out)).objects if o.type == "job"}
    for r in rows:
        r[2] = starts[r[0]] - EPOCH - r[1]
    replayed = tmp_path / "replayed.swf"
    replayed.write_text(header + "".join(" ".join(map(str, r)) + "\n" for r in rows))
    return str(replayed)


def case(trace: str, name: str, ahead: int = 10 ** 6) -> list[bt.Forecast]:
    study._CASE.update(name=name, ahead=ahead, settings=bt.Settings(trace))
    bt.behaviour_for, bt.simulate = study.behaviour_with_oracle, study.simulate_then_drop
    try:
        return bt.backtest(bt.Settings(trace), 3600)[1]
    finally:
        bt.behaviour_for, bt.simulate = study._SHIPPED, study._SIMULATE


def on_the_second(forecasts: list[bt.Forecast]) -> int:
    return sum(f.raw.learned == f.raw.actual for f in forecasts)


def test_real_run_times_and_arrivals_take_the_simulation_to_a_machine_that_is_its_model(replayed_trace):
    trace = replayed_trace
    learned, exact, both = (case(trace, name) for name in ("learned", "exact", "exact+arrivals"))
    assert len(learned) == len(exact) == len(both) > 1000  # the added jobs are never scored
    # learned run times: no simulated start on the second; real ones: some; real run times and
    # the jobs to come: all but a few (the learned habits, such as user caps, stay as shipped)
    assert on_the_second(learned) == 0 < on_the_second(exact) < on_the_second(both)
    assert on_the_second(both) >= 0.95 * len(both)
    # and the point forecasts after calibration follow
    error = lambda fs: sorted(abs(f.raw.actual - f.best) for f in fs)[len(fs) // 2]
    assert error(both) == 0 < error(exact) < error(learned)


def test_arrivals_move_the_simulated_starts_but_are_never_scored(replayed_trace):
    """``past`` (the hour before, again an hour later) and ``arrivals`` (the real next hour)
    put jobs into the learned simulation: starts move, and only the snapshot's own jobs are
    forecasts."""
    trace = replayed_trace
    learned, past, ahead = case(trace, "learned"), case(trace, "past", 3600), case(trace, "arrivals", 3600)
    keys = lambda fs: [(f.raw.made, f.raw.job) for f in fs]
    assert keys(past) == keys(ahead) == keys(learned)
    starts = lambda fs: [f.raw.learned for f in fs]
    assert starts(past) != starts(learned) and starts(ahead) != starts(learned) and starts(past) != starts(ahead)


def test_without_knowledge_the_study_is_the_backtest_and_leaves_it_as_it_was(replayed_trace):
    trace = replayed_trace
    done = CliRunner().invoke(main, ["backtest", trace, "--every", "3600", "--json"])
    assert done.exit_code == 0, done.output
    shipped = json.loads(done.output)["overall"]["history"]
    ran = study.run_case(bt.Settings(trace), 3600, "learned", 0, 1)
    assert (ran["median_abs_error"], ran["coverage"]) == (shipped["median_abs_error"], shipped["coverage"])
    assert bt.behaviour_for is study._SHIPPED and bt.simulate is study._SIMULATE


def test_an_unknown_case_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as stop:
        study.main(["trace.swf", "--cases", "learned,psychic"])
    assert stop.value.code == 2 and "unknown case 'psychic'" in capsys.readouterr().err
