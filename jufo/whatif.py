"""What if I submit now? A job not yet submitted, inserted into a snapshot at its system time in
each partition it could go to, simulated, and answered: its start and end, the walltime-only
start, the range (with a history), and why it waits or can never run.

The candidate gets the priority the configured formula gives a job submitted now; where the
formula is the batch system's own priority (``userprio``), which jufo cannot compute for a new
job, it gets the lowest priority of the jobs waiting, as a job with no age yet has. Where the
formula is on the batch system's scale (Slurm's ``priority/multifactor`` as ``jufo slurm
config`` writes it), its value stands beside the waiting jobs' own priorities in Slurm's plan.
"""

from __future__ import annotations

import re

from dataclasses import dataclass, replace

from .engine.configuration import Configuration
from .engine.job import Job, JobReader
from .engine.prediction import Forecast, simulate
from .engine.ranges import NodeCores
from .engine.snapshot import Snapshot
from .engine.node_state import NodeState
from .engine.plan import test_only
from .engine.sorter import JobSorter
from .io.dates import floor_to
from .io.errors import InputError, Report
from .io.lml import LmlObject

CANDIDATE = "whatif-candidate"


@dataclass(frozen=True)
class Request:
    """The job asked about: ``nodes`` whole nodes, or ``cores`` cores; ``wall`` seconds;
    ``gpus`` GPUs on each of its nodes; memory on each node or per core."""

    wall: int
    nodes: int | None = None
    cores: int | None = None
    user: str = "whatif"
    account: str = ""
    qos: str = ""
    gpus: int = 0
    memory: int | None = None  # MB on each node (--mem); None: the partition's default
    memory_per_cpu: int | None = None  # MB per core (--mem-per-cpu)
    gpu_type: str | None = None  # the GPUs' model (-G a100:1, as --gres=gpu:a100:1); None: any


@dataclass
class Answer:
    """One partition's (and system's) answer; epoch seconds, None where there is none."""

    system: str
    partition: str
    start: int | None
    end: int | None
    start_wall: int | None
    start_lo: int | None = None
    start_hi: int | None = None
    coverage: float | None = None
    reason: str = ""
    test_only: int | None = None  # what sbatch --test-only would say (asked for with test_only)


def partitions_of(snap: Snapshot) -> list[str]:
    """The partitions a candidate may go to: queue objects, else the queues nodes name in
    their ``classes``, else the queues of the snapshot's jobs (``batch`` if none)."""
    names = set(snap.queues)
    for node in snap.machine.nodes:
        if node.classes:
            names.update(node.classes)
    if not names:
        names = {job.queue for job in snap.jobs if job.queue} or {"batch"}
    return sorted(names)


def never(snap: Snapshot, queue_data: dict[str, dict[str, str]], partition: str, request: Request) -> str | None:
    """Why the candidate can never run in ``partition`` (down, beyond its MaxTime, larger than
    it), or None. ``queue_data``: the queue objects' keys (``state``, ``maxtime``, as ``jufo
    slurm snapshot`` writes them). What the simulation finds it says itself."""
    data = queue_data.get(partition, {})
    state = data.get("state", "UP").upper()
    if state not in ("UP", ""):
        return f"PartitionDown: partition {partition} is {state}"
    limit = data.get("maxtime", "")
    if limit.isdigit() and request.wall > int(limit):
        return f"PartitionTimeLimit: asks {request.wall:,} s, partition {partition} allows {int(limit):,} s"
    members = [n for n in snap.machine.nodes if n.limit(partition) > 0 and (not snap.machine.has_classes
                                                                             or n.classes and partition in n.classes)]
    if request.nodes is not None and request.nodes > len(members):
        return f"PartitionNodeLimit: asks {request.nodes} nodes, partition {partition} has {len(members)}"
    cores = sum(n.limit(partition) for n in members)
    if request.cores is not None and request.cores > cores:
        return f"PartitionNodeLimit: asks {request.cores} cores, partition {partition} has {cores}"
    return None


def candidate(snap: Snapshot, request: Request, partition: str, report: Report,
              queue_data: dict[str, dict[str, str]] | None = None) -> Job:
    """The request as a job waiting since the snapshot's time, read as any job is. Asking no
    memory, it gets the partition's default (``defmempercpu``, ``defmempernode``: ``jufo slurm
    snapshot`` writes them where Slurm counts memory), as Slurm gives it."""
    from .io.dates import format_date

    data = {"step": CANDIDATE, "name": CANDIDATE, "owner": request.user, "group": request.user,
            "account": request.account, "qos": request.qos, "queue": partition, "state": "Pending",
            "reason": "None", "wall": str(request.wall)}
    data["queuedate"] = format_date(snap.epoch, "%Y-%m-%d %H:%M:%S")
    if request.nodes is not None:
        per_node = max((n.limit(partition) for n in snap.machine.nodes), default=1) or snap.machine.max_cores
        data.update(numnodes=str(request.nodes), totalcores=str(request.nodes * per_node), exclusive="yes")
    else:
        data.update(totalcores=str(request.cores))
    defaults = (queue_data or {}).get(partition, {})
    if request.memory is not None:
        data["reqmem"] = str(request.memory)
    elif request.memory_per_cpu is not None:
        data["mempercpu"] = str(request.memory_per_cpu)
    elif defaults.get("defmempercpu", "").isdigit():
        data["mempercpu"] = defaults["defmempercpu"]
    elif defaults.get("defmempernode", "").isdigit():
        data["reqmem"] = defaults["defmempernode"]
    prios = [float(j.data["userprio"]) for j in snap.jobs if not j.running and j.data.get("userprio", "")
             .replace(".", "", 1).isdigit()]
    if prios:
        data["userprio"] = repr(min(prios))
    reader = JobReader(snap.epoch, snap.machine.max_cores, report, nodes=snap.machine.by_name)
    job = reader.read(LmlObject(CANDIDATE, "job", CANDIDATE, len(snap.jobs), data))
    if request.gpus:  # on each of the nodes it gets, as sbatch's --gpus-per-node (--gres=gpu:G)
        job.gpus_per_node = request.gpus
        job.data["totalgpus"] = str(job.nodes * request.gpus)
        job.gpu_type = request.gpu_type
    return job


def waits_for(forecast: Forecast, job: Job) -> str:
    """Why the candidate starts when it does: the jobs (or reservation) whose end frees what it
    gets — in Slurm's plan (``plan=slurm``), also planned jobs whose hold on their nodes ends
    then (their end rounded down to ``bf_resolution``) — or "starts now"."""
    if job.start is None:
        return job.reason or "no start predicted"
    if job.start <= 0:
        return "starts now"
    snap = forecast.snapshot
    shape = snap.machine.shape
    mine = job.resources if isinstance(job.resources, NodeCores) else None
    config = forecast.config
    step = (config.resolution or 60) if config.plan == "slurm" else 0

    def frees_then(other: Job) -> bool:
        if other.end is None:
            return False
        if other.end == job.start:
            return True
        return bool(step) and not other.running and floor_to(other.end, step, snap.epoch % step) == job.start

    ending = []
    for other in snap.jobs:
        if other is job or not frees_then(other):
            continue
        theirs = other.resources if isinstance(other.resources, NodeCores) else None
        if mine is None or theirs is None or not mine.isdisjoint(theirs, shape):
            ending.append(other.data.get("step") or other.id)
    resv = [r.id for r in snap.reservations if r.end == job.start]
    parts = []
    if ending:
        shown = ", ".join(sorted(ending)[:5]) + (f" and {len(ending) - 5} more" if len(ending) > 5 else "")
        parts.append(f"job{'s' if len(ending) > 1 else ''} {shown} to end")
    if resv:
        parts.append(f"reservation {', '.join(resv)} to end")
    if not parts:
        return "waits for resources held for jobs ahead of it"
    return "waits for " + " and ".join(parts)


def answer(system: str, snap: Snapshot, config: Configuration, request: Request, partitions: list[str],
           queue_data: dict[str, dict[str, str]], report: Report, learned=None,
           with_test_only: bool = False) -> list[Answer]:
    """Each partition's answer for ``request`` on one system. ``learned(snap) -> (start, lo, hi,
    coverage) or None``: the history's forecast of the candidate, where a history is given.
    ``with_test_only``: also what ``sbatch --test-only`` would answer (``plan.test_only``)."""
    out = []
    for partition in partitions:
        why = never(snap, queue_data, partition, request)
        if why is not None:
            out.append(Answer(system, partition, None, None, None, reason=why))
            continue
        cand = candidate(snap, request, partition, report, queue_data)
        if not any(name.startswith("DATE") or name == "userprio" for name in config.formula.names):
            # a formula on Slurm's own scale (priority/multifactor): the priority Slurm would give
            # the candidate now, beside the priorities it gave the waiting jobs (Slurm's plan)
            cand.data["userprio"] = repr(JobSorter(config.formula, snap.epoch, Report(quiet=True)).priority(cand, 0))
        if cand.reason:
            out.append(Answer(system, partition, None, None, None, reason=cand.reason))
            continue
        trial = replace(snap, jobs=[*(j.fresh() for j in snap.jobs), cand])
        forecast = simulate(trial, config, Report(quiet=True))
        job = next(j for j in forecast.jobs if j.id == CANDIDATE)
        epoch = snap.epoch
        start = None if job.start is None else epoch + job.start
        end = None if job.end is None else epoch + job.end
        found = learned(trial) if learned is not None and start is not None else None
        row = Answer(system, partition, start, end, start, reason=waits_for(forecast, job))
        if with_test_only and isinstance(forecast.simulation.state, NodeState):
            quick = test_only(trial, config, forecast.simulation, job)
            row.test_only = None if quick is None else epoch + quick
        if found is not None:
            best, lo, hi, coverage = found
            row.start, row.start_lo, row.start_hi, row.coverage = best, lo, hi, coverage
            if end is not None:
                row.end = end + (best - start)
        out.append(row)
    return out


def parse_request(nodes: int | None, ntasks: int | None, time_text: str, user: str, account: str,
                  qos: str, gpus: int | str = 0, memory: str | None = None, memory_per_cpu: str | None = None
                  ) -> Request:
    """The request from sbatch's flags; InputError naming the flag when it is malformed.
    ``gpus``: a count, or ``MODEL:COUNT`` (``a100:1``) as ``-G`` takes it.

    >>> r = parse_request(None, 4, "30", "u", "", "", "a100:2")
    >>> (r.gpus, r.gpu_type), parse_request(1, None, "30", "u", "", "", "1").gpu_type
    ((2, 'a100'), None)
    """
    from .engine.node import parse_memory
    from .io.slurm import seconds_of

    if (nodes is None) == (ntasks is None):
        raise InputError("whatif", "-N/--nodes or -n/--ntasks", None, "give exactly one of them")
    if memory is not None and memory_per_cpu is not None:
        raise InputError("whatif", "--mem or --mem-per-cpu", None, "give at most one of them")
    amounts: dict[str, int | None] = {}
    for flag, text in (("--mem", memory), ("--mem-per-cpu", memory_per_cpu)):
        try:
            amounts[flag] = None if text is None else parse_memory(text)
        except ValueError as err:
            raise InputError("whatif", flag, text, str(err)) from None
    try:
        wall = seconds_of(time_text)
    except ValueError as err:
        raise InputError("whatif", "-t/--time", time_text, f"{err} (minutes, MM:SS, HH:MM:SS, D-HH[:MM[:SS]])") \
            from None
    if not wall:
        raise InputError("whatif", "-t/--time", time_text, "a limit greater than 0 is needed")
    asked = re.fullmatch(r"(?:([A-Za-z0-9_.-]+):)?(\d{1,6})", str(gpus).strip())
    if not asked or (asked.group(1) and not int(asked.group(2))):
        raise InputError("whatif", "-G/--gpus-per-node", str(gpus), "a number of GPUs (2), or MODEL:NUMBER (a100:2)")
    return Request(wall, nodes, ntasks, user, account, qos, int(asked.group(2)), amounts["--mem"],
                   amounts["--mem-per-cpu"], asked.group(1))


def sort_answers(rows: list[Answer], by: str) -> list[Answer]:
    """By start (or end), answers without one last; ties by system and partition."""
    key = (lambda a: a.end) if by == "end" else (lambda a: a.start)
    return sorted(rows, key=lambda a: (key(a) is None, key(a) or 0, a.system, a.partition))
