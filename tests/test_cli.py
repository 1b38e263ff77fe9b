"""Command behaviour: exit codes, one clear message, no output on failure, validate, summary."""

import subprocess
import sys

import pytest

from click.testing import CliRunner

from conftest import ROOT, SAMPLES, snapshot, waiting
from jufo.cli import main


def test_missing_system_time_is_exit_2_without_output(jufo):
    raw = snapshot({"a": waiting(2, 10)}).replace(b'key="system_time"', b'key="other"')
    run = jufo(raw)
    assert run.exit_code == 2
    assert run.output == b""
    assert run.stderr.strip() == "jufo: error: system sys: system_time: missing; it is the time the prediction starts from"


def test_bad_date_message_names_object_key_value(jufo):
    run = jufo(snapshot({"a": waiting(2, 10)}, system_time="yesterday"))
    assert run.exit_code == 2
    assert "system sys: system_time='yesterday'" in run.stderr
    assert len(run.stderr.strip().splitlines()) == 1


def test_not_xml(jufo):
    run = jufo(b"this is not xml")
    assert run.exit_code == 2 and "not well-formed XML" in run.stderr and run.output == b""


def test_not_lml(jufo):
    run = jufo(b"<html/>")
    assert run.exit_code == 2 and "expected 'lgui'" in run.stderr


def test_missing_input_file(tmp_path):
    from click.testing import CliRunner
    from jufo.cli import main
    result = CliRunner().invoke(main, ["predict", str(tmp_path / "nope.xml"), "-o", str(tmp_path / "o.xml")])
    assert result.exit_code == 2 and "cannot read" in result.stderr
    assert not (tmp_path / "o.xml").exists()


def test_bad_usage_is_exit_2(jufo):
    assert jufo(snapshot({}), "--set", "novalue").exit_code == 2
    assert jufo(snapshot({}), "--nonsense").exit_code == 2


def test_failed_run_keeps_existing_output(tmp_path):
    from click.testing import CliRunner
    from jufo.cli import main
    out = tmp_path / "o.xml"
    out.write_bytes(b"previous")
    bad = tmp_path / "bad.xml"
    bad.write_bytes(snapshot({}, system_time="x"))
    result = CliRunner().invoke(main, ["predict", str(bad), "-o", str(out)])
    assert result.exit_code == 2
    assert out.read_bytes() == b"previous"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.xml", "o.xml"]


def test_refuses_to_overwrite_input(tmp_path):
    from click.testing import CliRunner
    from jufo.cli import main
    src = tmp_path / "in.xml"
    raw = snapshot({"a": waiting(1, 5)})
    src.write_bytes(raw)
    result = CliRunner().invoke(main, ["predict", str(src), "-o", str(src)])
    assert result.exit_code == 2 and "overwrite the input" in result.stderr
    assert src.read_bytes() == raw


def test_verbose_summary(jufo):
    run = jufo((SAMPLES / "thesis-table-3.1.xml").read_bytes(), "-v")
    assert run.exit_code == 0
    assert "6 jobs read (2 running), 4 predicted, 0 not startable" in run.stderr


def test_stdin_to_stdout():
    raw = (SAMPLES / "thesis-listing-7.2.xml").read_bytes()
    done = subprocess.run([sys.executable, "-m", "jufo", "predict", "-", "-o", "-"], input=raw,
                          capture_output=True, cwd=ROOT, check=True)
    assert b'key="jufo_starttime" value="11/24/11-15:00:05"' in done.stdout
    assert done.stderr == b""


def test_internal_error_is_exit_1_without_traceback(jufo, monkeypatch):
    import jufo.forecast as forecast

    def broken(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(forecast, "predict", broken)
    run = jufo(snapshot({}))
    assert run.exit_code == 1
    assert "internal error: RuntimeError: boom" in run.stderr and "Traceback" not in run.stderr
    assert run.output == b""


@pytest.mark.parametrize("sample", sorted(p.name for p in SAMPLES.glob("*.xml")))
def test_validate_samples(jufo, sample):
    run = jufo((SAMPLES / sample).read_bytes(), command="validate")
    assert run.exit_code == 0, run.stdout + run.stderr
    assert "valid" in run.stdout


def test_validate_lists_every_problem(jufo):
    raw = snapshot(
        {"a": waiting(2, "soon"), "b": waiting(9, 10), "c": {"state": "Idle", "wall": 5, "nummachines": "x"}},
        nodes={"n1": {"ncores": "four"}, "n2": 4},
        scheduler={"scheduling_algorithm": "Fastest", "maxtopdogs": "-1"},
    ).replace(b"</information>", b'<info oid="ghost"><data key="x" value="1"/></info>\n</information>')
    run = jufo(raw, command="validate")
    assert run.exit_code == 2
    out = run.stdout
    assert "schema:" in out and "ghost" in out
    assert "node n1: ncores='four'" in out
    assert "scheduling_algorithm='Fastest'" in out and "maxtopdogs='-1'" in out
    assert "job a: wall='soon'" in out
    assert "job c: nummachines='x'" in out
    # requests are checked against the machine once the file has no fatal problem left
    fixed = raw.replace(b'value="four"', b'value="4"').replace(b'value="Fastest"', b'value="FCFS"')
    out2 = jufo(fixed.replace(b'value="-1"', b'value="1"'), command="validate").stdout
    assert "job b: ExceedsSystem: asks 9 cores per node, the largest node has 4" in out2


def test_a_command_collects_cycles_rarely_and_restores_the_collector_after(monkeypatch, tmp_path):
    """Commands raise the cyclic collector's thresholds (they build millions of long-lived
    objects and few cycles) and give a caller in the same process its own back, also on error."""
    import gc

    from jufo import cli
    from jufo.io import lml

    seen = []
    read_all = lml.read_all

    def spying(*args, **kwargs):
        seen.append(gc.get_threshold())
        return read_all(*args, **kwargs)

    monkeypatch.setattr(lml, "read_all", spying)
    before = gc.get_threshold()
    from click.testing import CliRunner

    sample = SAMPLES / "thesis-listing-7.2.xml"
    ok = CliRunner().invoke(cli.main, ["predict", str(sample), "-o", str(tmp_path / "out.xml"), "-q"])
    bad = CliRunner().invoke(cli.main, ["predict", str(tmp_path / "missing.xml"), "-o", str(tmp_path / "o.xml")])
    assert (ok.exit_code, bad.exit_code) == (0, 2)
    assert seen == [cli.GC_THRESHOLDS] * 2 and gc.get_threshold() == before != cli.GC_THRESHOLDS


def test_the_version_in_outputs_is_the_installed_packages():
    """Outputs name ``jufo.__version__`` (no metadata lookup at run time); pyproject.toml reads
    the package's version from it, so the two cannot drift apart."""
    from importlib import metadata

    import jufo

    assert jufo.__version__ == metadata.version("jufo")


def test_flags_mean_the_same_everywhere(tmp_path):
    """Issue 35, item 6: -o is the output in every command (show's column format is --format;
    -o with a format still works, with a warning); -j names job ids (backtest's processes are
    -P, -j there still works, with a warning); a .swf given to predict points to swf2lml; a
    wrong preset name lists the presets, which jufo presets describes."""
    from conftest import SAMPLES

    src = SAMPLES / "thesis-listing-7.2.xml"
    out = tmp_path / "p.xml"
    assert CliRunner().invoke(main, ["predict", str(src), "-o", str(out), "-q"]).exit_code == 0
    old = CliRunner().invoke(main, ["show", str(out), "-o", "%i %S"])
    assert old.exit_code == 0 and "deprecated" in old.stderr and old.stdout.split()[:2] == ["JOBID", "START_TIME"]
    table = tmp_path / "show.txt"
    new = CliRunner().invoke(main, ["show", str(out), "--format", "%i %S", "-o", str(table)])
    assert new.exit_code == 0 and new.stdout == "" and table.read_text() == old.stdout
    assert CliRunner().invoke(main, ["show", str(out), "-o", str(out)]).exit_code == 2  # never over the input
    trace = tmp_path / "t.swf"
    trace.write_text("; MaxProcs: 4\n1 0 60 100 1 -1 -1 1 200 -1 1 1 1 -1 1 -1 -1 -1\n")
    result = CliRunner().invoke(main, ["backtest", str(trace), "-j", "1"])
    assert result.exit_code in (0, 2) and "use -P/--processes" in result.stderr
    result = CliRunner().invoke(main, ["predict", str(trace), "-o", str(tmp_path / "x.xml")])
    assert result.exit_code == 2 and "jufo swf2lml" in result.stderr
    result = CliRunner().invoke(main, ["predict", str(src), "--config", "nosuch", "-o", str(tmp_path / "x.xml")])
    assert result.exit_code == 2 and "juropa-moab" in result.stderr and "jufo presets" in result.stderr
    listed = CliRunner().invoke(main, ["presets"])
    assert listed.exit_code == 0 and any(line.startswith("juropa-moab ") for line in listed.stdout.splitlines())
    assert CliRunner().invoke(main, ["presets", "--json"]).stdout.startswith('{"schema": "jufo.v1", "command": "presets"')
