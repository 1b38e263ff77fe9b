"""Job dependencies: which jobs must start or end (in the simulation) before a job may queue.

Slurm forms: ``afterok:123``, ``afterany:123:124``, ``afternotok:123``, ``after:123`` (123 has
started; scontrol's ``(unfulfilled)`` after a job is dropped), several joined by ``,`` (all must hold) or ``?`` (read as ``,``: jufo cannot know
which one the batch system would take), ``singleton`` (no other job of the same name and
owner may run: jufo waits for those ahead of it in the snapshot). Ends count whatever the
exit state: a forecast cannot know it. LoadLeveler step chains: a step ``host.1234.1`` whose
``dependency`` names other steps (``step0 == 0``) waits for the lower steps of ``host.1234``.
Jobs not in the snapshot count as done. Jobs are named by their ``step`` key, object name or id;
a job array's id names every task of it, ``array_task`` one task.
"""

from __future__ import annotations

import re

from .job import Job

START, END = "start", "end"
_SLURM = re.compile(r"(after|afterok|afterany|afternotok|aftercorr|afterburstbuffer)((?::[^:,?]+)+)")
_STEP = re.compile(r"^(.*)\.(\d+)$")
_NONE = {"", "-", "(null)", "none", "null"}


def parse(text: str) -> list[tuple[str, str]] | None:
    """``(when, job name)`` pairs of a Slurm dependency; None if it is not in Slurm form.

    >>> parse("afterok:123:124,after:7")
    [('end', '123'), ('end', '124'), ('start', '7')]
    >>> parse("afterok:1001(unfulfilled)")  # as scontrol shows it
    [('end', '1001')]
    >>> parse("singleton"), parse("(null)"), parse("step0 == 0")
    ([('singleton', '')], [], None)
    """
    text = text.strip()
    if text.lower() in _NONE:
        return []
    out: list[tuple[str, str]] = []
    for part in re.split(r"[,?]", text):
        part = part.strip()
        if part == "singleton":
            out.append(("singleton", ""))
            continue
        m = _SLURM.fullmatch(part)
        if m is None:
            return None
        when = START if m.group(1) == "after" else END
        out.extend((when, name.split("+")[0].split("(")[0]) for name in m.group(2).split(":")[1:])
    return out


def resolve(jobs: list[Job]) -> dict[Job, list[tuple[str, Job]]]:
    """For each job with a dependency, the jobs of the snapshot it waits for, and for what."""
    if all(job.data.get("dependency", "").strip().lower() in _NONE for job in jobs):
        return {}  # the usual case: no job names another
    # each name's jobs, in order (a dict: an array's id names 100,000 tasks, and a list's
    # membership test made reading them quadratic: 76 s)
    by_name: dict[str, dict[Job, None]] = {}
    for job in jobs:
        names = [job.id, job.data.get("name", ""), job.data.get("step", "")]
        if job.array is not None:  # a job array's id names all its tasks, array_task one of them
            names += [job.array, f"{job.array}_{job.task}"]
        for name in names:
            if name:
                found = by_name.setdefault(name, {})
                if not found or (job.array is not None and name == job.array):
                    found[job] = None
    out: dict[Job, list[tuple[str, Job]]] = {}
    for job in jobs:
        text = job.data.get("dependency", "")
        parsed = parse(text)
        waits: list[tuple[str, Job]] = []
        if parsed is None:
            waits = [(END, other) for other in _lower_steps(job, jobs)]
        for when, name in parsed or []:
            if when == "singleton":
                waits.extend((END, other) for other in jobs if other is not job and other.owner == job.owner
                             and other.data.get("name") == job.data.get("name") and _ahead(other, job))
            else:
                waits.extend((when, other) for other in by_name.get(name, ()) if other is not job)
        if waits:
            out[job] = waits
    return out


def _ahead(other: Job, job: Job) -> bool:
    return other.running or (other.queued, other.index) < (job.queued, job.index)


def _lower_steps(job: Job, jobs: list[Job]) -> list[Job]:
    """LoadLeveler: the earlier steps of the same job (``host.1234.0`` before ``host.1234.1``)."""
    m = _STEP.match(job.data.get("step", ""))
    if m is None:
        return []
    base, number = m.group(1), int(m.group(2))
    out = []
    for other in jobs:
        n = _STEP.match(other.data.get("step", ""))
        if other is not job and n is not None and n.group(1) == base and int(n.group(2)) < number:
            out.append(other)
    return out
