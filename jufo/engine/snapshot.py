"""A snapshot read and built: the scheduling objects of one raw LML document (read → build).

``read_snapshot`` turns a ``Document`` into nodes, queues, jobs, reservations and the
scheduler's keys; ``prepare`` adds the checked ``Configuration``; ``trace_snapshot`` builds an
SWF trace's jobs directly, for replays and backtests.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from math import ceil

from ..io import swf
from ..io.dates import DEFAULT_FORMAT, parse_date
from ..io.errors import Report
from ..io.lml import Document
from ..io.values import LATEST_EPOCH, plain_digits
from . import jobsets
from .configuration import Configuration
from .job import RUNNING, WAITING, Job, JobReader, start_where_idle
from .node import Machine, read_nodes
from .queue import Queue, read_queues
from .reservation import Reservation, read_reservations


@dataclass
class Snapshot:
    """The scheduling objects read from one document."""

    epoch: int  # system_time, epoch seconds
    date_format: str
    machine: Machine
    queues: dict[str, Queue]
    jobs: list[Job]
    reservations: list[Reservation]
    scheduler: dict[str, str]
    scheduler_label: str
    job_problems: list[str] = field(default_factory=list)
    throttles: dict[str, int] = field(default_factory=dict)  # job array → tasks running at once
    qos_limits: dict[str, int] = field(default_factory=dict)  # QOS → jobs a user may run at once in it
    qos_tres: dict[str, dict[str, int]] = field(default_factory=dict)  # QOS → "cores"/"nodes" → a user's most at once
    qos_account_limits: dict[str, int] = field(default_factory=dict)  # QOS → jobs an account may run at once in it
    qos_account_tres: dict[str, dict[str, int]] = field(default_factory=dict)  # QOS → "cores"/"nodes" → an account's
    qos_group_limits: dict[str, int] = field(default_factory=dict)  # QOS → jobs all its users run at once (GrpJobs)
    qos_group_tres: dict[str, dict[str, int]] = field(default_factory=dict)  # QOS → "cores"/"nodes" → all its jobs'

    def fresh(self) -> Snapshot:
        """The same snapshot with its jobs as read, for another simulation of it."""
        return replace(self, jobs=[job.fresh() for job in self.jobs])


def read_snapshot(doc: Document, report: Report, jobs: list[Job] | None = None) -> Snapshot | None:
    """Read system time, nodes, queues, jobs, reservations and scheduler keys. ``jobs``:
    already read (a trace replay builds them directly), in place of the document's.

    Fatal problems raise InputError, or, when the report collects them, reading goes on as
    far as it can (None only without a usable system_time).
    """
    for oid in doc.unknown_info_ids:
        report.warn(f"info {oid}", "oid", oid, "names no object; ignored")
    epoch, fmt = None, DEFAULT_FORMAT
    systems = doc.of_type("system")
    raw = next((o.data["system_time"] for o in systems if "system_time" in o.data), None)
    label = systems[0].label if systems else "system"
    if raw is None:
        report.error(label, "system_time", None, "missing; it is the time the prediction starts from")
    else:
        try:
            epoch, fmt = parse_date(raw)
            if epoch > LATEST_EPOCH:
                raise ValueError("after the year 9000: predicted dates could not be written back")
        except ValueError as err:
            report.error(label, "system_time", raw, str(err))
    machine = read_nodes(doc.of_type("node"), report)
    if not machine.nodes and not report.errors:
        report.error("snapshot", "node", None, "no node objects: jufo needs the system's nodes")
    queues = read_queues(doc.of_type("queue"), report)
    scheduler: dict[str, str] = {}
    schedulers = doc.of_type("scheduler")
    for obj in schedulers:
        scheduler.update(obj.data)
    scheduler_label = schedulers[0].label if schedulers else "scheduler"
    if epoch is None:
        return None
    reservations = read_reservations(doc.of_type("reservation"), machine, epoch, report)
    queue_data = {obj.name or obj.id: obj.data for obj in doc.of_type("queue")}
    reader = JobReader(epoch, machine.max_cores, report, nodes=machine.by_name, queues=queue_data, machine=machine)
    if jobs is None:
        jobs = [reader.read(obj) for obj in doc.of_type("job")]
        start_where_idle([job for job in jobs if job is not None], queue_data, machine)
    jobs, throttles = jobsets.expand_arrays(jobs, report)
    jobsets.combine_het(jobs)
    classes = doc.of_type("class")
    return Snapshot(epoch, fmt, machine, queues, jobs, reservations, scheduler, scheduler_label, reader.problems,
                    throttles, read_qos_limits(classes, report), read_qos_tres(classes, report),
                    read_qos_limits(classes, report, "max_jobs_pa"), read_qos_tres(classes, report, "max_tres_pa"),
                    read_qos_limits(classes, report, "grp_jobs"), read_qos_tres(classes, report, "grp_tres"))


def _qos_name(obj) -> str:
    """The QOS a ``class`` object stands for: its ``name``, else the object's name or id."""
    return (obj.data.get("name") or obj.name or obj.id).strip()


def _positive(text: str) -> int | None:
    """A limit written as plain digits, 1 to 999,999,999; None otherwise.

    >>> _positive("30"), _positive("0"), _positive("3.0"), _positive("1234567890")
    (30, None, None, None)
    """
    return int(text) if plain_digits(text) and len(text) <= 9 and int(text) >= 1 else None


def read_qos_limits(classes, report: Report, key: str = "max_jobs_pu") -> dict[str, int]:
    """QOS → the most jobs of it one user may run at once, from the ``class`` objects LLview 2's
    ``classes_LML.xml`` (and ``jufo slurm snapshot``) write for Slurm's QOS: ``name`` and
    ``max_jobs_pu`` (Slurm's ``MaxJobsPU``; with ``key="max_jobs_pa"``, ``MaxJobsPA``: the
    most one account's users may run at once; with ``key="grp_jobs"``, ``GrpJobs``: all its
    users together). Blank is no limit; a value that is not a positive
    whole number is ignored with a warning (the forecast is still made, without that cap)."""
    out: dict[str, int] = {}
    for obj in classes:
        raw = obj.data.get(key, "").strip()
        if not raw:
            continue
        cap = _positive(raw)
        if cap is None:
            report.warn(obj.label, key, raw, "not a positive whole number; this QOS is taken as unlimited")
            continue
        out[_qos_name(obj)] = cap
    return out


TRES_KINDS = {"cpu": "cores", "node": "nodes"}  # the per-user TRES limits jufo holds a user to


def read_qos_tres(classes, report: Report, key: str = "max_tres_pu") -> dict[str, dict[str, int]]:
    """QOS → the most cores and nodes one user may hold at once in it, from the ``class``
    objects' ``max_tres_pu`` (with ``key="max_tres_pa"``: one account's users together,
    ``MaxTRESPA``; with ``key="grp_tres"``: all its jobs together, ``GrpTRES``)
    (Slurm's ``MaxTRESPU`` as ``sacctmgr`` prints it: ``cpu=30,node=4``,
    ``gres/gpu=8``). Other resources (memory, GPUs, billing) are not held to; an entry that is
    not ``name=whole number`` is ignored with a warning (the forecast is still made without it).

    >>> from types import SimpleNamespace as O
    >>> read_qos_tres([O(data={"name": "normal", "max_tres_pu": "cpu=30,mem=4G,node=4"}, name="", id="c0",
    ...                  label="class c0")], Report(quiet=True))
    {'normal': {'cores': 30, 'nodes': 4}}
    """
    out: dict[str, dict[str, int]] = {}
    for obj in classes:
        raw = obj.data.get(key, "").strip()
        if not raw or raw == "-":
            continue
        for entry in raw.split(","):
            name, _, value = entry.strip().partition("=")
            kind = TRES_KINDS.get(name.strip())
            if kind is None:
                continue
            cap = _positive(value.strip())
            if cap is None:
                report.warn(obj.label, key, raw, f"{name.strip()} is not a positive whole number; "
                            "this QOS is taken as unlimited in it")
                continue
            out.setdefault(_qos_name(obj), {})[kind] = cap
    return out


def prepare(doc: Document, report: Report, overrides: dict[str, str] | None = None,
            jobs: list[Job] | None = None) -> tuple[Snapshot, Configuration] | None:
    """Read the snapshot and check the configuration; None if anything fatal was collected.
    ``overrides`` (a preset, then ``--set`` keys) win over the snapshot's scheduler object;
    ``jobs``: already read, in place of the document's (see ``read_snapshot``)."""
    snap = read_snapshot(doc, report, jobs)
    if snap is None:
        return None
    settings = {**snap.scheduler, **(overrides or {})}
    config = Configuration.read(settings, snap.scheduler_label, snap.jobs, report)
    if config is None or report.errors:
        return None
    return snap, config


def trace_snapshot(trace: swf.Trace, conv: swf.Conversion, index: swf.TraceIndex | None = None
                   ) -> tuple[list[tuple[str, str, dict[str, str]]], list[Job], dict[str, int]]:
    """An SWF trace's snapshot: its objects but its jobs, its jobs already read, and the
    counts: what ``swf.snapshot_objects`` gives, without writing each job's numbers and dates
    as text for ``JobReader`` to parse back (a replay without output reads 28,000 jobs in a
    tenth of the time). Each Job equals the one ``JobReader`` reads from the same object (a
    test compares them field by field).  O(jobs); with an ``index`` of the trace (for the
    same conversion, without ``future``), O(jobs waiting or running at the snapshot's time)."""
    objects, entries, counts = swf.snapshot_entries(trace, conv, index)
    at = swf.snapshot_time(trace, conv)
    base, jobs = len(objects), []
    for k, (oid, data, job, state, wall, n) in enumerate(entries):
        running = state == "running"
        read = Job(oid, base + k, data, RUNNING if running else WAITING, data["owner"], data["group"], data["queue"],
                   job.submit - at, wall, min(job.run, wall) if conv.actual else None, n, ceil(job.procs / n),
                   job.procs)
        if running:
            read.started, read.nodelist = job.start - at, data["nodelist"] or None
        jobs.append(read)
    return objects, jobs, counts
