"""Reading predictions back out of an LML file: the rows of ``jufo show`` and the bars of
``jufo gantt`` come from here, so both show the same thing."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..io.dates import format_date, parse_date
from ..io.lml import Document
from ..engine.node import pair_names
from ..io.hostlist import compress_hostlist
from ..engine.ranges import parse_nested


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
    jobname: str = ""
    hosts: list[str] | None = None  # predicted nodes by name (``jufo_nodelist``)
    low: int | None = None  # with a history: the range of the start
    high: int | None = None
    predicted: bool = False  # jufo wrote something for it (a start or a reason)
    tasks: str = ""  # a pending array: its runs of tasks with one start (``jufo_array_starts``)
    why: str = ""  # ``show``'s reason, as squeue names them (``slurm_reasons``)


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


def is_running(d: dict[str, str]) -> bool:
    """Did jufo take the job as running? ``state`` says so, or jufo gave it an end and no start
    (a job LLview writes as Pending while its nodes boot: Slurm's CONFIGURING).

    >>> is_running({"state": "Running"}), is_running({"state": "Pending", "jufo_endtime": "x"})
    (True, True)
    >>> is_running({"state": "Pending", "jufo_starttime": "x", "jufo_endtime": "y"})
    False
    """
    return d.get("state") == "Running" or ("jufo_endtime" in d and "jufo_starttime" not in d
                                           and "jufo_reason" not in d)


def bars(doc: Document, placement: bool = True) -> list[Bar]:
    """Every job of a predicted file, document order; without ``placement`` the node and core
    ranges (``jufo_ranges``, for the Gantt chart) are not read."""
    out = []
    for obj in doc.of_type("job"):
        d = obj.data
        running = is_running(d)
        start = _date(d.get("dispatchdate") or d.get("starttime")) if running else _date(d.get("jufo_starttime"))
        groups: list[tuple[int, int, list[tuple[int, int]] | None]] = []
        if placement and d.get("jufo_ranges"):
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
        hosts = pair_names(d["jufo_nodelist"]) if d.get("jufo_nodelist") else None
        if not groups and hosts:
            nodes = len(hosts)
        out.append(Bar(obj.id, name, d.get("owner", ""), d.get("queue", ""), nodes,
                       start, _date(d.get("jufo_endtime")), running, d.get("jufo_topdog") == "1",
                       d.get("jufo_backfilled") == "1", d.get("jufo_reason"), groups, cores,
                       None if running else _date(d.get("starttime")), d.get("name", ""), hosts,
                       _date(d.get("jufo_starttime_lo")), _date(d.get("jufo_starttime_hi")),
                       "jufo_starttime" in d or "jufo_reason" in d, d.get("jufo_array_starts", "")))
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


ISO = "%Y-%m-%dT%H:%M:%S"
# squeue's format letters, and jufo's own: %b the batch system's estimate, %r the range, %w the wait
FIELDS: dict[str, str] = {
    "i": "JOBID", "P": "PARTITION", "j": "NAME", "u": "USER", "t": "ST", "S": "START_TIME", "e": "END_TIME",
    "D": "NODES", "Y": "SCHEDNODES", "R": "NODELIST(REASON)", "b": "BATCH_EST", "r": "RANGE", "w": "WAIT",
}
DEFAULT_FORMAT = "%i %P %j %u %t %S %e %D %Y %R"


@dataclass
class Selection:
    """Which waiting jobs ``show`` lists: comma lists of job ids, users and partitions."""

    jobs: set[str] | None = None
    users: set[str] | None = None
    partitions: set[str] | None = None

    def keeps(self, bar: Bar) -> bool:
        base = bar.name.split("_[")[0]
        return ((self.jobs is None or bar.name in self.jobs or base in self.jobs or bar.id in self.jobs)
                and (self.users is None or bar.owner in self.users)
                and (self.partitions is None or bar.queue in self.partitions))


def waiting_rows(doc: Document, selection: Selection | None = None) -> list[Bar]:
    """Waiting jobs of a predicted file, sorted by predicted start, jobs without one last.
    ValueError if no job in the file has a prediction."""
    everything = bars(doc, placement=False)
    if not any(b.predicted for b in everything):
        raise ValueError("no job has a prediction (jufo_starttime or jufo_reason)")
    # finished jobs (LLview keeps them a while; jufo says NotQueued) are no part of the queue,
    # as squeue --start does not list them
    rows = [b for b in everything if not b.running and not (b.reason or "").startswith("NotQueued")
            and (selection is None or selection.keeps(b))]
    rows.sort(key=lambda b: (b.start is None, b.start or 0, b.id))
    slurm_reasons(rows, now_of(doc)[0], _settings(doc))
    return rows


def _settings(doc: Document) -> dict[str, str]:
    """The scheduler settings a predicted file was made with (the system's ``jufo_settings``)."""
    for obj in doc.of_type("system"):
        text = obj.data.get("jufo_settings", "")
        return dict(item.partition("=")[::2] for item in text.split(";") if "=" in item)
    return {}


def slurm_reasons(rows: list[Bar], now: int, settings: dict[str, str]) -> None:
    """Each row's reason as squeue names them, in the order of the rows (by start): a job that
    starts now ``StartsNow``; the jobs that hold a reservation now, the first ``maxtopdogs``
    top dogs (per partition where top dogs are counted per queue), ``Resources``; a job that
    starts early without delaying them ``Backfilled``; the others ``Priority``. (A job marked
    top dog later in the simulation only gets its reservation when the ones before it start.)

    >>> rows = [Bar(str(i), "", "", "q", 1, t, t + 9, False, top, False, None, [], 1) for i, t, top in
    ...         ((1, 0, False), (2, 50, True), (3, 90, True), (4, 95, False))]
    >>> slurm_reasons(rows, 0, {"maxtopdogs": "1"}); [b.why for b in rows]
    ['StartsNow', 'Resources', 'Priority', 'Priority']

    In Slurm's plan (``plan=slurm``) every planned job holds its nodes, as in Slurm, and squeue
    says ``Resources`` of the first of each partition only:

    >>> slurm_reasons(rows, 0, {"maxtopdogs": "500", "plan": "slurm"}); [b.why for b in rows]
    ['StartsNow', 'Resources', 'Priority', 'Priority']
    """
    raw = settings.get("maxtopdogs", "1")
    limit = float("inf") if raw == "all" else int(raw) if raw.isdigit() else 1
    per_queue = settings.get("topdogs_per_queue", "no") == "yes"
    if settings.get("plan") == "slurm":  # every job of Slurm's plan holds its nodes; squeue says
        limit, per_queue = 1, True      # Resources of each partition's first, Priority of the rest
    held: dict[str, int] = {}
    for b in rows:
        if b.start is None:
            b.why = b.reason or "None"
        elif b.start <= now:
            b.why = "StartsNow"
        elif b.topdog and held.get(b.queue if per_queue else "", 0) < limit:
            held[b.queue if per_queue else ""] = held.get(b.queue if per_queue else "", 0) + 1
            b.why = "Resources"
        else:
            b.why = "Backfilled" if b.backfilled else "Priority"


def _when(t: int | None) -> str:
    return format_date(t, ISO) if t is not None else "N/A"


def _schednodes(b: Bar) -> str:
    """Predicted nodes as a hostlist, cut like squeue's fixed width but saying so (``--json``
    has them all). All nodes are compressed: a cut list must not read as a smaller range."""
    if not b.hosts:
        return "(null)"
    hosts = compress_hostlist(b.hosts)
    return hosts if len(hosts) <= 40 else hosts[:37] + "..."


def _reason(b: Bar) -> str:
    if b.why:
        return f"({b.why})"
    if b.start is None:
        return f"({b.reason or 'None'})"
    return "(TopDog)" if b.topdog else "(Backfilled)" if b.backfilled else "(Priority)"


CELLS = {  # format letter -> the cell of a row (bar, now)
    "i": lambda b, now: b.name, "P": lambda b, now: b.queue, "j": lambda b, now: b.jobname,
    "u": lambda b, now: b.owner, "t": lambda b, now: "PD", "S": lambda b, now: _when(b.start),
    "e": lambda b, now: _when(b.end) if b.start is not None else "N/A", "D": lambda b, now: str(b.nodes),
    "Y": lambda b, now: _schednodes(b), "R": lambda b, now: _reason(b), "b": lambda b, now: _when(b.estimate),
    "r": lambda b, now: f"{_when(b.low)}..{_when(b.high)}" if b.low is not None and b.high is not None else "N/A",
    "w": lambda b, now: duration(max(0, b.start - now)) if b.start is not None else "N/A",
}


def parse_format(text: str) -> list[str]:
    """The field letters of an squeue-style format (``%i %P %.10j``: widths are ignored).

    >>> parse_format("%i %.9P %S")
    ['i', 'P', 'S']
    """
    letters = re.findall(r"%[.\-]?\d*([A-Za-z])", text)
    if not letters:
        raise ValueError(f"{text!r} names no field (squeue style: {DEFAULT_FORMAT})")
    for letter in letters:
        if letter not in FIELDS:
            raise ValueError(f"%{letter} is not a field (known: {', '.join('%' + k for k in FIELDS)})")
    return letters


def show_table(doc: Document, selection: Selection | None = None, fmt: str | None = None) -> str:
    """Waiting jobs like ``squeue --start``, ISO dates, and a summary line. Without ``fmt``,
    the batch system's estimate and the range are added where the file has them."""
    now, _ = now_of(doc)
    rows = waiting_rows(doc, selection)
    if fmt is None:
        letters = parse_format(DEFAULT_FORMAT)
        if any(b.estimate is not None for b in rows):
            letters.insert(letters.index("R"), "b")
        if any(b.low is not None for b in rows):
            letters.insert(letters.index("R"), "r")
    else:
        letters = parse_format(fmt)
    table = [[FIELDS[x] for x in letters]] + [[CELLS[x](b, now) for x in letters] for b in rows]
    widths = [max(len(row[i]) for row in table) for i in range(len(letters) - 1)]
    lines = ["  ".join([*(cell.ljust(w) for cell, w in zip(row, widths)), row[-1]]).rstrip() for row in table]
    return "\n".join(lines + [summary_line(rows)])


def summary_line(rows: list[Bar]) -> str:
    """``7 waiting: 5 predicted, 1 cannot start; latest start 2025-06-03T18:00:00``."""
    started = [b.start for b in rows if b.start is not None]
    latest = f"; latest start {format_date(max(started), ISO)}" if started else ""
    return f"{len(rows)} waiting: {len(started)} predicted, {len(rows) - len(started)} cannot start{latest}"


def show_json(doc: Document, selection: Selection | None = None) -> dict:
    """The rows of ``show`` for scripts: ISO dates, null where there is none."""
    now, _ = now_of(doc)
    rows = waiting_rows(doc, selection)

    def iso(t: int | None) -> str | None:
        return format_date(t, ISO) if t is not None else None

    jobs = [{"job": b.name, "id": b.id, "partition": b.queue, "name": b.jobname, "user": b.owner,
             "start": iso(b.start), "end": iso(b.end) if b.start is not None else None, "nodes": b.nodes,
             "schednodes": compress_hostlist(b.hosts) if b.hosts else None, "reason": b.reason,
             "state_reason": b.why,
             "topdog": b.topdog, "backfilled": b.backfilled, "batch_estimate": iso(b.estimate),
             "range": [iso(b.low), iso(b.high)] if b.low is not None else None} for b in rows]
    started = [b.start for b in rows if b.start is not None]
    return {"now": iso(now), "waiting": len(rows), "predicted": len(started),
            "cannot_start": len(rows) - len(started), "latest_start": iso(max(started)) if started else None,
            "jobs": jobs}


DATE_KEYS = {"jufo_starttime", "jufo_endtime", "jufo_starttime_lo", "jufo_starttime_hi", "jufo_starttime_wall"}


def job_records(doc: Document) -> list[dict]:
    """Every job of a predicted file for scripts: who, where, state, and jufo's data without
    the ``jufo_`` prefix, dates in ISO 8601 (``predict --json``)."""
    out = []
    for obj in doc.of_type("job"):
        d = obj.data
        record: dict = {"id": obj.id, "job": d.get("step") or obj.name or obj.id, "user": d.get("owner", ""),
                        "partition": d.get("queue", ""), "running": is_running(d)}
        for key, value in d.items():
            if key.startswith("jufo_"):
                name = key[5:]
                if key in DATE_KEYS:
                    record[name] = _when(_date(value)) if _date(value) is not None else value
                elif name in ("topdog", "backfilled"):
                    record[name] = value == "1"
                elif name == "array_starts":  # TASKS=DATE;... with ISO dates
                    record[name] = ";".join(f"{tasks}={_when(_date(when)) if _date(when) is not None else when}"
                                            for tasks, _, when in (run.partition("=") for run in value.split(";")))
                elif name in ("array_tasks", "runtime"):
                    record[name] = _int(value)
                else:
                    record[name] = value
        out.append(record)
    return out
