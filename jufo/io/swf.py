"""Standard Workload Format traces: reading them, and turning them into raw LML snapshots.

One job per line, 18 whitespace-separated fields (-1 = unknown); header lines start with ``;``
and carry ``MaxProcs``, ``MaxNodes``, ``UnixStartTime``. A job's size is its requested processor
count (field 8), what a scheduler sees; the allocated count (field 5) stands in where the
request is unknown. A snapshot at time ``T`` (seconds
after the trace's start) holds the jobs running at ``T`` (with start and node list), the jobs
waiting at ``T`` and, with ``future``, every later job with its future queue date.
"""

from __future__ import annotations

import contextlib
import gzip
import re
from bisect import bisect_right
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from itertools import islice
from math import ceil

from . import lml
from .dates import date_writer, format_date
from .errors import InputError
from .values import LATEST_EPOCH, MAX_COUNT, MAX_INPUT_BYTES, MAX_NODES, MAX_SECONDS

_MAX_LINE = 64 * 1024  # an SWF line is ~100 characters; /dev/zero is one endless line

SYSTEM_FORMAT = "%m/%d/%y-%H:%M:%S"
JOB_FORMAT = "%Y-%m-%d %H:%M:%S"
CANCELLED = 5  # SWF's status of a cancelled job; with a run time of 0, it was cancelled before it started
PARTIAL = (2, 3, 4)  # a checkpointed job's partial execution: to be continued, the last completed, the last failed


@dataclass(slots=True)
class TraceJob:
    """The fields of one SWF line that a replay needs (seconds, processors)."""

    number: int
    submit: int
    wait: int
    run: int
    procs: int
    requested: int  # requested time, -1 unknown
    user: int
    group: int
    queue: int
    cancelled: bool = False  # left the queue at ``start`` without running (sacct; SWF: status 5, run 0)

    @property
    def start(self) -> int:
        return self.submit + self.wait


@dataclass
class Trace:
    jobs: list[TraceJob]
    header: dict[str, str] = field(default_factory=dict)
    unusable: int = 0  # lines whose run time or size is unknown
    partial: int = 0  # lines of a checkpointed job's partial executions (status 2, 3, 4), read in its summary line
    # names by number, where the trace had names (sacct): "user", "group", "queue" → list
    names: dict[str, list[str]] | None = None
    ids: dict[int, str] | None = None  # accounting's own job id by job number (sacct: arrays renumbered)

    def owner(self, job: TraceJob) -> str:
        return self.names["user"][job.user] if self.names else f"user{job.user}"

    def group_of(self, job: TraceJob) -> str:
        return self.names["group"][job.group] if self.names else f"group{job.group}"

    def queue_of(self, job: TraceJob) -> str:
        if self.names:
            return self.names["queue"][job.queue]
        return f"queue{job.queue}" if job.queue >= 0 else "batch"

    @property
    def max_procs(self) -> int | None:
        for key in ("MaxProcs", "MaxNodes"):
            value = self.header.get(key, "").split()
            if value and _plain(value[0]) and int(value[0]) > 0:
                return int(value[0])
        return None

    @property
    def epoch(self) -> int:
        """Unix time of the trace's time zero (0 when the header does not say)."""
        value = self.header.get("UnixStartTime", "0").split()
        return int(value[0]) if value and value[0].isdigit() else 0


_HEADER = re.compile(r";\s*(\w+):\s*(.*)")


def _plain(text: str) -> bool:
    """A job number or header count written in at most 18 ASCII digits (``int`` of it is cheap
    and exact; '²' and 5,000-digit strings are not numbers here).

    >>> _plain("8786"), _plain("²"), _plain("9" * 19), _plain("-1")
    (True, False, False, False)
    """
    return 0 < len(text) <= 18 and text.isascii() and text.isdigit()


def _lines(fh, path: str, limit: int = MAX_INPUT_BYTES) -> Iterator[tuple[int, str]]:
    """The numbered lines of a text stream, read in blocks: a block of nothing but blank lines
    is skipped whole (a gzip of a gigabyte of newlines is read in seconds, not minutes).
    InputError past ``limit`` characters in all (decompressed) or for a line longer than
    ``_MAX_LINE``.

    >>> import io
    >>> list(_lines(io.StringIO("a\\n\\n\\nb"), "t"))
    [(1, 'a'), (4, 'b')]
    """
    lineno, carry, total = 0, "", 0
    while True:
        block = fh.read(1 << 20)
        total += len(block)
        if total > limit:
            raise InputError(path, None, None, f"more than {limit // 2**20:,} MiB of text: not an SWF trace")
        if not block:
            break
        if not carry and block.isspace():
            lineno += block.count("\n")
            continue
        parts = (carry + block).split("\n")
        carry = parts.pop()
        if len(carry) > _MAX_LINE:
            raise InputError(f"{path} line {lineno + len(parts) + 1}", None, None,
                             f"longer than {_MAX_LINE:,} characters: not an SWF trace")
        for part in parts:
            lineno += 1
            if len(part) > _MAX_LINE:
                raise InputError(f"{path} line {lineno}", None, None,
                                 f"longer than {_MAX_LINE:,} characters: not an SWF trace")
            if part and not part.isspace():
                yield lineno, part
    if carry and not carry.isspace():
        yield lineno + 1, carry


def _status(text: str) -> int | None:
    """An SWF status field as a number (``1``, ``5.0``), or None where it is not one: jufo reads
    the status only to know a cancelled job, so an odd status is no reason to refuse a trace.

    >>> _status("5"), _status("5.0"), _status("-1"), _status("x"), _status("nan")
    (5, 5, -1, None, None)
    """
    try:
        value = float(text)
    except ValueError:
        return None
    return int(value) if value.is_integer() else None


def read(path: str) -> Trace:
    """Read an SWF trace (``.swf`` or ``.swf.gz``); InputError (exit 2) on a malformed line.
    A job of status 5 that ran for 0 s was cancelled before it started (``TraceJob.cancelled``):
    a backtest queues it until it left and scores none of its forecasts."""
    opener = gzip.open if path.endswith(".gz") else open
    trace = Trace([])
    stream = None
    if path == "-":  # standard input, read as a file would be (and not closed after)
        import io
        import sys

        if sys.stdin is None:
            raise InputError("-", None, None, "standard input is closed")
        stream = io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace")
    try:
        with (contextlib.nullcontext(stream) if stream is not None
              else opener(path, "rt", encoding="utf-8", errors="replace")) as fh:
            seen: set[int] = set()
            for lineno, line in _lines(fh, path):
                line = line.strip()
                if not line:
                    continue
                if line.startswith(";"):
                    m = _HEADER.match(line)
                    if m:
                        trace.header.setdefault(m.group(1), m.group(2).strip())
                    continue
                fields = line.split()
                try:
                    if len(fields) < 15:
                        raise ValueError(f"{len(fields)} fields, SWF has 18")
                    picked = fields[0], fields[1], fields[2], fields[3], fields[4], fields[7], fields[8]
                    try:  # plain integers, as traces mostly write them
                        number, submit, wait, run, alloc, req_procs, req_time = map(int, picked)
                    except ValueError:  # ``3600.0``, ``1e3``, or not a number at all
                        number, submit, wait, run, alloc, req_procs, req_time = (int(float(x)) for x in picked)
                    user, group, queue = int(fields[11]), int(fields[12]), int(fields[14])
                    status = _status(fields[10])
                    for name, value, top in (("submit time", submit, MAX_SECONDS), ("wait time", wait, MAX_SECONDS),
                                             ("run time", run, MAX_SECONDS), ("requested time", req_time, MAX_SECONDS),
                                             ("processors", max(alloc, req_procs), MAX_COUNT)):
                        if value > top:
                            raise ValueError(f"{name} {value:,} is beyond what a machine can mean (at most {top:,})")
                except (ValueError, OverflowError) as err:  # OverflowError: inf
                    raise InputError(f"{path} line {lineno}", None, None, f"not an SWF job line: {err}") from None
                if number in seen and status in PARTIAL:
                    trace.partial += 1  # the job's summary line came first and stands for all of it
                    continue
                if number in seen:
                    raise InputError(f"{path} line {lineno}", "job number", str(number),
                                     "appears twice: a trace numbers each job once")
                seen.add(number)
                # the scheduler sees what was asked for; allocated counts only where that is unknown
                procs = req_procs if req_procs > 0 else alloc
                if run < 0 or procs <= 0 or submit < 0:
                    trace.unusable += 1
                    continue
                # status 5 and no run: cancelled before it started, after waiting ``wait`` seconds
                trace.jobs.append(TraceJob(number, submit, max(wait, 0), run, procs, req_time, user, group, queue,
                                           status == CANCELLED and run == 0))
        for key in ("MaxProcs", "MaxNodes"):
            size = trace.header.get(key, "").split()
            if size and size[0].isdigit() and (not _plain(size[0]) or int(size[0]) > MAX_COUNT):
                raise InputError(path, key, size[0][:40], f"more than {MAX_COUNT:,}: beyond any machine")
        start = trace.header.get("UnixStartTime", "0").split()
        if start and start[0].isdigit() and (len(start[0]) > 12 or int(start[0]) > LATEST_EPOCH):
            raise InputError(path, "UnixStartTime", start[0][:40], "after the year 9000")
    except OSError as err:
        raise InputError(path, None, None, f"cannot read: {err.strerror or err}") from None
    except EOFError:
        raise InputError(path, None, None, "truncated: the compressed file ends early") from None
    return trace


def trace_of_records(records, source: str) -> Trace:
    """Finished jobs of accounting records (``accounting.read_sacct``) as a trace, so a site's own
    ``sacct`` can be backtested as an SWF trace is: times from the earliest submit, job numbers
    from plain numeric JobIDs (array tasks and het components numbered after the largest),
    users, groups and partitions by name. A job held by a dependency or a begin time enters the
    queue when it became eligible (``JobRecord.queued``): until then no scheduler plans it, and
    sacct does not say what it waited for. A job cancelled while pending (an end, no start)
    waits until it left, so snapshots before then queue it as Slurm did, and is ``cancelled``:
    it has no start to score and no run to learn. Jobs with no end are counted unusable."""
    usable = sorted((r for r in records if r.submit is not None and r.end is not None
                     and (r.start is not None or r.end >= r.queued)), key=lambda r: (r.queued, r.id))
    trace = Trace([], unusable=len(records) - len(usable))
    if not usable:
        raise InputError(source, None, None, "no finished job with submit, start and end times")
    zero = min(r.queued for r in usable)
    trace.header["UnixStartTime"] = str(zero)
    ids: dict[str, dict[str, int]] = {"user": {}, "group": {}, "queue": {}}
    numbers = [int(r.id) for r in usable if _plain(r.id)]
    taken, nxt = set(), max(numbers, default=0) + 1
    for rec in usable:
        number = int(rec.id) if _plain(rec.id) and int(rec.id) not in taken else None
        if number is None:
            number, nxt = nxt, nxt + 1
        taken.add(number)
        user, group, queue = (ids[k].setdefault(v or "-", len(ids[k])) for k, v in
                              (("user", rec.user), ("group", rec.group), ("queue", rec.queue or "batch")))
        # a start before the submit (a requeued job's new Submit) counts as no wait, as in SWF
        trace.jobs.append(TraceJob(number, rec.queued - zero, max(rec.left_queue - rec.queued, 0),
                                   rec.end - rec.start if rec.start is not None else 0,
                                   rec.cores, rec.wall if rec.wall else -1, user, group, queue, rec.start is None))
    trace.names = {k: list(v) for k, v in ids.items()}
    trace.ids = {job.number: rec.id for job, rec in zip(trace.jobs, usable)}
    return trace


@dataclass(frozen=True, eq=False)
class Layout:
    """A real machine's nodes and partitions for a trace's snapshots (``backtest --machine``):
    node objects as a snapshot of the machine gives them, and which nodes each queue may use,
    so a site's ``sacct`` is replayed on its own partitions rather than one pool of nodes.
    Layouts are equal when ``digest`` is (a backtest compares them at every snapshot)."""

    nodes: tuple[tuple[str, tuple[tuple[str, str], ...]], ...]  # (id, data) of each node object
    queues: tuple[tuple[str, tuple[tuple[str, str], ...]], ...]  # (id, data) of each queue object
    cores: tuple[int, ...]  # each node's cores
    # queue name -> positions of its nodes and the cores it may use on each (none: every queue every core)
    members: tuple[tuple[str, tuple[int, ...], tuple[int, ...]], ...]
    digest: str

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Layout) and other.digest == self.digest

    def __hash__(self) -> int:
        return hash(self.digest)

    def room(self, queue: str) -> tuple[tuple[int, ...], int, int] | None:
        """``(node positions, cores in all, cores per node)`` a job of ``queue`` may use (the
        commonest, the larger on a tie; a node's cores, or fewer where its partition may use
        fewer), or None for a queue no node serves.  O(1) after the first call per queue.

        >>> lay = Layout((), (), (4, 4, 8), (("a", (0, 1), (4, 4)), ("b", (1, 2), (4, 6))), "x")
        >>> lay.room("a"), lay.room("b"), lay.room("c")
        (((0, 1), 8, 4), ((1, 2), 10, 6), None)
        """
        cache = self.__dict__.setdefault("_rooms", {})
        if queue not in cache:
            if not self.members:
                found: tuple[tuple[int, ...], tuple[int, ...]] | None = (tuple(range(len(self.cores))), self.cores)
            else:
                found = next(((p, c) for q, p, c in self.members if q == queue), None)
            if not found or not found[0]:
                cache[queue] = None
            else:
                positions, cores = found
                sizes: dict[int, int] = {}
                for c in cores:
                    sizes[c] = sizes.get(c, 0) + 1
                common = max(sizes, key=lambda c: (sizes[c], c))
                cache[queue] = (positions, sum(cores), common)
        return cache[queue]


@dataclass
class Conversion:
    """How to turn a trace into a snapshot (the options of ``jufo swf2lml``)."""

    at: int | None = None  # snapshot time, seconds after the trace's start; None: first submit
    future: bool = False  # add the jobs submitted later, with future queue dates
    exact: bool = False  # wall = the real run time
    actual: bool = False  # add actualruntime = the real run time
    nodes: int | None = None  # None: MaxProcs / cores
    cores: int = 1
    settings: dict[str, str] = field(default_factory=dict)
    layout: Layout | None = None  # a real machine's nodes and partitions instead of nodes × cores


def snapshot(trace: Trace, conv: Conversion) -> tuple[bytes, dict[str, int]]:
    """A raw LML snapshot of ``trace`` and counts of what went in and what was skipped."""
    objects, counts = snapshot_objects(trace, conv)
    return lml.build(objects), counts


def snapshot_objects(trace: Trace, conv: Conversion) -> tuple[list[tuple[str, str, dict[str, str]]], dict[str, int]]:
    """The objects of the snapshot (``(id, type, data)``) and the counts."""
    objects, entries, counts = snapshot_entries(trace, conv)
    return objects + [(oid, "job", data) for oid, data, _, _, _, _ in entries], counts


def snapshot_time(trace: Trace, conv: Conversion) -> int:
    """The snapshot's time, seconds after the trace's start."""
    return conv.at if conv.at is not None else min((j.submit for j in trace.jobs), default=0)


def _nodes(trace: Trace, conv: Conversion) -> int:
    """The machine's nodes: the layout's, ``--nodes``, or MaxProcs over the cores per node."""
    if conv.layout is not None:
        return len(conv.layout.cores)
    procs = trace.max_procs
    nodes = conv.nodes or (ceil(procs / conv.cores) if procs else None)
    if not nodes:
        raise InputError("trace", "MaxProcs", None, "not in the header; give --nodes")
    if nodes > MAX_NODES:
        key, value = ("--nodes", conv.nodes) if conv.nodes else ("MaxProcs", procs)
        raise InputError("trace", key, value, f"{nodes:,} nodes, more than the {MAX_NODES:,} jufo simulates; "
                                              "give --nodes and --cores")
    return nodes


def _room(trace: Trace, conv: Conversion, nodes: int, job: TraceJob) -> tuple[tuple[int, ...] | None, int] | str:
    """``(positions of the nodes job may use, None for every node; cores per node)``, or why
    the job is left out: ``"too_big"`` for the machine (or its partition), ``"elsewhere"`` for
    a partition the layout does not have."""
    if conv.layout is None:
        return "too_big" if job.procs > nodes * conv.cores else (None, conv.cores)
    room = conv.layout.room(trace.queue_of(job))
    if room is None:
        return "elsewhere"
    positions, total, per_node = room
    return "too_big" if job.procs > total else (positions, per_node)


class TraceIndex:
    """Which jobs of a trace a snapshot at a time holds (submitted by then, and not started
    before it or still running), found per day instead of by a pass over the whole trace: a
    backtest takes a snapshot a day, and a pass over HPC2N's 202,876 jobs took 0.04 s.
    For one conversion's walls (``exact``) and machine (``nodes``, ``cores``).  Built in
    O(jobs); a job that spans more than ``LONG`` days is kept once and looked at for every
    snapshot (a wait of a million years in a trace costs no memory)."""

    DAY = 86400
    LONG = 64  # days

    def __init__(self, trace: Trace, conv: Conversion) -> None:
        nodes = _nodes(trace, conv)
        self.trace, self.exact, self.size = trace, conv.exact, (nodes, conv.cores, conv.layout)
        self.occurrence: list[int] = []  # per job: how often its number came so far (ids of repeats)
        self.release: dict[int, int] = {}  # position -> when it leaves the snapshots: max(start + 1, end)
        self.days: dict[int, list[int]] = {}  # day -> positions whose [submit, release) meets it
        self.long: list[int] = []  # positions spanning more than LONG days
        self.unknown = self.too_big = self.elsewhere = 0
        seen: dict[int, int] = {}
        submits = []
        for pos, job in enumerate(trace.jobs):
            seen[job.number] = occurrence = seen.get(job.number, 0) + 1
            self.occurrence.append(occurrence)
            if (job.run if conv.exact else job.requested) < 0:
                self.unknown += 1
                continue
            room = _room(trace, conv, nodes, job)
            if room == "too_big":
                self.too_big += 1
                continue
            if room == "elsewhere":
                self.elsewhere += 1
                continue
            start = job.start
            release = self.release[pos] = max(start + 1, start + job.run)
            submits.append(job.submit)
            first, last = job.submit // self.DAY, (release - 1) // self.DAY
            if last - first > self.LONG:
                self.long.append(pos)
                continue
            for day in range(first, last + 1):
                self.days.setdefault(day, []).append(pos)
        self.submits = sorted(submits)

    def fits(self, conv: Conversion) -> bool:
        """Was the index built for ``conv``'s walls and machine (and does it hold no future)?"""
        return (not conv.future and conv.exact == self.exact
                and self.size == (_nodes(self.trace, conv), conv.cores, conv.layout))

    def active(self, at: int) -> list[int]:
        """Positions of the jobs waiting or running at ``at``, in trace order.  O(jobs that
        day + long ones)."""
        jobs, release = self.trace.jobs, self.release
        found = [pos for pos in self.days.get(at // self.DAY, ()) if jobs[pos].submit <= at < release[pos]]
        if self.long:
            found = sorted(found + [pos for pos in self.long if jobs[pos].submit <= at < release[pos]])
        return found

    def counts(self, at: int, held: int) -> dict[str, int]:
        """The counts a pass over the whole trace makes, but running and waiting (``held`` of
        them): jobs done by ``at``, unknown and too big.  O(log jobs)."""
        return {"done": bisect_right(self.submits, at) - held, "unknown": self.trace.unusable + self.unknown,
                "too_big": self.too_big, **({"elsewhere": self.elsewhere} if self.size[2] is not None else {})}


def snapshot_entries(trace: Trace, conv: Conversion, index: TraceIndex | None = None
             ) -> tuple[list[tuple[str, str, dict[str, str]]], list[tuple[str, dict[str, str], TraceJob, str, int, int]],
                        dict[str, int]]:
    """The objects but the jobs; per job in the snapshot ``(id, data, trace job, state, wall,
    nodes)``; the counts. With ``index`` (built for ``conv``), only the jobs it finds at the
    snapshot's time are looked at."""
    nodes = _nodes(trace, conv)
    if index is not None and not index.fits(conv):
        raise ValueError("the trace index was built for another conversion")
    at, zero = snapshot_time(trace, conv), trace.epoch
    epoch = zero + at
    counts = {"running": 0, "waiting": 0, "future": 0, "done": 0, "unknown": trace.unusable, "too_big": 0}
    if conv.layout is not None:
        counts["elsewhere"] = 0  # jobs of a partition the machine does not have
    objects: list[tuple[str, str, dict[str, str]]] = [("sys", "system", {"system_time": format_date(epoch, SYSTEM_FORMAT)})]
    if conv.settings:
        objects.append(("sched", "scheduler", dict(conv.settings)))
    layout = conv.layout
    if layout is None:
        width = len(str(nodes))
        names = [f"n{i:0{width}d}" for i in range(1, nodes + 1)]
        objects += [(name, "node", {"ncores": str(conv.cores)}) for name in names]
        free = [conv.cores] * nodes  # for placing the jobs running at the snapshot time
    else:
        names = [oid for oid, _ in layout.nodes]
        objects += [(oid, "node", dict(data)) for oid, data in layout.nodes]
        objects += [(oid, "queue", dict(data)) for oid, data in layout.queues]
        free = list(layout.cores)
    entries = []
    full: dict[int, int] = {}  # for _place: leading nodes without room, per node sequence
    job_date = date_writer(JOB_FORMAT)  # each day's date formatted once, the time appended
    seen: dict[int, int] = {}  # a trace may repeat a job number: later ones get j<number>_<k>
    jobs = trace.jobs
    for pos in (range(len(jobs)) if index is None else index.active(at)):
        job = jobs[pos]
        if index is None:
            seen[job.number] = occurrence = seen.get(job.number, 0) + 1
        else:
            occurrence = index.occurrence[pos]
        wall = job.run if conv.exact else job.requested
        if wall < 0:
            counts["unknown"] += 1
            continue
        room = _room(trace, conv, nodes, job)
        if isinstance(room, str):
            counts[room] += 1
            continue
        end = job.start + job.run
        if job.submit > at:
            if not conv.future:
                continue
            state = "future"
        elif job.start >= at:  # the scheduler has not decided the snapshot's own second yet
            state = "waiting"
        elif end > at:
            state = "running"
        else:
            counts["done"] += 1
            continue
        counts[state] += 1
        n = ceil(job.procs / room[1])
        data = {
            "step": str(job.number), "owner": trace.owner(job), "group": trace.group_of(job),
            "queue": trace.queue_of(job),
            "state": "Running" if state == "running" else "Idle",
            "queuedate": job_date(zero + job.submit),
            "wall": str(wall), "nummachines": str(n), "taskspernode": str(ceil(job.procs / n)),
            "totalcores": str(job.procs),
        }
        if conv.actual:
            data["actualruntime"] = str(job.run)
        if state == "running":
            data["dispatchdate"] = job_date(zero + job.start)
            data["nodelist"] = _place(free, job.procs, n, names, room[0], full)
        oid = f"j{job.number}" if occurrence == 1 else f"j{job.number}_{occurrence}"
        entries.append((oid, data, job, state, wall, n))
    if index is not None:
        counts.update(index.counts(at, len(entries)))
    return objects, entries, counts


def _place(free: list[int], procs: int, n: int, names: list[str], among: tuple[int, ...] | None = None,
           full: dict[int, int] | None = None) -> str:
    """Node list for a job running at the snapshot time: the first nodes with room (of
    ``among``, its partition's, where given). ``full`` remembers, per node sequence, how many
    leading nodes have no core left (room only shrinks while a snapshot is placed), so a
    filling machine is not searched from its first node for every job."""
    per_node = ceil(procs / n)
    order: Sequence[int] = range(len(free)) if among is None else among
    key = -1 if among is None else id(among)
    skip = 0 if full is None else full.get(key, 0)
    while skip < len(order) and free[order[skip]] == 0:
        skip += 1
    if full is not None:
        full[key] = skip
    chosen = list(islice((i for i in islice(order, skip, None) if free[i] >= per_node), n))
    if len(chosen) < n:
        return ""  # the trace overcommits at this instant; jufo places it where it can
    for i in chosen:
        free[i] -= per_node
    return "".join(f"({names[i]},{per_node})" for i in chosen)
