"""System states: the resource managers that say where and when a job fits.

Both states keep the same picture of the future: *running* allocations (started, ending at a
known time) and *planned* ones (top-dog reservations and advance reservations, each on a
fixed resource set for a fixed interval). A job fits at ``t`` for ``w`` seconds when one
resource set is free at every instant of ``[t, t+w)``: free now, or released by a running
job by ``t``, and touched by no planned allocation overlapping the window. The earliest
such ``t`` is always now or a release time (availability only grows there), so
``earliest`` sweeps those times once, adding released resources as it goes.

``NodeState`` places jobs on nodes and cores (sets of big-int bit masks, see ``ranges``);
``AttributeState`` only counts cores.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any


from ..io.dates import floor_to
from .job import Job
from .node import Machine
from .availability import FOREVER
from .queue import Queue, QueueLimits

NEVER = float("inf")  # past every time a search could try (FOREVER included)


@dataclass(eq=False, slots=True)
class Allocation:
    """Resources held by a job (or an advance reservation) over ``[start, end)``."""

    start: int
    end: int
    resources: Any  # NodeCores or core count
    cores: int
    queue: str
    user: str
    job: Job | None = None
    label: str = ""
    seq: int = 0  # set by the state on insertion: a deterministic tie-breaker
    home: Any = None  # the state that holds it (the main one, or a reservation's own)
    looked: int = -1  # where its state's ``Freed`` log stood when it last looked for an earlier slot

    def __repr__(self) -> str:
        return f"Allocation({self.label or self.job}, {self.start}-{self.end})"

    def moved(self, start: int, resources: Any) -> Allocation:
        """The same request, as long, from ``start`` on ``resources`` (compression)."""
        return Allocation(start, start + self.end - self.start, resources, self.cores, self.queue, self.user,
                          self.job, looked=self.looked)


class Failures:
    """Requests that did not fit during one pass, to skip jobs that cannot fit either.

    Within a pass the free resources only shrink, and a job needing at least as many nodes
    (or cores) for at least as long, with the same per-node request and queue (and owner,
    where a queue limits jobs per user), fits nowhere the failed one did not. Kept per
    request shape as a Pareto frontier of (size, wall) pairs.

    >>> f = Failures()
    >>> f.add(("q", 8), 4, 100)
    >>> f.covers(("q", 8), 4, 100), f.covers(("q", 8), 5, 200), f.covers(("q", 8), 3, 100)
    (True, True, False)
    """

    def __init__(self) -> None:
        self._frontier: dict[tuple, list[tuple[int, int]]] = {}

    def clear(self) -> None:
        """Forget every failure (a new pass).  O(1)."""
        if self._frontier:
            self._frontier = {}

    def covers(self, shape: tuple, size: int, wall: int) -> bool:
        """Did a request of this shape, no larger and no longer, fail?  O(frontier)."""
        for s, w in self._frontier.get(shape, ()):
            if s <= size and w <= wall:
                return True
        return False

    def add(self, shape: tuple, size: int, wall: int) -> None:
        """Record a failure, dropping the pairs it dominates.  O(frontier)."""
        old = self._frontier.get(shape)
        if old is None:  # the usual case: a pass's first failure of its shape
            self._frontier[shape] = [(size, wall)]
            return
        kept = [(s, w) for s, w in old if not (size <= s and wall <= w)]
        kept.append((size, wall))
        self._frontier[shape] = kept


class SystemState(ABC):
    """Resource manager: which resources are used now and planned later, and where jobs fit."""

    def __init__(self, machine: Machine, queues: dict[str, Queue]) -> None:
        self.machine = machine
        self.queues = queues
        self.limits = QueueLimits(queues)
        self.now = 0
        self._seq = 0
        self.version = 0  # bumped by every change; keys the per-pass cache of free windows
        self.deadline: int | None = None  # a reservation's own state: nothing may end later
        self._windows: dict[tuple[int, int], Any] = {}
        # Slurm's bf_resolution as (step, epoch offset), or None: see ``clear_until``
        self.grid: tuple[int, int] | None = None

    # -- what subclasses provide ------------------------------------------------------------
    @abstractmethod
    def exceeds(self, job: Job) -> str | None:
        """Why ``job`` can never run even on the empty system, or None."""

    @abstractmethod
    def _choose(self, job: Job, t: int, end: int, window: Any) -> Any | None:
        """Resources for ``job`` inside ``window``, which is free throughout ``[t, end)``, or None."""

    @abstractmethod
    def _take(self, resources: Any) -> None:
        """Mark ``resources`` used now."""

    @abstractmethod
    def _give(self, resources: Any) -> None:
        """Mark ``resources`` free now."""

    @abstractmethod
    def cores_of(self, resources: Any) -> int:
        """Number of cores in ``resources``."""

    def shape(self, job: Job) -> tuple:
        """What must be equal for ``Failures`` to compare two requests by size and wall. (User
        caps are not in it: a job held back by its user's cap records no failure.) Where the
        queue caps nodes by time of day (``maxnodes``), the node count is in it too: counting
        cores, a job of more cores on fewer nodes may start where a smaller one may not."""
        q = self.queues.get(job.queue)
        owner = job.owner if q is not None and q.maxjobsperuser is not None else None
        nodes = job.nodes if q is not None and q.maxnodes else None
        return (job.queue, owner, self._per_node(job), nodes)

    def _per_node(self, job: Job) -> int:
        return 0

    @abstractmethod
    def size(self, job: Job) -> int:
        """A number that must not exceed ``size_bound()`` for ``job`` to fit now."""

    @abstractmethod
    def size_bound(self) -> int:
        """The largest ``size`` that could fit in what is free now."""

    @abstractmethod
    def request_cores(self, job: Job) -> int:
        """Cores ``job`` asks for: what queue limits count, also when it holds whole nodes."""

    # -- queries -----------------------------------------------------------------------------
    def clear_until(self, end: int) -> int:
        """How long a job that ends at ``end`` must find its resources clear of other jobs'
        reservations. On a planning grid (Slurm's ``bf_resolution``) Slurm's backfill holds a
        planned job's nodes from its start rounded down to the grid, and a job may start (or be
        planned) only where no such hold begins at or before its end: so it needs them clear
        until the first grid step after ``end``. Without a grid, ``end``. (Advance reservations
        are not on the grid: a job may end the second one begins.) O(1).

        >>> from jufo.engine.attribute_state import AttributeState
        >>> from jufo.engine.node import Machine, Node
        >>> s = AttributeState(Machine([Node(0, "n0", "n0", 4, None)]), {})
        >>> s.clear_until(130), s.__setattr__("grid", (60, 0)), s.clear_until(130), s.clear_until(120)
        (130, None, 180, 180)
        """
        grid = self.grid
        if grid is None:
            return end
        step, offset = grid
        return floor_to(end, step, offset) + step

    def plans_between(self, resources: Any, lo: int, hi: int) -> bool:
        """Does another job's reservation on any of ``resources`` begin in ``[lo, hi)``? (The
        grid's extra clearance, see ``clear_until``; counting cores only, there is none.)"""
        return False

    @abstractmethod
    def is_insertable(self, job: Job) -> Any | None:
        """Resources where ``job`` can start now and run its whole wall, or None."""

    @abstractmethod
    def earliest(self, job: Job, horizon: int | None = None,
                 allowed: Callable[[int], int | None] | None = None) -> tuple[int, Any] | None:
        """Earliest ``(t, resources)`` with ``t >= now`` where ``job`` fits for its whole wall,
        or None if it never does (or not before ``horizon``). The earliest such ``t`` is now
        or a time where resources come back, so only those are tried; with start windows,
        ``allowed(t)`` gives the earliest time at or after ``t`` the job may start (None:
        never), and those times are tried too."""

    def earlier(self, job: Job, alloc: Allocation, horizon: int | None = None,
                allowed: Callable[[int], int | None] | None = None) -> tuple[int, Any] | None:
        """A slot for ``job`` earlier than its reservation ``alloc`` (as ``earliest`` would
        find with ``alloc`` dropped), or None; ``alloc`` stays planned either way (``replan``
        moves it). For compression, where most reservations cannot move. Here: drop,
        search, put back."""
        self.unplan(alloc)
        found = self.earliest(job, horizon, allowed)
        self.plan(alloc)
        return None if found is None or found[0] >= alloc.start else found

    def compress(self, planned: Iterable[tuple[Job, Allocation]], horizon: int | None = None,
                 rule: Callable[[Job], Callable[[int], int | None] | None] | None = None
                 ) -> Iterator[tuple[Job, Allocation]]:
        """Compression of this state's reservations ``planned`` (in priority order): each in
        turn moves to the earliest slot before its own if there is one (``earlier``, then
        ``replan``); yields ``(job, moved)`` as it goes, so a caller sees each move before the
        next is looked for. ``rule(job)``: its start rule (see ``earliest``)."""
        for job, alloc in planned:
            found = self.earlier(job, alloc, horizon, None if rule is None else rule(job))
            if found is not None:
                yield job, self.replan(alloc, *found)

    def replan(self, alloc: Allocation, start: int, resources: Any) -> Allocation:
        """Move the planned ``alloc`` to ``start`` on ``resources`` (same length); returns the
        new allocation, held by this state."""
        moved = alloc.moved(start, resources)
        self.unplan(alloc)
        self.plan(moved)
        moved.home = self
        return moved

    def _limited(self, job: Job, t: int) -> bool:
        return self.limits.active and self.queue_limit(job, t) is not None

    def user_capped(self, job: Job, t: int) -> bool:
        """Does a user's, an account's or a QOS's cap or an array's throttle keep ``job`` from
        starting at ``t``? (Such jobs take no reservation: the cap is the user's, the account's,
        the QOS's or the array's, not the request's; Slurm's backfill reserves nothing for a job
        a QOS limit holds either.)"""
        limits = self.limits
        return ((limits.users_limited and limits.user_exceeded(job.owner, t, t + job.wall, self.request_cores(job),
                                                               job.nodes) is not None)
                or (bool(limits.array_caps) and limits.array_exceeded(job.array, t, t + job.wall) is not None)
                or (limits.accounts_limited and limits.account_exceeded(
                    job.data.get("account", "").strip(), t, t + job.wall, self.request_cores(job), job.nodes) is not None)
                or (limits.qos_limited and limits.qos_exceeded(
                    job.data.get("qos", "").strip(), t, t + job.wall, self.request_cores(job), job.nodes) is not None))

    def queue_limit(self, job: Job, t: int) -> str | None:
        """The limit (queue, user, account or QOS cap, array throttle) that keeps ``job`` from
        starting at ``t`` on any resources, or None."""
        return (self.limits.array_exceeded(job.array, t, t + job.wall)
                or self.limits.exceeded(job.queue, job.owner, self.request_cores(job), t, t + job.wall, job.nodes,
                                        job.data.get("account", "").strip(), job.data.get("qos", "").strip()))

    # -- changes -----------------------------------------------------------------------------
    def advance(self, now: int) -> None:
        """Move the clock to ``now``."""
        self.now = now

    def _confine(self, resources: Any, start: int, end: int) -> None:
        """Make ``resources`` usable only during ``[start, end)``: blocked before and after,
        and nothing may end later than ``end`` (a reservation's own state)."""
        for lo, hi in ((0, start), (end, FOREVER)):
            if hi > lo:
                self.plan(Allocation(lo, hi, resources, 0, "", "", None, "outside the reservation"))
        self.deadline = end

    def _number(self, alloc: Allocation) -> None:
        self._seq += 1
        alloc.seq = self._seq
        self.version += 1

    def insert(self, alloc: Allocation, planned: Allocation | None = None) -> None:
        """Mark ``alloc`` running from now: its resources are used until ``alloc.end``.
        ``planned``: the reservation whose resources it starts on, dropped now."""
        if planned is not None:
            self.unplan(planned)
        self._number(alloc)
        self._take(alloc.resources)
        self.limits.add(alloc)

    def finish(self, alloc: Allocation) -> None:
        """A running allocation ends (at its end, or earlier): its resources are free again."""
        self._give(alloc.resources)
        self.limits.discard(alloc)
        self.version += 1

    def plan(self, alloc: Allocation) -> None:
        """Hold ``alloc``'s resources for ``[start, end)`` (a reservation)."""
        self._number(alloc)
        self.limits.add(alloc)

    def unplan(self, alloc: Allocation) -> None:
        """Drop a reservation."""
        self.limits.discard(alloc)
        self.version += 1
