"""jufo show on predicted files; show, gantt and evaluate refuse files without predictions."""

import json
import re

import pytest
from click.testing import CliRunner

from conftest import SAMPLES, snapshot, waiting
from jufo.cli import main


def test_show_sorted_by_predicted_start(predicted):
    result = CliRunner().invoke(main, ["show", str(predicted)])
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["JOBID", "PARTITION", "NAME", "USER", "ST", "START_TIME", "END_TIME", "NODES",
                                "SCHEDNODES", "NODELIST(REASON)"]
    assert [line.split()[0] for line in lines[1:-1]] == ["j4", "j5", "j1", "j6"]
    # reasons as squeue's: j4 starts now (backfilled), j5 holds the one reservation (maxtopdogs=1)
    assert lines[1].split()[-1] == "(StartsNow)" and lines[2].split()[-1] == "(Resources)"
    assert [line.split()[-1] for line in lines[3:-1]] == ["(Priority)", "(Priority)"]
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
