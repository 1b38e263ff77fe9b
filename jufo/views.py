"""Reading predictions back out of an LML file: the rows of ``jufo show`` and the bars of
``jufo gantt`` come from here, so both show the same thing."""

from __future__ import annotations

from dataclasses import dataclass

from .dates import parse_date
from .lml import Document
from .ranges import parse_nested


@dataclass
class Bar:
    """One job (or reservation) in a predicted file."""

    id: str
    name: str
    owner: str
    queue: str
    nodes: int
    start: int | None  # epoch seconds
    end: int | None
    running: bool
    topdog: bool
    backfilled: bool
    reason: str | None
    groups: list[tuple[int, int, list[tuple[int, int]] | None]]  # node lo, hi, core ranges (NodeState)
    cores: int  # cores held (AttributeState) or asked
    estimate: int | None = None  # a waiting job's starttime: the batch system's own forecast


def _date(text: str | None) -> int | None:
    if not text:
        return None
    try:
        return parse_date(text)[0]
    except ValueError:
        return None


def _int(text: str | None, default: int = 0) -> int:
    try:
        return int(float(text)) if text else default
    except (ValueError, OverflowError):
        return default


def now_of(doc: Document) -> tuple[int, str]:
    """system_time of the file, epoch seconds and its format."""
    for obj in doc.of_type("system"):
        if "system_time" in obj.data:
            return parse_date(obj.data["system_time"])
    raise ValueError("no system_time")


def bars(doc: Document) -> list[Bar]:
    """Every job of a predicted file, document order."""
    out = []
    for obj in doc.of_type("job"):
        d = obj.data
        running = d.get("state") == "Running"
        start = _date(d.get("dispatchdate") or d.get("starttime")) if running else _date(d.get("jufo_starttime"))
        groups: list[tuple[int, int, list[tuple[int, int]] | None]] = []
        if d.get("jufo_ranges"):
            try:
                groups = [(lo, hi, cores) for nodes, cores in parse_nested(d["jufo_ranges"]) for lo, hi in nodes]
            except ValueError:
                groups = []
        resources = d.get("jufo_resources", "")
        cores = _int(resources.partition("=")[2]) if resources.startswith("cores=") else _int(d.get("totalcores"), 1)
        nodes = sum(hi - lo + 1 for lo, hi, _ in groups) or _int(d.get("nummachines") or d.get("numnodes"), 1)
        name = d.get("step") or obj.name or obj.id
        if d.get("jufo_array_tasks") and d.get("ArrayTaskId"):
            name = f"{d.get('ArrayJobId') or name}_[{d['ArrayTaskId']}]"  # as squeue shows a pending array
        out.append(Bar(obj.id, name, d.get("owner", ""), d.get("queue", ""), nodes,
                       start, _date(d.get("jufo_endtime")), running, d.get("jufo_topdog") == "1",
                       d.get("jufo_backfilled") == "1", d.get("jufo_reason"), groups, cores,
                       None if running else _date(d.get("starttime"))))
    return out


def duration(seconds: int) -> str:
    """Compact wait time: ``45s``, ``12m``, ``3h05m``, ``2d04h``.

    >>> [duration(s) for s in (45, 720, 11100, 187200)]
    ['45s', '12m', '3h05m', '2d04h']
    """
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m"
    if seconds < 86400:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    return f"{seconds // 86400}d{seconds % 86400 // 3600:02d}h"


def show_table(doc: Document, user: str | None = None, queue: str | None = None) -> str:
    """Waiting jobs like ``squeue --start``: sorted by predicted start, jobs without one last."""
    from .dates import format_date

    now, fmt = now_of(doc)
    rows = [b for b in bars(doc) if not b.running and (user is None or b.owner == user)
            and (queue is None or b.queue == queue)]
    rows.sort(key=lambda b: (b.start is None, b.start or 0, b.id))
    estimates = any(b.estimate is not None for b in rows)  # the batch system's own, beside jufo's
    header = ("JOBID", "OWNER", "QUEUE", "NODES", "START", "WAIT") + (("BATCH_EST",) if estimates else ()) + ("NOTE",)
    table = [header]
    for b in rows:
        own = (format_date(b.estimate, fmt) if b.estimate is not None else "-",) if estimates else ()
        if b.start is not None:
            note = "top dog" if b.topdog else "backfilled" if b.backfilled else ""
            table.append((b.name, b.owner, b.queue, str(b.nodes), format_date(b.start, fmt),
                          duration(max(0, b.start - now))) + own + (note,))
        else:
            table.append((b.name, b.owner, b.queue, str(b.nodes), "-", "-") + own + (b.reason or "",))
    widths = [max(len(row[i]) for row in table) for i in range(len(header) - 1)]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)) + "  " + row[-1] for row in table]
    return "\n".join(line.rstrip() for line in lines)
