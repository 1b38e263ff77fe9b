"""One prediction end to end: snapshot → scheduling objects → simulation → result data.

This is the glue the commands call; each step lives in its own room: reading in ``io``,
building and simulating in ``engine`` (``snapshot``, ``prediction``).
"""

from __future__ import annotations

import os
import time

from . import __version__
from .engine.configuration import Configuration, check_keys
from .engine.job import Job
from .engine.prediction import Forecast, simulate
from .engine.snapshot import prepare
from .io.errors import InputError, Report
from .io.lml import Document


PRESET_LIMIT = 16 * 2**20  # bytes: a preset is one scheduler object


def load_preset(name: str) -> dict[str, str]:
    """Scheduler keys of a preset: an LML file with one scheduler object, by path or by the
    name of a file in ``configs/`` (``juropa-moab``). InputError (exit 2) if there is none."""
    from pathlib import Path

    from .io.lml import read

    path = Path(name)
    if not path.exists():
        local = Path(__file__).resolve().parent.parent / "configs" / f"{name.removesuffix('.xml')}.xml"
        if local.exists():
            path = local
        else:
            from importlib import resources

            try:
                packaged = resources.files("jufo.configs") / f"{name.removesuffix('.xml')}.xml"
                found = packaged.is_file()
            except ModuleNotFoundError:
                found = False
            if not found:
                names = ", ".join(name for name, _ in presets())
                raise InputError(name, "--config", name, f"no such file, nor a preset of that name (jufo presets "
                                 f"describes them: {names})")
            path = Path(str(packaged))
    doc = read(str(path), limit=PRESET_LIMIT)
    schedulers = doc.of_type("scheduler")
    if not schedulers:
        raise InputError(str(path), "scheduler", None, "a preset needs one scheduler object")
    settings: dict[str, str] = {}
    for obj in schedulers:
        settings.update(obj.data)
    check_keys(settings, str(path))
    return settings


def presets() -> list[tuple[str, str]]:
    """Each shipped preset's name and the first sentence of its comment, by name."""
    import re
    from importlib import resources
    from pathlib import Path

    local = Path(__file__).resolve().parent.parent / "configs"
    try:
        folder = local if local.is_dir() else resources.files("jufo.configs")
        files = [f for f in folder.iterdir() if f.name.endswith(".xml")]
    except (ModuleNotFoundError, OSError):
        return []
    out = []
    for f in files:
        head = f.read_text(encoding="utf-8")[:4000]
        m = re.search(r"<!--(.*?)-->", head, re.S)
        text = " ".join(m.group(1).split()) if m else ""
        first = re.split(r"(?<=[.])\s", text, maxsplit=1)[0] if text else ""
        out.append((f.name.removesuffix(".xml"), first))
    return sorted(out)


def predict(doc: Document, report: Report, overrides: dict[str, str] | None = None,
            progress=None, jobs: list[Job] | None = None) -> Forecast | None:
    """Simulate the document's scheduler. None only when collecting errors (validate).
    ``progress(started, queued)`` is called now and then during long runs; ``jobs`` see
    ``read_snapshot``."""
    prepared = prepare(doc, report, overrides, jobs)
    if prepared is None:
        return None
    snap, config = prepared
    return simulate(snap, config, report, progress)


def provenance(doc: Document, config: Configuration) -> dict[str, list[tuple[str, str]]]:
    """What the system object gets, so a stale output can be told from a fresh one: the jufo
    version, when the run happened (UTC; ``SOURCE_DATE_EPOCH`` pins it for reproducible
    output) and the effective scheduler settings."""
    systems = doc.of_type("system")
    if not systems:
        return {}
    version = __version__  # (not importlib.metadata's lookup: 17 ms of imports and a scan of site-packages)
    pinned = os.environ.get("SOURCE_DATE_EPOCH", "").strip()
    now = int(pinned) if pinned.isdigit() else int(time.time())
    settings = ";".join(f"{k}={v}" for k, v in sorted(config.settings.items()))
    return {systems[0].id: [("jufo_version", version),
                            ("jufo_generated", time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now))),
                            ("jufo_settings", settings)]}
