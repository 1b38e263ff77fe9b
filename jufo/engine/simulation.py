"""The simulation: a template method that FCFS, List scheduling and Backfilling fill in.

``run`` inserts running jobs and reservations, queues the waiting jobs, then walks the
timeline and the top dogs' planned starts (``next_start``) one second at a time: completions
first, then expiring reservations, arrivals and wake-ups, then one call of
``insert_waiting_jobs`` with the queue in priority order.
"""

from __future__ import annotations

import math
from heapq import heappop, heappush
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from collections import Counter
from dataclasses import dataclass, fields, replace
from typing import Any

from ..io.errors import Report
from .job import Job
from .reservation import Reservation
from .dependency import END, START
from .sorter import JobSorter, WaitingQueue, Walk
from .state import Allocation, Failures, SystemState
from .timeline import Kind, Timeline
from .windows import WEEK, StartRule

BOUNDARY = "window boundary"  # payload of the wake-ups at start-window changes
GREEDY_POOL = 8  # candidates Moab-style GREEDY backfilling combines: at most 2**8 sets per pass
SWITCHES = "switch wait over"  # payload of the wake-up when a job's --switches wait lapses
AGED = "old enough to reserve"  # payload of the wake-up when a job may reserve (bf_min_age_reserve)


@dataclass(frozen=True)
class PlanLimits:
    """Limits of Slurm's backfill pass on which jobs it tests and reserves for (its
    SchedulerParameters; 0: none). ``plan=slurm`` applies them to the pass it reproduces
    (``plan.plan_pending``), the simulation to each of its passes (``Backfilling``)."""

    max_job_user: int = 0  # jobs tested per user (bf_max_job_user)
    max_job_part: int = 0  # per partition (bf_max_job_part)
    max_job_user_part: int = 0  # per user and partition (bf_max_job_user_part)
    max_job_start: int = 0  # jobs started before the pass stops (bf_max_job_start)
    min_prio_reserve: int = 0  # no reservation below this priority (bf_min_prio_reserve)
    min_age_reserve: int = 0  # no reservation for a job pending fewer seconds (bf_min_age_reserve)
    part_count_reserve: int = 0  # reservations per partition (bf_job_part_count_reserve)

    def __post_init__(self) -> None:
        # asked at every pass (``Backfilling.insert_waiting_jobs``): once here, not per ask
        object.__setattr__(self, "_any", any(getattr(self, f.name) for f in fields(self)))

    def __bool__(self) -> bool:
        """Is any limit set?  O(1).

        >>> bool(PlanLimits()), bool(PlanLimits(min_age_reserve=60))
        (False, True)
        """
        return self._any

    @property
    def counting(self) -> bool:
        """Does the pass count the jobs it tests per user or partition?"""
        return bool(self.max_job_user or self.max_job_part or self.max_job_user_part)

    def beyond(self, job: Job, counted: Counter[tuple[str, ...]]) -> bool:
        """Has the pass tested as many jobs of this job's user, partition, or user in partition
        as the limits allow (Slurm's ``_job_exceeds_max_bf_param``)? If not, the job counts
        against them.  O(1).

        >>> from types import SimpleNamespace as J
        >>> limits, counted = PlanLimits(max_job_user=2), Counter()
        >>> [limits.beyond(J(owner=u, queue="batch"), counted) for u in "aabaa"]
        [False, False, False, True, True]
        """
        keys = []
        for limit, key in ((self.max_job_user_part, ("user-part", job.owner, job.queue)),
                           (self.max_job_part, ("part", job.queue)), (self.max_job_user, ("user", job.owner))):
            if limit:
                if counted[key] >= limit:
                    return True
                keys.append(key)
        for key in keys:
            counted[key] += 1
        return False

    def reserves_nothing(self, priority: float, age: int, reservations_in_part: int) -> bool:
        """Is a job tested for a start now only, reserving nothing: a priority below
        ``bf_min_prio_reserve``, pending fewer seconds than ``bf_min_age_reserve``, or its
        partition's ``bf_job_part_count_reserve`` reservations made?  O(1).

        >>> PlanLimits(min_age_reserve=60).reserves_nothing(0, 59, 0), PlanLimits(min_age_reserve=60).reserves_nothing(0, 60, 0)
        (True, False)
        """
        return ((bool(self.min_prio_reserve) and priority < self.min_prio_reserve)
                or (bool(self.min_age_reserve) and age < self.min_age_reserve)
                or (bool(self.part_count_reserve) and reservations_in_part >= self.part_count_reserve))


def batch_priority(job: Job, sorter: JobSorter, now: int) -> float:
    """The priority the batch system last computed (``userprio``, Slurm's ``Priority``), else
    the configured formula's at ``now``: what Slurm's ``bf_min_prio_reserve`` compares."""
    try:
        return float(job.data["userprio"])
    except (KeyError, ValueError):
        return sorter.priority(job, now)


@dataclass
class Policy:
    """Scheduler settings the simulation itself needs (the rest shape the state and sorter)."""

    maxtopdogs: float = 1  # math.inf for "all"
    topdogs_per_queue: bool = False
    maxnumjobs: int | None = None
    horizon: int | None = None
    backfill_order: str = "priority"  # which backfill candidates go first: priority, shortest, bestfit, greedy
    # Slurm's bf_resolution as (resolution, epoch % resolution), or None: a job starts, or is
    # planned, only where no reservation on its resources begins before the first step of
    # this grid after its end (``SystemState.clear_until``)
    grid: tuple[int, int] | None = None
    # when a job ends early: True, every reservation not beginning now is made anew in priority
    # order (Slurm's backfill plans from scratch at each pass); False, each keeps its slot and
    # moves only earlier (conservative backfilling with compression)
    replan: bool = False
    # a reservation binds the jobs it lists (owner, account, queue) too, or only those naming it
    bind_listed: bool = True
    # Slurm's limits on which jobs a backfill pass tests and reserves for (``Backfilling._limited_pass``)
    limits: PlanLimits = PlanLimits()


class Simulation(ABC):
    """Predicts start times; subclasses decide which waiting jobs start at an event."""

    name = "?"

    def __init__(self, state: SystemState, sorter: JobSorter, policy: Policy, report: Report) -> None:
        # under 30 attributes with Backfilling's: CPython shares an instance dict's keys only up
        # to 30, and past that every ``self.x`` in the run loop leaves the fast path (a 30th
        # cost 2 % more instructions on KTH; tests/test_invariants.py checks the count)
        self.state = state
        self.sorter = sorter
        self.policy = policy
        self.report = report
        self.timeline = Timeline()
        self.waiting = WaitingQueue(sorter, state.size, self.group)
        self.failed = Failures()  # requests that did not fit during the current pass
        self.events = 0
        self.started = 0
        self.queued = 0
        self.ended_early = False  # a job ended before its wall since the last pass
        self.dependencies: dict[Job, list[tuple[str, Job]]] = {}
        # jobs bound to a reservation are scheduled in that reservation's own state
        self.substates: list[SystemState] = []
        self.state_of: dict[Job, SystemState] = {}
        self.bound_to: dict[Job, str] = {}
        self.shadows: dict[Allocation, list[tuple[SystemState, Allocation]]] = {}
        self.blocked: dict[Job, set[tuple[str, Job]]] = {}  # jobs held back by dependencies
        self.watchers: dict[tuple[str, Job], list[Job]] = {}
        self.progress: Callable[[int, int], None] | None = None  # (started, queued), now and then
        self.rules: StartRule | None = None  # when jobs may start (start windows), if any
        self._boundary: int | None = None  # the pending wake-up at the next window change
        self._active = 0  # last time something other than a window change happened

    # -- template ----------------------------------------------------------------------------
    def run(self, running: list[Job], place: Callable[[Job], Any], reservations: list[Reservation],
            waiting: list[Job], dependencies: dict[Job, list[tuple[str, Job]]] | None = None) -> None:
        """Simulate until every queued job has a start, or the horizon or the events run out.

        ``place(job)`` gives the resources a running job holds, given what is in use so far;
        ``dependencies`` the jobs a job waits for (see the dependency module).
        """
        self.insert_running_jobs(running, place)
        self.insert_reservations(reservations)
        self.bind(reservations, waiting)
        self.dependencies = dependencies or {}
        self.queue_jobs(waiting)
        freeze = self.sorter.freeze_time(waiting)  # from then on the queue's order stays: ``freeze``
        horizon, timeline, state, next_start = self.policy.horizon, self.timeline, self.state, self.next_start
        ended, expired, arrival = Kind.END, Kind.RESERVATION_END, Kind.ARRIVAL  # (an Enum lookup costs 0.2 µs)
        while True:
            t = timeline.next_time()
            begins = next_start()  # a planned start is an event time too, but not a timeline event
            now = t if begins is None or (t is not None and t <= begins) else begins
            if now is None or (horizon is not None and now > horizon):
                break
            batch = timeline.pop_second()[1] if t == now else ()
            state.advance(now)
            for sub in self.substates:
                sub.advance(now)
            self.events += 1
            arrivals: set[Job] = set()
            only_arrivals = begins != now  # a reservation that begins calls for a full pass
            if not only_arrivals:
                self._active = now
            started = self.started
            for kind, payload in batch:
                if kind is ended:
                    (payload.home or state).finish(payload)
                    if self.shadows:
                        for sub, shadow in self.shadows.pop(payload, ()):
                            sub.finish(shadow)
                    if payload.end > now:
                        self.ended_early = True
                    if payload.job is not None and self.watchers:
                        self.satisfy(END, payload.job, now)
                elif kind is expired:
                    (payload.home or state).unplan(payload)
                elif kind is arrival:
                    self.add_waiting(payload)
                    arrivals.add(payload)
                elif payload is BOUNDARY:
                    self._boundary = None
                    only_arrivals = False
                    continue
                if kind is not arrival:
                    only_arrivals = False  # resources came back, or a wake-up
                self._active = now
            if freeze is not None and now >= freeze:
                freeze = None
                self.freeze(now)
            if self.waiting:
                self.insert_waiting_jobs(now, arrivals if only_arrivals else None)
            if self.started > started:
                self._active = now
            if self.rules is not None and self.waiting:
                self.wake_at_boundary(now)
            if self.progress is not None and self.events % 512 == 0:
                self.progress(self.started, self.queued)
        self.explain_unstarted()

    def freeze(self, now: int) -> None:
        """Every job is past the priority formula's saturation age (Slurm's PriorityMaxAge):
        no job's priority changes any more, so the queue is kept in a static order from
        here on, with its request classes, as a static formula's is, instead of being sorted
        and walked whole at every event (8,000 jobs of a Slurm site: quadratic). The same
        order, so the same forecast.  O(n log n) once."""
        self.sorter = self.sorter.frozen_at(now)
        waiting, self.waiting = self.waiting, WaitingQueue(self.sorter, self.state.size, self.group)
        for job in waiting:
            self.waiting.add(job)

    def next_start(self) -> int | None:
        """When the next planned start (a top dog's reservation) begins, if any: the run loop
        makes a pass then. Policies without reservations have none.  O(1)."""
        return None

    def wake_at_boundary(self, now: int) -> None:
        """Jobs held back by a start window need a pass when it opens. After two quiet weeks of
        window changes (nothing else happened, nothing started) no new wake-up is set: the
        table repeats weekly, so nothing would ever start."""
        t = self.rules.boundary_after(now)
        if t is None or self._boundary is not None or t - self._active > 2 * WEEK:
            return
        self._boundary = t
        self.timeline.push(t, Kind.WAKE, BOUNDARY)

    def may_start(self, job: Job, now: int) -> bool:
        """Does no start window hold ``job`` back at ``now``?"""
        return self.rules is None or self.rules.next_start(job, now) == now

    def start_rule(self, job: Job) -> Callable[[int], int | None] | None:
        """``t`` → the earliest allowed start of ``job`` at or after ``t``, for ``earliest``."""
        rules = self.rules
        return None if rules is None else (lambda t: rules.next_start(job, t))

    def insert_running_jobs(self, running: list[Job], place: Callable[[Job], Any]) -> None:
        """Place running jobs, one after the other, on their resources until their predicted end."""
        for job in running:
            resources = place(job)
            started = job.started or 0
            alloc = Allocation(min(started, 0), max(0, started + job.wall), resources,
                               self.state.request_cores(job), job.queue, job.owner, job)
            job.end, job.resources = max(0, job.end_at(started)), resources
            self.occupy(alloc, job.end)

    def insert_reservations(self, reservations: list[Reservation]) -> None:
        """Advance reservations block their resources for every job."""
        for res in reservations:
            alloc = Allocation(res.start, res.end, res.resources, self.state.cores_of(res.resources),
                               "", "", None, f"reservation {res.id}")
            self.state.plan(alloc)
            self.timeline.push(res.end, Kind.RESERVATION_END, alloc)

    def bind(self, reservations: list[Reservation], waiting: list[Job]) -> None:
        """Give each reservation that binds waiting jobs a state of its own: only its resources,
        only during its interval; its bound jobs are scheduled there (the first reservation
        that binds a job wins)."""
        for res in reservations:
            jobs = [job for job in waiting if job not in self.state_of and res.binds(job, self.policy.bind_listed)]
            if not jobs:
                continue
            sub, shadows = self.state.confined(res.resources, res.start, res.end)
            self.substates.append(sub)
            for alloc, shadow in shadows:
                self.shadows.setdefault(alloc, []).append((sub, shadow))
            for job in jobs:
                self.state_of[job] = sub
                self.bound_to[job] = res.id

    def state_for(self, job: Job | None) -> SystemState:
        """The state ``job`` is scheduled in: its reservation's, or the machine's."""
        return self.state_of.get(job, self.state)

    def queue_jobs(self, waiting: list[Job]) -> None:
        """Check requests, apply ``maxnumjobs``, and queue jobs now or at their queue date."""
        eligible = []
        for job in waiting:
            job.reason = self.state.exceeds(job)
            if job.reason is None:
                eligible.append(job)
        def queue_order(j: Job) -> tuple:  # the queue now in priority order, then arrivals in time
            arrival = j.arrival
            return (True, arrival, j.index) if arrival > 0 else (False, self.sorter.key(j, 0))

        eligible.sort(key=queue_order)
        limit = self.policy.maxnumjobs
        if limit is not None:
            for job in eligible[limit:]:
                job.reason = f"MaxNumJobs: only the first {limit} waiting jobs are simulated (maxnumjobs)"
            eligible = eligible[:limit]
        self.queued = len(eligible)
        switched = getattr(self.state.machine, "has_switches", False)
        for job in eligible:
            job.shape = (self.state.shape(job) + (self.bound_to.get(job),), self.state.size(job))
            if switched and job.switches is not None and job.switches_until > 0:
                self.timeline.push(job.switches_until, Kind.WAKE, SWITCHES)  # it may go anywhere now
            if self.dependencies and self.hold_back(job):
                continue
            arrival = job.arrival
            if arrival > 0:
                self.timeline.push(arrival, Kind.ARRIVAL, job)
            else:
                self.add_waiting(job)
        self.timeline.push(0, Kind.WAKE, None)

    def add_waiting(self, job: Job) -> None:
        self.waiting.add(job)

    def hold_back(self, job: Job) -> bool:
        """Keep ``job`` out of the queue while jobs it depends on have not started or ended."""
        pending = set()
        for when, other in self.dependencies.get(job, ()):
            done = other.running and (when == START or (other.end is not None and other.end <= 0))
            if not done:
                pending.add((when, other))
                self.watchers.setdefault((when, other), []).append(job)
        if pending:
            self.blocked[job] = pending
        return bool(pending)

    def satisfy(self, when: str, job: Job, now: int) -> None:
        """``job`` started or ended at ``now``: jobs waiting for that may queue (at their queue
        date at the earliest); they arrive as an event, so a pass in progress is not disturbed."""
        for dependent in self.watchers.pop((when, job), ()):
            pending = self.blocked.get(dependent)
            if pending is None:
                continue
            pending.discard((when, job))
            if not pending:
                del self.blocked[dependent]
                self.timeline.push(max(now, dependent.arrival), Kind.ARRIVAL, dependent)

    @abstractmethod
    def insert_waiting_jobs(self, now: int, fresh: set[Job] | None) -> None:
        """Start (or reserve for) waiting jobs at ``now``, walking the queue in priority order.

        ``fresh``: when only jobs arrived since the last pass, the arrivals; every other job
        failed then and fails now too (nothing was released, no reservation began or ended),
        so only these need a look. None: look at every job.
        """

    def candidates(self, now: int, fresh: set[Job] | None) -> Iterable[Job]:
        """The jobs a pass must look at, in priority order.

        With priorities that change over time otherwise than rising with age, all of them (the
        walk skips jobs not in ``fresh``). With a static order, or one rising with age
        (``WaitingQueue.classed``): the arrivals when only jobs arrived; else the queue's
        class walk, which passes over a request class once it cannot matter (see ``skip``).
        """
        if not self.waiting.classed or self.state_of:  # size bounds are the machine's: walk all
            return self.waiting.ordered(now)
        if fresh is not None:
            return self.waiting.sort(fresh, now)
        small_only = all(self.saturated(group) for group in self.waiting.groups)
        return self.waiting.walk(self.due(now), self.state.size_bound(), self.skip, small_only, now)

    def skip(self, bound: int, group: Any, shape: tuple, size: int, wall: int, array: str | None, *_: Any) -> bool:
        """A request class can be passed over when its group can take no new reservation and
        none of its jobs can start now: too big for what is free, or a failure covers it; or
        when its jobs are tasks of an array whose throttle is full now (they take no
        reservation either): an array of 5,000 tasks throttled to 10 is one class, not 5,000
        jobs looked at in every pass."""
        if array is not None:
            full = self.state.limits.full_arrays.get(array)
            if full is not None and full[0] <= self.state.now < full[1]:
                return True
        return self.saturated(group) and (size > bound or self.failed.covers(shape, size, wall))

    def saturated(self, group: Any) -> bool:
        """Can no job of ``group`` become a top dog in this pass?"""
        return True

    def due(self, now: int) -> list[Job]:
        """Jobs whose reservation starts now (they are outside the class walk)."""
        return []

    def group(self, job: Job) -> Any:
        """The top-dog group of ``job``."""
        return None

    def passed_over(self, job: Job, flag: bool) -> bool:
        """Whether ``job`` starts ahead of a waiting job of higher priority: the walk's own
        ``flag`` (a job it yielded before still waits), and with the classes kept, if not,
        the queue itself (a pass may skip jobs)."""
        return flag or (self.waiting.classed and self.waiting.ahead(job, self.state.now))

    # -- helpers for the policies --------------------------------------------------------------
    def fit_now(self, job: Job) -> Any | None:
        """Resources where ``job`` starts now, or None; a request covered by a failure of this
        pass is not tried again, and a new failure is remembered for the rest of the pass.
        Callers pass over jobs held back by their user's cap first: a cap is the user's, not
        the request's, so it must not become a failure for other users' jobs."""
        shape, size = job.shape
        failed = self.failed
        if failed.covers(shape, size, job.wall):
            return None
        if self.rules is not None and not self.may_start(job, self.state.now):
            failed.add(shape, size, job.wall)  # start rules are monotone in the request
            return None
        resources = self.state_of.get(job, self.state).is_insertable(job)  # (``state_for``, without a call)
        if resources is None:
            failed.add(shape, size, job.wall)
        return resources

    def start_job(self, job: Job, now: int, resources: Any, backfilled: bool,
                  planned: Allocation | None = None) -> None:
        """Start ``job`` now on ``resources`` (those of its reservation ``planned``, if it has one)."""
        alloc = Allocation(now, now + job.wall, resources, self.state.request_cores(job), job.queue, job.owner, job)
        self.waiting.remove(job)
        job.start, job.end, job.resources = now, job.end_at(now), resources
        job.backfilled = backfilled
        self.started += 1
        self.occupy(alloc, job.end, planned)
        if self.watchers:  # jobs depend on this one
            self.satisfy(START, job, now)
            if job.end <= now:  # over at once: no end event will come
                self.satisfy(END, job, now)

    def occupy(self, alloc: Allocation, end: int, planned: Allocation | None = None) -> None:
        """Hold ``alloc``'s resources (planned until ``alloc.end``) until the job really ends at
        ``end``, in place of the reservation ``planned`` if given. An allocation that is over by
        now (a zero-length job, a running job past its end) holds nothing: its release would
        free cores another job may hold by then."""
        if end > self.state.now:
            home = self.state_of.get(alloc.job, self.state)  # (``state_for``, without a call)
            home.insert(alloc, planned)
            alloc.home = home
            self.timeline.push(end, Kind.END, alloc)
        elif planned is not None:
            planned.home.unplan(planned)

    def explain_unstarted(self) -> None:
        horizon = self.policy.horizon
        for job, pending in self.blocked.items():
            when, other = min(pending, key=lambda p: p[1].index)
            name = other.data.get("step") or other.id
            why = f" ({other.reason})" if other.reason else ""
            job.reason = f"Dependency: waits for job {name} to {when}{why}"
        for job in list(self.waiting) + self.not_arrived():
            if horizon is not None:
                job.reason = f"BeyondHorizon: no start within the horizon of {horizon} s"
            elif job in self.bound_to:
                job.reason = (f"Reservation: no room inside reservation {self.bound_to[job]}, "
                              "which this job is bound to (its nodes and interval)")
            elif self.rules is not None and self.rules.next_start(job, self.state.now) != self.state.now:
                job.reason = self.rules.why(job)
            else:
                limit = self.state.queue_limit(job, self.state.now)
                job.reason = limit or "NoStart: no time found where the job fits"

    def not_arrived(self) -> list[Job]:
        return self.timeline.payloads(Kind.ARRIVAL)


class FCFS(Simulation):
    """First come, first served: start from the head of the queue, stop at the first misfit."""

    name = "FCFS"

    def insert_waiting_jobs(self, now: int, fresh: set[Job] | None) -> None:
        flag = False
        for job in self.waiting.ordered(now):
            if fresh is not None and job not in fresh:
                if self.state.user_capped(job, now):
                    flag = True  # still capped: nothing ended since the last pass
                    continue
                return  # blocked then, and still blocked
            resources = self.state_for(job).is_insertable(job) if self.may_start(job, now) else None
            if resources is None:
                if self.state.user_capped(job, now):
                    flag = True  # held back by its user's cap: not eligible, the next one is
                    continue
                return
            self.start_job(job, now, resources, backfilled=flag)


class ListScheduling(Simulation):
    """List scheduling: start every job that fits now, in priority order."""

    name = "List"

    def insert_waiting_jobs(self, now: int, fresh: set[Job] | None) -> None:
        flag = False
        self.failed.clear()
        for job in self.candidates(now, fresh):
            if fresh is not None and job not in fresh:
                flag = True
                continue
            resources = None if self.state.user_capped(job, now) else self.fit_now(job)
            if resources is None:
                flag = True
                continue
            self.start_job(job, now, resources, backfilled=self.passed_over(job, flag))


class Backfilling(Simulation):
    """Backfilling with up to ``maxtopdogs`` reservations (1: EASY; all: conservative).

    A job starts now if it fits for its whole wall without touching a reservation. If not,
    and fewer than ``maxtopdogs`` reservations are held (per queue with
    ``topdogs_per_queue``), it becomes a top dog: it reserves the earliest slot where it fits
    on one fixed resource set and starts there. A reservation counts until its job starts.
    """

    name = "Backfilling"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.reserved: dict[Job, Allocation] = {}
        self.in_order = True  # static priorities: ``reserved`` iterates in priority order (see ``_compress``)
        self._starts: list[tuple[int, int, Job, Allocation]] = []  # reservations by start; moved ones linger
        self._pushed = 0
        self.promised: dict[Job, int] = {}  # each top dog's first reservation: it never starts later
        self.held: Counter = Counter()
        self.recheck = False  # a slot freed after a job was refused one: the next pass looks at all

    def insert_waiting_jobs(self, now: int, fresh: set[Job] | None) -> None:
        if self.ended_early:
            if self.policy.replan:
                self._replan(now)
            else:
                self._compress(now)
        if self.policy.backfill_order != "priority":
            self._candidates_in_order(now)
            return
        if self.policy.limits:
            self._limited_pass(now)
            return
        if self.recheck:
            fresh, self.recheck = None, False
        flag = False
        refused: set[Any] = set()  # groups that refused a job a reservation in this pass
        self.failed.clear()
        limits = self.state.limits
        if limits.watched:
            self._unpark(now)
        walk = self.candidates(now, fresh)
        parking = limits.users_limited and isinstance(walk, Walk)
        for job in walk:
            if fresh is not None and job not in fresh:
                flag = True  # waits: failed before and still fails (see the base class)
                continue
            alloc = self.reserved.get(job)
            if alloc is not None:
                if alloc.start <= now:
                    # its start frees a slot: a job of its group refused one before it, looked
                    # at or passed over, gets a look in the next pass, whatever that pass is
                    group = self.group(job)
                    self.recheck = self.recheck or group in refused or (
                        isinstance(walk, Walk) and walk.passed_over(group, walk.rank(job)))
                    self._start_reserved(job, alloc, now, self.passed_over(job, flag))
                    if isinstance(walk, Walk):
                        walk.reopen()  # a reservation slot is free again
                else:
                    flag = True
                continue
            if self.state.user_capped(job, now):
                flag = True
                if parking:
                    self._park(job.owner, now)  # the walk passes over its other jobs from here on
                continue  # held back by its user's cap: no start now, and no reservation
            resources = self.fit_now(job)
            if resources is not None:
                self.start_job(job, now, resources, backfilled=self.passed_over(job, flag))
                continue
            flag = True
            if self.held[self.group(job)] < self.policy.maxtopdogs:
                self._reserve(job, now)
            else:
                refused.add(self.group(job))

    def freeze(self, now: int) -> None:
        """As the base class; the jobs holding reservations leave the request classes, as
        in a static order, and the reservations' order is to be read again."""
        super().freeze(now)
        for job in self.reserved:
            self.waiting.reserved(job)
        self.in_order = len(self.reserved) <= 1

    def _park(self, user: str, now: int) -> None:
        """Park the jobs of ``user`` if it runs as many jobs now as its cap allows
        (``WaitingQueue.park``): until one of its jobs ends or its reservation changes, every
        pass would only find them held back. With caps learned from a history that is most of
        the queue at every event (160,000 nodes, 20,000 jobs: 434 s without parking, 13 s
        with). Parked at its first job held back, the pass passes over the rest too (an
        HPC2N backtest's passes looked at 42 jobs each, most of them held back, before). Its
        jobs would all be held back for the rest of the pass: nothing is discarded within it.
        Parking also ends when the earliest of those jobs reaches the end of its wall;
        a run time never passes the wall, so its end comes first, but parking stays right
        without relying on that."""
        limits = self.state.limits
        until = limits.full_until(user, now)
        if until is not None:
            self.waiting.park(user)
            limits.watch(user, until)

    def _unpark(self, now: int) -> None:
        """File again the jobs of parked users whose cap may no longer hold them back."""
        for user in self.state.limits.released(now):
            self.waiting.unpark(user)

    def _start_reserved(self, job: Job, alloc: Allocation, now: int, backfilled: bool) -> None:
        """A top dog's reservation begins: it starts on the reserved resources."""
        del self.reserved[job]
        self.held[self.group(job)] -= 1
        self.start_job(job, now, alloc.resources, backfilled=backfilled, planned=alloc)

    def _candidates_in_order(self, now: int) -> None:
        """A pass with another backfill order (``backfill_order``): in priority order, jobs start
        at their reservation, the head starts while it fits, and jobs that fit nowhere now take
        a reservation while the top-dog limit allows (as in the usual pass). The others are the
        backfill candidates, tried after that: the shortest wall first (``shortest``: SJBF), the
        most cores first (``bestfit``: each start leaves the fewest cores idle, as Moab's
        BESTFIT), or the best-filling set first (``greedy``, see ``_greedy``). Every job is
        looked at in every pass: O(jobs log jobs)."""
        self.recheck = False
        self.failed.clear()
        passed = False
        candidates: list[Job] = []
        for job in self.waiting.ordered(now):
            alloc = self.reserved.get(job)
            if alloc is not None:
                if alloc.start <= now:
                    self._start_reserved(job, alloc, now, passed)
                else:
                    passed = True
                continue
            if self.state.user_capped(job, now):
                passed = True
                continue
            if not passed or self.held[self.group(job)] < self.policy.maxtopdogs:
                resources = self.fit_now(job)
                if resources is not None:
                    self.start_job(job, now, resources, backfilled=passed)
                    continue
                passed = True
                if self.held[self.group(job)] < self.policy.maxtopdogs:
                    self._reserve(job, now)
                    continue
            candidates.append(job)
        if self.policy.backfill_order == "greedy":
            candidates = self._greedy(candidates, now)
        elif self.policy.backfill_order == "shortest":
            candidates.sort(key=lambda j: (j.wall, self.sorter.key(j, now)))
        else:  # bestfit: the largest that fits first; what did not fit cannot fit later in the pass
            candidates.sort(key=lambda j: (-self.state.request_cores(j), self.sorter.key(j, now)))
        for job in candidates:
            if self.state.user_capped(job, now):  # a start earlier in this loop may have capped its user
                continue
            resources = self.fit_now(job)
            if resources is not None:
                self.start_job(job, now, resources, backfilled=True)

    def _limited_pass(self, now: int) -> None:
        """A pass held to Slurm's limits on its backfill (``Policy.limits``), over every waiting
        job in priority order, as Slurm's pass walks them; jobs held back by a user cap or an
        array throttle are not tested and not counted (``plan._tested``):

        - a job past the tests allowed per user or partition (``bf_max_job_user``, ...) is
          not tested by the backfill: it holds no reservation (one it held is dropped), and it
          starts only where Slurm's main scheduler would start it, at the head of its
          partition (every job ahead of it there started) and where it fits now;
        - a job that may reserve nothing (``bf_min_age_reserve``, ``bf_min_prio_reserve``,
          ``bf_job_part_count_reserve``) starts if it fits now and is passed over otherwise; a
          young one gets a pass at the second it may reserve;
        - every other job starts at its reservation or where it fits now, or reserves as in the
          usual pass.

        With ``replan`` the pass gives what planning every reservation anew would give, as
        Slurm plans from scratch, so a job that comes of age or within its user's count takes
        its place ahead of lower jobs that reserved meanwhile: the reservations it walks before
        its first test are kept (they would be made the same), and at that test those of the
        jobs after are dropped and made anew as the walk reaches them (``_unreserve_after``).
        ``bf_max_job_start`` is not held to: Slurm's main scheduler and its next pass go on
        where it stopped, seconds later. Every job is looked at in every pass, as in Slurm
        (not the class walk): O(jobs log jobs) per pass, plus the reservations made anew."""
        self.recheck = False
        self.failed.clear()
        limits, reserved, replan = self.policy.limits, self.reserved, self.policy.replan
        counting = limits.counting
        counted: Counter[tuple[str, ...]] = Counter()
        in_part: Counter[str] = Counter()  # reservations per partition in this pass
        blocked: set[str] = set()  # partitions with a job that did not start: their head is passed
        passed = False  # a job of higher priority still waits
        ahead = sum(alloc.start > now for alloc in reserved.values())  # reservations not yet walked
        kept: set[Job] = set()  # ... and those walked and kept
        for job in self.waiting.sort(self.waiting, now):
            alloc = reserved.get(job)
            if alloc is None and self.state.user_capped(job, now):  # (a reservation was made within the caps)
                passed = True
                continue
            beyond = counting and limits.beyond(job, counted)
            if alloc is not None:
                if alloc.start <= now:
                    self._start_reserved(job, alloc, now, passed)
                    if replan and job.end <= now:  # over at once: its slot is free again, for the
                        self.ended_early = True  # jobs walked before (the next pass plans anew)
                        if ahead:  # and for those after
                            self._unreserve_after(now, kept)
                            ahead = 0
                    continue
                ahead -= 1
                if not beyond:
                    kept.add(job)
                    in_part[job.queue] += 1
                    passed = True
                    blocked.add(job.queue)
                    continue
                self._unreserve(job)  # past the count now: Slurm's pass no longer plans it
            if beyond and job.queue in blocked:
                passed = True
                continue
            if replan and ahead:  # a test here would see lower jobs' plans: Slurm's pass has none yet
                self._unreserve_after(now, kept)
                ahead = 0
            resources = self.fit_now(job)
            if resources is not None:
                self.start_job(job, now, resources, backfilled=passed)
                continue
            passed = True
            blocked.add(job.queue)
            if beyond:
                continue
            age = now - job.queued
            if limits.reserves_nothing(batch_priority(job, self.sorter, now), age, in_part[job.queue]):
                if limits.min_age_reserve and age < limits.min_age_reserve:  # a pass when it may reserve
                    self.timeline.wake_once(job.queued + limits.min_age_reserve, AGED)
                continue
            if self.held[self.group(job)] < self.policy.maxtopdogs:
                self._reserve(job, now)
                if job in reserved:
                    in_part[job.queue] += 1

    def _unreserve_after(self, now: int, kept: set[Job]) -> None:
        """Drop the reservations not begun by ``now`` of the jobs a pass has not walked yet:
        all but those it walked and ``kept`` (before its first test no reservation is made).
        So the tests from here on, as the reservations made anew, see only the plans of higher
        jobs, as in Slurm's pass, which plans from scratch; until then the pass only walked
        reservations, which planning anew would give again (nothing ended early: that replans
        all, ``_replan``).  O(r)."""
        for job, alloc in list(self.reserved.items()):
            if alloc.start > now and job not in kept:
                self._unreserve(job)

    def _greedy(self, candidates: list[Job], now: int) -> list[Job]:
        """Moab's GREEDY backfill: of the first GREEDY_POOL candidates (priority order) that fit
        now one by one, start the set that fits together and uses the most cores (ties: the set
        first in priority order), found by a depth-first search over sets that fit, trying each
        on the state and taking it back. At most 2**GREEDY_POOL sets. Returns the candidates
        left, in priority order, for the usual pass."""
        pool = []
        for job in candidates:
            if len(pool) == GREEDY_POOL:
                break
            if job.wall > 0 and job not in self.bound_to and not self.state.user_capped(job, now) \
                    and self.fit_now(job) is not None:
                pool.append(job)
        best: list = [0, []]
        state = self.state

        def search(first: int, chosen: list[int], cores: int) -> None:
            if cores > best[0]:
                best[:] = [cores, list(chosen)]
            for k in range(first, len(pool)):
                job = pool[k]
                resources = state.is_insertable(job)
                if resources is None:
                    continue
                trial = Allocation(now, now + job.wall, resources, state.request_cores(job), job.queue, job.owner, job)
                state.insert(trial)
                chosen.append(k)
                search(k + 1, chosen, cores + state.request_cores(job))
                chosen.pop()
                state.finish(trial)

        search(0, [], 0)
        for k in best[1]:
            job = pool[k]
            self.start_job(job, now, state.is_insertable(job), backfilled=True)
        return [job for job in candidates if job.start is None]

    def saturated(self, group: Any) -> bool:
        return self.held[group] >= self.policy.maxtopdogs

    def due(self, now: int) -> list[Job]:
        """O(k log r) for the k reservations due (plus the moved ones' old entries), not O(r)."""
        starts, out = self._starts, []
        while starts and starts[0][0] <= now:
            entry = heappop(starts)
            if self.reserved.get(entry[2]) is entry[3]:  # still this job's reservation
                out.append(entry)
        for entry in out:  # due until started (in this pass, which walks them)
            heappush(starts, entry)
        return [entry[2] for entry in out]

    def next_start(self) -> int | None:
        """The earliest start among the reservations held now, read off ``_starts`` (entries of
        moved or started reservations are dropped as they reach its top). A moved reservation's
        old start is no event: the timeline never held it (no push for each of KTH's 58,000
        moves, no pop of the old one), and no pass is made for it. A pass owed to a job refused
        a reservation (``recheck``) waits for the next real event too, as in a scheduler that
        knows only where reservations are now (tests/reference.py). O(1), amortised
        O(log r) per entry dropped."""
        starts, reserved = self._starts, self.reserved
        while starts:
            entry = starts[0]
            if reserved.get(entry[2]) is entry[3]:
                return entry[0]
            heappop(starts)
        return None

    def _earliest(self, home: SystemState, job: Job) -> tuple[int, Any] | None:
        """The earliest slot for ``job``'s reservation. On a planning grid (Slurm's
        ``bf_resolution``) its resources must be clear of other jobs' reservations until the
        first grid step after its end (``SystemState.clear_until``), as for a job that starts
        now: where a slot is not, the search goes on as for a job that much longer (each round
        starts no earlier than the last; mostly one). O(rounds × ``earliest``)."""
        rule, horizon = self.start_rule(job), self.policy.horizon
        found = home.earliest(job, horizon, rule)
        if home.grid is None:
            return found
        asked = job
        while found is not None:
            t, resources = found
            clear = home.clear_until(t + job.wall)
            if not home.plans_between(resources, t + job.wall, clear) or clear - t <= asked.wall:
                return found
            asked = replace(asked, wall=clear - t)  # the request as the grid makes it; never started
            found = home.earliest(asked, horizon, rule)
        return None

    def _note_start(self, job: Job, alloc: Allocation) -> None:
        heappush(self._starts, (alloc.start, self._pushed, job, alloc))
        self._pushed += 1

    def _compress(self, now: int) -> None:
        """A job ended before its wall: each top dog, in priority order, moves to the earliest
        slot it fits now if that is earlier; the others keep theirs. So no job ever starts
        later than its reservation (conservative backfilling with compression; with one top
        dog, EASY as published). Only a job that can move is re-planned."""
        reserved = self.reserved
        self.ended_early = False
        if not reserved:
            return
        order = reserved if len(reserved) == 1 or self.in_order else self._ordered(now)
        planned = [(job, alloc) for job in order if (alloc := reserved[job]).start > now]  # the others start now
        rule = None if self.rules is None else self.start_rule
        if not self.state_of:  # no job bound to an advance reservation: all are the machine's
            moves = self.state.compress(planned, self.policy.horizon, rule)
        else:  # reservations in advance reservations' states too: one at a time, each in its own
            moves = (move for job, alloc in planned
                     for move in alloc.home.compress([(job, alloc)], self.policy.horizon, rule))
        for job, moved in moves:  # one that begins now is due in this very pass (``due``)
            reserved[job] = moved
            self._note_start(job, moved)

    def _replan(self, now: int) -> None:
        """A job ended before its wall, with ``replan``: every reservation that does not begin
        now is dropped, and this pass (a full one) reserves anew in priority order, as Slurm's
        backfill plans from scratch at each pass. Unlike compression, a job may lose its slot to
        one of higher priority that can now use it, and so start later than it was planned.
        (On the KTH lab's record, Baranov's P of the replay against Slurm's residences: 92 s
        against 119 s with compression.) O(r) unplans; the pass's reservations cost as ever."""
        self.ended_early = False
        reserved = self.reserved
        for job, alloc in list(reserved.items()):
            if alloc.start > now:  # (one that is due starts in this pass)
                self._unreserve(job)
        self.in_order = not reserved

    def _unreserve(self, job: Job) -> None:
        """Drop ``job``'s reservation: it waits as any other job again."""
        alloc = self.reserved.pop(job)
        alloc.home.unplan(alloc)
        self.held[self.group(job)] -= 1
        job.topdog = False
        self.waiting.unreserved(job)

    def _ordered(self, now: int) -> list[Job]:
        """The jobs holding reservations in priority order. With static priorities the dict is
        put in that order, and it stays so while reservations come in order (with queue-date
        priorities, new jobs come last): then compression need not sort at every early end.
        O(r log r)."""
        order = self.waiting.sort(self.reserved, now)
        if self.waiting.static:
            reserved = self.reserved
            items = [(job, reserved[job]) for job in order]
            reserved.clear()
            reserved.update(items)
            self.in_order = True
        return order

    def group(self, job: Job) -> str | None:
        return job.queue if self.policy.topdogs_per_queue else None

    def _reserve(self, job: Job, now: int) -> None:
        home = self.state_for(job)
        found = self._earliest(home, job)
        if found is None:
            return
        t, resources = found
        alloc = Allocation(t, t + job.wall, resources, self.state.request_cores(job), job.queue, job.owner, job)
        home.plan(alloc)
        alloc.home = home
        reserved = self.reserved
        if self.in_order and reserved:  # still in order if it comes after the last, by a static key
            self.in_order = self.waiting.static and next(reversed(reserved)).order_key < job.order_key
        reserved[job] = alloc
        self._note_start(job, alloc)
        self.promised.setdefault(job, t)
        self.waiting.reserved(job)
        self.held[self.group(job)] += 1
        job.topdog = True


ALGORITHMS: dict[str, type[Simulation]] = {"FCFS": FCFS, "List": ListScheduling, "Backfilling": Backfilling}
ALL = math.inf
