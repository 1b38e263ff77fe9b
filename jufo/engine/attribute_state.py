"""AttributeState: the resource manager that only counts consumable cores; a job fits when
enough cores are free at every instant of its run."""


from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Iterator
from typing import Any


from .job import Job
from .node import Machine
from .availability import Counts, Profile, first_fit
from .queue import Queue

from .state import Allocation, SystemState


class AttributeState(SystemState):
    """Counts consumable cores only: a job fits when enough cores are free at every instant."""

    def __init__(self, machine: Machine, queues: dict[str, Queue]) -> None:
        super().__init__(machine, queues)
        self.capacity = machine.total_cores
        self.free = self.capacity
        self.profile = Profile(0, self.capacity, Counts(), merge=True)  # free cores over time

    def is_insertable(self, job: Job) -> int | None:
        """The smallest free count over ``[now, now+wall)``, read straight off the profile."""
        if self.limits.active and self.queue_limit(job, self.now) is not None:  # (``_limited``, without a call)
            return None
        need, end = job.total_cores, self.now + max(job.wall, 1)
        times, values = self.profile.times, self.profile.values
        for i in range(len(times)):  # times[0] is now: the clock advanced the profile
            if times[i] >= end:
                break
            if values[i] < need:
                return None
        return need

    def earliest(self, job: Job, horizon: int | None = None,
                 allowed: Callable[[int], int | None] | None = None) -> tuple[int, int] | None:
        """One scan of the free-cores profile with a sliding minimum: O(segments).
        With start windows, a direct scan per tried time: O(segments × window)."""
        if allowed is not None:
            return self._earliest_allowed(job, horizon, allowed)
        if not self.limits.active:  # the plain scan; limits need a look at every tried time
            t = self.profile.first_fit(job.total_cores, max(job.wall, 1))
            return (t, job.total_cores) if self._in_bounds(t, job, horizon) else None
        for t, free in self.profile.windows(self.now, job.wall, min):
            if horizon is not None and t > horizon:
                return None
            if self.deadline is not None and t + job.wall > self.deadline:
                return None
            if job.total_cores <= free and not self._limited(job, t):
                return t, job.total_cores
        return None

    def earlier(self, job: Job, alloc: Allocation, horizon: int | None = None,
                allowed: Callable[[int], int | None] | None = None) -> tuple[int, Any] | None:
        """One scan of the free-cores profile up to the reservation's start (see
        ``Profile.first_fit``), so nothing changes unless the job moves: O(segments before
        ``alloc.start``) comparisons. Limits and start windows take the general path."""
        if allowed is not None or self.limits.active:
            return super().earlier(job, alloc, horizon, allowed)
        t = self.profile.first_fit(job.total_cores, max(job.wall, 1), alloc.start)
        return (t, job.total_cores) if self._in_bounds(t, job, horizon) else None

    def compress(self, planned: Iterable[tuple[Job, Allocation]], horizon: int | None = None,
                 rule: Callable[[Job], Callable[[int], int | None] | None] | None = None
                 ) -> Iterator[tuple[Job, Allocation]]:
        """Without limits, start rules or a deadline, each reservation asks the profile
        directly (``earlier`` would check those for each). Compression asks this of every
        reservation at every early end (KTH conservative: 298,000 times), and most cannot
        move, so ``Profile.first_fit``'s quick no from the reservation's start backwards is
        inlined here, without a call. O(segments before each reservation's start)."""
        if rule is not None or self.limits.active or self.deadline is not None:
            yield from super().compress(planned, horizon, rule)
            return
        profile = self.profile
        times, values = profile.times, profile.values  # changed in place, never replaced
        for job, alloc in planned:
            need, start = job.total_cores, alloc.start
            last = j = bisect_left(times, start) - 1
            while j >= 0 and values[j] < need:
                j -= 1
            if j < 0:
                continue
            span = max(job.wall, 1)
            if j < last and times[j + 1] - times[0] < span:
                continue
            t = first_fit(zip(times, values), need, span, start)  # the scan of Profile.first_fit
            if t is not None and (horizon is None or t <= horizon):
                yield job, self.replan(alloc, t, need)

    def replan(self, alloc: Allocation, start: int, resources: int) -> Allocation:
        """Without limits, one change of the profile where the old and new intervals differ
        (a move by less than the wall leaves their overlap alone), and no calls to unplan and
        plan, whose limit bookkeeping has nothing to do.  O(segments changed)."""
        if self.limits.active or start > alloc.start:
            return super().replan(alloc, start, resources)
        old, end = alloc.start, start + alloc.end - alloc.start
        self._seq += 1  # what unplan and plan do besides limits, which are inactive here
        self.version += 1
        moved = Allocation(start, end, resources, alloc.cores, alloc.queue, alloc.user, alloc.job,
                           seq=self._seq, home=self, looked=alloc.looked)  # (``alloc.moved``, without a call)
        profile = self.profile
        profile.merge = True
        change = profile.count_change
        change(start, end if end < old else old, -resources)
        change(max(old, end, self.now), alloc.end, alloc.resources)
        return moved

    def _in_bounds(self, t: int | None, job: Job, horizon: int | None) -> bool:
        """Is a found start ``t`` usable: by the horizon, and ending by a reservation's own end?"""
        return t is not None and (horizon is None or t <= horizon) and (
            self.deadline is None or t + job.wall <= self.deadline)

    def _earliest_allowed(self, job: Job, horizon: int | None,
                          allowed: Callable[[int], int | None]) -> tuple[int, int] | None:
        """``earliest`` under start windows: at each allowed time, the smallest free count over
        the window; on failure the next breakpoint (a later start in the same segment sees a
        window no freer)."""
        times, values = self.profile.times, self.profile.values
        need, span = job.total_cores, max(job.wall, 1)
        t: int | None = self.now
        while True:
            t = allowed(t)
            if t is None or (horizon is not None and t > horizon):
                return None
            if self.deadline is not None and t + job.wall > self.deadline:
                return None
            i = bisect_right(times, t) - 1
            j, free = i, values[i]
            while j + 1 < len(times) and times[j + 1] < t + span:
                j += 1
                free = min(free, values[j])
            if need <= free and not self._limited(job, t):
                return t, need
            if i + 1 >= len(times):
                return None
            t = times[i + 1]

    def advance(self, now: int) -> None:
        self.now = now  # (``SystemState.advance``, without a call: once per event)
        self.profile.advance(now)

    def confined(self, cores: int, start: int, end: int) -> tuple[AttributeState, list]:
        """A state with only ``cores``, usable only during ``[start, end)`` (see NodeState's).
        Counts say nothing about where running jobs are, so none is shadowed."""
        sub = AttributeState(self.machine, self.queues)
        sub.capacity = sub.free = cores
        sub.profile = Profile(0, cores, Counts(), merge=True)
        sub._confine(cores, start, end)
        return sub, []

    def insert(self, alloc: Allocation, planned: Allocation | None = None) -> None:
        if (planned is not None and not self.limits.active and planned.start <= self.now
                and planned.end == alloc.end and planned.resources == alloc.resources):
            SystemState.unplan(self, planned)  # a reservation begins: the same cores, as long;
            SystemState.insert(self, alloc)    # the merged profile stays as it is
            return
        super().insert(alloc, planned)
        self.profile.merge = not self.limits.active
        self.profile.subtract(self.now, alloc.end, alloc.resources)

    def finish(self, alloc: Allocation) -> None:
        super().finish(alloc)
        self.profile.add(self.now, alloc.end, alloc.resources)

    def plan(self, alloc: Allocation) -> None:
        super().plan(alloc)
        # equal neighbours merge, except under limits: ``earliest`` then tries every
        # allocation boundary, where a limit may clear although the free count does not change
        self.profile.merge = not self.limits.active
        self.profile.subtract(alloc.start, alloc.end, alloc.resources)

    def unplan(self, alloc: Allocation) -> None:
        super().unplan(alloc)
        self.profile.add(max(alloc.start, self.now), alloc.end, alloc.resources)

    def exceeds(self, job: Job) -> str | None:
        if job.total_cores > self.capacity:
            return f"ExceedsSystem: asks {job.total_cores} cores, the system has {self.capacity}"
        q = self.queues.get(job.queue)
        if q is not None and (q.maxjobs == 0 or q.maxjobsperuser == 0):
            return f"ExceedsSystem: queue {job.queue} admits no jobs"
        if q is not None and q.starters is not None and job.total_cores > q.starters:
            return f"ExceedsSystem: asks {job.total_cores} cores, queue {job.queue} may use {q.starters}"
        return None

    def _choose(self, job: Job, t: int, end: int, window: int) -> int | None:
        return job.total_cores if job.total_cores <= window else None

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
