"""``evaluate`` against a later live snapshot and against the wrong record: no silent zeros
(issue 35, item 3)."""

from __future__ import annotations

import json

from click.testing import CliRunner

from conftest import snapshot, waiting
from jufo.cli import main


def run(*args: str):
    return CliRunner().invoke(main, list(args))


def predicted(tmp_path):
    src, out = tmp_path / "in.xml", tmp_path / "pred.xml"
    src.write_bytes(snapshot({"w1": waiting(4, 600, step="101"), "w2": waiting(4, 600, step="102")}, {"n1": 4}))
    assert run("predict", str(src), "-o", str(out), "-q").exit_code == 0
    return out  # w1 at 12:00, w2 at 12:10


def later(tmp_path, w1: dict, w2: dict, name="later.xml"):
    path = tmp_path / name
    path.write_bytes(snapshot({"w1": w1, "w2": w2}, {"n1": 4}, system_time="01/10/12-12:30:00"))
    return path


def test_a_later_live_snapshot_gives_the_starts_of_the_jobs_it_shows_running(tmp_path):
    pred = predicted(tmp_path)
    # w1 runs since 12:02 (its endtime is only its limit); w2 still waits with the batch system's estimate
    w1 = waiting(4, 600, step="101", state="Running", dispatchdate="01/10/12-12:02:00", endtime="01/10/12-12:12:00")
    w2 = waiting(4, 600, step="102", starttime="01/10/12-12:40:00")
    done = run("evaluate", str(pred), "--actual", str(later(tmp_path, w1, w2)), "--json")
    assert done.exit_code == 0, done.output
    errors = json.loads(done.stdout)["errors"]
    assert errors["count"] == 1 and errors["mean"] == 120  # actual 12:02 - predicted 12:00
    assert "baranov_p" not in errors  # no real end yet: no residence time


def test_nothing_to_compare_is_exit_2_not_zero_jobs(tmp_path):
    pred = predicted(tmp_path)
    w1 = waiting(4, 600, step="101", starttime="01/10/12-12:40:00")  # both still waiting
    w2 = waiting(4, 600, step="102", starttime="01/10/12-12:50:00")
    done = run("evaluate", str(pred), "--actual", str(later(tmp_path, w1, w2)))
    assert done.exit_code == 2 and "no job predicted" in done.stderr


def test_the_wrong_record_is_exit_2(tmp_path):
    pred = predicted(tmp_path)
    trace = tmp_path / "other.swf"  # the same job numbers, submitted years apart
    trace.write_text("; UnixStartTime: 0\n101 0 10 100 4 -1 -1 4 600 -1 1 1 1 -1 1 -1 -1 -1\n"
                     "102 5 10 100 4 -1 -1 4 600 -1 1 1 1 -1 1 -1 -1 -1\n")
    done = run("evaluate", str(pred), "--actual", str(trace))
    assert done.exit_code == 2 and "submitted at other times" in done.stderr
