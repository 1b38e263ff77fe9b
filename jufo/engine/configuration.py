"""Configuration: reads the ``scheduler`` object's keys and assembles the simulation.

The factory of the design: it picks the Simulation subclass (FCFS, List, Backfilling), the
SystemState (NodeState, AttributeState) and builds the JobSorter from the priority formula.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields, replace

from ..io.dates import parse_date
from ..io.errors import InputError, Report
from .job import Job
from .node import Machine
from .queue import Queue
from .simulation import ALGORITHMS, PlanLimits, Policy, Simulation
from .sorter import Formula, FormulaError, JobSorter, SUBMIT_ORDER
from .attribute_state import AttributeState
from .node_state import NodeState
from .state import SystemState

DEFAULTS: dict[str, str] = {
    "scheduling_algorithm": "Backfilling",
    "system_state": "NodeState",
    "system_sysprio": SUBMIT_ORDER,
    "maxtopdogs": "1",
    "topdogs_per_queue": "no",
    "maxnumjobs": "unlimited",
    "node_sharing": "yes",
    "horizon": "unlimited",
    "backfill_order": "priority",
    "node_allocation": "lowest",
    "plan": "simulate",
    "replan": "no",
    "reservation_binding": "listed",
}
# keys with no default, written to the provenance only when given
OPTIONAL: dict[str, str] = {
    "exclusive_queues": "comma list of queues whose jobs take whole nodes (Slurm's OverSubscribe=EXCLUSIVE); "
                        "'none': no queue; not given: read off the running jobs (see prediction.exclusive_by_evidence)",
    "plan_window": "seconds ahead that plan=slurm reserves for (Slurm's bf_window; default one day)",
    "plan_time": "when the batch system last planned (Slurm's last backfill pass, sdiag's 'Last cycle when'): "
                 "plan=slurm plans as of then, or as of the last change the snapshot shows if that is later",
    "plan_max_job_user": "plan=slurm tests at most this many jobs of one user in its pass (Slurm's bf_max_job_user)",
    "plan_max_job_part": "plan=slurm tests at most this many jobs of one partition (Slurm's bf_max_job_part)",
    "plan_max_job_user_part": "plan=slurm tests at most this many jobs of one user in one partition "
                              "(Slurm's bf_max_job_user_part)",
    "plan_max_job_start": "plan=slurm stops its pass once it has started this many jobs (Slurm's bf_max_job_start)",
    "plan_min_prio_reserve": "plan=slurm reserves for no job of a lower priority: such a job starts only where it "
                             "fits at once (Slurm's bf_min_prio_reserve)",
    "plan_min_age_reserve": "seconds: plan=slurm reserves for no job pending less than this long (Slurm's "
                            "bf_min_age_reserve)",
    "plan_part_count_reserve": "plan=slurm reserves for at most this many jobs of one partition "
                               "(Slurm's bf_job_part_count_reserve)",
    "consumable_memory": "yes: memory on shared nodes is counted as cores are counted, by Slurm's plan "
                         "(plan=slurm) and the simulation (Slurm's SelectTypeParameters=CR_*_Memory); no "
                         "(default): a job only needs a node that has its memory",
    "plan_array_resv": "plan=slurm plans at most this many waiting tasks of one job array in its pass, each "
                       "holding its nodes (Slurm's bf_max_job_array_resv; default 20)",
    "resolution": "seconds of the planning grid (Slurm's bf_resolution): a job starts, or is planned, only where "
                  "no other job's reservation begins before the first step of this grid after its end",
}
ARRAY_RESV = 20  # Slurm's default bf_max_job_array_resv
BINDINGS = ("listed", "named")  # which jobs a reservation binds (reservation.Reservation.binds)
PLANS = ("simulate", "slurm")  # how the walltime-only forecast is made
BACKFILL_ORDERS = ("priority", "firstfit", "shortest", "bestfit", "greedy")
STATES = ("NodeState", "AttributeState")
YES_NO = {"yes": True, "y": True, "true": True, "1": True, "no": False, "n": False, "false": False, "0": False}
_UNLIMITED = {"", "unlimited", "none", "inf", "-1"}


def _choice(value: str, options: tuple[str, ...] | list[str]) -> str | None:
    for option in options:
        if value.strip().lower() == option.lower():
            return option
    return None


def check_keys(settings: dict[str, str], source: str) -> None:
    """Refuse an unknown scheduler key given by the user (``--set``, a ``--config`` preset):
    a typo there would silently change the policy. InputError with the closest known key.

    >>> check_keys({"maxtopdogs": "all"}, "--set")
    >>> check_keys({"maxtopdog": "all"}, "--set")
    Traceback (most recent call last):
    ...
    jufo.io.errors.InputError: --set: maxtopdog='all': unknown scheduler key; did you mean 'maxtopdogs'?
    """
    import difflib

    known = [*DEFAULTS, *OPTIONAL]
    for key, value in settings.items():
        if key not in known:
            close = difflib.get_close_matches(key, known, n=1)
            hint = f"did you mean {close[0]!r}?" if close else f"known: {', '.join(known)}"
            raise InputError(source, key, value, f"unknown scheduler key; {hint}")


@dataclass
class Configuration:
    """The scheduler settings of one run, checked."""

    algorithm: str
    state: str
    formula: Formula
    policy: Policy
    sharing: bool
    settings: dict[str, str]
    allocation: str = "lowest"
    exclusive_queues: frozenset[str] = frozenset()
    exclusive_given: bool = False  # False: exclusive queues are also read off the running jobs
    resolution: int = 0  # seconds of the planning grid (0: none)
    plan: str = "simulate"  # the walltime-only forecast: the simulation, or Slurm's backfill plan
    plan_window: int = 86400  # seconds: how far plan=slurm reserves (bf_window)
    plan_time: int | None = None  # epoch second of the batch system's last plan, if known
    plan_limits: PlanLimits = field(default_factory=PlanLimits)  # what Slurm's pass tests and reserves
    plan_array_resv: int = ARRAY_RESV  # waiting tasks of one array plan=slurm plans (bf_max_job_array_resv)
    consumable_memory: bool = False  # memory on shared nodes is counted (CR_*_Memory)

    @classmethod
    def read(cls, settings: dict[str, str], label: str, jobs: list[Job], report: Report) -> Configuration | None:
        """Check ``settings`` (scheduler keys over the defaults); bad values are fatal, unknown
        keys are warnings. Returns None only when collecting errors (``jufo validate``)."""
        merged = dict(DEFAULTS)
        if "system_sysprio" not in settings and batch_priorities(jobs):
            merged["system_sysprio"] = "userprio"
        for key, value in settings.items():
            if key in DEFAULTS or key in OPTIONAL:
                merged[key] = value
            else:
                report.warn(label, key, value, f"unknown scheduler key, ignored (known: "
                            f"{', '.join([*DEFAULTS, *OPTIONAL])})", always=True)
        before = len(report.errors)

        algorithm = _choice(merged["scheduling_algorithm"], list(ALGORITHMS))
        if algorithm is None:
            report.error(label, "scheduling_algorithm", merged["scheduling_algorithm"], "must be FCFS, List or Backfilling")
        state = _choice(merged["system_state"], STATES)
        if state is None:
            report.error(label, "system_state", merged["system_state"], "must be NodeState or AttributeState")
        formula = None
        try:
            formula = Formula(merged["system_sysprio"], jobs)
        except FormulaError as err:
            report.error(label, "system_sysprio", merged["system_sysprio"], f"priority formula refused: {err}")
        maxtopdogs = _count(merged, "maxtopdogs", label, report, allow_all=True)
        per_queue = _flag(merged, "topdogs_per_queue", label, report)
        replan = _flag(merged, "replan", label, report)
        maxnumjobs = _count(merged, "maxnumjobs", label, report, unlimited_ok=True)
        sharing = _flag(merged, "node_sharing", label, report)
        horizon = _count(merged, "horizon", label, report, unlimited_ok=True)
        order = _choice(merged["backfill_order"], BACKFILL_ORDERS)
        if order is None:
            report.error(label, "backfill_order", merged["backfill_order"], f"must be {', '.join(BACKFILL_ORDERS)}")
        allocation = _choice(merged["node_allocation"], NodeState.ALLOCATIONS)
        if allocation is None:
            report.error(label, "node_allocation", merged["node_allocation"], f"must be {', '.join(NodeState.ALLOCATIONS)}")
        resolution = _count(merged, "resolution", label, report) if "resolution" in merged else 0
        plan = _choice(merged["plan"], PLANS)
        if plan is None:
            report.error(label, "plan", merged["plan"], f"must be {' or '.join(PLANS)}")
        elif plan == "slurm" and state == "AttributeState":
            report.error(label, "plan", merged["plan"], "Slurm's plan needs nodes: system_state=NodeState")
        binding = _choice(merged["reservation_binding"], BINDINGS)
        if binding is None:
            report.error(label, "reservation_binding", merged["reservation_binding"], f"must be {' or '.join(BINDINGS)}")
        window = _count(merged, "plan_window", label, report) if "plan_window" in merged else 86400
        plan_time = None
        if merged.get("plan_time", "").strip():
            try:
                plan_time = parse_date(merged["plan_time"])[0]
            except ValueError as err:
                report.error(label, "plan_time", merged["plan_time"], str(err))
        limits = PlanLimits(**{f.name: _count(merged, f"plan_{f.name}", label, report) or 0
                               for f in fields(PlanLimits) if f"plan_{f.name}" in merged})
        array_resv = _count(merged, "plan_array_resv", label, report) if "plan_array_resv" in merged else ARRAY_RESV
        memory = _flag(merged, "consumable_memory", label, report) if "consumable_memory" in merged else False
        if len(report.errors) > before or formula is None:
            return None
        policy = Policy(
            maxtopdogs=math.inf if maxtopdogs is None else maxtopdogs,
            topdogs_per_queue=bool(per_queue),
            maxnumjobs=maxnumjobs,
            horizon=horizon,
            backfill_order="priority" if order == "firstfit" else str(order),
            replan=bool(replan),
            bind_listed=binding != "named",
            limits=limits,
        )
        given = merged.get("exclusive_queues", "").strip()
        exclusive = frozenset(q.strip() for q in given.split(",") if q.strip()) if given.lower() != "none" else frozenset()
        return cls(algorithm, state, formula, policy, bool(sharing), merged, str(allocation),  # type: ignore[arg-type]
                   exclusive, bool(given), resolution or 0, str(plan), window or 0, plan_time, limits,
                   array_resv or 0, bool(memory))

    def make_state(self, machine: Machine, queues: dict[str, Queue]) -> SystemState:
        """The SystemState factory."""
        if self.state == "AttributeState":
            return AttributeState(machine, queues)
        return NodeState(machine, queues, sharing=self.sharing, allocation=self.allocation,
                         memory=self.consumable_memory)

    def make_simulation(self, state: SystemState, epoch: int, report: Report) -> Simulation:
        """The Simulation for the configured algorithm, with its JobSorter."""
        sorter = JobSorter(self.formula, epoch, report)
        policy = self.policy  # the planning grid is of epoch seconds: its offset from time zero
        if self.resolution:
            policy = replace(policy, grid=(self.resolution, epoch % self.resolution))
            state.grid = policy.grid
        return ALGORITHMS[self.algorithm](state, sorter, policy, report)


def batch_priorities(jobs: list[Job]) -> bool:
    """Does every waiting job carry the batch system's own current priority (``userprio``, as
    LLview's Slurm adapter writes Slurm's ``Priority``)? Then it is the default order: the
    best order jufo can know without the site's formula.

    >>> from types import SimpleNamespace as J
    >>> batch_priorities([J(running=False, data={"userprio": "4294"})]), batch_priorities([J(running=False, data={})])
    (True, False)
    """
    waiting = [job for job in jobs if not job.running]
    for job in waiting:
        try:
            if not math.isfinite(float(job.data.get("userprio", ""))):
                return False
        except ValueError:
            return False
    return bool(waiting)


def _count(merged: dict[str, str], key: str, label: str, report: Report,
           allow_all: bool = False, unlimited_ok: bool = False) -> int | None:
    raw = merged[key].strip()
    if allow_all and raw.lower() == "all":
        return None
    if unlimited_ok and raw.lower() in _UNLIMITED:
        return None
    try:
        value = int(raw)
        if value < 0:
            raise ValueError
        return value
    except ValueError:
        extra = " or 'all'" if allow_all else " or 'unlimited'" if unlimited_ok else ""
        report.error(label, key, merged[key], f"must be a whole number ≥ 0{extra}")
        return None


def _flag(merged: dict[str, str], key: str, label: str, report: Report) -> bool | None:
    value = YES_NO.get(merged[key].strip().lower())
    if value is None:
        report.error(label, key, merged[key], "must be yes or no")
    return value
