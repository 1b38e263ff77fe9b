"""The LLview 2 workflow step of docs/llview2.md, run as written on LLview-2-shaped files: jufo's
keys land in jobs_LML.xml and nothing else changes; when jufo fails, the adapter's files flow
on untouched (issue 35, item 1)."""

from __future__ import annotations

import html
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from conftest import ROOT, SAMPLES
from jufo.io import lml

FILES = ("jobs_LML.xml", "nodes_LML.xml", "sysinfo_LML.xml", "reservation_LML.xml", "classes_LML.xml")


def step_command() -> str:
    """The step's command, as docs/llview2.md writes it (XML-unescaped)."""
    doc = (ROOT / "docs" / "llview2.md").read_text(encoding="utf-8")
    block = re.search(r"<!-- jufo-step -->\s*<cmd exec=\"(.*?)\"/>\s*<!-- /jufo-step -->", doc, re.S)
    assert block, "docs/llview2.md lost its step"
    return html.unescape(block.group(1))


def run_step(tmp_path: Path, command: str) -> subprocess.CompletedProcess:
    """LML_da runs a step's cmd through the shell, with its vardefs substituted."""
    jufodir = tmp_path / "jufo"
    jufodir.mkdir(exist_ok=True)
    shutil.copy(ROOT / "tests" / "data" / "slurm" / "site.xml", jufodir / "site.xml")
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    (bindir / "jufo").write_text(f"#!/bin/sh\nexec {sys.executable} -m jufo \"$@\"\n")
    (bindir / "jufo").chmod(0o755)
    cmd = command.replace("$tmpdir", str(tmp_path / "tmp")).replace("$jufodir", str(jufodir))
    env = {**os.environ, "PATH": f"{bindir}:{os.environ['PATH']}"}
    return subprocess.run(["sh", "-c", cmd], capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)


def adapter_output(tmp_path: Path) -> Path:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    for name in FILES:
        shutil.copy(SAMPLES / "llview2" / name, tmp / name)
    (tmp / "jobs_step_LML.xml").write_text("<steps/>\n")
    return tmp


def test_the_step_adds_jufos_keys_to_jobs_lml_and_nothing_else(tmp_path):
    tmp = adapter_output(tmp_path)
    before = {p.name: p.read_bytes() for p in tmp.iterdir()}
    done = run_step(tmp_path, step_command())
    assert done.returncode == 0, done.stderr
    after = {p.name: p.read_bytes() for p in tmp.iterdir()}
    assert set(after) == set(before)  # no file left behind, none added
    assert {n for n in after if after[n] != before[n]} == {"jobs_LML.xml"}
    jobs = {o.data["step"]: o.data for o in lml.read(str(tmp / "jobs_LML.xml")).of_type("job")}
    direct = tmp_path / "direct.xml"  # the same prediction, all five files merged into one output
    assert subprocess.run([sys.executable, "-m", "jufo", "predict", *(str(SAMPLES / "llview2" / n) for n in FILES),
                           "--config", str(tmp_path / "jufo" / "site.xml"), "-q", "-o", str(direct)]).returncode == 0
    merged = {o.data["step"]: o.data for o in lml.read(str(direct)).of_type("job")}
    assert {k: v.get("jufo_starttime") for k, v in jobs.items()} == \
           {k: v.get("jufo_starttime") for k, v in merged.items()}
    assert jobs["1300"]["jufo_starttime"] >= jobs["1001"]["jufo_endtime"]  # after 1001, its dependency
    assert jobs["1400"]["jufo_reason"].startswith("Held")
    without = b"\n".join(line for line in after["jobs_LML.xml"].split(b"\n") if b'key="jufo_' not in line)
    assert without == before["jobs_LML.xml"]  # every other byte as the adapter wrote it
    assert (tmp_path / "jufo" / "history.db").exists()


def test_when_jufo_fails_the_adapters_files_flow_on(tmp_path):
    tmp = adapter_output(tmp_path)
    (tmp / "sysinfo_LML.xml").write_text("<not lml")  # a broken file: jufo exits 2
    before = {p.name: p.read_bytes() for p in tmp.iterdir()}
    done = run_step(tmp_path, step_command())
    assert done.returncode == 0  # || true: the workflow goes on
    assert "jufo: error" in done.stderr
    assert {p.name: p.read_bytes() for p in tmp.iterdir()} == before
