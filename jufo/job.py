"""Jobs: the request read from a job object's keys, and the prediction made for it.

Times are whole seconds relative to the snapshot's ``system_time`` (time zero).
Documented defaults (each with a warning): missing ``queuedate`` → time zero; missing
``dispatchdate`` of a running job → time zero; no usable size → 1 node × 1 core; nodes
without cores per node → 1 core per node; ``totalcores`` without nodes → as few nodes as hold
it (the largest node's core count each). A waiting job without a usable ``wall`` gets no
prediction (``BadInput: wall``): there is no sane default for how long it runs.
``actualruntime`` (replays) makes the job end that long after its start, at most at its wall,
while the scheduler keeps planning with ``wall``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from math import ceil
from typing import Any

from .dates import parse_date, parse_seconds
from .errors import Report
from .lml import LmlObject
from .node import parse_memory
from .values import MAX_COUNT, whole

RUNNING, WAITING = "Running", "Idle"
# What adapters write in ``state`` (LLview, its Slurm adapter, PTP's LML_da), by meaning.
WAITING_STATES = {"Idle", "Pending", "Queued"}
HELD_STATES = {"User Hold", "System Hold", "Hold", "Held"}
# ``status`` (PTP's generic job states), read only where ``state`` is missing
STATUS_STATES = {"RUNNING": RUNNING, "SUBMITTED": WAITING}


@dataclass(eq=False)
class Job:
    """A job with its request and, after simulation, its prediction."""

    id: str
    index: int  # document order among all objects: the last tie-breaker of priority
    data: dict[str, str]
    state: str
    owner: str = ""
    group: str = ""
    queue: str = ""
    queued: int = 0  # queue date, seconds from time zero
    wall: int = 0
    actual: int | None = None  # real run time (``actualruntime``), for replays; at most ``wall``
    nodes: int = 1
    cores_per_node: int = 1
    total_cores: int = 1
    gpus_per_node: int = 0  # from totalgpus: only nodes with that many GPUs qualify
    memory: int = 0  # MB per node (``memory`` or ``reqmem``): only nodes that have it qualify
    started: int | None = None  # running jobs: dispatch date
    nodelist: str | None = None  # running jobs: where they run
    reason: str | None = None  # why the job gets no start
    # prediction
    start: int | None = None
    end: int | None = None
    resources: Any = None  # NodeCores (NodeState) or core count (AttributeState)
    topdog: bool = False
    backfilled: bool = False
    order_key: tuple = ()  # static priority key, set by the JobSorter when first asked
    shape: tuple = ()  # (request shape, size) for the per-pass failure memo, set when queued
    read_reason: str | None = None  # the reason reading gave (held, bad input), before any simulation

    def __repr__(self) -> str:
        return f"Job({self.id})"

    @property
    def label(self) -> str:
        return f"job {self.id}"

    @property
    def running(self) -> bool:
        return self.state == RUNNING

    @property
    def runtime(self) -> int:
        """How long the job runs in the simulation: its real run time if known, else its wall."""
        return self.wall if self.actual is None else self.actual

    @property
    def waiting(self) -> bool:
        return self.state == WAITING and self.reason is None

    @property
    def key(self) -> str:
        """How the batch system names the job (``step``), else its object id: what matches a
        job across snapshots, accounting and traces."""
        return self.data.get("step") or self.id

    def fresh(self) -> Job:
        """A copy as it was read, without any prediction: for a second simulation."""
        return replace(self, reason=self.read_reason, start=None, end=None, resources=None, topdog=False,
                       backfilled=False, order_key=(), shape=())


@dataclass
class JobReader:
    """Turns job objects into Jobs, relative to time zero, reporting defaults and bad values."""

    epoch: int  # system_time in epoch seconds
    max_cores: int  # cores of the largest node, to spread a bare ``totalcores``
    report: Report
    problems: list[str] = field(default_factory=list)

    def read(self, obj: LmlObject) -> Job:
        job = self._read(obj)
        job.read_reason = job.reason
        return job

    def _read(self, obj: LmlObject) -> Job:
        d = obj.data
        state = d.get("state", "").strip()
        if not state and d.get("status", "").strip():
            status = d["status"].strip()
            state = STATUS_STATES.get(status.upper(), status)
        job = Job(obj.id, obj.index, d, RUNNING if state == RUNNING else WAITING if state in WAITING_STATES else state)
        job.owner, job.group, job.queue = d.get("owner", ""), d.get("group", ""), d.get("queue", "")
        if not job.state:
            self._bad(job, obj, "state", "is needed to tell running from waiting jobs")
            return job
        if job.state in HELD_STATES:
            job.reason = f"Held: state {job.state!r}; no start is predicted until it is released"
            return job
        if job.state not in (RUNNING, WAITING):
            job.reason = f"NotQueued: state {job.state!r} is neither running nor waiting"
            return job
        self._size(job, obj)
        job.queued = self._date(job, obj, "queuedate", default=0)
        if job.running:
            # a pending job's starttime is the batch system's own forecast: never read as a fact
            key = "dispatchdate" if d.get("dispatchdate") or not d.get("starttime") else "starttime"
            job.started = self._date(job, obj, key, default=0)
            job.nodelist = d.get("nodelist") or None
            if job.nodelist in ("-", ""):
                job.nodelist = None
        wall = self._whole(job, obj, "wall", positive=False, seconds=True)
        if wall is None:
            if job.running:
                self.report.warn(obj.label, "wall", d.get("wall"), "unusable; assuming the job ends at system_time")
                job.wall = max(0, -(job.started or 0))
            else:
                self._bad(job, obj, "wall", "needs the requested run time in seconds")
        else:
            job.wall = wall
        self._actual(job, obj)
        return job

    def _actual(self, job: Job, obj: LmlObject) -> None:
        """``actualruntime``: the job really ends then; a scheduler kills it at its wall."""
        raw = obj.data.get("actualruntime")
        if raw is None or raw.strip() == "" or job.reason:
            return
        try:
            job.actual = min(parse_seconds(raw), job.wall)
        except ValueError:
            self.report.warn(obj.label, "actualruntime", raw, "not a number of seconds; the job runs its wall")

    def _bad(self, job: Job, obj: LmlObject, key: str, why: str) -> None:
        value = obj.data.get(key)
        text = f"{key}={value!r} {why}" if value is not None else f"{key} is missing; {why}"
        job.reason = job.reason or f"BadInput: {key}: {text}"
        self.problems.append(f"{obj.label}: {text}")

    def _whole(self, job: Job, obj: LmlObject, key: str, positive: bool = True, seconds: bool = False) -> int | None:
        raw = obj.data.get(key)
        if raw is None or raw.strip() == "":
            return None
        try:
            value = parse_seconds(raw) if seconds else _int(raw)
            if positive and value < 1:
                raise ValueError
        except ValueError:
            if not seconds:
                self._bad(job, obj, key, "is not a positive whole number")
            return None
        return value

    def _date(self, job: Job, obj: LmlObject, key: str, default: int) -> int:
        raw = obj.data.get(key)
        if raw is None or raw.strip() == "":
            self.report.warn(obj.label, key, None, "missing; assuming system_time")
            return default
        try:
            return parse_date(raw)[0] - self.epoch
        except ValueError as err:
            self.report.warn(obj.label, key, raw, f"{err}; assuming system_time")
            return default

    def _size(self, job: Job, obj: LmlObject) -> None:
        """Nodes from nummachines or numnodes; cores per node from taskspernode or ppn (or
        totalcores / nodes); totalcores, else totaltasks × tpt."""
        key = "nummachines" if obj.data.get("nummachines") else "numnodes"
        nodes = self._whole(job, obj, key)
        per_node = self._whole(job, obj, "taskspernode" if obj.data.get("taskspernode") else "ppn")
        total = self._whole(job, obj, "totalcores")
        if total is None and obj.data.get("totaltasks"):
            tasks = self._whole(job, obj, "totaltasks")
            per_task = self._whole(job, obj, "tpt") if obj.data.get("tpt") else 1
            total = tasks * per_task if tasks and per_task else None
        if job.reason:
            return
        if nodes and per_node:
            pass
        elif nodes and total:
            per_node = ceil(total / nodes)
        elif total:
            nodes = max(1, ceil(total / max(self.max_cores, 1)))
            per_node = ceil(total / nodes)
        elif nodes:
            self.report.warn(obj.label, "taskspernode", None, "no cores per node (taskspernode/ppn) and no "
                             "totalcores; assuming 1 core per node")
            per_node = 1
        else:
            self.report.warn(obj.label, "totalcores", None, "no size given (nummachines/numnodes, "
                             "taskspernode/ppn, totalcores, totaltasks); assuming 1 node, 1 core")
            nodes, per_node = 1, 1
        job.nodes, job.cores_per_node = nodes, per_node
        job.total_cores = total if total else nodes * per_node
        for key in ("memory", "reqmem"):
            if obj.data.get(key, "").strip():
                try:
                    job.memory = parse_memory(obj.data[key])
                except ValueError as err:
                    self.report.warn(obj.label, key, obj.data[key], f"{err}; memory not checked")
                break
        if obj.data.get("totalgpus", "").strip():
            gpus = self._whole(job, obj, "totalgpus", positive=False)
            job.gpus_per_node = ceil(gpus / nodes) if gpus else 0


def _int(raw: str) -> int:
    """A whole number, also written as ``16.000``, no larger than any machine could mean."""
    return whole(raw, -MAX_COUNT, MAX_COUNT)
