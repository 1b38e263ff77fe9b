"""What Slurm, and LLview 2's Slurm adapter, write in a job's ``state`` and ``reason`` and a
node's ``state``, by meaning.

LLview 2 (``da/rms/SLURM/slurm.py``) maps ``JobState`` to ``Running``, ``Pending``,
``Suspended``, ``Completed``, ``Cancelled`` or ``Failed`` (``CONFIGURING`` becomes
``Pending``, ``COMPLETING`` ``Completed``) and keeps Slurm's ``Reason`` as it is. Files
written by other tools may carry Slurm's own upper-case names; both are read. A pending
job's ``reason`` decides how it is simulated (see ``classify``).
"""

from __future__ import annotations

import re
from enum import Enum

from .values import MAX_SECONDS


class Meaning(Enum):
    """How a pending job's reason is simulated."""

    WAITING = "waiting"  # an ordinary candidate (Priority, Resources, ReqNodeNotAvail, ...)
    HELD = "held"  # no start is predicted until someone acts (hold, budget spent, bad request)
    DEPENDENCY = "dependency"  # waits for the jobs its ``dependency`` names
    NOT_BEFORE = "not-before"  # may not start before its ``starttime`` (``--begin``)
    LIMIT = "limit"  # its user runs as many jobs as a limit allows: no more at once than now
    RESERVATION = "reservation"  # waits for the reservation its ``reservation`` key names


# Slurm's JobState names (squeue/scontrol) read as jufo's states; anything else is kept as written
SLURM_STATES = {
    "PENDING": "Pending", "RUNNING": "Running", "CONFIGURING": "Running", "RESIZING": "Running",
    "SIGNALING": "Running", "COMPLETING": "Completed", "STAGE_OUT": "Completed", "COMPLETED": "Completed",
    "SUSPENDED": "Suspended", "REQUEUED": "Pending", "REQUEUE_FED": "Pending", "REQUEUE_HOLD": "Held",
    "EXPEDITING": "Pending",  # (Slurm 25.11: a job on a failed node, about to be requeued at the top)
    "SPECIAL_EXIT": "Held", "RESV_DEL_HOLD": "Held", "STOPPED": "Suspended", "CANCELLED": "Cancelled",
    "FAILED": "Failed", "TIMEOUT": "Failed", "NODE_FAIL": "Failed", "PREEMPTED": "Failed",
    "BOOT_FAIL": "Failed", "DEADLINE": "Failed", "OUT_OF_MEMORY": "Failed",
}

_HELD = {
    "JobHeldUser", "JobHeldAdmin", "launch_failed_requeued_held", "DependencyNeverSatisfied",
    "PartitionDown", "PartitionInactive", "PartitionTimeLimit", "PartitionNodeLimit", "BadConstraints",
    "InvalidAccount", "InvalidQOS", "QOSNotAllowed", "AccountNotAllowed", "JobLaunchFailure",
    "SystemFailure", "NonZeroExitCode", "MaxRequeueLimit", "FedJobLock", "InactiveLimit",
    "AssociationJobLimit", "AssociationResourceLimit", "AssociationTimeLimit", "QOSJobLimit",
    "QOSResourceLimit", "QOSTimeLimit", "Deadline", "DeadLine", "launch failed requeued held",
    "JobHoldMaxRequeue", "ReservationDeleted", "ReservationInvalid", "MaxMemPerLimit",
}
# association and QOS limits (Slurm's job_state_reason.c): AssocGrpCpuLimit, AssocGrpGRES,
# QOSMaxGRESPerUser, MaxJobsPerAccount, QOSMinGRES, ...
_LIMIT = re.compile(r"^(?:(?:Assoc|QOS)(?:Grp|Max|Min)\w+|Max\w+Per(?:Account|User))$")
_RUN = re.compile(r"Run(?:Minutes|Mins)")  # run minutes free up as running jobs go on: a limit, no budget
# spent budgets (GrpCPUMins, GrpBillingMinutes) and what the job itself asks beyond a limit
# (per job, per node, below a minimum): no waiting clears them
_BUDGET = re.compile(r"Minutes|Mins|PerJob|PerNode|^(?:Assoc|QOS)Min")
_WAITING_PREFIXES = ("ReqNodeNotAvail", "Nodes_required", "Resources", "Priority", "None")


def classify(reason: str) -> Meaning:
    """The meaning of a pending job's Slurm ``reason``.

    Per-job limits and spent budgets (``AssocGrpCPUMinutesLimit``, ``QOSMaxWallDurationPerJobLimit``)
    never clear by waiting: held. Other association/QOS limits (``QOSMaxJobsPerUserLimit``,
    ``AssocGrpCpuLimit``) clear when the user's running jobs end: limit.

    >>> [classify(r).value for r in ("Priority", "JobHeldUser", "Dependency", "BeginTime",
    ...  "QOSMaxJobsPerUserLimit", "AssocGrpCPUMinutesLimit", "Reservation", "ReqNodeNotAvail, May be reserved")]
    ['waiting', 'held', 'dependency', 'not-before', 'limit', 'held', 'reservation', 'waiting']
    >>> [classify(r).value for r in ("AssocGrpGRES", "QOSMaxGRESPerUser", "MaxJobsPerAccount",
    ...  "AssocGrpBillingMinutes", "QOSMaxCpuPerNode", "QOSMinGRES", "AssocGrpCPURunMinutesLimit")]
    ['limit', 'limit', 'limit', 'held', 'held', 'held', 'limit']
    """
    reason = reason.strip()
    if not reason or reason.startswith(_WAITING_PREFIXES):
        return Meaning.WAITING
    if reason in _HELD:
        return Meaning.HELD
    if reason == "Dependency":
        return Meaning.DEPENDENCY
    if reason == "BeginTime":
        return Meaning.NOT_BEFORE
    if reason == "Reservation":
        return Meaning.RESERVATION
    if _LIMIT.match(reason):
        return Meaning.HELD if _BUDGET.search(_RUN.sub("", reason)) else Meaning.LIMIT
    return Meaning.WAITING


def state_of(state: str) -> str:
    """jufo's state name for ``state``: Slurm's upper-case names mapped, others as written.

    >>> state_of("PENDING"), state_of("Pending"), state_of("COMPLETING")
    ('Pending', 'Pending', 'Completed')
    """
    return SLURM_STATES.get(state.strip().upper(), state.strip()) if state.strip().isupper() else state.strip()


# a finished job that held no nodes: sacct's NodeList of a job that never ran, scontrol's empty one
_NO_NODES = {"", "none assigned", "(null)"}


def never_ran(state: str, start: int | None, end: int | None, nodes: str | None = None) -> bool:
    """Whether a finished job left the queue without running. Slurm sets a job cancelled while
    pending (or past its deadline) to start and end at the moment it left, so ``sacct`` and
    ``scontrol`` show ``Start`` = ``End``; its ``NodeList`` is ``None assigned`` or empty.
    ``nodes`` is that list where the source has one (None: unknown). A job that started and was
    cancelled within the second has nodes; without a node list it cannot be told apart, and
    counts as never run (it ran for no time).

    >>> never_ran("CANCELLED by 0", 100, 100), never_ran("Cancelled", 100, 100, "")
    (True, True)
    >>> never_ran("CANCELLED", 100, 103), never_ran("CANCELLED", 100, 100, "n02"), never_ran("FAILED", 100, 100)
    (False, False, False)
    """
    if start is None or start != end or (nodes is not None and nodes.strip().lower() not in _NO_NODES):
        return False
    word = state.split()[0].upper() if state.strip() else ""
    return word in ("CANCELLED", "DEADLINE")


MAX_TASKS = 100_000  # per array record (Slurm's default MaxArraySize is 1,001)
_RANGE = re.compile(r"^(\d+)(?:-(\d+)(?::(\d+))?)?$")


def parse_tasks(text: str) -> tuple[list[int], int | None]:
    """Task numbers and the throttle of an ``ArrayTaskId``.

    >>> parse_tasks("5-100%10")[0][:3], len(parse_tasks("5-100%10")[0]), parse_tasks("5-100%10")[1]
    ([5, 6, 7], 96, 10)
    >>> parse_tasks("1,3,8-12:2")
    ([1, 3, 8, 10, 12], None)
    """
    body, _, throttle = text.strip().partition("%")
    tasks: list[int] = []
    for part in body.strip("[]").split(","):
        m = _RANGE.match(part.strip())
        if m is None:
            raise ValueError(f"{part!r} is not a task number or range")
        lo = int(m.group(1))
        hi = int(m.group(2)) if m.group(2) else lo
        step = int(m.group(3)) if m.group(3) else 1
        if hi < lo or step < 1 or len(tasks) + (hi - lo) // step + 1 > MAX_TASKS:
            raise ValueError(f"{part!r} is not a usable range (at most {MAX_TASKS:,} tasks)")
        tasks.extend(range(lo, hi + 1, step))
    cap = int(throttle) if throttle.strip().isdigit() and int(throttle) > 0 else None
    if throttle and cap is None:
        raise ValueError(f"throttle %{throttle} is not a whole number ≥ 1")
    return sorted(set(tasks)), cap


_DURATION = re.compile(r"^(?:(\d+)-)?(?:(\d+):)?(\d+)(?::(\d+))?$")
# a job's limit that sets none: Slurm's backfill plans such a job with its partition's MaxTime,
# or a year (YEAR_MINUTES) where that is unlimited too; LLview 2 passes the word on as ``wall``
NO_TIME_LIMIT = {"UNLIMITED", "INFINITE", "PARTITION_LIMIT"}
_NO_LIMIT = {"UNLIMITED", "INFINITE", "NONE", "NOT_SET", "PARTITION_LIMIT", "N/A", "UNKNOWN", "INVALID", ""}


def seconds_of(text: str) -> int | None:
    """A Slurm duration (``scontrol``'s ``TimeLimit``, ``RunTime``, ``MaxTime``, ``sacct``'s
    ``Timelimit``, ``sbatch -t``) in seconds; None for unlimited, unset or unknown. Minutes
    alone, ``MM:SS``, ``HH:MM:SS``, ``D-HH``, ``D-HH:MM``, ``D-HH:MM:SS``; ValueError for
    anything else, or more than a century.

    >>> [seconds_of(t) for t in ("30", "1:00", "01:00:00", "2-00:00:00", "1-12", "UNLIMITED", "NONE")]
    [1800, 60, 3600, 172800, 129600, None, None]
    >>> seconds_of("1-02:00:00"), seconds_of("30:00"), seconds_of("Partition_Limit")
    (93600, 1800, None)
    """
    text = text.strip()
    if text.upper() in _NO_LIMIT:
        return None
    m = _DURATION.match(text)
    if m is None:
        raise ValueError("not a Slurm duration ([D-]HH:MM:SS, MM:SS or minutes)")
    days, a, b, c = m.groups()
    if days is not None and c is None and b is not None and a is None:  # D-HH
        value = int(days) * 86400 + int(b) * 3600
    elif days is not None and c is None:  # D-HH:MM
        value = int(days) * 86400 + int(a or 0) * 3600 + int(b) * 60
    elif c is not None:  # [D-]HH:MM:SS
        value = int(days or 0) * 86400 + int(a) * 3600 + int(b) * 60 + int(c)
    elif a is not None:  # MM:SS
        value = int(a) * 60 + int(b)
    else:  # minutes
        value = int(b) * 60
    if value > MAX_SECONDS:
        raise ValueError("more than a century")
    return value


# a node state's parts (base state or flag) under which Slurm gives a node no new job
NODE_BLOCKING = {"DOWN", "DRAIN", "DRAINED", "DRAINING", "FAIL", "FAILING", "FUTURE", "MAINT", "UNKNOWN",
                 "OFFLINE", "NO_RESPOND", "NOT_RESPONDING", "INVAL", "REBOOT", "REBOOT_ISSUED"}
NODE_SUFFIXES = "*~#!%$@^-"  # sinfo's and scontrol's marks: * not responding, ~ powered off, ...


def node_takes_jobs(state: str) -> bool:
    """Whether a node in ``state`` may be given new jobs: LLview's words (``Idle``, ``Running``,
    ``Down``, ``Drained``, ``Maint``, ``Unknown``) or Slurm's own ``BASE+FLAG+...`` as LLview 2
    leaves the combinations it does not map. A blocking part anywhere (``MIXED+DRAIN``: no new
    job, its running ones go on) or a not-responding mark (``IDLE*``) takes the node away;
    power saving (``IDLE+POWERED_DOWN``, ``IDLE~``: Slurm boots it for a job), ``RESERVED`` and
    ``MAINTENANCE`` (the reservation objects say when and for whom), ``COMPLETING`` and
    ``PLANNED`` do not.  O(len(state)).

    >>> [node_takes_jobs(s) for s in ("Idle", "Running", "Drained", "maint", "", "MIXED+DRAIN", "IDLE*")]
    [True, True, False, False, True, False, False]
    >>> [node_takes_jobs(s) for s in ("IDLE+CLOUD+POWERED_DOWN", "IDLE~", "IDLE+MAINTENANCE+RESERVED+PLANNED",
    ...                               "DOWN*+NOT_RESPONDING", "ALLOCATED+COMPLETING", "REBOOT_ISSUED")]
    [True, True, True, False, True, False]
    """
    for part in state.strip().upper().split("+"):
        if part.endswith("*") or part.rstrip(NODE_SUFFIXES) in NODE_BLOCKING:
            return False
    return True
