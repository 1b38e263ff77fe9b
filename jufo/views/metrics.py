"""A Prometheus node_exporter textfile about one run, for the admin's monitoring.

Written (atomically) after a successful run; alert on ``time() - jufo_last_success_timestamp_seconds``
to notice a cron job that stopped succeeding.
"""

from __future__ import annotations

import resource
import time

from ..io import output

METRICS = (
    ("jufo_jobs_read", "Jobs in the snapshot."),
    ("jufo_jobs_running", "Jobs running at the snapshot's time."),
    ("jufo_jobs_predicted", "Waiting jobs given a predicted start."),
    ("jufo_jobs_unstartable", "Waiting jobs without a start (each has a jufo_reason)."),
    ("jufo_run_seconds", "Wall-clock seconds of the run."),
    ("jufo_peak_memory_bytes", "Peak resident memory of the run."),
    ("jufo_last_success_timestamp_seconds", "Unix time the last successful run ended."),
)


def text(values: dict[str, float]) -> str:
    """The textfile: HELP and TYPE lines, then the value, for each metric.

    >>> print(text({"jufo_jobs_read": 3}).splitlines()[:3])
    ['# HELP jufo_jobs_read Jobs in the snapshot.', '# TYPE jufo_jobs_read gauge', 'jufo_jobs_read 3']
    """
    lines = []
    for name, help_text in METRICS:
        if name in values:
            value = values[name]
            lines += [f"# HELP {name} {help_text}", f"# TYPE {name} gauge",
                      f"{name} {value:.3f}" if isinstance(value, float) else f"{name} {value}"]
    return "\n".join(lines) + "\n"


def write_run(path: str, jobs: list, seconds: float) -> None:
    """Write the metrics of a successful predict run to ``path``."""
    waiting = [j for j in jobs if not j.running]
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux
    values = {
        "jufo_jobs_read": len(jobs),
        "jufo_jobs_running": len(jobs) - len(waiting),
        "jufo_jobs_predicted": sum(1 for j in waiting if j.start is not None),
        "jufo_jobs_unstartable": sum(1 for j in waiting if j.start is None),
        "jufo_run_seconds": float(seconds),
        "jufo_peak_memory_bytes": peak,
        "jufo_last_success_timestamp_seconds": int(time.time()),
    }
    output.write(path, text(values).encode())
