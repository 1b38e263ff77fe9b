"""NodeState: the resource manager that knows which nodes and cores each job holds (node/core
sets as nested integer ranges, see ``ranges``), with its search memo (``Reach``) and the log of
resources given back (``Freed``)."""


from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator
from heapq import merge
from itertools import islice
from math import isqrt
from operator import attrgetter, or_

from sortedcontainers import SortedKeyList

from .job import Job
from .node import Machine
from .availability import FOREVER, Changes, UnionProfile
from .queue import Queue, peak
from .ranges import NodeCores, bits_of, first_run, lightest, lowest

from .state import NEVER, Allocation, SystemState


class Reach:
    """Earliest starts found since the state last gave anything back, per request shape.

    While resources are only taken (a pass starts jobs and makes reservations), a request
    needing at least as many nodes (or cores) for at least as long, of the same shape, fits
    no earlier than one found before: its search may begin there. ``NodeState`` forgets
    everything when resources come back (an end, a dropped reservation, the clock moving).
    Kept per shape as a small list of (size, wall, start); None as start: fits never.

    >>> r = Reach()
    >>> r.add(("q",), 4, 100, 500); r.add(("q",), 8, 50, None)
    >>> r.start(("q",), 4, 100), r.start(("q",), 6, 200), r.start(("q",), 2, 100), r.start(("q",), 9, 60)
    (500, 500, 0, None)
    """

    LIMIT = 32  # entries per shape: the oldest go first

    def __init__(self) -> None:
        self.found: dict[tuple, list[tuple[int, int, int | None]]] = {}

    def start(self, shape: tuple, size: int, wall: int) -> int | None:
        """Where a search for this request may begin (0: anywhere), None: it fits never.  O(entries)."""
        best = 0
        for s, w, t in self.found.get(shape, ()):
            if s <= size and w <= wall:
                if t is None:
                    return None
                best = max(best, t)
        return best

    def add(self, shape: tuple, size: int, wall: int, t: int | None) -> None:
        """Record a search's answer, dropping entries it makes redundant.  O(entries)."""
        never = t is None
        kept = [(s, w, u) for s, w, u in self.found.get(shape, ())
                if not (s >= size and w >= wall and (never or (u is not None and u <= t)))]
        kept.append((size, wall, t))
        self.found[shape] = kept[-self.LIMIT:]

    def clear(self) -> None:
        if self.found:
            self.found = {}


class Freed:
    """Where a state gave resources back (an early end, a dropped or moved reservation), in
    order: the only way a slot can open. A reservation that looked for an earlier slot and
    found none can find one later only in a window that overlaps an interval logged since, so
    compression need not look past the latest end of those. At least the newest ``KEPT`` are
    kept; a look from before them looks everywhere.

    Where the nodes given back are known with ``gap``, the time by which reservations hold
    each of them again, a window that gains one of them must also end by then (see
    ``NodeState._given_back``): a job longer than the gap cannot use it.

    >>> f = Freed(); f.add(10, 50); mark = f.mark; f.add(20, 60); f.add(500, 900)
    >>> f.bound(mark, 300, 15), f.bound(f.mark, 300, 15), f.bound(-1, 300, 15)
    (60, None, inf)
    >>> f = Freed(); f.add(10, 50, 0b11, 70); mark = f.mark; f.add(10, 40, 0b100, 300)
    >>> f.bound(0, 300, 15, 30), f.bound(0, 300, 15, 30, own=0b1), f.bound(0, 300, 15, 80), f.bound(mark, 300, 15, 300)
    (41, 50, 40, None)
    """

    KEPT = 4096

    def __init__(self) -> None:
        self.log: list[tuple[int, int, int, float, tuple | None]] = []  # (start, end, nodes, gap, by)
        self.base = 0  # intervals dropped from the front of ``log``

    @property
    def mark(self) -> int:
        """The position after the newest interval: a look stamps itself with it."""
        return self.base + len(self.log)

    def add(self, start: int, end: int, nodes: int = 0, gap: float = NEVER,
            by: tuple[str, str, str | None] | None = None) -> None:
        """Log ``[start, end)`` as given back, on the nodes of mask ``nodes``, which
        reservations hold again by ``gap`` (NEVER: not known), by a job of ``(user, queue,
        array)`` (None: not known).  O(1) amortised."""
        if end > start:
            log = self.log
            log.append((start, end, nodes, gap, by))
            if len(log) > 2 * self.KEPT:
                del log[:self.KEPT]
                self.base += self.KEPT

    def bound(self, mark: int, reach: int, now: int, wall: int = 1, own: int = 0,
              limited: tuple[str, str | None, str | None] | None = None) -> float | None:
        """For a look stamped ``mark`` whose windows lie before ``reach`` (of ``wall``, by a
        job whose own reservation holds the nodes of mask ``own``): a time by which an earlier
        slot must start. The latest, over the intervals logged since that begin before
        ``reach``, of the interval's end, or where its nodes are held again by another's
        reservation less ``wall``; None if there is none after ``now`` (no earlier slot can have
        opened), NEVER if the look is unknown or older than the log. Under limits, ``limited``
        is the job's ``(user, limited queue or None, array)``: an interval given back by a job
        of the same user, limited queue or array also gave room under a cap, which the job
        may use on any nodes, so its nodes' gap does not bound it.  O(intervals since ``mark``)."""
        k = mark - self.base
        if mark < 0 or k < 0:
            return NEVER
        below = now
        for a, b, nodes, gap, by in self.log[k:]:
            if a < reach:
                if gap < NEVER and not nodes & own and gap - wall + 1 < b and (
                        limited is None or not _under_same_limit(by, limited)):
                    b = gap - wall + 1
                if b > below:
                    below = b
        return below if below > now else None


def _under_same_limit(by: tuple[str, str, str | None] | None, limited: tuple[str, str | None, str | None]) -> bool:
    """Could room given back by a job of ``by`` (user, queue, array; None: unknown) loosen a
    limit of a job of ``limited`` (user, its queue if that has limits, array)?

    >>> _under_same_limit(("u", "q", None), ("u", None, None)), _under_same_limit(("v", "q", None), ("u", None, None))
    (True, False)
    >>> _under_same_limit(("v", "q", None), ("u", "q", None)), _under_same_limit(None, ("u", None, None))
    (True, True)
    """
    if by is None:
        return True
    return (by[0] == limited[0] and bool(by[0])) or (limited[1] is not None and by[1] == limited[1]) or (
        limited[2] is not None and by[2] == limited[2])


class NodeAlgebra:
    """Node/core sets of one machine in a profile. Reserved sets of one instant never
    overlap, so adding is a union and subtracting undoes it exactly."""

    def __init__(self, shape: list[int]) -> None:
        self.shape = shape
        self._full, self._inverse = 0, -1  # the last whole-node mask subtracted, and its complement

    def copy(self, a: NodeCores) -> NodeCores:
        return a.copy()

    def add(self, a: NodeCores, b: NodeCores) -> NodeCores:
        a.update(b, self.shape)
        return a

    def subtract(self, a: NodeCores, b: NodeCores) -> NodeCores:
        """``a - b``; whole nodes only: one big-int AND with ``b``'s complement, which is
        computed once for all the segments a reservation spans."""
        if a.part or b.part:
            a.subtract(b, self.shape)
            return a
        if b.full is not self._full:
            self._full, self._inverse = b.full, ~b.full
        a.full &= self._inverse
        return a

    def union(self, a: NodeCores, b: NodeCores) -> NodeCores:
        return a.union(b, self.shape)


class NodeState(SystemState):
    """Knows which nodes and cores each job holds.

    A request is ``nodes × cores_per_node``; it takes eligible nodes in the order
    ``allocation`` gives (see ALLOCATIONS; by default the lowest-numbered, the lightest
    ``weight`` first) and the lowest free cores on each. With ``sharing=False`` every job
    takes whole nodes. Per-node queue limits (``avail_classes``) hold at every instant of the
    job's run.
    """

    ALLOCATIONS = ("lowest", "bestfit", "contiguous", "latest_released")

    def __init__(self, machine: Machine, queues: dict[str, Queue], sharing: bool = True,
                 allocation: str = "lowest", memory: bool = False) -> None:
        self.sharing = sharing
        self.allocation = allocation
        super().__init__(machine, queues)
        self.reach = Reach()  # earliest starts found while resources were only taken
        self.free = NodeCores(machine.all_nodes)
        self.algebra = NodeAlgebra(machine.shape)
        self.reserved = UnionProfile(0, NodeCores(), self.algebra)  # resources planned allocations hold
        # how many held spans of the reserved profile begin or end at each time: a breakpoint
        # none does any more is dropped (``_unhold``)
        self.edges: dict[int, int] = {}
        self.running: SortedKeyList = SortedKeyList(key=lambda a: (a.end, a.seq))
        # (end, seq) of every sqrt(running)-th running allocation and what is free once it ended
        self.checkpoints: tuple[list[tuple[int, int]], list[NodeCores]] = ([], [])
        self.overlapped = False  # two running allocations share a core: no checkpoints
        self.planned: SortedKeyList = SortedKeyList(key=lambda a: (a.start, a.seq))
        self.whole_reserved = True  # no reservation so far holds part of a node: windows unite bits
        self.ghosts: dict[Allocation, Allocation] = {}  # running allocation → its reservation, still reserved
        self.freed = Freed()  # where resources came back: bounds compression's looks (``earlier``)
        # free units over time (whole nodes, or cores with sharing): a count that any fit
        # needs, so searches can skip what cannot fit by count (see ``_count_fit``)
        # counted on the nodes that take jobs only: a job running on a drained node holds no
        # unit any other job could have had
        self.usable = machine.usable_nodes
        self.unusable = self.usable != machine.all_nodes
        self.units = Changes(0, machine.total_cores if sharing else self.usable.bit_count())
        self.counted = True  # False once allocations may overlap: the count would be too low
        # the same count on the nodes one kind of request may use (queues on their own nodes,
        # GPU nodes): mask → Changes, made when a search first needs it (see ``_pool``)
        self.pools: dict[int, Changes] = {}
        self._masks: list[tuple[int, int]] = []  # each pool's nodes and their complement
        self.held: dict[Allocation, list[int]] = {}  # units of each counted allocation (``_units_of``)
        # allocations on nodes where a queue may use only part of the cores: (queue, node) → allocs
        self.on_restricted: dict[tuple[str, int], set[Allocation]] = {}
        # where jobs share nodes, what they hold on a node besides cores: GPUs, and memory
        # where the site counts it (``memory``, Slurm's CR_Core_Memory); see ``Consumable``
        self.memory = memory
        self.extras = [c for c in (Consumable.gpus(machine), Consumable.memory(machine) if memory else None)
                       if c is not None] if sharing else []

    def exceeds(self, job: Job) -> str | None:
        m = self.machine
        if job.nodes > len(m.nodes):
            return f"ExceedsSystem: asks {job.nodes} nodes, the system has {len(m.nodes)}"
        if job.cores_per_node > m.max_cores:
            return f"ExceedsSystem: asks {job.cores_per_node} cores per node, the largest node has {m.max_cores}"
        usable = m.for_job(job).bit_count()
        if usable < job.nodes:
            where = f"queue {job.queue!r}" if job.queue else "a job without queue"
            gpus = f" and {job.gpus_per_node}{' ' + job.gpu_type if job.gpu_type else ''} GPUs" if job.gpus_per_node else ""
            gpus += f" and {job.memory} MB" if job.memory else ""
            gpus += f" and features {job.data.get('constraint', '').strip()}" if job.constraint else ""
            return (
                f"ExceedsSystem: asks {job.nodes} nodes with {job.cores_per_node} cores{gpus}, "
                f"{where} may use {usable} such nodes"
            )
        if self.allocation == "contiguous" and first_run(m.for_job(job), job.nodes) is None:
            return (f"ExceedsSystem: asks {job.nodes} consecutive nodes (node_allocation=contiguous), "
                    f"no run of that many nodes {job.queue!r} may use")
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

    def _per_node(self, job: Job) -> tuple:
        if job.switches is not None and self.machine.has_switches:  # comparable only with the same ask
            return (job.cores_per_node, job.gpus_per_node, job.gpu_type, job.memory, job.constraint, job.allowed,
                    job.switches, job.switches_until, *(c.asked(job) for c in self.extras))
        return job.cores_per_node, job.gpus_per_node, job.gpu_type, job.memory, job.constraint, job.allowed, *(
            c.asked(job) for c in self.extras)

    def size_bound(self) -> int:
        """Nodes with at least one free core.  O(1) big-int popcount."""
        return self.free.node_count()

    def earliest(self, job: Job, horizon: int | None = None,
                 allowed: Callable[[int], int | None] | None = None) -> tuple[int, NodeCores] | None:
        """Sweep now and the later release times (running and planned ends), ascending.

        Free throughout ``[t, t+wall)`` = free now, plus what running jobs have released by
        ``t`` (they never take anything back), less the union of the reservations in the
        window, from a sliding window over the reserved-resources profile. O(releases)
        set operations in all. A larger or longer request of the same shape searched before
        (see ``Reach``) lets the sweep begin where that one fitted.
        """
        if self.limits.active or allowed is not None:  # limits and windows are the job's own
            return self._earliest_from(job, horizon, allowed, self.now)
        shape = self.shape(job)
        begin = self.reach.start(shape, job.nodes, job.wall)
        if begin is not None:
            begin = self._count_fit(job, begin)
        found = None if begin is None else self._earliest_from(job, horizon, allowed, max(begin, self.now))
        self.reach.add(shape, job.nodes, job.wall, None if found is None else found[0])
        return found

    def earlier(self, job: Job, alloc: Allocation, horizon: int | None = None,
                allowed: Callable[[int], int | None] | None = None) -> tuple[int, NodeCores] | None:
        """The sweep of ``earliest``, stopped at the reservation's start, with the reservation's
        own resources read as free where it holds them (see ``_earliest_from``), so nothing is
        unplanned and planned again unless it moves: O(releases before ``alloc.start``) set
        operations. After a look that found nothing, the next stops where the last interval
        given back since then ends (see ``Freed``; KTH with node sets, conservative, real run
        times: 7 % faster). Start windows, per-node queue shares and GPUs or memory on shared
        nodes (which count the planned allocations themselves) take the general path."""
        if allowed is not None or (self.sharing and self.machine.restricted(job.queue)) or any(
                c.asked(job) for c in self.extras):
            return super().earlier(job, alloc, horizon, allowed)
        limited = self.limits.active
        mark, below = self.freed.mark, NEVER
        if not self.machine.has_switches:  # (a switch ask lapses with time: a slot opens by itself)
            wall = max(job.wall, 1)
            below = self.freed.bound(alloc.looked, alloc.start + wall, self.now, wall, alloc.resources.node_mask(),
                                     (job.owner, job.queue if job.queue in self.limits.spans else None, job.array)
                                     if limited else None)
        begin = None if below is None else self._count_fit(job, self.now, alloc.start)
        if begin is None:
            found = None
        elif limited:
            # queue limits, user caps and array throttles count the job's own span: not while
            # it looks. A cap loosens only where one of its user's jobs gave back room, which is
            # logged in ``freed`` as any room is, so the same bound holds (see ``Freed.bound``).
            # (Before, every look under limits unplanned and searched afresh: with caps learned
            # from a history and Slurm's 500 reservations, JUROPA-size predict --history: 639 s.)
            self.limits.discard(alloc)
            try:
                found = self._earliest_from(job, horizon, None, begin, alloc, below)
            finally:
                self.limits.add(alloc)
        else:
            found = self._earliest_from(job, horizon, None, begin, alloc, below)
        if found is None:  # nothing earlier fits: the next look need only see what comes back
            alloc.looked = mark
        return found

    def _count_fit(self, job: Job, begin: int, before: int = FOREVER) -> int | None:
        """The earliest time from ``begin`` (and before ``before``) where the free units
        (whole nodes, or cores with sharing) suffice for ``job`` throughout its wall, or None:
        where the sets fit, the counts do, so a search may begin there. ``begin`` itself
        when the counts cannot be trusted (overlapping allocations).  O(segments scanned).
        (The machine's count, not the pool's: see ``_pool``.)"""
        if not self.counted:
            return begin
        return self.units.first_fit(self._need(job), max(job.wall, 1), before, begin)

    POOLS = 8  # most masks with a count of their own; requests on further ones use the machine's

    def _pool(self, eligible: int) -> Changes | None:
        """Free units over time on the nodes of ``eligible`` when that is not the whole
        machine, else None (also when counts cannot be trusted: overlapping allocations).
        Made from the running and planned allocations when first asked for, then kept by
        every change like ``units``. Where queues own disjoint nodes, the machine's count says
        little about one queue's: on the 160,000-node benchmark it rejected none of the 66,000
        candidate times the sets rejected, this count 96 %. (The machine's own count is not
        asked again after ``_count_fit``: on KTH, 1.1 million such checks cost 5 s and saved
        nothing. Searches begin where the machine's count fits, not this one: later begins
        made ``_free_at`` keep more checkpoints, which every start and end then updates, and
        EASY on that benchmark took 1.3 s longer.)  O(running + planned) set operations once,
        O(1) then."""
        if not self.counted:
            return None
        pool = self.pools.get(eligible)
        if pool is None:
            if len(self.pools) >= self.POOLS or eligible == self.machine.all_nodes:
                return None
            i = len(self._masks)  # its units come after the machine's in ``_units_of``
            self._masks.append((eligible, self.machine.all_nodes & ~eligible))
            now = self.now
            running = [(alloc, self._units_of(alloc)[i + 1]) for alloc in self.running]
            pool = Changes(now, self._units_in(self.free, i) + sum(u for _, u in running))
            for alloc, units in running:  # each holds its units until it ends
                pool.subtract(now, alloc.end, units)
            for alloc in self.planned:
                pool.subtract(alloc.start, alloc.end, self._units_of(alloc)[i + 1])
            self.pools[eligible] = pool
        return pool

    def _units_in(self, resources: NodeCores, i: int, total: int | None = None) -> int:
        """Units of ``resources`` (``total`` in all, counted here if not given) on the nodes of
        the ``i``-th pool: an allocation mostly lies inside a pool's nodes or outside, told by
        one big-int AND each.  O(1) big-int operations (and the cores of the nodes, with
        sharing)."""
        full, part = resources.full, resources.part
        mask, outside = self._masks[i]
        if not (full & outside) and not any((outside >> n) & 1 for n in part):
            return self._units(resources) if total is None else total
        if not (full & mask) and not any((mask >> n) & 1 for n in part):
            return 0
        return self._units(NodeCores(full & mask, {n: m for n, m in part.items() if (mask >> n) & 1}))

    def _units_of(self, alloc: Allocation) -> list[int]:
        """``alloc``'s units in all (first) and in each pool, kept while it is counted: its
        resources are counted when it is inserted or planned and again when it goes."""
        units = self.held.get(alloc)
        if units is None:
            units = self.held[alloc] = [self._units(alloc.resources)]
        while len(units) <= len(self._masks):
            units.append(self._units_in(alloc.resources, len(units) - 1, units[0]))
        return units

    def _count(self, alloc: Allocation, start: int, end: int, sign: int) -> None:
        """Take (``sign`` -1: inserted, planned) or give back (1: it goes) ``alloc``'s units in
        ``[start, end)`` in every count."""
        units = self._units_of(alloc)
        if sign > 0:
            del self.held[alloc]
        self.units.add(start, end, sign * units[0])
        if self.pools and not self.counted:
            self.pools, self._masks = {}, []
        for pool, n in zip(self.pools.values(), islice(units, 1, None)):
            if n:
                pool.add(start, end, sign * n)

    def _need(self, job: Job) -> int:
        """Free units ``job`` needs at least: a lower bound (a whole-node ask takes more)."""
        return job.nodes * job.cores_per_node if self.sharing else job.nodes

    def _units(self, resources: NodeCores) -> int:
        """Whole nodes, or cores with sharing (on nodes of one size, without a loop over them),
        on the nodes that take jobs."""
        if self.unusable:
            usable = self.usable
            resources = NodeCores(resources.full & usable, {n: m for n, m in resources.part.items() if (usable >> n) & 1})
        if not self.sharing:
            return resources.node_count()
        return resources.core_count(self.machine.shape, self.machine.cores_each)

    def _earliest_from(self, job: Job, horizon: int | None, allowed: Callable[[int], int | None] | None,
                       begin: int, own: Allocation | None = None, below: float = NEVER) -> tuple[int, NodeCores] | None:
        """``earliest``, trying ``begin`` and the release times after it, before ``below``. With
        ``own`` (the job's reservation, for ``earlier``) only times before its start, and what
        is reserved from its start on is read less its own resources: its segments there are
        its own plus the others', and a difference distributes over the union."""
        wall, k = job.wall, job.nodes
        shape = self.machine.shape
        eligible = self.machine.for_job(job)
        pool, need, span = self._pool(eligible), self._need(job), max(wall, 1)
        base = self._free_at(begin)
        whole = False  # the windows give bits (every reservation holds whole nodes) or sets
        if own is None and len(self.machine.nodes) >= self.BUCKETED:
            over = after_over = self.reserved.union_over
        elif self.whole_reserved:
            whole, bits = True, attrgetter("full")
            over = self.reserved.window(or_, bits).over
            after_over = self.reserved.window(or_, bits).over if own is not None else over
        else:
            over = self.reserved.window(self.algebra.union).over
            after_over = self.reserved.window(self.algebra.union).over if own is not None else over
        stop = own.start if own is not None else FOREVER
        # candidates: running jobs' ends, and the reserved profile's breakpoints (the ends of
        # planned allocations, and their starts, which can never be the first fit: harmless),
        # merged by hand (two cursors: no heap, no tuple per candidate)
        until = job.switches_until if self.machine.has_switches else None
        lapse = until if until is not None and until > begin else NEVER  # the switch ask lapses
        times = self.reserved.times
        releases = self.running.irange_key(min_key=(begin + 1, -1))
        release = next(releases, None)
        release_at = release.end if release is not None else NEVER
        # the times where the counts fit (``Changes.fits``): the sets fit nowhere else
        fits = pool.fits(need, span, stop, begin) if pool is not None else None
        run = next(fits, None) if fits is not None else None
        # the last time to try: before the reservation's own start, by the horizon, and (in a
        # reservation's own state) ending by its end
        last = min(stop - 1, below - 1, NEVER if horizon is None else horizon,
                   NEVER if self.deadline is None else self.deadline - wall)
        limited = self.limits.active
        t, i = begin, 0
        while True:
            if t > last:
                return None
            while release_at <= t:  # a running job's resources come back
                if base.part or release.resources.part:
                    base.update(release.resources, shape)
                else:
                    base.full |= release.resources.full
                release = next(releases, None)
                release_at = release.end if release is not None else NEVER
            if allowed is not None:
                later = allowed(t)
                if later is None or (horizon is not None and later > horizon) or (
                        self.deadline is not None and later + wall > self.deadline):
                    return None
                if later > t:  # take in what is released by then, and try there
                    t = later
                    continue
            if fits is not None:  # the next time the counts fit
                while run is not None and run[1] < t:
                    run = next(fits, None)
                if run is None:
                    return None
                if run[0] > t:
                    t = run[0]
                    continue
            # quick count first: nodes the queue may use with a free core (whole nodes suffice
            # to count when nothing is partly used)
            enough = (base.full & eligible).bit_count() >= k if not base.part else base.node_count() >= k
            if enough and not (limited and self._limited(job, t)):
                blocked = over(t, min(t + wall, stop))
                if whole:
                    if t + wall > stop:  # the window reaches into the reservation's own time
                        blocked |= after_over(stop, t + wall) & ~own.resources.full
                    if not base.part:  # too few eligible nodes left: no need to choose
                        free = base.full & ~blocked
                        found = self._choose(job, t, t + wall, NodeCores(free)) \
                            if (free & eligible).bit_count() >= k else None
                    else:
                        found = self._choose(job, t, t + wall,
                                             base.difference(NodeCores(blocked), shape) if blocked else base)
                else:
                    if t + wall > stop:
                        others = after_over(stop, t + wall).difference(own.resources, shape)
                        blocked = blocked.union(others, shape) if blocked else others
                    found = self._choose(job, t, t + wall, base.difference(blocked, shape) if blocked else base)
                if found is not None:
                    return t, found
            i = bisect_right(times, t, i)
            t = min(release_at, times[i] if i < len(times) else NEVER, lapse if lapse > t else NEVER)
            if t == NEVER:
                return None

    # nodes from which a search unites reserved sets per time bucket (``UnionProfile.union_over``)
    # instead of sliding a window over the segments: a union costs a few microseconds there,
    # and a window from scratch hundreds (160,000 nodes, conservative: 35 s of searches fell to
    # 15 s), while on small machines the slide's amortised O(1) per tried time wins (KTH,
    # 100 nodes, conservative with compression: 32 s against 66 s). Compression's searches
    # (``earlier``) slide: on 3,290 nodes with every job ending early, buckets took 557 s
    # against 209 s
    BUCKETED = 4096

    CHECKPOINT = 32  # fewest running allocations between two kept copies of what is free by then

    def _free_at(self, t: int) -> NodeCores:
        """A copy of what is free at ``t`` as far as running jobs go: free now and what they
        release by ``t``. Starts from the last checkpoint before ``t`` (a copy kept every
        sqrt(running) releases, at least CHECKPOINT, in end order; ``insert`` and ``finish``
        keep them exact), so a search that begins late does not repeat the unions.
        O(sqrt(running)) set operations once the checkpoints exist."""
        shape = self.machine.shape
        keys, sets = self.checkpoints
        i = bisect_right(keys, (t, FOREVER)) - 1
        base = (sets[i] if i >= 0 else self.free).copy()
        extend = i == len(keys) - 1 and not self.overlapped  # past the last checkpoint: keep new ones
        # every sqrt(running) releases: a start updates ~sqrt(running) checkpoints, a search
        # unites at most as many releases
        every = max(self.CHECKPOINT, isqrt(len(self.running)))
        since = 0
        for alloc in self.running.irange_key(min_key=keys[i] if i >= 0 else None, max_key=(t, FOREVER),
                                             inclusive=(False, True)):
            base.update(alloc.resources, shape)
            since += 1
            if extend and since >= every:
                keys.append((alloc.end, alloc.seq))
                sets.append(base.copy())
                since = 0
        return base

    def _checkpoints_before(self, alloc: Allocation) -> list[NodeCores]:
        """The checkpoints taken before running ``alloc`` ends (it is not among their releases)."""
        keys, sets = self.checkpoints
        return sets[:bisect_right(keys, (alloc.end, alloc.seq))]

    def is_insertable(self, job: Job) -> NodeCores | None:
        """Resources where ``job`` can start now and run its whole wall, or None.

        Running jobs only ever release, so what is free throughout ``[now, now+wall)`` is what
        is free now less the planned allocations that start before the window ends: a prefix
        of ``planned``. That set is computed once per prefix and state version and shared by
        every job of a pass: O(1) set operations per job instead of a profile scan.
        """
        now, end = self.now, self.now + job.wall
        window, nodes = self._window(end)
        if self.grid is not None and nodes >= job.nodes:  # clear of job holds a grid step longer
            later = list(self._plans_in(end, self.clear_until(end)))
            if later:
                window = window.copy()
                for alloc in later:
                    window.subtract(alloc.resources, self.machine.shape)
                nodes = window.node_count()
        if nodes < job.nodes:  # (the usual no: too few nodes with a free core at all)
            return None
        if self._limited(job, now):  # after the usual no, which is cheaper to find
            return None
        return self._choose(job, now, end, window)

    def _plans_in(self, lo: int, hi: int) -> Iterator[Allocation]:
        """Other jobs' reservations that begin in ``[lo, hi)``. O(log planned + found)."""
        for alloc in self.planned.irange_key((lo, -1), (hi, -1)):
            if alloc.job is not None and alloc.end > alloc.start:
                yield alloc

    def plans_between(self, resources: NodeCores, lo: int, hi: int) -> bool:
        shape = self.machine.shape
        return any(not resources.isdisjoint(alloc.resources, shape) for alloc in self._plans_in(lo, hi))

    def _window(self, end: int) -> tuple[NodeCores, int]:
        """What is free throughout ``[now, end)`` and its node count, cached per prefix of
        ``planned`` and state version.  O(log planned) when cached; else, past ``UNION_FROM``
        reservations in the window, free now less the reserved profile's union over it (the
        reservations that begin by the last one's start: O(buckets) unions), where 500 planned
        jobs made each miss subtract a hundred reservations one by one (half of all set
        operations on a 10,000-node site)."""
        now = self.now
        prefix = self.planned.bisect_key_left((max(end, now + 1), -1))
        key = (self.version, prefix)
        found = self._windows.get(key)
        if found is None:
            if len(self._windows) > 64:
                self._windows.clear()
            if self.counted and prefix > self.UNION_FROM:  # reservations do not overlap: the profile is their union
                window = self.free.difference(self.reserved.union_over(now, self.planned[prefix - 1].start + 1),
                                              self.machine.shape)
            else:
                window = self.free.copy()
                for alloc in self.planned.islice(0, prefix):
                    if alloc.end > now and alloc.end > alloc.start:  # zero-length ones hold nothing
                        window.subtract(alloc.resources, self.machine.shape)
            found = self._windows[key] = (window, window.node_count())
        return found

    def confined(self, resources: NodeCores, start: int, end: int) -> tuple[NodeState, list]:
        """A state with only ``resources``, usable only during ``[start, end)``: a reservation's
        own, for the jobs bound to it. Running jobs on those cores appear in it as shadows,
        returned as (running allocation, shadow) pairs so their ends can be passed on. A
        shadow holds the job's cores there, and its GPUs and memory on those nodes (it is its
        job's, though of no queue or user: it counts toward no limit)."""
        shape = self.machine.shape
        sub = NodeState(self.machine, self.queues, self.sharing, self.allocation, self.memory)
        sub.free = resources.copy()
        shadows = []
        for alloc in list(self.running):
            inside = resources.difference(resources.difference(alloc.resources, shape), shape)
            if inside:
                shadow = Allocation(alloc.start, alloc.end, inside, 0, "", "", alloc.job, f"shadow of {alloc}")
                sub.insert(shadow)
                shadows.append((alloc, shadow))
        sub._confine(resources, start, end)
        return sub, shadows

    def place_now(self, job: Job) -> NodeCores | None:
        """Where a running job without a node list runs: the lowest free cores now (where the
        batch system put it is not known; the allocation policy is for new starts)."""
        return self._choose(job, self.now, self.now, self.free, "lowest")

    def _choose(self, job: Job, t: int, end: int, avail: NodeCores, allocation: str | None = None) -> NodeCores | None:
        """Eligible nodes with enough cores in ``avail`` in the allocation policy's order
        (the lowest by default), the lowest cores on each."""
        k, c = job.nodes, job.cores_per_node
        if avail.full.bit_count() + len(avail.part) < k:
            return None
        eligible = self.machine.for_job(job, c)
        if job.switches is not None and self.machine.has_switches and t < job.switches_until:
            return self._choose_switches(job, t, end, avail, eligible)
        if (allocation or self.allocation) != "lowest":
            return self._choose_ordered(job, t, end, avail, eligible, allocation or self.allocation)
        tiers = self.machine.weight_tiers  # (nodes of several weights: the lightest first)
        if not self.sharing or (not avail.part and c == self.machine.max_cores):
            # whole nodes: without sharing, or none partly free and the job takes all cores of
            # each eligible node (they have at least ``c``): the lowest ``k`` free ones
            chosen = lightest(avail.full & eligible, k, tiers)
            return None if chosen is None else NodeCores(chosen)
        partial = sorted(self._partial(job, t, end, avail, eligible, extras=False))
        whole = lightest(avail.full & eligible, k, tiers)
        if whole is None:
            whole = avail.full & eligible
        if tiers:
            rank = self.machine.weight_rank
            candidates: Iterable[int] = sorted(partial + list(bits_of(whole)), key=lambda n: (rank[n], n))
        else:
            candidates = merge(partial, bits_of(whole))
        needs = self._needs(job)
        if needs:  # GPUs and memory: looked at on the partly free nodes in turn, until k fit
            part = avail.part
            candidates = (n for n in candidates if n not in part or self._extras_fit(needs, n, t, end))
        chosen_nodes = list(islice(candidates, k))
        if len(chosen_nodes) < k:
            return None
        return self._take_nodes(job, avail, chosen_nodes)

    def _partial(self, job: Job, t: int, end: int, avail: NodeCores, eligible: int,
                 extras: bool = True) -> list[int]:
        """Partly free nodes of ``avail`` where ``job`` fits (enough free cores, eligible, room
        in the queue's share of a restricted node, and, with ``extras``, the GPUs and memory it
        asks free), unsorted."""
        c = job.cores_per_node
        restricted = self.machine.restricted(job.queue)
        found = [n for n, mask in avail.part.items()
                 if mask.bit_count() >= c and (eligible >> n) & 1
                 and (n not in restricted or self._class_room(job.queue, n, t, end) >= c)]
        needs = self._needs(job) if extras else None
        return [n for n in found if self._extras_fit(needs, n, t, end)] if needs else found

    def _needs(self, job: Job) -> list[tuple[Consumable, int]]:
        """What ``job`` asks of each consumable besides cores on each of its nodes (those it asks)."""
        return [(extra, need) for extra in self.extras if (need := extra.asked(job))] if self.extras else []

    def _extras_fit(self, needs: list[tuple[Consumable, int]], node: int, t: int, end: int) -> bool:
        """Is what ``needs`` asks free on ``node`` throughout ``[t, end)``?"""
        shape = self.machine.shape
        return all(extra.fits(node, t, end, need, shape) for extra, need in needs)

    def _candidates(self, job: Job, t: int, end: int, avail: NodeCores, eligible: int) -> int:
        """Mask of the nodes ``job`` could take in ``avail``: whole free ones and partly free ones."""
        whole = avail.full & eligible
        if self.sharing:
            for n in self._partial(job, t, end, avail, eligible):
                whole |= 1 << n
        return whole

    def _choose_ordered(self, job: Job, t: int, end: int, avail: NodeCores, eligible: int,
                        allocation: str) -> NodeCores | None:
        """``node_allocation`` other than lowest: ``contiguous`` takes the first run of
        consecutive node numbers; ``bestfit`` the nodes whose free cores exceed the request
        least; ``latest_released`` the nodes whose last holder before ``t`` ends latest (nodes
        free now last), so what is free now stays free for backfilling. Ties: lowest number.
        O(candidate nodes) per call (contiguous: O(log k) big-int operations)."""
        k = job.nodes
        shape = self.machine.shape
        mask = self._candidates(job, t, end, avail, eligible)
        if mask.bit_count() < k:
            return None
        if allocation == "contiguous":
            first = first_run(mask, k)
            if first is None:
                return None
            chosen = list(range(first, first + k))
        elif allocation == "bestfit":
            part = avail.part
            chosen = sorted(bits_of(mask), key=lambda n: (part[n].bit_count() if n in part else shape[n].bit_count(),
                                                           n))[:k]  # the fewest free cores: the tightest
        else:  # latest_released
            released = self._released(t)
            chosen = sorted(bits_of(mask), key=lambda n: (-released.get(n, self.now), n))[:k]
        return self._take_nodes(job, avail, chosen)

    def _choose_switches(self, job: Job, t: int, end: int, avail: NodeCores, eligible: int) -> NodeCores | None:
        """Slurm's ``--switches=N``: nodes under at most N leaf switches. One switch: the one
        whose candidates fit the job most tightly (best fit, keeping big switches whole); more:
        the switches with the most candidates first, which needs the fewest. The lowest nodes
        of the chosen switches. O(switches) big-int operations."""
        k = job.nodes
        mask = self._candidates(job, t, end, avail, eligible)
        counts = [((mask & m).bit_count(), i) for i, m in enumerate(self.machine.switch_masks)]
        if job.switches == 1:
            fitting = [(n, i) for n, i in counts if n >= k]
            if not fitting:
                return None
            chosen_switches = [min(fitting)[1]]
        else:
            chosen_switches, have = [], 0
            for n, i in sorted(counts, key=lambda c: (-c[0], c[1])):
                if have >= k or n == 0:
                    break
                chosen_switches.append(i)
                have += n
            if have < k or len(chosen_switches) > job.switches:
                return None
        within = 0
        for i in chosen_switches:
            within |= mask & self.machine.switch_masks[i]
        return self._take_nodes(job, avail, list(islice(bits_of(within), k)))

    def _take_nodes(self, job: Job, avail: NodeCores, chosen: list[int]) -> NodeCores:
        """``chosen`` nodes, whole (no sharing) or the lowest free cores on each."""
        shape = self.machine.shape
        if not self.sharing:
            out = 0
            for n in chosen:
                out |= 1 << n
            return NodeCores(out)
        nodes = NodeCores()
        for n in chosen:
            nodes.add_node(n, lowest(avail.mask(n, shape), job.cores_per_node), shape)
        return nodes

    def _released(self, t: int) -> dict[int, int]:
        """Node -> the latest end in ``(now, t]`` of a running or planned allocation on it."""
        out: dict[int, int] = {}
        now = self.now
        ends = list(self.running.irange_key(min_key=(now + 1, -1), max_key=(t, float("inf"))))
        ends += [a for a in self.planned.irange_key(max_key=(t, float("inf")))
                 if now < a.end <= t and a.end > a.start]
        for a in ends:
            for n in bits_of(a.resources.node_mask()):
                if out.get(n, now) < a.end:
                    out[n] = a.end
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
        return resources.core_count(self.machine.shape, self.machine.cores_each)

    def _track(self, alloc: Allocation, add: bool) -> None:
        """File (``add``) or drop ``alloc`` where per-node room is counted: the queue's share
        of a restricted node, and the GPUs and memory of a shared node."""
        if not self.sharing:
            return
        restricted = self.machine.restricted(alloc.queue)
        if restricted:
            for n in bits_of(alloc.resources.node_mask()):
                if n in restricted:
                    group = self.on_restricted.setdefault((alloc.queue, n), set())
                    group.add(alloc) if add else group.discard(alloc)
        for extra in self.extras:
            extra.track(alloc, add)

    def insert(self, alloc: Allocation, planned: Allocation | None = None) -> None:
        if planned is not None:
            self._hand_over(planned, alloc)
        if not self.overlapped and self.used_now(alloc.resources):
            # running jobs share cores (as a snapshot may say): what is free by a time is no
            # longer a union of releases that one start could undo; no checkpoints from now on
            self.overlapped = True
            self.checkpoints = ([], [])
            self.counted = False
        super().insert(alloc)
        self._count(alloc, self.now, alloc.end, -1)
        self.running.add(alloc)
        self._track(alloc, True)
        for kept in self._checkpoints_before(alloc):  # its resources are not free there (later: released)
            kept.subtract(alloc.resources, self.machine.shape)

    def _hand_over(self, planned: Allocation, alloc: Allocation) -> None:
        """A top dog starts on its reservation ``planned`` as ``alloc``: the reservation is
        dropped, but its resources stay in the reserved profile until ``alloc`` ends (see
        ``finish``). They are not free before then anyway, and a job mostly ends at its wall,
        where nothing is left to subtract: this saves one set operation per segment the
        reservation spans. Nothing comes back, so the search memo stays.  O(log planned)."""
        self.limits.discard(planned)
        self.version += 1
        self.planned.remove(planned)
        self._track(planned, False)
        self._count(planned, max(planned.start, self.now), planned.end, 1)
        self.ghosts[alloc] = planned

    def finish(self, alloc: Allocation) -> None:
        planned = self.ghosts.pop(alloc, None)
        if planned is not None:  # the rest of the reservation it started on (see _hand_over)
            self._unhold(planned.start, planned.end, planned.resources)
        super().finish(alloc)
        self.reach.clear()
        self._given_back(self.now, alloc.end if planned is None else max(alloc.end, planned.end), alloc.resources,
                         alloc)
        self._count(alloc, self.now, alloc.end, 1)
        self.running.remove(alloc)
        self._track(alloc, False)
        for kept in self._checkpoints_before(alloc):  # its resources are free there now (later: already)
            kept.update(alloc.resources, self.machine.shape)

    def plan(self, alloc: Allocation) -> None:
        if alloc.resources.part:
            self.whole_reserved = False
        if alloc.job is None and self.counted and alloc.end > alloc.start:
            # an advance reservation (or a confined state's edge) may overlap running jobs
            # or other reservations, as the input says: then the counts would be too low
            shape = self.machine.shape
            held = self.reserved.window(self.algebra.union).over(alloc.start, alloc.end)
            self.counted = not (self.used_now(alloc.resources) or not held.isdisjoint(alloc.resources, shape))
        super().plan(alloc)
        self.planned.add(alloc)
        self._track(alloc, True)
        self._hold(alloc.start, alloc.end, alloc.resources)
        self._count(alloc, alloc.start, alloc.end, -1)

    def unplan(self, alloc: Allocation) -> None:
        super().unplan(alloc)
        self.reach.clear()
        self.planned.remove(alloc)
        self._track(alloc, False)
        self._unhold(alloc.start, alloc.end, alloc.resources)
        self._given_back(max(alloc.start, self.now), alloc.end, alloc.resources, alloc)
        self._count(alloc, max(alloc.start, self.now), alloc.end, 1)

    def _hold(self, start: int, end: int, resources: NodeCores, edges: tuple[int, ...] | None = None) -> None:
        """Reserve ``resources`` over ``[start, end)`` in the profile and count its two edges
        (or, for a move, only that interval, and the held span's new ``edges``).
        O(segments in it) set operations."""
        self.reserved.add(start, end, resources)
        counts = self.edges
        for t in (start, end) if edges is None else edges:
            counts[t] = counts.get(t, 0) + 1

    def _unhold(self, start: int, end: int, resources: NodeCores, edges: tuple[int, ...] | None = None) -> None:
        """Give back what ``_hold`` reserved over ``[start, end)`` (or, for a move, only that
        interval, and the held span's old ``edges``). A breakpoint where no held span begins
        or ends any more separates equal sets: it is dropped. Without that, every reservation
        made anew at an early end left two (Slurm's replan with a history, JUROPA-size: 20
        reservations over 500 breakpoints, and each change and search went through all).
        O(segments in it) set operations."""
        self.reserved.subtract(start, end, resources)
        counts = self.edges
        for t in (start, end) if edges is None else edges:
            n = counts[t] - 1
            if n:
                counts[t] = n
            else:
                del counts[t]
                self.reserved.drop_breakpoint(t)

    GAP_SEGMENTS = 64  # reserved segments a gap is looked for in: past them, not known
    UNION_FROM = 8  # reservations in a window past which ``_window`` reads their union off the profile

    def replan(self, alloc: Allocation, start: int, resources: NodeCores) -> Allocation:
        """A move to an earlier start on the same nodes and cores (72 % of compression's moves
        on KTH) changes the reserved profile, the counts and the log of what came back only
        where the two intervals differ: taken from the new start to the old one (or the new
        end), given back from there to the old end. The profile gets the same breakpoints as
        by unplanning and planning again. Other moves, and any under limits, do that.
        O(segments where the intervals differ) set operations."""
        if (self.limits.active or start > alloc.start or alloc.job is None
                or resources.full != alloc.resources.full or resources.part != alloc.resources.part):
            return super().replan(alloc, start, resources)
        moved = alloc.moved(start, resources)
        moved.home = self
        self._number(moved)
        self.reach.clear()
        self.planned.remove(alloc)
        self.planned.add(moved)
        self._track(alloc, False)
        self._track(moved, True)
        taken, given = min(alloc.start, moved.end), max(alloc.start, moved.end, self.now)
        self._hold(start, taken, resources, (start, moved.end))
        self._unhold(given, alloc.end, resources, (alloc.start, alloc.end))
        self._given_back(given, alloc.end, resources, alloc)
        self.held[moved] = self._units_of(alloc)  # the same resources: the same units
        self._count(alloc, given, alloc.end, 1)
        self._count(moved, start, taken, -1)
        return moved

    def _given_back(self, start: int, end: int, resources: NodeCores, alloc: Allocation | None = None) -> None:
        """Log ``resources`` as given back over ``[start, end)`` (see ``Freed``), with the time
        by which reservations hold each of their nodes again: a window that gains one of these
        nodes is free on it throughout, so it lies in that node's gap, which ends where a
        reservation takes the node at or after ``end`` (or by ``end``, if one holds it there).
        Only while every reservation holds whole nodes: a part-held node may still have room.
        O(reserved segments looked at) big-int operations."""
        if end <= start:
            return
        nodes = resources.node_mask()
        gap = NEVER
        if self.whole_reserved:
            times, values = self.reserved.times, self.reserved.values
            left, i = nodes, max(bisect_right(times, end) - 1, 0)
            for k in range(i, min(i + self.GAP_SEGMENTS, len(times))):
                held = values[k].full & left
                if held:
                    left &= ~held
                    if not left:
                        gap = max(end, times[k])
                        break
        job = None if alloc is None else alloc.job
        self.freed.add(start, end, nodes, gap, None if alloc is None else
                       (alloc.user, alloc.queue, None if job is None else job.array))

    def advance(self, now: int) -> None:
        if now != self.now:
            self.reach.clear()
        super().advance(now)
        self.reserved.advance(now)
        self.units.advance(now)
        for pool in self.pools.values():
            pool.advance(now)

    def used_now(self, resources: NodeCores) -> NodeCores:
        """The part of ``resources`` that is not free now (for overlapping running jobs)."""
        return resources.difference(self.free, self.machine.shape)


class Consumable:
    """A per-node resource besides cores that jobs sharing a node hold (GPUs, memory): each
    node's amount, and the allocations holding some of it on each node. A partly used node
    takes a job only with what the job asks of it free for the job's whole run (``room``); a
    node free of jobs has all of it free, since every job holds cores where it holds anything.

    >>> from .node import Node
    >>> machine = Machine([Node(0, "n0", "n0", 8, None, True, 4)])
    >>> gpus = Consumable.gpus(machine)
    >>> job = Job("1", 0, {}, "Running", gpus_per_node=3)
    >>> gpus.track(Allocation(0, 100, NodeCores(0, {0: 0b1}), 1, "", "", job), True)
    >>> gpus.room(0, 50, 150, machine.shape), gpus.room(0, 100, 200, machine.shape)
    (1, 4)
    >>> gpus.fits(0, 50, 150, 2, machine.shape), gpus.fits(0, 100, 200, 2, machine.shape)
    (False, True)
    """

    def __init__(self, capacity: dict[int, int], asked: Callable[[Job], int],
                 held: Callable[[Allocation, int, list[int]], int]) -> None:
        self.capacity = capacity  # node → its amount (nodes without any: not counted)
        self.asked = asked  # what a job asks on each of its nodes
        self.held = held  # what an allocation holds on a node (given the machine's shape)
        self.holders: dict[int, set[Allocation]] = {}
        # per node, what is free at an instant (``fits``' first test), until its holders change
        self.instant: dict[int, dict[int, int]] = {}

    @classmethod
    def gpus(cls, machine: Machine) -> Consumable | None:
        """The GPUs of the machine's nodes (None: no node has any): a job holds
        ``Job.gpus_each`` on each of its nodes."""
        capacity = {n.index: n.gpus for n in machine.nodes if n.gpus}
        return cls(capacity, _gpus_asked, lambda alloc, n, shape: _gpus_asked(alloc.job)) if capacity else None

    @classmethod
    def memory(cls, machine: Machine) -> Consumable | None:
        """The MB of memory of the nodes that give it (None: none does): a job holds what it
        asks per node (``memory``), else per CPU (``mempercpu``) times its cores there."""
        capacity = {n.index: n.memory for n in machine.nodes if n.memory}
        return cls(capacity, _memory_asked, _memory_held) if capacity else None

    def track(self, alloc: Allocation, add: bool) -> None:
        """File (``add``) or drop an allocation on the nodes it holds some on.  O(its nodes)."""
        if alloc.job is None or not self.asked(alloc.job):
            return
        for n in bits_of(alloc.resources.node_mask()):
            if n in self.capacity:
                group = self.holders.setdefault(n, set())
                group.add(alloc) if add else group.discard(alloc)
                self.instant.pop(n, None)

    def fits(self, node: int, t: int, end: int, need: int, shape: list[int]) -> bool:
        """Is ``need`` free on ``node`` throughout ``[t, end)`` (``room``)? What is free at
        ``t`` alone is asked first and kept until the node's holders change: on a node whose
        GPUs are all held now, the answer costs a lookup.  O(1) when kept, else as ``room``."""
        allocs = self.holders.get(node)
        if not allocs or node not in self.capacity:
            return self.room(node, t, end, shape) >= need
        kept = self.instant.setdefault(node, {})
        now = kept.get(t)
        if now is None:
            now = kept[t] = self.capacity[node] - sum(self.held(a, node, shape) for a in allocs if a.start <= t < a.end)
        return now >= need and self.room(node, t, end, shape) >= need

    def room(self, node: int, t: int, end: int, shape: list[int]) -> float:
        """What is free on ``node`` at every instant of ``[t, end)``: its amount less the most
        that running and planned allocations hold there at once (nodes that give no amount:
        unbounded).  O(m log m), m allocations holding some on the node."""
        if node not in self.capacity:
            return NEVER
        allocs = self.holders.get(node)
        if not allocs:
            return self.capacity[node]
        return self.capacity[node] - peak(allocs, t, max(end, t + 1), lambda a: self.held(a, node, shape))


def _gpus_asked(job: Job | None) -> int:
    """GPUs a job asks (or holds) on each of its nodes (an advance reservation: none)."""
    return 0 if job is None else job.gpus_each


def _memory_asked(job: Job | None) -> int:
    """MB a job asks on each of its nodes: per node, else per CPU times its cores per node."""
    if job is None:
        return 0
    return job.memory or job.memory_per_cpu * job.cores_per_node


def _memory_held(alloc: Allocation, node: int, shape: list[int]) -> int:
    """MB an allocation holds on ``node``: its job's per node, else per CPU times its cores there."""
    job = alloc.job
    if job is None:
        return 0
    return job.memory or job.memory_per_cpu * alloc.resources.mask(node, shape).bit_count()
