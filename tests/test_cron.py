"""What an admin running jufo from cron needs: a time limit, metrics, one-line usage errors."""

import os
import subprocess
import sys

from click.testing import CliRunner

from conftest import ROOT, SAMPLES
from jufo.cli import EXIT_TIMEOUT, main

SAMPLE = SAMPLES / "slurm-adapter.xml"


def test_timeout_gives_its_own_exit_status_and_no_output(tmp_path):
    big = tmp_path / "big.xml"
    subprocess.run([sys.executable, "-m", "benchmarks.bench", "juropa", "--write", str(big)], check=True, cwd=ROOT)
    # the whole command takes 0.35 s on a fast machine (0.3 s passed there): the limit is a tenth
    # of what reading and simulating the snapshot take after it is set
    run = subprocess.run([sys.executable, "-m", "jufo", "predict", str(big), "-o", str(tmp_path / "out.xml"),
                          "--timeout", "0.02"], capture_output=True)
    assert run.returncode == EXIT_TIMEOUT == 124
    assert run.stderr.decode().strip() == "jufo: error: the run passed its --timeout; no output written"
    assert sorted(os.listdir(tmp_path)) == ["big.xml"]


def test_metrics_textfile(tmp_path):
    prom = tmp_path / "jufo.prom"
    result = CliRunner().invoke(main, ["predict", str(SAMPLE), "-o", str(tmp_path / "o.xml"), "--metrics", str(prom)])
    assert result.exit_code == 0, result.stderr
    values = dict(line.split() for line in prom.read_text().splitlines() if not line.startswith("#"))
    assert values["jufo_jobs_read"] == "2" and values["jufo_jobs_predicted"] == "1"
    assert values["jufo_jobs_unstartable"] == "0" and int(values["jufo_peak_memory_bytes"]) > 0
    assert float(values["jufo_last_success_timestamp_seconds"]) > 1.7e9
    assert sorted(os.listdir(tmp_path)) == ["jufo.prom", "o.xml"]


def test_no_metrics_on_failure(tmp_path):
    prom = tmp_path / "jufo.prom"
    bad = tmp_path / "bad.xml"
    bad.write_text("not xml")
    result = CliRunner().invoke(main, ["predict", str(bad), "-o", str(tmp_path / "o.xml"), "--metrics", str(prom)])
    assert result.exit_code == 2 and not prom.exists()


def test_usage_errors_are_one_line_exit_2():
    for args in (["predict"], ["predict", "--bogus", "x"], ["nosuchcommand"]):
        run = subprocess.run([sys.executable, "-m", "jufo", *args], capture_output=True)
        lines = run.stderr.decode().splitlines()
        assert run.returncode == 2 and len(lines) == 1 and lines[0].startswith("jufo: error: "), lines


def test_provenance_in_the_system_object(tmp_path, monkeypatch):
    import calendar
    import time

    from lxml import etree

    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    out = tmp_path / "o.xml"
    before = int(time.time())
    result = CliRunner().invoke(main, ["predict", str(SAMPLE), "-o", str(out), "--set", "maxtopdogs=all"])
    assert result.exit_code == 0, result.stderr
    data = {d.get("key"): d.get("value") for d in etree.parse(str(out)).iter("{*}data", "data")}
    assert data["jufo_version"] and "maxtopdogs=all" in data["jufo_settings"]
    stamp = calendar.timegm(time.strptime(data["jufo_generated"], "%Y-%m-%dT%H:%M:%SZ"))
    assert before - 2 <= stamp <= time.time() + 2
