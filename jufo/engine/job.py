"""Jobs: the request read from a job object's keys, and the prediction made for it.

Times are whole seconds relative to the snapshot's ``system_time`` (time zero).
Documented defaults (each with a warning): missing ``queuedate`` → time zero; missing
``dispatchdate`` of a running job → time zero; no usable size → 1 node × 1 core; nodes
without cores per node → 1 core per node; ``totalcores`` without nodes → as few nodes as hold
it (the largest node's core count each). A waiting job without a usable ``wall`` gets no
prediction (``BadInput: wall``): there is no sane default for how long it runs. A ``wall`` of
``UNLIMITED`` (Slurm's word, which LLview 2 passes on) is planned as Slurm's backfill plans it:
the queue's ``maxtime``, else a year. A waiting job listing several queues (Slurm's
``Partition=a,b``) is scheduled in one of them (``choose_queue``).
``actualruntime`` (replays) makes the job end that long after its start, at most at its wall,
while the scheduler keeps planning with ``wall``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, fields
from math import ceil
from operator import attrgetter
from typing import Any

from ..io.dates import parse_date, parse_seconds
from ..io.hostlist import expand_hostlist
from ..io.errors import Report
from ..io.lml import LmlObject
from .node import name_pairs, parse_memory, parse_nodelist
from ..io.slurm import NO_TIME_LIMIT, Meaning, classify, state_of
from ..io.values import LATEST_EPOCH, MAX_COUNT, MAX_SECONDS, plain_digits, whole

RUNNING, WAITING = "Running", "Idle"
# What adapters write in ``state`` (LLview, its Slurm adapter, PTP's LML_da), by meaning.
WAITING_STATES = {"Idle", "Pending", "Queued"}
HELD_STATES = {"User Hold", "System Hold", "Hold", "Held"}
HELD_STATUSES = {"USER_ON_HOLD", "SYSTEM_ON_HOLD"}  # LLview's detailedstatus of Slurm's held jobs
YEAR = 365 * 86400  # the wall of a job whose limit and queue's are unlimited (slurm.NO_TIME_LIMIT)
# ``status`` (PTP's generic job states), read only where ``state`` is missing
STATUS_STATES = {"RUNNING": RUNNING, "SUBMITTED": WAITING}


def end_grid(t: int) -> int:
    """``t`` (seconds after the snapshot) to the nearest step of a grid 1/128 to 1/64 as fine
    as ``t`` is far ahead (powers of two; exact within the first 128 s): a learned run time is
    no sharper than that, and the ends of many jobs then fall on the same seconds, at each of
    which the simulation passes over the queue once. Nearest, not up: a start waits on a
    chain of ends, whose roundings up would add up.  O(1).

    >>> [end_grid(t) for t in (-5, 0, 63, 100, 129, 1000, 100_001)]
    [-5, 0, 63, 100, 130, 1000, 100352]
    """
    if t < 128:
        return t
    step = 1 << (t.bit_length() - 7)
    return (t + step // 2) // step * step


@dataclass(eq=False, slots=True)
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
    gpus_per_job: int = 0  # with ``gpuspread=job`` (Slurm's --gpus): totalgpus, taken where free on its nodes
    gpu_type: str | None = None  # ``gputype`` (``--gres=gpu:a100:1``): only nodes with GPUs of that model qualify
    memory: int = 0  # MB per node (``memory`` or ``reqmem``): only nodes that have it qualify
    # Slurm's --constraint (``constraint``): only nodes with one of these sets of features qualify
    constraint: tuple[frozenset[str], ...] | None = None
    allowed: int | None = None  # mask of the nodes it may use (--nodelist, --exclude); None: any
    # where ``allowed`` holds it to the nodes it names, the nodes it could use without the list
    # (all but those it excludes: ~0 for any); Slurm's backfill looks there for running jobs to
    # end. None: no list held to
    unnamed: int | None = None
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
    begin: int = 0  # may not start before this (Slurm's BeginTime): arrives at max(queued, begin)
    limited: str | None = None  # Slurm says a per-user/association limit holds the job back
    array: str | None = None  # ArrayJobId of an array task
    task: str | None = None  # its ArrayTaskId
    het: str | None = None  # HetJobId of a heterogeneous job's component
    parent: str | None = None  # an array task: the object id of its array record
    leader: str | None = None  # a het job's component: the id of the component it starts with
    own_runtime: int | None = None  # a het job's leader: its own run time (it asks for all components)
    partitions: str | None = None  # a job pending in several (``Partition=a,b``): the list, as given
    switches: int | None = None  # Slurm's --switches=N@wait: at most N leaf switches ...
    switch_wait: int = 0  # ... until this long after its arrival, then anywhere
    learned: bool = False  # ``actual`` is a learned run time (a forecast): its end is planned on ``end_grid``

    @property
    def gpus_each(self) -> int:
        """GPUs the job asks (or holds) on each of its nodes, as the simulation counts them:
        those asked for the whole job (``--gpus``) spread evenly over its nodes.

        >>> Job("1", 0, {}, "Idle", nodes=2, gpus_per_node=1, gpus_per_job=3).gpus_each
        2
        """
        return -(-self.gpus_per_job // max(self.nodes, 1)) if self.gpus_per_job else self.gpus_per_node

    @property
    def memory_per_cpu(self) -> int:
        """MB the job asks per CPU (``mempercpu``: Slurm's ``--mem-per-cpu``, or its
        ``DefMemPerCPU``), 0 where not given or unreadable.

        >>> Job("1", 0, {"mempercpu": "300"}, "Idle").memory_per_cpu, Job("2", 0, {}, "Idle").memory_per_cpu
        (300, 0)
        """
        raw = self.data.get("mempercpu", "").strip()
        return int(raw) if raw.isdigit() else 0

    @property
    def switches_until(self) -> int | None:
        """Until when the job asks for at most ``switches`` leaf switches (seconds from time zero)."""
        return None if self.switches is None else self.arrival + self.switch_wait

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

    def end_at(self, start: int) -> int:
        """When the job ends in the simulation if it starts at ``start`` (seconds after the
        snapshot): after its run time, and for a learned one (``learned``) on ``end_grid``
        from there, never past its wall.

        >>> job = Job("1", 0, {}, "Idle", wall=3600, actual=1000)
        >>> job.end_at(100_000), Job("2", 0, {}, "Idle", wall=3600, actual=1000, learned=True).end_at(100_000)
        (101000, 101376)
        """
        end = start + self.runtime
        if not self.learned or end <= start:
            return end
        return min(max(end_grid(end), start + 1), start + self.wall)

    @property
    def arrival(self) -> int:
        """When the job joins the queue: its queue date, or its begin time if later."""
        return max(self.queued, self.begin)

    @property
    def waiting(self) -> bool:
        return self.state == WAITING and self.reason is None

    @property
    def key(self) -> str:
        """How the batch system names the job, as its accounting does: what matches a job
        across snapshots, accounting and traces. An array task is ``array_task`` and a het job
        component ``het+offset`` (sacct's names; scontrol gives each its own JobId), else
        ``step``, else the object id."""
        if self.array is not None and self.task is not None and self.task.isdigit():
            return f"{self.array}_{self.task}"
        offset = self.data.get("HetJobOffset", "").strip()
        if self.het is not None and offset.isdigit():
            return f"{self.het}+{offset}"
        return self.data.get("step") or self.id

    def fresh(self) -> Job:
        """A copy as it was read, without any prediction: for a second simulation. (Field by
        field: ``dataclasses.replace`` goes through ``__init__`` and was a sixteenth of a
        backtest's snapshot, which copies every job once per simulation.)"""
        new = object.__new__(Job)
        for name, value in zip(_FIELDS, _read_all(self)):
            setattr(new, name, value)
        new.reason, new.start, new.end, new.resources = self.read_reason, None, None, None
        new.topdog = new.backfilled = False
        new.order_key = new.shape = ()
        return new


_FIELDS = tuple(f.name for f in fields(Job))
_read_all = attrgetter(*_FIELDS)


@dataclass
class JobReader:
    """Turns job objects into Jobs, relative to time zero, reporting defaults and bad values."""

    epoch: int  # system_time in epoch seconds
    max_cores: int  # cores of the largest node, to spread a bare ``totalcores``
    report: Report
    problems: list[str] = field(default_factory=list)
    nodes: dict[str, Any] = field(default_factory=dict)  # Node by name: GPU entries in node lists
    queues: dict[str, dict[str, str]] = field(default_factory=dict)  # queue objects' keys by name
    machine: Any = None  # the Machine: which of a job's several queues can hold it

    def read(self, obj: LmlObject) -> Job:
        job = self._read(obj)
        job.read_reason = job.reason
        return job

    def _read(self, obj: LmlObject) -> Job:
        d = obj.data
        state = state_of(d.get("state", ""))
        if not state and d.get("status", "").strip():
            status = d["status"].strip()
            state = STATUS_STATES.get(status.upper(), status)
        nodelist = d.get("nodelist", "").strip()
        if state == "Pending" and nodelist not in ("", "-") and d.get("starttime", "").strip():
            state = RUNNING  # LLview writes CONFIGURING (nodes allocated, booting) as Pending
        job = Job(obj.id, obj.index, d, RUNNING if state == RUNNING else WAITING if state in WAITING_STATES else state)
        job.owner, job.group, job.queue = d.get("owner", ""), d.get("group", ""), d.get("queue", "")
        job.array, job.het = d.get("ArrayJobId", "").strip() or None, d.get("HetJobId", "").strip() or None
        job.task = d.get("ArrayTaskId", "").strip() or None
        if not job.state:
            self._bad(job, obj, "state", "is needed to tell running from waiting jobs")
            return job
        if job.state in HELD_STATES:
            job.reason = f"Held: state {job.state!r}; no start is predicted until it is released"
            return job
        if job.state == "Suspended":
            job.reason = "Suspended: no start or end is predicted until it is resumed"
            return job
        if job.state not in (RUNNING, WAITING):
            job.reason = f"NotQueued: state {job.state!r} is neither running nor waiting"
            return job
        if not job.running and self._held(job, d):
            return job
        self._size(job, obj)
        job.queued = self._date(job, obj, "queuedate", default=0)
        if job.running:
            self._started(job, obj)
            job.nodelist = self._nodelist(d) or None
        unlimited = unlimited_wall(d)
        wall = None if unlimited else self._whole(job, obj, "wall", positive=False, seconds=True)
        if "," in job.queue and not job.running:
            job.partitions = job.queue
            job.queue = choose_queue(job, wall, self.queues, self.machine)
        if unlimited:
            job.wall = no_limit_wall(self.queues, job.queue)
        elif wall is None:
            if job.running:
                self.report.warn(obj.label, "wall", d.get("wall"), "unusable; assuming the job ends at system_time")
                job.wall = max(0, -(job.started or 0))
            else:
                self._bad(job, obj, "wall", "needs the requested run time in seconds")
        else:
            job.wall = wall
        self._actual(job, obj)
        return job

    def _held(self, job: Job, d: dict[str, str]) -> bool:
        """Slurm's reason (and LLview's detailedstatus) for a pending job: held ones get their
        reason and no prediction; begin times and limits are noted for the simulation."""
        reason = d.get("reason", "").strip()
        meaning = classify(reason)
        if meaning is Meaning.HELD or d.get("detailedstatus", "").strip() in HELD_STATUSES:
            why = f"reason {reason!r}" if meaning is Meaning.HELD else f"detailedstatus {d['detailedstatus'].strip()!r}"
            job.reason = f"Held: {why}; no start is predicted until it is released or changed"
            return True
        if meaning is Meaning.NOT_BEFORE:
            try:
                job.begin = parse_date(d.get("starttime", ""))[0] - self.epoch
            except ValueError:
                self.report.warn(f"job {job.id}", "starttime", d.get("starttime"),
                                 "reason BeginTime but no begin date; the job may start at once")
        elif meaning is Meaning.LIMIT:
            job.limited = reason
        return False

    def _started(self, job: Job, obj: LmlObject) -> None:
        """A running job's start: ``dispatchdate``, else ``starttime`` (a pending job's
        starttime is the batch system's own forecast: never read as a fact), else system_time
        minus ``runtime``. Where ``runtime`` disagrees with the start date by more than a
        minute (suspended time does not count), ``runtime`` wins: Slurm ends the job when it
        reaches its wall."""
        d = obj.data
        runtime = None
        if d.get("runtime", "").strip():
            try:
                runtime = parse_seconds(d["runtime"])
            except ValueError:
                self.report.warn(obj.label, "runtime", d["runtime"], "not a number of seconds; ignored")
        if not d.get("dispatchdate") and not d.get("starttime") and runtime is not None:
            job.started = -runtime
            return
        key = "dispatchdate" if d.get("dispatchdate") or not d.get("starttime") else "starttime"
        job.started = self._date(job, obj, key, default=0)
        if runtime is not None and abs(-job.started - runtime) > 60:
            self.report.warn(obj.label, "runtime", d["runtime"], f"disagrees with {key} by "
                             f"{-job.started - runtime} s (suspended?); the job is taken to have run {runtime} s")
            job.started = -runtime

    def _allowed(self, obj: LmlObject, nodes: int) -> tuple[int | None, int | None]:
        """The nodes a job may use: those it names (``reqnodes``, Slurm's ``--nodelist``) where
        they are as many as it asks (with fewer, it may add others: not held to), less those
        it excludes (``excnodes``, ``--exclude``); None: any. And where it is held to the nodes
        it names, those it could use without them (``Job.unnamed``), else None. Names of no node are
        left out with a warning.  O(names)."""
        masks = []
        for key in ("reqnodes", "excnodes"):
            raw, mask = obj.data.get(key, "").strip(), 0
            if raw:
                try:
                    names = expand_hostlist(raw)
                except ValueError as err:
                    self.report.warn(obj.label, key, raw, f"{err}; placed without it")
                    names = []
                unknown = [name for name in names if name not in self.nodes]
                if unknown:
                    self.report.warn(obj.label, key, raw, f"names no node of the snapshot ({unknown[0]}); left out")
                for name in names:
                    if name in self.nodes:
                        mask |= 1 << self.nodes[name].index
            masks.append(mask)
        required, excluded = masks
        if required and required.bit_count() >= nodes:
            return required & ~excluded, ~excluded  # (~0: any node)
        return (~excluded if excluded else None), None

    def _nodelist(self, d: dict[str, str]) -> str:
        """The node list without the GPU entries LML_da's combiner appends for ``gpulist``:
        ``(node,ncores+gpu)`` per GPU, which would read as tasks on cores the node lacks."""
        nodelist = d.get("nodelist", "").strip()
        gpus = d.get("gpulist", "").strip()
        if nodelist in ("", "-") or gpus in ("", "-") or not self.nodes:
            return "" if nodelist == "-" else nodelist
        suffix = []
        for name, pos in name_pairs(gpus):
            node = name.removesuffix("-gpu")
            if node not in self.nodes:
                return nodelist
            suffix.append(f"({node},{self.nodes[node].ncores + pos})")
        appended = "".join(suffix)
        return nodelist.removesuffix(appended) if appended and nodelist != appended else nodelist

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
        """``key`` as a whole number (``seconds``: a duration), None if absent or blank. A bad
        count makes the job BadInput; a bad duration gives None, and the caller says why."""
        raw = obj.data.get(key)
        if raw is None:
            return None
        if plain_digits(raw) and len(raw) <= 9:  # the usual spelling, and below every bound
            value = int(raw)
            if value or not positive:
                return value
        elif raw.strip() == "":
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
            epoch = parse_date(raw)[0]
        except ValueError as err:
            self.report.warn(obj.label, key, raw, f"{err}; assuming system_time")
            return default
        if abs(epoch) > LATEST_EPOCH:  # the history refuses such dates as damage
            self.report.warn(obj.label, key, raw, "beyond the year 9000; assuming system_time")
            return default
        return epoch - self.epoch

    def _size(self, job: Job, obj: LmlObject) -> None:
        """Nodes from nummachines or numnodes; cores per node from taskspernode or ppn (or
        totalcores / nodes); totalcores, else totaltasks × tpt."""
        key = "nummachines" if obj.data.get("nummachines") else "numnodes"
        nodes = self._whole(job, obj, key)
        per_node = self._whole(job, obj, "taskspernode" if obj.data.get("taskspernode") else "ppn")
        total = self._whole(job, obj, "totalcores")
        if total is None and obj.data.get("totaltasks", "").strip() not in ("", "0"):
            # LoadLeveler's PTP adapter and LML_da's combiner write 0 where the size is not known
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
            spread = obj.data.get("gpuspread", "").strip() == "job"  # (--gpus: wherever its nodes have them)
            job.gpus_per_job = gpus if spread and gpus else 0
            job.gpus_per_node = (1 if spread else ceil(gpus / nodes)) if gpus else 0
            job.gpu_type = (obj.data.get("gputype", "").strip() or None) if gpus else None
        if obj.data.get("constraint", "").strip():
            try:
                job.constraint = parse_constraint(obj.data["constraint"])
            except ValueError as err:
                self.report.warn(obj.label, "constraint", obj.data["constraint"], f"{err}; placed without it")
        if obj.data.get("reqnodes", "").strip() or obj.data.get("excnodes", "").strip():
            job.allowed, job.unnamed = self._allowed(obj, nodes)
        if obj.data.get("switches", "").strip():
            try:
                job.switches, job.switch_wait = parse_switches(obj.data["switches"])
            except ValueError as err:
                self.report.warn(obj.label, "switches", obj.data["switches"], f"{err}; placed without it")


_FEATURE = re.compile(r"[A-Za-z0-9_.:+/-]+")


def parse_constraint(text: str) -> tuple[frozenset[str], ...] | None:
    """Slurm's ``--constraint`` as alternatives, each a set of features a node must all have:
    ``a100``, ``intel&ib`` (AND), ``a|b`` (OR), ``[a|b]`` (all nodes alike: one of them, which
    for choosing nodes reads as OR), ``a,b`` (AND, as older Slurm wrote it). None for
    ``(null)``. ValueError for what jufo cannot read (counts ``a*2``, parentheses): the caller
    places the job without it.  O(characters).

    >>> parse_constraint("a100"), parse_constraint("(null)")
    ((frozenset({'a100'}),), None)
    >>> sorted(sorted(alt) for alt in parse_constraint("[skylake|icelake]&ib"))
    [['ib', 'icelake'], ['ib', 'skylake']]
    """
    text = text.strip()
    if text in ("", "(null)"):
        return None
    if "*" in text or "(" in text:
        raise ValueError("node counts and parentheses in a constraint are not read")
    alternatives: list[set[str]] = [set()]
    for part in re.split(r"[&,]", text):
        part = part.strip()
        bracket = part.startswith("[") and part.endswith("]")
        names = [n.strip() for n in part.strip("[]").split("|")]
        if not all(_FEATURE.fullmatch(n) for n in names) or (len(names) > 1 and not bracket and "&" in text):
            raise ValueError(f"{part!r} is not a feature, or an OR of features in brackets")
        alternatives = [alt | {name} for alt in alternatives for name in names]
        if len(alternatives) > 64:
            raise ValueError("more than 64 alternatives")
    return tuple(frozenset(alt) for alt in alternatives)


SWITCH_WAIT = 300  # seconds: Slurm's max_switch_wait default, when --switches gives no time


def parse_switches(text: str) -> tuple[int, int]:
    """Slurm's ``--switches=count[@max-time]``: (count, seconds). The time is Slurm's: minutes,
    ``MM:SS``, ``HH:MM:SS``, ``D-HH``, ``D-HH:MM`` or ``D-HH:MM:SS``; without it 300 s.

    >>> parse_switches("1"), parse_switches("2@10"), parse_switches("1@01:00:00"), parse_switches("1@1-0")
    ((1, 300), (2, 600), (1, 3600), (1, 86400))
    """
    count, _, wait = text.strip().partition("@")
    if not count.strip().isdigit() or int(count) < 1 or int(count) > 1 << 20:
        raise ValueError("not a switch count (count[@max-time], e.g. 1@00:10:00)")
    if not wait.strip():
        return int(count), SWITCH_WAIT
    days, _, clock = wait.strip().rpartition("-") if "-" in wait else ("", "", wait.strip())
    parts = clock.split(":")
    if not (days == "" or days.isdigit()) or not all(p.isdigit() for p in parts) or len(parts) > 3:
        raise ValueError("not a Slurm time after @ (minutes, MM:SS, HH:MM:SS or D-HH:MM:SS)")
    numbers = [int(p) for p in parts]
    if days:  # D-HH[:MM[:SS]]
        numbers += [0] * (3 - len(numbers))
        seconds = int(days) * 86400 + numbers[0] * 3600 + numbers[1] * 60 + numbers[2]
    elif len(numbers) == 1:
        seconds = numbers[0] * 60
    elif len(numbers) == 2:
        seconds = numbers[0] * 60 + numbers[1]
    else:
        seconds = numbers[0] * 3600 + numbers[1] * 60 + numbers[2]
    if seconds > MAX_SECONDS:
        raise ValueError("a wait beyond a century")
    return int(count), seconds


def _int(raw: str) -> int:
    """A whole number, also written as ``16.000``, no larger than any machine could mean."""
    return whole(raw, -MAX_COUNT, MAX_COUNT)


def maxtime(queues: dict[str, dict[str, str]], name: str) -> int | None:
    """The queue object's ``maxtime`` in seconds, if it gives a usable one (a bad one is not read)."""
    raw = queues.get(name, {}).get("maxtime", "").strip()
    try:
        return (parse_seconds(raw) or None) if raw else None
    except ValueError:
        return None


def no_limit_wall(queues: dict[str, dict[str, str]], name: str) -> int:
    """The run time Slurm's backfill plans a job without a limit with (``_set_backfill_timelimits``):
    its partition's MaxTime, else a year.

    >>> no_limit_wall({"p": {"maxtime": "3600"}}, "p"), no_limit_wall({}, "p") == YEAR
    (3600, True)
    """
    return maxtime(queues, name) or YEAR


def unlimited_wall(data: dict[str, str]) -> bool:
    """Whether a job's ``wall`` is one of the words with which Slurm sets no limit (LLview 2
    passes ``UNLIMITED`` on as it is).

    >>> unlimited_wall({"wall": " unlimited"}), unlimited_wall({"wall": "3600"}), unlimited_wall({})
    (True, False, False)
    """
    return data.get("wall", "").strip().upper() in NO_TIME_LIMIT


def choose_queue(job: Job, wall: int | None, queues: dict[str, dict[str, str]], machine: Any,
                 idle: int | None = None) -> str:
    """The queue a job listing several (``gpu,gpu-long``) is scheduled in: the first, by the
    queue objects' ``prioritytier`` (highest first, as Slurm orders a job's partitions), then
    as listed, whose ``maxtime`` admits the wall and whose nodes can hold the job; the first
    listed if none can. Given the mask of the nodes no job runs on (``idle``), the first of
    those with enough idle nodes for the job, if one has. Slurm plans the job in each and
    starts it where it starts first: one queue is an approximation.  O(queues × node groups).

    >>> from types import SimpleNamespace as J
    >>> job = J(queue="gpu,gpu-long", partitions=None, nodes=1, cores_per_node=4, gpus_per_node=0, memory=0)
    >>> choose_queue(job, 7200, {"gpu": {"maxtime": "3600"}, "gpu-long": {"maxtime": "604800"}}, None)
    'gpu-long'
    >>> choose_queue(job, 60, {"gpu": {"prioritytier": "1"}, "gpu-long": {"prioritytier": "2"}}, None)
    'gpu-long'
    >>> choose_queue(job, 10**9, {"gpu": {"maxtime": "60"}, "gpu-long": {"maxtime": "60"}}, None)
    'gpu'
    """
    listed = job.partitions or job.queue
    names = [q.strip() for q in listed.split(",") if q.strip()]
    if not names:
        return listed

    def tier(name: str) -> float:
        try:
            return -float(queues.get(name, {}).get("prioritytier", "0"))
        except ValueError:
            return 0.0

    first = None
    for name in sorted(names, key=tier):  # stable: the listed order within a tier
        limit = maxtime(queues, name)
        if wall is not None and limit is not None and wall > limit:
            continue
        eligible = machine.for_job(job, queue=name) if machine is not None and machine.has_classes else None
        if eligible is not None and eligible.bit_count() < job.nodes:
            continue
        if idle is None or eligible is None:
            return name
        if (eligible & idle).bit_count() >= job.nodes:
            return name
        first = first or name
    return first or names[0]


def start_where_idle(jobs: list[Job], queues: dict[str, dict[str, str]], machine: Any) -> None:
    """Each job pending in several partitions goes to the first (``choose_queue``'s order) that
    has enough nodes no running job holds, where one has: Slurm starts it there at once.
    Partly used nodes count as busy.  O(running jobs' node lists + such jobs × queues)."""
    several = [job for job in jobs if job.partitions and not job.running and job.reason is None]
    if not several or not machine.has_classes:
        return
    busy = 0
    for job in jobs:
        if job.running and job.nodelist:
            try:
                for index, _, _ in parse_nodelist(job.nodelist, machine):
                    busy |= 1 << index
            except ValueError:
                pass  # placing the job reports it
    idle = machine.usable_nodes & ~busy
    for job in several:
        unlimited = unlimited_wall(job.data)
        chosen = choose_queue(job, None if unlimited else job.wall, queues, machine, idle)
        if chosen != job.queue:
            job.queue = chosen
            if unlimited:
                job.wall = no_limit_wall(queues, chosen)
