"""Job sets Slurm schedules as more or less than one record: job arrays and heterogeneous jobs.

A pending array record (``ArrayJobId=7``, ``ArrayTaskId=5-100%10``) stands for its waiting
tasks: each becomes a job of its own (``step`` ``7_5`` as sacct names it), and ``%10``
throttles the array to 10 tasks running at once, its running tasks included. Predictions of
the tasks are written back onto the array record (``aggregate``).

The components of a heterogeneous job (``HetJobId``, ``HetJobOffset``) start together: they
are scheduled as one request of the leader (offset 0): the sum of the components' nodes and
cores, the largest per-node request, the longest wall, in the leader's queue. That is exact
when counting cores or giving whole nodes, and asks a little more than needed otherwise.
Components in another queue (a CPU part and a GPU part, JSC's modular jobs) are not added to
the leader's request, which that queue's nodes could not hold: they follow its start, and
whether their own queue has room then is not checked. Every component gets the leader's start;
the leader's node list holds the nodes of the components it asks for.
"""

from __future__ import annotations

from dataclasses import replace
from itertools import groupby

from ..io.errors import Report
from ..io.slurm import parse_tasks
from .job import Job

MAX_ALL_TASKS = 1_000_000  # tasks expanded in one snapshot: beyond, records stay one job each


def expand_arrays(jobs: list[Job], report: Report) -> tuple[list[Job], dict[str, int]]:
    """Jobs with every pending array record replaced by its tasks (in place, in task order;
    jobs renumbered so document order still breaks ties), and each throttled array's cap."""
    out: list[Job] = []
    caps: dict[str, int] = {}
    for job in jobs:
        if job.array is None or job.task is None or job.running or job.reason is not None or job.task.isdigit():
            out.append(job)
            continue
        try:
            tasks, cap = parse_tasks(job.task)
            if len(out) + len(tasks) > MAX_ALL_TASKS:
                raise ValueError(f"more than {MAX_ALL_TASKS:,} jobs and tasks in the snapshot")
        except ValueError as err:
            report.warn(job.label, "ArrayTaskId", job.task, f"{err}; read as one job")
            out.append(job)
            continue
        if cap is not None:
            caps[job.array] = cap
        for task in tasks:
            out.append(replace(job, id=f"{job.id}_{task}", task=str(task), parent=job.id,
                               data={**job.data, "step": f"{job.array}_{task}", "ArrayTaskId": str(task)}))
    if len(out) != len(jobs):
        for i, job in enumerate(out):
            job.index = i
    return out, caps


def combine_het(jobs: list[Job]) -> None:
    """Make each waiting heterogeneous job's leader ask for all its components at once; the
    other components follow the leader (``Job.leader``) and are not scheduled themselves."""
    waiting = [j for j in jobs if j.het is not None and not j.running and j.reason is None]
    waiting.sort(key=lambda j: (j.het, _offset(j), j.index))
    for _, members in groupby(waiting, key=lambda j: j.het):
        group = list(members)
        if len(group) < 2:
            continue
        leader, others = group[0], group[1:]
        group = [leader, *(j for j in others if j.queue == leader.queue)]  # the others follow unchecked
        leader.total_cores = sum(j.total_cores for j in group)
        leader.nodes = sum(j.nodes for j in group)
        leader.cores_per_node = max(j.cores_per_node for j in group)
        leader.memory = max(j.memory for j in group)
        leader.gpus_per_node = max(j.gpus_per_node for j in group)
        runs = [j.runtime for j in group]
        leader.own_runtime = leader.runtime
        leader.wall = max(j.wall for j in group)
        leader.actual = None if all(j.actual is None for j in group) else max(runs)
        for other in others:
            other.leader = leader.id


def follow_leaders(jobs: list[Job]) -> None:
    """After the simulation: each component starts with its leader and runs its own run time."""
    by_id = {job.id: job for job in jobs}
    for job in jobs:
        if job.own_runtime is not None and job.start is not None:
            job.end = job.start + job.own_runtime
        if job.leader is None:
            continue
        lead = by_id[job.leader]
        if lead.start is None:
            job.reason = f"HetJob: starts with component {lead.key}: {lead.reason}"
        else:
            job.start, job.end, job.topdog, job.backfilled = lead.start, lead.start + job.runtime, lead.topdog, lead.backfilled


def _offset(job: Job) -> int:
    raw = job.data.get("HetJobOffset", "").strip()
    return int(raw) if raw.isdigit() else 1 << 30


def aggregate(jobs: list[Job], when) -> dict[str, list[tuple[str, str]]]:
    """What an array record gets for its tasks: the first start, the last end, the number of
    tasks, and each run of tasks with one start (``5-14=date;15-24=date``); if no task can
    start, the first task's reason."""
    tasks: dict[str, list[Job]] = {}
    for job in jobs:
        if job.parent is not None:
            tasks.setdefault(job.parent, []).append(job)
    out: dict[str, list[tuple[str, str]]] = {}
    for parent, members in tasks.items():
        started = [j for j in members if j.start is not None]
        pairs: list[tuple[str, str]] = [("jufo_array_tasks", str(len(members)))]
        if started:
            pairs[:0] = [("jufo_starttime", when(min(j.start for j in started))),
                         ("jufo_endtime", when(max(j.end for j in started)))]
            runs: list[list] = []  # [first task, last task, start] of consecutive tasks with one start
            for job in members:
                number = int(job.task)
                if runs and runs[-1][2] == job.start and runs[-1][1] == number - 1:
                    runs[-1][1] = number
                else:
                    runs.append([number, number, job.start])
            pairs.append(("jufo_array_starts", ";".join(
                f"{lo if lo == hi else f'{lo}-{hi}'}={when(start) if start is not None else '-'}"
                for lo, hi, start in runs)))
            if any(j.topdog for j in members):
                pairs.append(("jufo_topdog", "1"))
        else:
            pairs.append(("jufo_reason", members[0].reason or "NoStart"))
        out[parent] = pairs
    return out
