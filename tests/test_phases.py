"""benchmarks.phases: its stopwatches time each phase of a history run without changing it."""

from __future__ import annotations

import shutil
from collections import defaultdict

import pytest

from benchmarks import phases
from benchmarks.bench import Shape, generate, synthetic_history
from jufo import cli

SMALL = Shape(nodes=120, jobs=80)


def _predict(src, db, out, *extra):
    with pytest.raises(SystemExit) as stop:
        cli.main(["predict", str(src), "-o", str(out), "-q", "--history", str(db), *extra], prog_name="jufo")
    assert stop.value.code == 0


@pytest.mark.parametrize("processes", ["1", "2"])
def test_the_stopwatches_time_each_phase_and_change_neither_output_nor_history(tmp_path, processes):
    src, master = tmp_path / "in.xml", tmp_path / "master.db"
    src.write_bytes(generate(SMALL))
    synthetic_history(str(master), SMALL, days=3, per_day=50)
    plain_db, timed_db = tmp_path / "plain.db", tmp_path / "timed.db"
    shutil.copy(master, plain_db)
    shutil.copy(master, timed_db)
    originals = {(owner, name): owner.__dict__[name] for owner, name, _ in phases.PHASES}

    _predict(src, plain_db, tmp_path / "plain.xml", "-P", processes)
    seconds: dict[str, float] = defaultdict(float)
    with phases.stopwatches(seconds):
        _predict(src, timed_db, tmp_path / "timed.xml", "-P", processes)

    assert (tmp_path / "timed.xml").read_bytes() == (tmp_path / "plain.xml").read_bytes()
    assert {(owner, name): owner.__dict__[name] for owner, name, _ in phases.PHASES} == originals
    seen = {"learned simulation", "open the history (checks)", "read the scored forecasts",
            "calibrate (group; bands cut with the ranges)"}
    # one process learns the habits and runs the walltime-only simulation itself; with two, the
    # child does, and the parent waits for it
    seen |= {"user caps and start windows", "walltime-only simulation"} if processes == "1" else \
        {"wait for the child's caps and windows", "wait for the child's walltime-only starts"}
    assert seen <= seconds.keys()
    assert all(value >= 0 for value in seconds.values())
    assert seconds["learned simulation"] > 0


def test_measure_reports_the_median_of_each_phase_next_to_plain_predict():
    result = phases.measure(repeat=1, days=2, shape=SMALL)
    assert result["plain_s"] > 0 and result["history_s"] > 0
    assert result["ratio"] == pytest.approx(result["history_s"] / result["plain_s"], rel=0.1)  # (of rounded ones)
    assert "learned simulation" in result["phases_s"]
    assert list(result["phases_s"].values()) == sorted(result["phases_s"].values(), reverse=True)
