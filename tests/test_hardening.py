"""Hostile and absurd input: one clear message and exit 2 (or a warning), fast, small, and never
a file that does not parse."""

import time

import pytest
from click.testing import CliRunner
from lxml import etree

from conftest import SAMPLES, predictions, running, snapshot, waiting
from jufo.cli import main
from jufo.io.dates import format_date, parse_date


def run(tmp_path, raw: bytes, *options: str):
    src, out = tmp_path / "in.xml", tmp_path / "out.xml"
    src.write_bytes(raw)
    began = time.perf_counter()
    result = CliRunner().invoke(main, ["predict", str(src), "-o", str(out), *options])
    return result, out, time.perf_counter() - began


@pytest.mark.parametrize("formula, message", [
    ("(10**9999)**9999", "overflows"),
    ("10**400", "overflows"),
    ("+".join(["wall"] * 1000), "longer than"),
    ("+".join(["wall"] * 500), "too large"),
    ("(" * 300 + "wall" + ")" * 300, ""),
])
def test_formulas_that_would_stall_or_overflow_are_refused_at_once(tmp_path, formula, message):
    result, out, seconds = run(tmp_path, snapshot({"a": waiting(1, 60)}, scheduler={"system_sysprio": formula}))
    assert result.exit_code == 2, result.stderr
    assert message in result.stderr and "system_sysprio" in result.stderr and len(result.stderr.splitlines()) == 1
    assert len(result.stderr) < 500  # the value is cut in the message
    assert not out.exists() and seconds < 5


@pytest.mark.parametrize("key, value", [("ncores", "1e10"), ("ncores", "inf"), ("ncores", "nan"),
                                        ("ncores", "9" * 400), ("ncores", "-4")])
def test_absurd_node_sizes_are_exit_2_naming_the_key(tmp_path, key, value):
    result, out, seconds = run(tmp_path, snapshot({"a": waiting(1, 60)}, nodes={"n1": {key: value}}))
    assert result.exit_code == 2
    assert f"node n1: {key}=" in result.stderr and not out.exists() and seconds < 5


@pytest.mark.parametrize("key", ["nummachines", "taskspernode", "totalcores", "wall", "tpt"])
@pytest.mark.parametrize("value", ["inf", "nan", "1e30", "9" * 400])
def test_absurd_job_numbers_never_crash(tmp_path, key, value):
    """The job gets a BadInput reason naming the key (the others are still forecast)."""
    job = {**waiting(1, 60), key: value}
    if key == "tpt":  # read only with totaltasks and no per-node count
        del job["taskspernode"]
        job["totaltasks"] = "2"
    result, out, seconds = run(tmp_path, snapshot({"a": job, "b": waiting(1, 60)}))
    assert result.exit_code == 0, result.stderr
    assert seconds < 5
    got = predictions(out.read_bytes())
    assert got["a"]["jufo_reason"].startswith(f"BadInput: {key}:"), got["a"]
    assert "jufo_starttime" in got["b"]


def test_a_hostlist_naming_millions_of_nodes_is_refused_unexpanded(tmp_path):
    res = {"r1": {"starttime": "01/10/12-12:00:00", "wall": "3600", "nodelist": "n[0-30000000]"}}
    result, out, seconds = run(tmp_path, snapshot({"a": waiting(1, 60)}, reservations=res))
    assert result.exit_code == 0 and "names more than" in result.stderr and seconds < 5


def test_a_core_range_beyond_the_node_is_refused_without_building_it(tmp_path):
    jobs = {"r": running(1, 600, nodelist="(1(1-20000000000))")}
    result, out, seconds = run(tmp_path, snapshot(jobs))
    assert "beyond node 1's 4 cores" in result.stderr and seconds < 5 and "internal error" not in result.stderr


@pytest.mark.parametrize("args, message", [
    (["predict", "/dev/zero"], "a device, not a file"),
    (["predict", str(SAMPLES / "slurm-adapter.xml"), "--config", "/dev/zero"], "a device, not a file"),
    (["swf2lml", "/dev/zero"], "longer than"),
])
def test_endless_inputs_are_refused(args, message):
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2 and message in result.stderr


def test_a_trace_asking_for_fifty_million_nodes_is_refused(tmp_path):
    trace = tmp_path / "t.swf"
    trace.write_text("; MaxProcs: 50000000\n1 0 0 10 1 -1 -1 1 100 -1 1 1 1 -1 1 -1 -1 -1\n")
    result = CliRunner().invoke(main, ["swf2lml", str(trace)])
    assert result.exit_code == 2 and "MaxProcs" in result.stderr
    result = CliRunner().invoke(main, ["swf2lml", str(trace), "--nodes", "100000000"])
    assert result.exit_code == 2 and "--nodes" in result.stderr


@pytest.mark.parametrize("doctype", ['<!DOCTYPE lgui [<!-- ] -->]>', '<!DOCTYPE lgui SYSTEM "a>b.dtd">',
                                     '<!DOCTYPE lgui SYSTEM "a[b.dtd">'])
def test_a_doctype_never_gives_output_that_does_not_parse(tmp_path, doctype):
    raw = snapshot({"a": waiting(1, 60)})
    i = raw.index(b"?>") + 2
    result, out, _ = run(tmp_path, raw[:i] + b"\n" + doctype.encode() + raw[i:])
    assert result.exit_code == 0, result.stderr
    assert predictions(out.read_bytes())["a"]["jufo_starttime"]


def test_dates_after_2068_read_back_to_the_same_instant():
    for epoch in (3155760000, 4102444800, -86400):
        text = format_date(epoch, "%m/%d/%y-%H:%M:%S")
        assert parse_date(text)[0] == epoch


@pytest.mark.parametrize("value", ["inf", "abc", "1e30"])
@pytest.mark.parametrize("command", [["gantt", "-o", "{tmp}/g.svg"], ["evaluate", "--actual", "{pred}"], ["show"]])
def test_views_of_a_file_with_absurd_numbers_never_crash(tmp_path, value, command):
    pred = tmp_path / "p.xml"
    assert CliRunner().invoke(main, ["predict", str(SAMPLES / "slurm-adapter.xml"), "-o", str(pred)]).exit_code == 0
    bad = tmp_path / "bad.xml"
    bad.write_bytes(pred.read_bytes().replace(b'key="ncores" value="128"', f'key="ncores" value="{value}"'.encode()))
    args = [a.replace("{tmp}", str(tmp_path)).replace("{pred}", str(pred)) for a in command]
    result = CliRunner().invoke(main, [args[0], str(bad), *args[1:]])
    assert result.exit_code in (0, 2) and "internal error" not in result.stderr, result.stderr
    if result.exit_code == 2:
        assert "ncores" in result.stderr


def test_a_trace_repeating_a_job_number_gives_unique_ids(tmp_path):
    trace = tmp_path / "dup.swf"
    trace.write_text("; MaxProcs: 4\n1 0 0 10 1 -1 -1 1 100 -1 1 1 1 -1 1 -1 -1 -1\n"
                     "1 5 0 10 1 -1 -1 1 100 -1 1 1 1 -1 1 -1 -1 -1\n")
    out = tmp_path / "dup.xml"
    assert CliRunner().invoke(main, ["swf2lml", str(trace), "--at", "6", "-o", str(out), "-q"]).exit_code == 0
    ids = [o.get("id") for o in etree.parse(str(out)).iter("{*}object") if o.get("type") == "job"]
    assert ids == ["j1", "j1_2"]
    assert CliRunner().invoke(main, ["predict", str(out), "-o", str(tmp_path / "p.xml")]).exit_code == 0


def test_validate_never_passes_what_predict_refuses(tmp_path):
    import random

    from test_fuzz import SAMPLE_FILES, mutate

    for case in range(60):
        rng = random.Random(10_000 + case)
        (tmp_path / "in.xml").write_bytes(mutate(rng.choice(SAMPLE_FILES).read_bytes(), rng))
        predicted = CliRunner().invoke(main, ["predict", str(tmp_path / "in.xml"), "-o", str(tmp_path / "o.xml"), "-q"])
        validated = CliRunner().invoke(main, ["validate", str(tmp_path / "in.xml")])
        assert not (predicted.exit_code == 2 and validated.exit_code == 0), (case, predicted.stderr)


def test_a_system_time_too_late_to_write_back_is_exit_2(tmp_path):
    result, out, _ = run(tmp_path, snapshot({"a": waiting(1, 60)}, system_time="9999-12-31 23:00:00"))
    assert result.exit_code == 2 and "system_time=" in result.stderr and "year 9000" in result.stderr
    assert not out.exists()


@pytest.mark.parametrize("key, value", [("gpus", "inf"), ("physmem", "1e400"), ("physmem", "9" * 400 + " gb")])
def test_absurd_node_extras_are_warnings_naming_the_key(tmp_path, key, value):
    result, out, _ = run(tmp_path, snapshot({"a": waiting(1, 60)}, nodes={"n1": {"ncores": 4, key: value}}))
    assert result.exit_code == 0 and f"node n1: {key}=" in result.stderr and "internal error" not in result.stderr
