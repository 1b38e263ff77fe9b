"""The house's rules: each room imports only the rooms below it, nothing installed reaches for
``../shared`` or the benchmarks, and the package works installed as a wheel would install it.

Rooms, bottom up: ``io`` → ``engine`` → ``learn`` → ``views`` → the top (``forecast``,
``cli``, ``signals``, ``__main__``). Imports are read from the source (lazy ones inside
functions too), so a rule cannot be dodged by importing late.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, SAMPLES

PACKAGE = ROOT / "jufo"
ROOMS = ["io", "engine", "learn", "views", "top"]
# What each room may import besides itself and the package root (``jufo.__version__``).
MAY_IMPORT = {
    "io": set(),
    "engine": {"io"},
    "learn": {"io", "engine"},
    "views": {"io", "engine", "learn"},
    "top": {"io", "engine", "learn", "views"},
}
# The named exceptions, each with its reason (also in the room's docstring).
EXCEPTIONS: set[tuple[str, str]] = set()  # none: io imports no other room


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def room_of(module: str) -> str | None:
    """The room a ``jufo...`` module lives in; None for the package root itself."""
    parts = module.split(".")
    if parts == ["jufo"]:
        return None
    return parts[1] if parts[1] in ROOMS[:-1] else "top"


def imports_of(path: Path) -> set[str]:
    """The ``jufo`` modules a file imports, resolved to dotted names (``from .x import y``
    names module ``x`` or, if ``y`` is a module, ``x.y``)."""
    module = module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == "jufo")
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "jufo":
                continue
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                as_file = ROOT.joinpath(*sub.split("."))
                found.add(sub if as_file.with_suffix(".py").exists() or as_file.is_dir() else target)
    return found


def graph() -> dict[str, set[str]]:
    return {module_name(p): imports_of(p) for p in sorted(PACKAGE.rglob("*.py"))}


def test_every_module_lives_in_a_room():
    assert {room_of(m) for m in graph()} - {None} == set(ROOMS)
    top = sorted(m for m in graph() if room_of(m) == "top")
    assert top == ["jufo.__main__", "jufo.cli", "jufo.forecast", "jufo.signals", "jufo.whatif"]


def test_rooms_import_only_the_rooms_below():
    wrong = []
    for module, targets in graph().items():
        room = room_of(module)
        for target in targets:
            other = room_of(target)
            if other is None or other == room or other in MAY_IMPORT[room or "top"]:
                continue
            if (module, target) not in EXCEPTIONS:
                wrong.append(f"{module} ({room}) imports {target} ({other})")
    assert wrong == []


def test_the_exceptions_are_still_needed():
    """An exception nobody uses any more is a rule left loose."""
    edges = {(m, t) for m, ts in graph().items() for t in ts}
    assert EXCEPTIONS <= edges


def test_no_import_cycles_between_modules():
    edges = graph()
    state: dict[str, int] = {}

    def visit(m: str, path: list[str]) -> list[str] | None:
        state[m] = 1
        for t in sorted(edges.get(m, ())):
            if t not in edges:
                continue
            if state.get(t) == 1:
                return path + [m, t]
            if t not in state:
                found = visit(t, path + [m])
                if found:
                    return found
        state[m] = 2
        return None

    for m in sorted(edges):
        if m not in state:
            assert visit(m, []) is None


def test_the_rule_checker_sees_a_violation(tmp_path, monkeypatch):
    """The checker itself: an engine module that imports the learn room is caught, lazily too."""
    fake = tmp_path / "jufo" / "engine"
    fake.mkdir(parents=True)
    (tmp_path / "jufo" / "learn").mkdir()
    (tmp_path / "jufo" / "learn" / "history.py").write_text("")
    (fake / "bad.py").write_text("def f():\n    from ..learn import history\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    assert imports_of(fake / "bad.py") == {"jufo.learn.history"}


def test_nothing_installed_refers_to_shared_or_the_benchmarks():
    for path in PACKAGE.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        assert '"shared"' not in text and "'shared'" not in text and "shared/traces" not in text, path
        assert "benchmarks" not in imports_of(path), path


@pytest.mark.skipif(os.environ.get("JUFO_SKIP_WHEEL") == "1", reason="JUFO_SKIP_WHEEL=1")
def test_installed_without_the_source_tree(tmp_path):
    """Installed as a wheel installs it (no editable link to the checkout): ``python -m jufo``
    predicts a sample, finds its schema, a preset and the Gantt script."""
    target = tmp_path / "site"
    done = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target),
                           str(ROOT)], capture_output=True, text=True)
    if done.returncode != 0 and "setuptools" in done.stderr:  # the build backend could not be had
        pytest.skip(f"pip could not build the package here: {done.stderr.strip()[-300:]}")
    assert done.returncode == 0, done.stderr
    assert not (target / "jufo" / "bench.py").exists() and not (target / "benchmarks").exists()
    env = {**os.environ, "PYTHONPATH": str(target)}
    work = tmp_path / "elsewhere"
    work.mkdir()
    out = work / "out.xml"
    run = subprocess.run([sys.executable, "-m", "jufo", "predict", str(SAMPLES / "thesis-listing-7.2.xml"),
                          "--config", "conservative", "-o", str(out), "-q"], cwd=work, env=env,
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    where = subprocess.run([sys.executable, "-c", "import jufo; print(jufo.__file__)"], cwd=work, env=env,
                           capture_output=True, text=True, check=True).stdout
    assert where.startswith(str(target))
    assert subprocess.run([sys.executable, "-m", "jufo", "validate", str(out)], cwd=work, env=env).returncode == 0
    page = work / "chart.html"
    assert subprocess.run([sys.executable, "-m", "jufo", "gantt", str(out), "-o", str(page)], cwd=work,
                          env=env).returncode == 0
    assert "<script" in page.read_text(encoding="utf-8")
    script = target / "bin" / "jufo"  # the console script
    assert subprocess.run([str(script), "show", str(out)], cwd=work, env=env, capture_output=True).returncode == 0
