"""Accounting: what the batch system reports of each job, as one record per job.

Records come from an SWF trace, from Slurm's ``sacct --parsable2 --allusers`` output, or from
the stream of snapshots (see ``history``). Times are epoch seconds in the snapshots' own
clock (dates are read as wall-clock time, as everywhere in jufo); None means unknown.

``until(records, T)`` keeps what the accounting showed at ``T``: finished jobs, and the start
of jobs running then — never anything later. A start is known at ``T`` when it happened
before ``T``, an end when it happened by ``T`` (as ``swf2lml --at T`` draws the snapshot).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from math import ceil
from typing import TypeVar

from .dates import parse_date
from .errors import InputError
from .slurm import never_ran, parse_tasks, seconds_of
from .values import MAX_COUNT, MAX_NODES

T = TypeVar("T")


@dataclass(frozen=True)
class JobRecord:
    """One job as accounting (or the snapshots) saw it."""

    id: str
    user: str = ""
    group: str = ""
    account: str = ""
    queue: str = ""
    qos: str = ""
    nodes: int = 1
    cores: int = 1
    wall: int | None = None  # requested run time, seconds
    submit: int | None = None
    start: int | None = None
    end: int | None = None
    eligible: int | None = None  # when it could first start, if after its submit (sacct's Eligible)

    @property
    def queued(self) -> int | None:
        """When the job began to wait for resources: its submit, or later where a dependency or
        a begin time held it (``eligible``).

        >>> JobRecord("1", submit=100).queued, JobRecord("2", submit=100, eligible=400).queued
        (100, 400)
        """
        return self.submit if self.eligible is None or self.submit is None else max(self.submit, self.eligible)

    @property
    def never_ran(self) -> bool:
        """Whether the job left the queue without running (cancelled while pending): an end, no start.

        >>> JobRecord("1", submit=0, end=50).never_ran, JobRecord("2", submit=0, start=5, end=50).never_ran
        (True, False)
        """
        return self.start is None and self.end is not None

    @property
    def left_queue(self) -> int | None:
        """When the job stopped waiting: its start, or its end if it never ran; None while it waits.

        >>> JobRecord("1", submit=0, start=5, end=50).left_queue, JobRecord("2", submit=0, end=8).left_queue
        (5, 8)
        """
        return self.start if self.start is not None else self.end

    @property
    def runtime(self) -> int | None:
        """Run time of a finished job."""
        return None if self.start is None or self.end is None else self.end - self.start

    @property
    def wait(self) -> int | None:
        return None if self.start is None or self.submit is None else self.start - self.submit


def of_rows(cls: type[T], rows: Iterable[tuple]) -> list[T]:
    """Instances of the frozen dataclass ``cls`` from tuples of all its fields in order, each
    the same as ``cls(*row)``: for bulk reads (a history's 54,000 records), in a third of the
    time, as a frozen dataclass's ``__init__`` sets each field through ``object.__setattr__``.
    For plain dataclasses without ``__post_init__`` or slots.  O(rows).

    >>> row = ("7", "u", "", "", "q", "", 1, 4, 60, 0, 5, 50, None)
    >>> of_rows(JobRecord, [row]) == [JobRecord(*row)]
    True
    """
    names, new, out = tuple(cls.__dataclass_fields__), object.__new__, []
    for row in rows:
        if len(row) != len(names):
            raise ValueError(f"a {cls.__name__} has {len(names)} fields, not {len(row)}")
        item = new(cls)
        item.__dict__.update(zip(names, row))
        out.append(item)
    return out


def until(records: Iterable[JobRecord], t: int) -> Iterator[JobRecord]:
    """What the accounting showed at ``t``: finished jobs, running ones without their end, and
    jobs cancelled while pending (an end, no start) by then.

    >>> r = [JobRecord("1", submit=0, start=5, end=9), JobRecord("2", submit=0, start=5, end=20),
    ...      JobRecord("3", submit=1, start=12, end=14), JobRecord("4", submit=0, end=8), JobRecord("5", submit=0, end=11)]
    >>> [(x.id, x.end) for x in until(r, 10)]
    [('1', 9), ('2', None), ('4', 8)]
    """
    for rec in records:
        if rec.never_ran and rec.end <= t:
            yield rec
            continue
        if rec.start is None or rec.start >= t:
            continue
        if rec.end is not None and rec.end > t:
            rec = replace(rec, end=None)
        yield rec


def from_swf(trace, cores_per_node: int = 1, per_queue: Callable[[str], int | None] | None = None) -> list[JobRecord]:
    """Records of an SWF trace, named as ``swf2lml`` names its jobs (``step`` = job number,
    owner ``userN``, queue ``queueN`` or ``batch``), so snapshots and history match; nodes
    from ``cores_per_node``, or from ``per_queue`` (a queue's cores per node) where it knows.
    A job cancelled while pending (``TraceJob.cancelled``) has its end, when it left, and no start."""
    out = []
    epoch = trace.epoch  # read from the header at each call
    for job in trace.jobs:
        start = epoch + job.start
        queue = trace.queue_of(job)
        per_node = (per_queue(queue) if per_queue is not None else None) or cores_per_node
        out.append(JobRecord(str(job.number), trace.owner(job), trace.group_of(job), "", queue, "",
                             ceil(job.procs / per_node), job.procs,
                             job.requested if job.requested > 0 else None,
                             epoch + job.submit, None if job.cancelled else start, start + job.run))
    return out


SACCT_FIELDS = ("JobID", "User", "Group", "Account", "Partition", "QOS", "NNodes", "NCPUS", "Timelimit",
                "Submit", "Eligible", "Start", "End", "State")  # what the README's recipe asks sacct for
# what a job line cannot do without; the other fields of SACCT_FIELDS read as empty where absent
SACCT_REQUIRED = ("JobID", "User", "Partition", "NNodes", "NCPUS", "Timelimit", "Submit", "Start", "End")
# fields a site's own --format may have instead, in order of preference (TimelimitRaw is in
# minutes, which a Slurm duration without a colon is; JobIDRaw numbers array tasks plainly)
SACCT_ALIASES = {"JobID": ("JobIDRaw",), "NNodes": ("AllocNodes", "ReqNodes"), "NCPUS": ("AllocCPUS", "ReqCPUS"),
                 "Timelimit": ("TimelimitRaw",)}
_UNKNOWN = {"", "unknown", "none", "n/a"}
_ARRAY_SUMMARY = re.compile(r"^\d+_\[.*\]$")


def _date(text: str) -> int | None:
    text = text.strip()
    if text.lower() in _UNKNOWN:
        return None
    return parse_date(text)[0]


def _sacct_date(get: dict[str, str], key: str, where: str) -> int | None:
    """A date field of a sacct line; InputError naming the line, key and value where it is not
    a date (sacct prints dates in a user's ``SLURM_TIME_FORMAT`` too)."""
    try:
        return _date(get[key])
    except ValueError as err:
        raise InputError(where, key, get[key][:60], f"{err}: printed under a SLURM_TIME_FORMAT? Export "
                         "with SLURM_TIME_FORMAT=standard") from None


def sacct_columns(header: list[str], where: str, line: str) -> dict[str, int]:
    """Where each field of ``SACCT_FIELDS`` stands in a sacct header: the field itself, else
    its first alias present (``SACCT_ALIASES``); Group, Account, QOS, Eligible and State may
    be absent (empty). InputError naming what a job line cannot do without.

    >>> sacct_columns("JobID|User|Partition|AllocNodes|AllocCPUS|TimelimitRaw|Submit|Start|End".split("|"), "f", "")
    {'JobID': 0, 'User': 1, 'Partition': 2, 'NNodes': 3, 'NCPUS': 4, 'Timelimit': 5, 'Submit': 6, 'Start': 7, 'End': 8}
    """
    index: dict[str, int] = {}
    for name in SACCT_FIELDS:
        found = next((n for n in (name, *SACCT_ALIASES.get(name, ())) if n in header), None)
        if found is not None:
            index[name] = header.index(found)
    missing = [name + (f" (or {', '.join(SACCT_ALIASES[name])})" if name in SACCT_ALIASES else "")
               for name in SACCT_REQUIRED if name not in index]
    if missing:
        raise InputError(where, "header", line[:200], f"not a sacct --parsable2 header: missing {', '.join(missing)}")
    return index


def _held_until(submit: int | None, eligible: int | None, start: int | None) -> int | None:
    """sacct's Eligible where it is after the submit (held by a dependency or a begin time),
    never after the start; None otherwise."""
    if eligible is None or submit is None or eligible <= submit:
        return None
    return eligible if start is None else min(eligible, start)


def _whole_field(get: dict[str, str], name: str) -> int:
    """A sacct count (``NNodes``, ``NCPUS``; 1 where empty); ValueError naming the field."""
    try:
        return int(get[name] or 1)
    except ValueError:
        raise ValueError(f"{name} {get[name]!r}: not a whole number") from None


def read_sacct(lines: Iterable[str], source: str) -> tuple[list[JobRecord], dict[str, int]]:
    """Records of ``sacct --parsable2 --allusers`` output with a header line naming at least
    the fields of ``SACCT_REQUIRED`` (any order, ``sacct_columns``). Job steps (``123.batch``, ``123.0``) are
    skipped, array tasks (``123_7``) and heterogeneous components (``123+1``) are jobs of
    their own, a pending array's summary line (``123_[8-100%10]``) is skipped: its tasks are
    not known yet. A job cancelled while pending, which sacct shows as starting and ending the
    moment it left (``slurm.never_ran``; its ``NodeList`` read where the header has one), is
    a record with that end and no start: it never ran, so it teaches no run time and no start;
    so is each task of a cancelled array's summary line (``123_[8-100%10]`` CANCELLED).
    A malformed line is InputError naming the file and line.
    """
    counts = {"jobs": 0, "steps": 0, "pending_arrays": 0, "never_ran": 0}
    node_list: int | None = None
    header: list[str] | None = None
    out: list[JobRecord] = []
    for lineno, line in enumerate(lines, 1):
        line = line.rstrip("\r\n")
        if not line.strip():
            continue
        fields = line.split("|")
        if header is None:
            header = [f.strip() for f in fields]
            index = sacct_columns(header, f"{source} line {lineno}", line)
            node_list = header.index("NodeList") if "NodeList" in header else None
            continue
        if len(fields) < len(header):
            raise InputError(f"{source} line {lineno}", None, None,
                             f"{len(fields)} fields, the header names {len(header)}")
        get = {name: fields[i].strip() for name, i in index.items()}
        get.update((name, "") for name in SACCT_FIELDS if name not in index)
        job_id = get["JobID"]
        if "." in job_id:
            counts["steps"] += 1
            continue
        summary = _ARRAY_SUMMARY.match(job_id) is not None
        tasks: list[int] = []
        if summary:  # a pending array's tasks are not known yet; a cancelled one's never ran
            try:
                tasks = parse_tasks(job_id[job_id.index("[") + 1:-1])[0] if \
                    get["State"].upper().startswith("CANCELLED") else []
            except ValueError:  # more tasks than jufo expands (MaxArraySize may allow them)
                tasks = []
            if not tasks:
                counts["pending_arrays"] += 1
                continue
        try:
            if not job_id:
                raise ValueError("JobID is empty")
            for name in ("NNodes", "NCPUS", "Timelimit"):
                if len(get[name]) > 30:  # (Python reads no number of 4,300 digits; sacct prints none of 31 characters)
                    raise ValueError(f"{name} {get[name][:40]}...: {len(get[name]):,} characters, no count or time")
            nodes, cores = (_whole_field(get, name) for name in ("NNodes", "NCPUS"))
            if nodes > MAX_NODES or cores > MAX_COUNT:
                raise ValueError(f"NNodes {nodes:,} / NCPUS {cores:,}: more than a machine can mean")
            try:
                wall = seconds_of(get["Timelimit"])
            except ValueError as err:
                raise ValueError(f"Timelimit {get['Timelimit']!r}: {err}") from None
        except ValueError as err:
            raise InputError(f"{source} line {lineno}", None, line[:200], f"not a sacct job line: {err}") from None
        submit, start, end, eligible = (_sacct_date(get, key, f"{source} line {lineno}")
                                        for key in ("Submit", "Start", "End", "Eligible"))
        state = get["State"].split()[0].upper() if get["State"] else ""
        if summary:  # an array cancelled with tasks still pending: each of them never ran
            if end is None or start not in (None, end):
                tasks = []
            start = None
        elif state in ("PENDING", "REQUEUED") or (start is not None and end is not None and end < start):
            start = end = None
        elif never_ran(state, start, end, None if node_list is None else fields[node_list]):
            start = None  # (sacct may show such a job's Start as None, too)
        elif state in ("RUNNING", "COMPLETING", "SUSPENDED", "CONFIGURING", "RESIZING"):
            end = None
        record = JobRecord(job_id, get["User"], get["Group"], get["Account"], get["Partition"].split(",")[0],
                           get["QOS"], max(nodes, 1), max(cores, 1), wall, submit, start, end,
                           _held_until(submit, eligible, start))
        made = [replace(record, id=f"{job_id[:job_id.index('_')]}_{task}") for task in tasks] if summary else [record]
        out += made
        counts["jobs"] += len(made)
        counts["never_ran"] += sum(r.never_ran for r in made)
    if header is None:
        raise InputError(source, "header", None, "empty: expected sacct --parsable2 output with a header line")
    return out, counts


def text_lines(path: str) -> list[str]:
    """Lines of a text file (``-``: standard input; ``.gz`` read compressed), up to the input limit."""
    import gzip
    import sys

    from .values import read_limited

    try:
        if path == "-":
            if sys.stdin is None:
                raise InputError("-", None, None, "standard input is closed")
            raw = read_limited(sys.stdin.buffer, "stdin")
        else:
            opener = gzip.open if path.endswith(".gz") else open
            with opener(path, "rb") as fh:
                raw = read_limited(fh, path)
    except OSError as err:
        raise InputError(path, None, None, f"cannot read: {err.strerror or err}") from None
    except EOFError:
        raise InputError(path, None, None, "truncated: the compressed file ends early") from None
    try:  # (utf-8-sig: a byte-order mark, as some tools write, is no part of the header)
        return raw.decode("utf-8-sig").splitlines()
    except UnicodeDecodeError as err:  # replacing bad bytes could merge two job ids into one
        line = raw[:err.start].count(b"\n") + 1
        raise InputError(f"{path} line {line}", None, None, f"not UTF-8 ({err.reason} at byte {err.start:,})") from None


def is_sacct(path: str) -> bool:
    """Whether ``path`` looks like ``sacct --parsable2`` output (its first line a header naming
    JobID or JobIDRaw, fields split by ``|``) rather than an SWF trace."""
    import gzip

    opener = gzip.open if path.endswith(".gz") else open
    try:
        with opener(path, "rb") as fh:
            head = fh.read(4096).decode("utf-8", "replace")
    except (OSError, EOFError):
        return False
    first = next((line for line in head.splitlines() if line.strip()), "")
    return "|" in first and any(name in ("JobID", *SACCT_ALIASES["JobID"]) for name in first.split("|"))
