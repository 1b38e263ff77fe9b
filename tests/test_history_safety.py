"""Nothing a user types may destroy the history: an output that is the history, a snapshot
from the far future or of another system, and a run that fails anywhere leave it as it was
(issue 34, items 1-5)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest
from click.testing import CliRunner

from conftest import ROOT, dump, running, snapshot, waiting
from jufo.cli import main
from jufo.io import output as out
from jufo.learn.history import History


def cli(*args: str, env: dict | None = None):
    return CliRunner().invoke(main, list(args), env=env)


def system_snapshot(tmp_path, name="in.xml", host="clusterA", nodes=("n1", "n2"), system_time="01/10/12-12:00:00"):
    jobs = {"r": running(4, 600), "w": waiting(4, 600)}
    raw = snapshot(jobs, {n: 4 for n in nodes}, system_time=system_time)
    raw = raw.replace(b'<data key="system_time"', f'<data key="hostname" value="{host}"/>\n<data key="system_time"'
                      .encode(), 1)
    path = tmp_path / name
    path.write_bytes(raw)
    return path


@pytest.fixture
def history(tmp_path):
    """A history that has seen one snapshot of clusterA."""
    path = tmp_path / "h.db"
    done = cli("predict", str(system_snapshot(tmp_path)), "--history", str(path), "-o", str(tmp_path / "o.xml"))
    assert done.exit_code == 0, done.output
    return path


# -- 1. the output is the history -----------------------------------------------------------
@pytest.mark.parametrize("option", ["-o", "--metrics", "--json-out"])
@pytest.mark.parametrize("how", ["same", "link", "wal"])
def test_an_output_that_is_the_history_is_refused_before_any_work(tmp_path, history, option, how):
    before = dump(history)
    target = {"same": history, "link": tmp_path / "link.db", "wal": tmp_path / "h.db-wal"}[how]
    if how == "link":
        os.symlink(history, target)
    args = ["predict", str(system_snapshot(tmp_path, "b.xml")), "--history", str(history)]
    args += [option, str(target)] if option == "-o" else ["-o", str(tmp_path / "x.xml"), option, str(target)]
    done = cli(*args)
    assert done.exit_code == 2 and "is the history" in done.stderr and option in done.stderr
    assert dump(history) == before and not (tmp_path / "x.xml").exists()


def test_the_history_from_the_environment_is_guarded_too(tmp_path, history):
    before = dump(history)
    done = cli("predict", str(system_snapshot(tmp_path, "b.xml")), "-o", str(history),
               env={"JUFO_HISTORY": str(history)})
    assert done.exit_code == 2 and dump(history) == before


# -- 2. time moves forward a plausible step -------------------------------------------------
def test_a_snapshot_from_far_ahead_is_refused_naming_both_times(tmp_path, history):
    before = dump(history)
    far = system_snapshot(tmp_path, "far.xml", system_time="01/10/40-12:00:00")
    done = cli("predict", str(far), "--history", str(history), "-o", str(tmp_path / "x.xml"))
    assert done.exit_code == 2 and "2040-01-10T12:00:00Z" in done.stderr and "2012-01-10" in done.stderr
    assert "--history-jump" in done.stderr
    assert dump(history) == before and not (tmp_path / "x.xml").exists()
    done = cli("predict", str(far), "--history", str(history), "-o", str(tmp_path / "x.xml"), "--history-jump")
    assert done.exit_code == 0


def test_a_snapshot_from_long_before_is_refused(tmp_path, history):
    old = system_snapshot(tmp_path, "old.xml", system_time="01/10/02-12:00:00")
    done = cli("predict", str(old), "--history", str(history), "-o", str(tmp_path / "x.xml"))
    assert done.exit_code == 2 and "before the newest time" in done.stderr


def test_the_next_days_snapshot_is_fine(tmp_path, history):
    later = system_snapshot(tmp_path, "later.xml", system_time="01/11/12-12:00:00")
    assert cli("predict", str(later), "--history", str(history), "-o", str(tmp_path / "x.xml")).exit_code == 0


# -- 3. a history belongs to one system -----------------------------------------------------
def test_another_systems_snapshot_is_refused_naming_both(tmp_path, history):
    before = dump(history)
    other = system_snapshot(tmp_path, "other.xml", host="clusterB")
    done = cli("predict", str(other), "--history", str(history), "-o", str(tmp_path / "x.xml"))
    assert done.exit_code == 2 and "clusterB" in done.stderr and "clusterA" in done.stderr
    assert dump(history) == before


def test_another_set_of_nodes_is_refused_a_few_changed_are_not(tmp_path, history):
    before = dump(history)
    other = system_snapshot(tmp_path, "other.xml", nodes=("x1", "x2", "x3"))
    done = cli("predict", str(other), "--history", str(history), "-o", str(tmp_path / "x.xml"))
    assert done.exit_code == 2 and "only 0 in common" in done.stderr and dump(history) == before
    grown = system_snapshot(tmp_path, "grown.xml", nodes=("n1", "n2", "n3"))
    assert cli("predict", str(grown), "--history", str(history), "-o", str(tmp_path / "x.xml")).exit_code == 0


# -- 4. all or nothing -----------------------------------------------------------------------
class Boom(Exception):
    pass


@pytest.mark.parametrize("where", ["stage", "record_snapshot", "record_forecasts", "trim"])
def test_a_run_failing_anywhere_leaves_history_and_output_as_they_were(tmp_path, history, monkeypatch, where):
    before = dump(history)
    target = tmp_path / "x.xml"
    target.write_bytes(b"the old output\n")

    def boom(*args, **kwargs):
        raise Boom(where)

    if where == "stage":
        monkeypatch.setattr(out, where, boom)
    else:
        monkeypatch.setattr(History, where, boom)
    done = cli("predict", str(system_snapshot(tmp_path, "b.xml", system_time="01/10/12-13:00:00")),
               "--history", str(history), "-o", str(target))
    assert done.exit_code == 1 and "Boom" in done.stderr
    assert dump(history) == before
    assert target.read_bytes() == b"the old output\n"
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


def test_timeout_holds_while_another_process_holds_the_lock(tmp_path, history):
    before = dump(history)
    holder = subprocess.Popen([sys.executable, "-c", (
        "import sqlite3, sys, time\n"
        f"db = sqlite3.connect({str(history)!r}, isolation_level=None)\n"
        "db.execute('BEGIN IMMEDIATE'); print('locked', flush=True); time.sleep(30)\n")],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        began = time.monotonic()
        done = subprocess.run([sys.executable, "-m", "jufo", "predict",
                               str(system_snapshot(tmp_path, "b.xml", system_time="01/10/12-13:00:00")),
                               "--history", str(history), "-o", str(tmp_path / "x.xml"), "--timeout", "2"],
                              capture_output=True, text=True, cwd=ROOT, timeout=60)
        took = time.monotonic() - began
    finally:
        holder.kill()
        holder.wait()
    assert done.returncode == 124 and "no output written" in done.stderr, done.stderr
    assert took < 10, f"--timeout 2 took {took:.1f} s while the lock was held"
    assert not (tmp_path / "x.xml").exists() and dump(history) == before


# -- 5. JSON with a history -------------------------------------------------------------------
def test_predict_with_history_and_json(tmp_path, history):
    js = tmp_path / "p.json"
    done = cli("predict", str(system_snapshot(tmp_path, "b.xml", system_time="01/10/12-13:00:00")),
               "--history", str(history), "-o", str(tmp_path / "x.xml"), "--json-out", str(js))
    assert done.exit_code == 0, done.output
    data = json.loads(js.read_text())
    assert data["schema"] == "jufo.v1" and data["system_time"] == "2012-01-10T13:00:00"
    assert {j["id"] for j in data["jobs"]} >= {"w"}
