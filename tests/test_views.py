"""jufo show and jufo gantt on predicted files."""

import json
import re

import pytest
from click.testing import CliRunner
from lxml import etree

from conftest import SAMPLES, snapshot, waiting
from jufo.cli import main


@pytest.fixture
def predicted(tmp_path):
    out = tmp_path / "pred.xml"
    result = CliRunner().invoke(main, ["predict", str(SAMPLES / "thesis-table-3.1.xml"), "-o", str(out)])
    assert result.exit_code == 0
    return out


def test_show_sorted_by_predicted_start(predicted):
    result = CliRunner().invoke(main, ["show", str(predicted)])
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["JOBID", "PARTITION", "NAME", "USER", "ST", "START_TIME", "END_TIME", "NODES",
                                "SCHEDNODES", "NODELIST(REASON)"]
    assert [line.split()[0] for line in lines[1:-1]] == ["j4", "j5", "j1", "j6"]
    assert lines[1].split()[-1] == "(Backfilled)" and lines[2].split()[-1] == "(TopDog)"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d", lines[1].split()[5])  # ISO, whatever the input's format
    assert lines[-1].startswith("4 waiting: 4 predicted, 0 cannot start; latest start ")


def test_show_filters_and_reasons(tmp_path):
    src, out = tmp_path / "in.xml", tmp_path / "out.xml"
    src.write_bytes(snapshot({"a": waiting(1, 10, owner="ann"), "b": waiting(9, 10, owner="bob"),
                              "c": waiting(1, 10, owner="cy", queue="small")}))
    CliRunner().invoke(main, ["predict", str(src), "-o", str(out)])
    text = CliRunner().invoke(main, ["show", str(out)]).stdout
    assert text.splitlines()[-2].startswith("b ") and "(ExceedsSystem" in text
    assert "1 cannot start" in text.splitlines()[-1]
    only_ann = CliRunner().invoke(main, ["show", str(out), "--user", "ann,cy"]).stdout
    assert [l.split()[0] for l in only_ann.splitlines()[1:-1]] == ["a", "c"]
    assert CliRunner().invoke(main, ["show", str(out), "-p", "small"]).stdout.splitlines()[1].startswith("c ")
    assert CliRunner().invoke(main, ["show", str(out), "-j", "a,b"]).stdout.splitlines()[-1].startswith("2 waiting")
    assert len(CliRunner().invoke(main, ["show", str(out), "--queue", "none"]).stdout.splitlines()) == 2
    custom = CliRunner().invoke(main, ["show", str(out), "--format", "%.10i %u %S %w"]).stdout.splitlines()
    assert custom[0].split() == ["JOBID", "USER", "START_TIME", "WAIT"]
    bad = CliRunner().invoke(main, ["show", str(out), "--format", "%i %Q"])
    assert bad.exit_code == 2 and "%Q is not a field" in bad.stderr


def test_show_json(predicted):
    result = CliRunner().invoke(main, ["show", str(predicted), "--json"])
    data = json.loads(result.stdout)
    assert data["waiting"] == 4 and data["predicted"] == 4 and data["cannot_start"] == 0
    assert [j["job"] for j in data["jobs"]] == ["j4", "j5", "j1", "j6"]
    assert data["jobs"][1]["topdog"] is True and data["jobs"][0]["backfilled"] is True
    assert data["latest_start"] == data["jobs"][-1]["start"]


@pytest.mark.parametrize("command", [["show"], ["gantt", "-o", "{tmp}/g.svg"], ["evaluate", "--actual", "{src}"]])
def test_views_of_a_file_without_predictions_say_so(tmp_path, command):
    src = SAMPLES / "slurm-adapter.xml"
    args = [a.replace("{tmp}", str(tmp_path)).replace("{src}", str(src)) for a in command]
    result = CliRunner().invoke(main, [args[0], str(src), *args[1:]])
    assert result.exit_code == 2 and "run jufo predict first" in result.stderr, result.stderr
    assert not (tmp_path / "g.svg").exists()


def test_gantt_svg(predicted, tmp_path):
    out = tmp_path / "chart.svg"
    result = CliRunner().invoke(main, ["gantt", str(predicted), "-o", str(out)])
    assert result.exit_code == 0, result.stderr
    root = etree.parse(str(out)).getroot()
    titles = [t.text for t in root.iter("{http://www.w3.org/2000/svg}title")]
    # 6 jobs; on one 5-core node every core range is a box of its own
    assert sum(t.startswith("j5 ") for t in titles) == 2  # cores 1-2 and 4
    assert any(t.startswith("j2 ") and t.endswith("running") for t in titles)
    assert any("top dog" in t for t in titles)


def test_gantt_html_and_bad_name(predicted, tmp_path):
    out = tmp_path / "chart.html"
    assert CliRunner().invoke(main, ["gantt", str(predicted), "-o", str(out)]).exit_code == 0
    assert out.read_text().startswith("<!DOCTYPE html>") and "<svg" in out.read_text()
    bad = CliRunner().invoke(main, ["gantt", str(predicted), "-o", str(tmp_path / "chart.pdf")])
    assert bad.exit_code == 2 and ".svg, .html or .png" in bad.stderr


def test_gantt_png(predicted, tmp_path):
    pytest.importorskip("matplotlib")
    out = tmp_path / "chart.png"
    assert CliRunner().invoke(main, ["gantt", str(predicted), "-o", str(out)]).exit_code == 0
    assert out.read_bytes().startswith(b"\x89PNG")


def test_gantt_png_without_matplotlib(predicted, tmp_path, monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_matplotlib(name, *args, **kwargs):
        if name.startswith("matplotlib"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    result = CliRunner().invoke(main, ["gantt", str(predicted), "-o", str(tmp_path / "c.png")])
    assert result.exit_code == 2 and "pip install 'jufo[plot]'" in result.stderr
    assert not (tmp_path / "c.png").exists()


def test_gantt_attribute_state(tmp_path):
    src, out, chart = tmp_path / "in.xml", tmp_path / "out.xml", tmp_path / "c.svg"
    src.write_bytes(snapshot({"a": waiting(2, 10), "b": waiting(4, 10, queued="01/10/12-11:30:00")},
                             scheduler={"system_state": "AttributeState"}))
    CliRunner().invoke(main, ["predict", str(src), "-o", str(out)])
    assert CliRunner().invoke(main, ["gantt", str(out), "-o", str(chart)]).exit_code == 0
    assert "cores" in chart.read_text()


def test_gantt_draws_reservations_in_every_form(tmp_path):
    """Reservations are read as the forecast reads them: wall instead of endtime, hostlists."""
    res = {"maint": {"starttime": "01/10/12-12:00:10", "wall": "00:00:30", "nodelist": "n[1-2]"}}
    src, out, chart = tmp_path / "in.xml", tmp_path / "out.xml", tmp_path / "c.svg"
    src.write_bytes(snapshot({"a": waiting(1, 10)}, nodes={"n1": 2, "n2": 2}, reservations=res))
    CliRunner().invoke(main, ["predict", str(src), "-o", str(out)])
    assert CliRunner().invoke(main, ["gantt", str(out), "-o", str(chart)]).exit_code == 0
    root = etree.parse(str(chart)).getroot()
    titles = [t.text for t in root.iter("{http://www.w3.org/2000/svg}title")]
    assert titles.count("reservation maint 01/10/12-12:00:10 – 01/10/12-12:00:40") == 2  # one per node
