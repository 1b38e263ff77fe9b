"""Helpers: build snapshots, run the CLI in-process, read predictions back."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import os

import pytest
from click.testing import CliRunner
from lxml import etree

from jufo.io import lml
from jufo.cli import main
from jufo.io.dates import parse_date

# outputs carry jufo_generated, the time of the run; pinned so that tests comparing bytes of
# two runs cannot straddle a second (test_cron checks the unpinned stamp)
os.environ.setdefault("SOURCE_DATE_EPOCH", "1767225600")

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_lml"
OFFICIAL_XSD = ROOT.parent / "shared" / "lml-schema" / "lgui.xsd"
T0 = "01/10/12-12:00:00"


def snapshot(jobs: dict[str, dict], nodes: dict[str, dict] | None = None, scheduler: dict | None = None,
             queues: dict[str, dict] | None = None, reservations: dict[str, dict] | None = None,
             system_time: str = T0, namespace: str | None = lml.LML_NS) -> bytes:
    """A raw LML snapshot; node values may be an int (ncores)."""
    objects = [("sys", "system", {"system_time": system_time})]
    if scheduler is not None:
        objects.append(("sched", "scheduler", {k: str(v) for k, v in scheduler.items()}))
    for name, data in (nodes or {"n1": {"ncores": 4}}).items():
        objects.append((name, "node", data if isinstance(data, dict) else {"ncores": data}))
    for name, data in (queues or {}).items():
        objects.append((name, "queue", data))
    for name, data in (reservations or {}).items():
        objects.append((name, "reservation", data))
    for name, data in jobs.items():
        objects.append((name, "job", {k: str(v) for k, v in data.items()}))
    return lml.build(objects, namespace)


def waiting(cores: int, wall: int, queued: str = "01/10/12-11:00:00", nodes: int = 1, **extra) -> dict:
    return {"state": "Idle", "owner": "u", "queue": "batch", "queuedate": queued, "wall": wall,
            "nummachines": nodes, "taskspernode": cores, **extra}


def running(cores: int, ends_in: int, wall: int = 100, nodes: int = 1, **extra) -> dict:
    """A running job that ends ``ends_in`` seconds after T0."""
    start = parse_date(T0)[0] + ends_in - wall
    from jufo.io.dates import format_date
    return {"state": "Running", "owner": "r", "queue": "batch", "queuedate": "01/10/12-10:00:00",
            "dispatchdate": format_date(start, "%m/%d/%y-%H:%M:%S"), "wall": wall,
            "nummachines": nodes, "taskspernode": cores, **extra}


@dataclass
class Run:
    exit_code: int
    output: bytes
    stderr: str
    stdout: str

    @property
    def jobs(self) -> dict[str, dict[str, str]]:
        """jufo_* data per job id."""
        return predictions(self.output)

    def start(self, job: str) -> int | None:
        value = self.jobs[job].get("jufo_starttime")
        return None if value is None else parse_date(value)[0] - parse_date(T0)[0]


def predictions(xml: bytes) -> dict[str, dict[str, str]]:
    root = etree.fromstring(xml)
    out: dict[str, dict[str, str]] = {}
    for info in root.iter("info", "{*}info"):
        for data in info:
            key = data.get("key", "")
            if key.startswith("jufo_"):
                out.setdefault(info.get("oid"), {})[key] = data.get("value")
    return out


@pytest.fixture
def jufo(tmp_path):
    """Run ``jufo predict`` on bytes (or ``jufo ARGS`` with ``args=``) in-process."""

    def run(raw: bytes | None = None, *options: str, command: str = "predict") -> Run:
        src = tmp_path / "in.xml"
        out = tmp_path / "out.xml"
        if out.exists():
            out.unlink()
        if raw is not None:
            src.write_bytes(raw)
        args = [command, str(src)]
        if command == "predict":
            args += ["-o", str(out)]
        result = CliRunner().invoke(main, args + list(options))
        output = out.read_bytes() if out.exists() else b""
        return Run(result.exit_code, output, result.stderr, result.stdout)

    return run


@pytest.fixture
def predicted(tmp_path):
    """Thesis table 3.1 predicted with its own configuration: the views' common input."""
    out = tmp_path / "pred.xml"
    result = CliRunner().invoke(main, ["predict", str(SAMPLES / "thesis-table-3.1.xml"), "-o", str(out)])
    assert result.exit_code == 0
    return out


def dump(path) -> list:
    """Every row of every table of an SQLite file: what "changes nothing" compares."""
    import sqlite3

    db = sqlite3.connect(path)
    try:
        tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")]
        return [(t, db.execute(f"SELECT * FROM {t} ORDER BY 1, 2").fetchall()) for t in tables]
    finally:
        db.close()
