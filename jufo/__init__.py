"""jufo: forecast what an HPC batch scheduler will do, from an LLview raw LML snapshot.

The rooms, bottom up (each imports only those below it; ``tests/test_layout.py`` checks):
``io`` reads and writes (LML, SWF, sacct, dates); ``engine`` builds the scheduling objects and
simulates the configured scheduler; ``learn`` is the forecast that learns from history;
``views`` is what people read (tables, Gantt charts, evaluations, metrics). On top:
``forecast`` (one prediction end to end) and ``cli`` (the ``jufo`` command).
"""

__version__ = "0.1.0"  # the package's version (pyproject.toml reads it from here)
