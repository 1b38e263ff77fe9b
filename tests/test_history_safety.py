"""Nothing a user types may destroy the history: an output that is the history, a snapshot
from the far future or of another system, and a run that fails anywhere leave it as it was
(issue 34, items 1-5)."""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
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


@contextlib.contextmanager
def lock_held(path):
    """Another process holding the history's write lock for as long as the block runs."""
    holder = subprocess.Popen([sys.executable, "-c", (
        "import sqlite3, time\n"
        f"db = sqlite3.connect({str(path)!r}, isolation_level=None)\n"
        "db.execute('BEGIN IMMEDIATE'); print('locked', flush=True); time.sleep(30)\n")],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        yield
    finally:
        holder.kill()
        holder.wait()


def test_timeout_holds_while_another_process_holds_the_lock(tmp_path, history):
    before = dump(history)
    with lock_held(history):
        began = time.monotonic()
        done = subprocess.run([sys.executable, "-m", "jufo", "predict",
                               str(system_snapshot(tmp_path, "b.xml", system_time="01/10/12-13:00:00")),
                               "--history", str(history), "-o", str(tmp_path / "x.xml"), "--timeout", "2"],
                              capture_output=True, text=True, cwd=ROOT, timeout=60)
        took = time.monotonic() - began
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


# -- 6. a damaged history is exit 2, never changed --------------------------------------------
def test_a_damaged_history_is_exit_2_and_left_alone(tmp_path, history):
    with sqlite3.connect(history) as db:  # checkpoint the WAL, so the pages are in the file
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    raw = bytearray(history.read_bytes())
    raw[4096:] = b"\xff" * (len(raw) - 4096)  # every page but the first (the schema's) flipped
    history.write_bytes(bytes(raw))
    for extra in (tmp_path / "h.db-wal", tmp_path / "h.db-shm"):
        if extra.exists():
            extra.unlink()
    damaged = history.read_bytes()
    done = cli("predict", str(system_snapshot(tmp_path, "b.xml", system_time="01/10/12-13:00:00")),
               "--history", str(history), "-o", str(tmp_path / "x.xml"))
    assert done.exit_code == 2, done.output
    assert "damaged" in done.stderr or "not jufo's history" in done.stderr
    assert "Traceback" not in done.stderr and not (tmp_path / "x.xml").exists()
    assert history.read_bytes() == damaged


@pytest.mark.parametrize("tamper", [
    "UPDATE jobs SET state = 'bogus' WHERE rowid = 1",          # a state jufo never writes
    "UPDATE jobs SET submit = 'soon' WHERE rowid = 1",          # a text where a date belongs
    "UPDATE jobs SET start = 1e308 WHERE rowid = 1",             # a REAL beyond any date
    "UPDATE jobs SET nodes = -5 WHERE rowid = 1",
    "UPDATE jobs SET user = x'ff00' WHERE rowid = 1",           # a blob where a name belongs
    "ALTER TABLE meta RENAME COLUMN value TO valve",            # the schema itself
])
def test_type_confused_or_renamed_contents_are_exit_2_and_left_alone(tmp_path, history, tamper):
    """Issue 34, item 6, as the history fuzzer found it: such rows passed SQLite's own checks
    and crashed history show (exit 1) or let import's WAL switch write to the file first."""
    db = sqlite3.connect(history, isolation_level=None)
    db.execute(tamper)
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    before = history.read_bytes()
    trace = tmp_path / "t.swf"
    trace.write_text("; MaxProcs: 4\n900001 0 10 100 4 -1 -1 4 200 -1 1 1 1 -1 1 -1 -1 -1\n")
    for args in (["history", "show", "--history", str(history), "--json"],
                 ["history", "import", str(trace), "--history", str(history)],
                 ["predict", str(system_snapshot(tmp_path, "b.xml", system_time="01/10/12-13:00:00")),
                  "--history", str(history), "-o", str(tmp_path / "x.xml")]):
        done = cli(*args)
        assert done.exit_code == 2, (args, done.output)
        assert "damaged" in done.stderr and "not changed" in done.stderr, done.stderr
        assert history.read_bytes() == before
    assert not (tmp_path / "x.xml").exists()


# -- 8. backtest: nothing to backtest, or too many snapshots ------------------------------------
@pytest.mark.parametrize("text", ["", "; only a header\n", "1 0 0 -1 -1 -1 -1 -1 -1 -1 1 1 1 -1 1 -1 -1 -1\n"])
def test_a_trace_without_usable_jobs_is_exit_2(tmp_path, text):
    trace = tmp_path / "t.swf"
    trace.write_text("; MaxProcs: 4\n" + text)
    done = cli("backtest", str(trace))
    assert done.exit_code == 2 and "no usable job" in done.stderr, done.output


def test_too_many_snapshots_are_exit_2_and_empty_stretches_are_skipped(tmp_path):
    trace = tmp_path / "t.swf"
    # two jobs 95 years apart, each waiting a minute
    trace.write_text("; MaxProcs: 4\n1 0 60 100 1 -1 -1 1 200 -1 1 1 1 -1 1 -1 -1 -1\n"
                     "2 2995920000 60 100 1 -1 -1 1 200 -1 1 1 1 -1 1 -1 -1 -1\n")
    done = cli("backtest", str(trace), "--every", "60")
    assert done.exit_code == 2 and "more than 100,000" in done.stderr
    began = time.monotonic()
    done = cli("backtest", str(trace), "--json")  # daily: 34,675 times, two of them with a waiting job
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout)["snapshots"] <= 2 and time.monotonic() - began < 10
    assert cli("backtest", str(trace), "--to", "999999999999999", "--json").exit_code == 0


# -- 10. NaN is no share ------------------------------------------------------------------------
@pytest.mark.parametrize("command", [["history", "show"], ["backtest", "t.swf"]])
def test_coverage_nan_is_refused(tmp_path, history, command):
    done = cli(*command, "--history" if command[0] == "history" else "--every", str(history)
               if command[0] == "history" else "86400", "--coverage", "nan")
    assert done.exit_code == 2 and "--coverage" in done.stderr


# -- 11. only a regular file is a history ---------------------------------------------------------
def test_a_fifo_or_a_device_is_no_history(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for path in (fifo, "/dev/null"):
        done = cli("predict", str(system_snapshot(tmp_path)), "--history", str(path), "-o", str(tmp_path / "x.xml"))
        assert done.exit_code == 2 and "not a regular file" in done.stderr
    assert not os.path.exists("/dev/null-journal") or os.geteuid() != 0


# -- 13. closed standard streams ------------------------------------------------------------------
@pytest.mark.parametrize("command", [["predict", "-", "-o", "OUT"], ["show", "-"], ["validate", "-"],
                                     ["history", "import", "-", "--history", "H"],
                                     ["history", "import", "-", "--format", "swf", "--history", "H"]])
def test_reading_a_closed_standard_input_is_exit_2(tmp_path, command):
    args = [a.replace("OUT", str(tmp_path / "o.xml")).replace("H", str(tmp_path / "h.db")) if a in ("OUT", "H") else a
            for a in command]
    done = subprocess.run([sys.executable, "-m", "jufo", *args], stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, cwd=ROOT, preexec_fn=lambda: os.close(0))
    assert done.returncode == 2 and "standard input" in done.stderr and "Traceback" not in done.stderr


def test_swf_from_standard_input_is_read(tmp_path):
    trace = "; MaxProcs: 4\n1 0 10 100 1 -1 -1 1 200 -1 1 1 1 -1 1 -1 -1 -1\n"
    done = subprocess.run([sys.executable, "-m", "jufo", "history", "import", "-", "--format", "swf", "--history",
                           str(tmp_path / "h.db")], input=trace, capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0 and "imported 1 jobs" in done.stderr


def test_writing_to_a_closed_standard_output_is_exit_1(tmp_path):
    src = system_snapshot(tmp_path)
    out = tmp_path / "p.xml"
    assert cli("predict", str(src), "-o", str(out)).exit_code == 0
    done = subprocess.run([sys.executable, "-m", "jufo", "show", str(out)], capture_output=False, cwd=ROOT,
                          stderr=subprocess.PIPE, text=True, preexec_fn=lambda: os.close(1))
    assert done.returncode == 1 and "standard output is closed" in done.stderr


# -- 16. a file given twice ----------------------------------------------------------------------
def test_the_same_file_twice_is_refused(tmp_path):
    src = system_snapshot(tmp_path)
    os.symlink(src, tmp_path / "again.xml")
    done = cli("predict", str(src), str(tmp_path / "again.xml"), "-o", str(tmp_path / "x.xml"))
    assert done.exit_code == 2 and "read once" in done.stderr and not (tmp_path / "x.xml").exists()


# -- 7. imported numbers are bounded as a snapshot's are ---------------------------------------
OK_LINE = "1 0 10 100 4 -1 -1 4 600 -1 1 1 1 -1 1 -1 -1 -1"


@pytest.mark.parametrize("line", [
    "1 inf 10 100 4 -1 -1 4 600 -1 1 1 1 -1 1 -1 -1 -1",
    "1 0 10 100 4 -1 -1 4 1e308 -1 1 1 1 -1 1 -1 -1 -1",
    "1 0 10 100 1000000000000000000 -1 -1 1000000000000000000 600 -1 1 1 1 -1 1 -1 -1 -1",
    "1 0 10 9223372036854775808 4 -1 -1 4 600 -1 1 1 1 -1 1 -1 -1 -1",
])
def test_swf_numbers_beyond_a_machine_are_exit_2_naming_the_line(tmp_path, line):
    trace = tmp_path / "t.swf"
    trace.write_text(f"; MaxProcs: 4\n{OK_LINE}\n{line}\n")
    for command in (["history", "import", str(trace), "--history", str(tmp_path / "h.db")],
                    ["swf2lml", str(trace), "-o", str(tmp_path / "x.xml")], ["backtest", str(trace)]):
        done = cli(*command)
        assert done.exit_code == 2 and "line 3" in done.stderr, (command, done.output)
    assert not (tmp_path / "h.db").exists() and not (tmp_path / "x.xml").exists()


def test_an_absurd_unix_start_time_is_exit_2(tmp_path):
    trace = tmp_path / "t.swf"
    trace.write_text(f"; MaxProcs: 4\n; UnixStartTime: {'9' * 5000}\n{OK_LINE}\n")
    done = cli("history", "import", str(trace), "--history", str(tmp_path / "h.db"))
    assert done.exit_code == 2 and "UnixStartTime" in done.stderr


@pytest.mark.parametrize("field, value", [("NCPUS", "1000000000000000000"), ("Timelimit", "99999999-00:00:00"),
                                          ("NNodes", "inf"), ("NCPUS", "7" * 5000), ("Timelimit", "9" * 5000)])
def test_sacct_numbers_beyond_a_machine_are_exit_2(tmp_path, field, value):
    header = "JobID|User|Group|Account|Partition|QOS|NNodes|NCPUS|Timelimit|Submit|Start|End|State"
    row = dict(zip(header.split("|"), ["7", "u", "g", "a", "batch", "normal", "1", "4", "01:00:00",
                                       "2026-01-01T00:00:00", "2026-01-01T00:01:00", "2026-01-01T00:30:00",
                                       "COMPLETED"]))
    row[field] = value
    src = tmp_path / "sacct.txt"
    src.write_text(header + "\n" + "|".join(row.values()) + "\n")
    done = cli("history", "import", str(src), "--history", str(tmp_path / "h.db"))
    assert done.exit_code == 2 and "line 2" in done.stderr and field in done.stderr, done.output
    assert "Exceeds the limit" not in done.stderr  # (Python's words for a number of 4,300 digits)


# -- 14. reading commands need no write access ------------------------------------------------------
def test_history_show_does_not_wait_for_a_writer(tmp_path, history):
    """history show reads without the write lock (it took it, to migrate): while another process
    holds the lock, it answers at once and changes nothing."""
    before = dump(history)
    with lock_held(history):
        began = time.monotonic()
        done = subprocess.run([sys.executable, "-m", "jufo", "history", "show", "--history", str(history), "--json"],
                              capture_output=True, text=True, cwd=ROOT, timeout=60)
        took = time.monotonic() - began
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["counts"]["snapshots"] == 1 and took < 10
    assert dump(history) == before


# -- 15. job ids ---------------------------------------------------------------------------------
SACCT_HEADER = "JobID|User|Group|Account|Partition|QOS|NNodes|NCPUS|Timelimit|Submit|Start|End|State"


def sacct_line(job: str, submit: str) -> str:
    return f"{job}|u|g|a|batch|normal|1|4|01:00:00|{submit}|{submit}|{submit}|COMPLETED"


def test_another_traces_job_with_the_same_id_is_refused_and_nothing_imported(tmp_path):
    first, second = tmp_path / "a.txt", tmp_path / "b.txt"
    first.write_text(f"{SACCT_HEADER}\n{sacct_line('7', '2026-01-01T00:00:00')}\n")
    second.write_text(f"{SACCT_HEADER}\n{sacct_line('8', '2026-01-02T00:00:00')}\n"
                      f"{sacct_line('7', '2026-03-01T00:00:00')}\n")
    h = tmp_path / "h.db"
    assert cli("history", "import", str(first), "--history", str(h)).exit_code == 0
    assert cli("history", "import", str(first), "--history", str(h)).exit_code == 0  # the same again: fine
    before = dump(h)
    done = cli("history", "import", str(second), "--history", str(h))
    assert done.exit_code == 2 and "JobID='7'" in done.stderr and "nothing was imported" in done.stderr
    assert dump(h) == before


def test_a_byte_order_mark_is_read_and_invalid_utf8_refused(tmp_path):
    bom = tmp_path / "bom.txt"
    bom.write_bytes(b"\xef\xbb\xbf" + f"{SACCT_HEADER}\n{sacct_line('7', '2026-01-01T00:00:00')}\n".encode())
    assert cli("history", "import", str(bom), "--history", str(tmp_path / "h.db")).exit_code == 0
    bad = tmp_path / "bad.txt"
    bad.write_bytes(f"{SACCT_HEADER}\n".encode() + b"7\xff|u|g|a|batch|normal|1|4|01:00:00|2026-01-01T00:00:00|"
                    b"2026-01-01T00:00:00|2026-01-01T00:00:00|COMPLETED\n")
    done = cli("history", "import", str(bad), "--history", str(tmp_path / "h2.db"))
    assert done.exit_code == 2 and "line 2" in done.stderr and "not UTF-8" in done.stderr
