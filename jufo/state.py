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
from dataclasses import dataclass
from heapq import merge
from itertools import islice
from typing import Any

from sortedcontainers import SortedKeyList

from .job import Job
from .node import Machine
from .queue import Queue, QueueLimits, peak
from .ranges import NodeCores, bits_of, lowest


@dataclass(eq=False)
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

    def __repr__(self) -> str:
        return f"Allocation({self.label or self.job}, {self.start}-{self.end})"


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

    def covers(self, shape: tuple, size: int, wall: int) -> bool:
        """Did a request of this shape, no larger and no longer, fail?  O(frontier)."""
        for s, w in self._frontier.get(shape, ()):
            if s <= size and w <= wall:
                return True
        return False

    def add(self, shape: tuple, size: int, wall: int) -> None:
        """Record a failure, dropping the pairs it dominates.  O(frontier)."""
        kept = [(s, w) for s, w in self._frontier.get(shape, ()) if not (size <= s and wall <= w)]
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
        self._windows: dict[tuple[int, int], Any] = {}
        self.running: SortedKeyList = SortedKeyList(key=lambda a: (a.end, a.seq))
        self.planned: SortedKeyList = SortedKeyList(key=lambda a: (a.start, a.seq))

    # -- what subclasses provide ------------------------------------------------------------
    @abstractmethod
    def exceeds(self, job: Job) -> str | None:
        """Why ``job`` can never run even on the empty system, or None."""

    @abstractmethod
    def _base(self) -> Any:
        """A private copy of the resources free now (planned allocations not subtracted)."""

    @abstractmethod
    def _release(self, base: Any, alloc: Allocation) -> Any:
        """``base`` plus the resources of ``alloc``; may change ``base`` in place."""

    @abstractmethod
    def _fit(self, job: Job, t: int, end: int, base: Any) -> Any | None:
        """Resources for ``job`` free in ``base`` and untouched by planned allocations during
        ``[t, end)``, or None."""

    @abstractmethod
    def _without(self, window: Any, alloc: Allocation) -> Any:
        """``window`` less the resources of planned ``alloc`` (may change ``window``)."""

    @abstractmethod
    def _choose(self, job: Job, t: int, end: int, window: Any) -> Any | None:
        """Resources for ``job`` inside ``window``, which is already free of every planned
        allocation overlapping ``[t, end)``, or None."""

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
        """What must be equal for ``Failures`` to compare two requests by size and wall."""
        q = self.queues.get(job.queue)
        owner = job.owner if q is not None and q.maxjobsperuser is not None else None
        return (job.queue, owner, self._per_node(job))

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
    def find(self, job: Job) -> Any | None:
        """Resources where ``job`` can start now and run its whole wall, or None.

        The planned allocations that block ``[now, now+wall)`` are those starting before its
        end: a prefix of ``planned``. The free set minus that prefix is computed once per
        prefix and state version, and shared by every job of a pass.
        """
        now, end = self.now, self.now + job.wall
        if self.limits.queues and self.limits.exceeded(job.queue, job.owner, self.request_cores(job), now, end):
            return None
        prefix = self.planned.bisect_key_left((max(end, now + 1), -1))
        key = (self.version, prefix)
        window = self._windows.get(key)
        if window is None:
            if len(self._windows) > 64:
                self._windows.clear()
            window = self._windows[key] = self._window(prefix)
        return self._choose(job, now, end, window)

    def _window(self, prefix: int) -> Any:
        """Resources free now and untouched by the first ``prefix`` planned allocations."""
        window = self._base()
        for alloc in self.planned.islice(0, prefix):
            if alloc.end > self.now and alloc.end > alloc.start:
                window = self._without(window, alloc)
        return window

    def earliest(self, job: Job, horizon: int | None = None) -> tuple[int, Any] | None:
        """Earliest ``(t, resources)`` with ``t >= now`` where ``job`` fits for its whole wall.

        Candidates are now and every later release time, ascending. O(candidates × fit).
        None if it never fits (or not before ``horizon``).
        """
        base = self._base()
        now = self.now
        # (time, allocation or None): running jobs give resources back; a reservation's end
        # only stops blocking, which the fit test sees by itself
        releases = merge(
            ((a.end, a.seq, a) for a in self.running.irange_key(min_key=(now + 1, -1))),
            ((end, -1, None) for end in sorted({a.end for a in self.planned if a.end > now})),
        )
        t = now
        pending: tuple[int, int, Allocation | None] | None = next(releases, None)
        while True:
            while pending is not None and pending[0] <= t:
                if pending[2] is not None:
                    base = self._release(base, pending[2])
                pending = next(releases, None)
            found = self._fit_limited(job, t, base)
            if found is not None:
                return t, found
            if pending is None:
                return None
            t = pending[0]
            if horizon is not None and t > horizon:
                return None

    def _fit_limited(self, job: Job, t: int, base: Any) -> Any | None:
        end = t + job.wall
        if self.limits.queues and self.limits.exceeded(job.queue, job.owner, self.request_cores(job), t, end):
            return None
        return self._fit(job, t, end, base)

    def blocking(self, t: int, end: int):
        """Planned allocations that overlap ``[t, end)`` (zero-length windows: the instant t)."""
        end = max(end, t + 1)
        for alloc in self.planned.irange_key(max_key=(end - 1, float("inf"))):
            if alloc.end > t and alloc.end > alloc.start:
                yield alloc

    def queue_limit(self, job: Job, t: int) -> str | None:
        """The queue limit that keeps ``job`` from starting at ``t`` on any resources, or None."""
        return self.limits.exceeded(job.queue, job.owner, self.request_cores(job), t, t + job.wall)

    # -- changes -----------------------------------------------------------------------------
    def _number(self, alloc: Allocation) -> None:
        self._seq += 1
        alloc.seq = self._seq
        self.version += 1

    def start(self, alloc: Allocation) -> None:
        """Mark ``alloc`` running from now: its resources are used until ``alloc.end``."""
        self._number(alloc)
        self._take(alloc.resources)
        self.running.add(alloc)
        self.limits.add(alloc)

    def finish(self, alloc: Allocation) -> None:
        """A running allocation ends: its resources are free again."""
        self.running.remove(alloc)
        self._give(alloc.resources)
        self.limits.discard(alloc)
        self.version += 1

    def plan(self, alloc: Allocation) -> None:
        """Hold ``alloc``'s resources for ``[start, end)`` (a reservation)."""
        self._number(alloc)
        self.planned.add(alloc)
        self.limits.add(alloc)

    def unplan(self, alloc: Allocation) -> None:
        """Drop a reservation."""
        self.planned.remove(alloc)
        self.limits.discard(alloc)
        self.version += 1


class NodeState(SystemState):
    """Knows which nodes and cores each job holds.

    A request is ``nodes × cores_per_node``; it takes the lowest-numbered eligible nodes and
    the lowest free cores on each. With ``sharing=False`` every job takes whole nodes. Per-node
    queue limits (``avail_classes``) hold at every instant of the job's run.
    """

    def __init__(self, machine: Machine, queues: dict[str, Queue], sharing: bool = True) -> None:
        super().__init__(machine, queues)
        self.sharing = sharing
        self.free = NodeCores(machine.all_nodes)
        # allocations on nodes where a queue may use only part of the cores: (queue, node) → allocs
        self.on_restricted: dict[tuple[str, int], set[Allocation]] = {}

    def exceeds(self, job: Job) -> str | None:
        m = self.machine
        if job.nodes > len(m.nodes):
            return f"ExceedsSystem: asks {job.nodes} nodes, the system has {len(m.nodes)}"
        if job.cores_per_node > m.max_cores:
            return f"ExceedsSystem: asks {job.cores_per_node} cores per node, the largest node has {m.max_cores}"
        usable = m.eligible(job.queue, job.cores_per_node).bit_count()
        if usable < job.nodes:
            where = f"queue {job.queue!r}" if job.queue else "a job without queue"
            return (
                f"ExceedsSystem: asks {job.nodes} nodes with {job.cores_per_node} cores, "
                f"{where} may use {usable} such nodes"
            )
        q = self.queues.get(job.queue)
        if q is not None and q.maxjobs == 0:
            return f"ExceedsSystem: queue {job.queue} admits no jobs (maxjobs=0)"
        if q is not None and q.maxjobsperuser == 0:
            return f"ExceedsSystem: queue {job.queue} admits no jobs (maxjobsperuser=0)"
        need = self.request_cores(job)
        if q is not None and q.starters is not None and need > q.starters:
            return f"ExceedsSystem: asks {need} cores, queue {job.queue} may use {q.starters}"
        return None

    def request_cores(self, job: Job) -> int:
        return job.nodes * job.cores_per_node

    def size(self, job: Job) -> int:
        return job.nodes

    def _per_node(self, job: Job) -> int:
        return job.cores_per_node

    def size_bound(self) -> int:
        """Nodes with at least one free core.  O(1) big-int popcount."""
        return self.free.node_count()

    def _base(self) -> NodeCores:
        return self.free.copy()

    def _release(self, base: NodeCores, alloc: Allocation) -> NodeCores:
        base.update(alloc.resources, self.machine.shape)
        return base

    def _fit(self, job: Job, t: int, end: int, base: NodeCores) -> NodeCores | None:
        if base.full.bit_count() + len(base.part) < job.nodes:
            return None
        avail = base
        blockers = list(self.blocking(t, end))
        if blockers:
            avail = base.copy()
            for alloc in blockers:
                avail.subtract(alloc.resources, self.machine.shape)
        return self._choose(job, t, end, avail)

    def _without(self, window: NodeCores, alloc: Allocation) -> NodeCores:
        window.subtract(alloc.resources, self.machine.shape)
        return window

    def _choose(self, job: Job, t: int, end: int, avail: NodeCores) -> NodeCores | None:
        """The lowest eligible nodes with enough cores in ``avail``, lowest cores on each."""
        k, c = job.nodes, job.cores_per_node
        if avail.full.bit_count() + len(avail.part) < k:
            return None
        eligible = self.machine.eligible(job.queue, c)
        if not self.sharing:
            chosen = lowest(avail.full & eligible, k)
            return None if chosen is None else NodeCores(chosen)
        restricted = self.machine.restricted(job.queue)
        partial = [
            n for n, mask in avail.part.items()
            if mask.bit_count() >= c and (eligible >> n) & 1
            and (n not in restricted or self._class_room(job.queue, n, t, end) >= c)
        ]
        partial.sort()
        whole = lowest(avail.full & eligible, k)
        if whole is None:
            whole = avail.full & eligible
        chosen_nodes = list(islice(merge(partial, bits_of(whole)), k))
        if len(chosen_nodes) < k:
            return None
        shape = self.machine.shape
        out = NodeCores()
        for n in chosen_nodes:
            out.add_node(n, lowest(avail.mask(n, shape), c), shape)
        return out

    def _class_room(self, queue: str, node: int, t: int, end: int) -> int:
        """Cores ``queue`` may still use on a restricted ``node`` at every instant of ``[t, end)``."""
        limit = self.machine.restricted(queue)[node]
        allocs = self.on_restricted.get((queue, node), ())
        shape = self.machine.shape
        return limit - peak(allocs, t, max(end, t + 1), lambda a: a.resources.mask(node, shape).bit_count())

    def _take(self, resources: NodeCores) -> None:
        self.free.subtract(resources, self.machine.shape)

    def _give(self, resources: NodeCores) -> None:
        self.free.update(resources, self.machine.shape)

    def cores_of(self, resources: NodeCores) -> int:
        return resources.core_count(self.machine.shape)

    def _track(self, alloc: Allocation, add: bool) -> None:
        restricted = self.machine.restricted(alloc.queue)
        if not restricted or not self.sharing:
            return
        for n in bits_of(alloc.resources.node_mask()):
            if n in restricted:
                group = self.on_restricted.setdefault((alloc.queue, n), set())
                group.add(alloc) if add else group.discard(alloc)

    def start(self, alloc: Allocation) -> None:
        super().start(alloc)
        self._track(alloc, True)

    def finish(self, alloc: Allocation) -> None:
        super().finish(alloc)
        self._track(alloc, False)

    def plan(self, alloc: Allocation) -> None:
        super().plan(alloc)
        self._track(alloc, True)

    def unplan(self, alloc: Allocation) -> None:
        super().unplan(alloc)
        self._track(alloc, False)

    def used_now(self, resources: NodeCores) -> NodeCores:
        """The part of ``resources`` that is not free now (for overlapping running jobs)."""
        return resources.difference(self.free, self.machine.shape)


class AttributeState(SystemState):
    """Counts consumable cores only: a job fits when enough cores are free at every instant."""

    def __init__(self, machine: Machine, queues: dict[str, Queue]) -> None:
        super().__init__(machine, queues)
        self.capacity = machine.total_cores
        self.free = self.capacity

    def exceeds(self, job: Job) -> str | None:
        if job.total_cores > self.capacity:
            return f"ExceedsSystem: asks {job.total_cores} cores, the system has {self.capacity}"
        q = self.queues.get(job.queue)
        if q is not None and (q.maxjobs == 0 or q.maxjobsperuser == 0):
            return f"ExceedsSystem: queue {job.queue} admits no jobs"
        if q is not None and q.starters is not None and job.total_cores > q.starters:
            return f"ExceedsSystem: asks {job.total_cores} cores, queue {job.queue} may use {q.starters}"
        return None

    def _base(self) -> int:
        return self.free

    def _release(self, base: int, alloc: Allocation) -> int:
        return base + alloc.cores

    def _without(self, window: int, alloc: Allocation) -> int:
        raise NotImplementedError  # counts need the exact check of _fit, not a subtraction

    def find(self, job: Job) -> int | None:
        return self._fit_limited(job, self.now, self.free)

    def _choose(self, job: Job, t: int, end: int, window: int) -> int | None:
        return self._fit(job, t, end, window)

    def _fit(self, job: Job, t: int, end: int, base: int) -> int | None:
        need = job.total_cores
        if base < need:
            return None
        blockers = list(self.blocking(t, end))
        if blockers:
            # free at instant x >= t: base, minus planned active at x, plus running ended by x
            ends = [a for a in self.running if t < a.end < end]
            if peak(blockers, t, max(end, t + 1), lambda a: a.cores) > base - need:
                # exact check at every instant where a planned allocation starts
                points = sorted({t} | {a.start for a in blockers if a.start > t})
                for x in points:
                    free = base + sum(a.cores for a in ends if a.end <= x)
                    free -= sum(a.cores for a in blockers if a.start <= x < a.end)
                    if free < need:
                        return None
        return need

    def _take(self, resources: int) -> None:
        self.free -= resources

    def _give(self, resources: int) -> None:
        self.free += resources

    def cores_of(self, resources: int) -> int:
        return resources

    def request_cores(self, job: Job) -> int:
        return job.total_cores

    def size(self, job: Job) -> int:
        return job.total_cores

    def size_bound(self) -> int:
        return self.free
