"""jufo: forecast what an HPC batch scheduler will do, from an LLview raw LML snapshot.

The rooms, bottom up (each imports only those below it; ``tests/test_layout.py`` checks):
``io`` reads and writes (LML, SWF, sacct, dates); ``engine`` builds the scheduling objects and
simulates the configured scheduler; ``learn`` is the forecast that learns from history;
``views`` is what people read (tables, Gantt charts, evaluations, metrics). On top:
``forecast`` (one prediction end to end) and ``cli`` (the ``jufo`` command).
"""

import os

__version__ = "0.1.0"  # the package's version (pyproject.toml reads it from here)


def own_module(filename: str | None) -> bool:
    """Is ``filename`` the source of one of jufo's own modules? They compile, so a SyntaxError
    there is CPython's parser failing to allocate under a memory limit (where bytecode is not
    cached: ``PYTHONDONTWRITEBYTECODE``), not a fault of the input."""
    return bool(filename) and os.path.abspath(filename).startswith(os.path.dirname(os.path.abspath(__file__)) + os.sep)
