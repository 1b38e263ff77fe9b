"""Slurm's backfill plan: one pass of Slurm 22.05's ``sched/backfill`` over a snapshot, giving
each pending job the start Slurm itself plans for it and shows as its ``StartTime``.

The simulation forecasts what happens; this module reproduces what Slurm *estimates*, which is
what a walltime-only forecast of a Slurm machine means (``plan=slurm``). It follows
``_attempt_backfill`` and ``_add_reservation`` in ``src/plugins/sched/backfill/backfill.c`` and
``_will_run_test`` and ``_eval_nodes`` in ``src/plugins/select/cons_{common,tres}/job_test.c``:

- jobs are tested once, in priority order (the priority Slurm last computed, ``userprio``);
- a job may use the nodes of its partition that no job planned earlier in the pass holds from
  its earliest start to its end (the *node-space map*: whole nodes, held from the planned start
  rounded down to ``bf_resolution`` to the planned end rounded down, at least one step; a hold
  that begins at or before the job's end counts); the map's records are split and merged as
  Slurm's are, since where they break decides where a job is tried again;
- when running jobs leave room on those nodes is found by removing them in order of their ends,
  in batches that start 30 s wide (aligned to the clock) and double; the start is the end of the
  last job of the batch that made room, and the nodes are the select plugin's best fit among
  runs of consecutive free nodes;
- a start past the next change of the map is tried again from that change; advance reservations
  take their nodes while they overlap the job, and a maintenance reservation over the whole
  partition moves the job to its end;
- a job that fits now starts now (and runs its whole limit); a start beyond ``bf_window`` is
  given but holds nothing;
- the pass runs when Slurm's last one did (``plan_time``, from ``sdiag``), or when the latest
  change the snapshot shows happened, whichever is later: Slurm passes only after a change;
  jobs that started at the second of a pass known from ``sdiag`` were started by it, so they
  are tested in their turn: jobs before them see their nodes free, and they count toward the
  pass's limits (``bf_max_job_user`` and the others, ``config.plan_limits``).

Checked against a real Slurm's log of its passes (``tests/test_plan.py``): every start it
planned, to the second. Times are seconds from the snapshot; ``epoch`` aligns grids to the clock.
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from . import dependency
from .configuration import YES_NO, Configuration
from ..io.dates import floor_to, parse_date
from .job import WAITING, WAITING_STATES, Job
from .ranges import NodeCores, bits_of, lowest
from .simulation import batch_priority

if TYPE_CHECKING:
    from .node import Machine
    from .simulation import Simulation
    from .snapshot import Snapshot

WILL_RUN_WINDOW = 30  # seconds: the first batch of running jobs' ends in _will_run_test
UNKNOWN_MB = 1 << 40  # a node that gives no memory: no job is short of it there


@dataclass
class Request:
    """What one pending job asks of the select plugin."""

    nodes: int  # min_nodes (= req_nodes)
    max_nodes: int
    cpus: int  # min_cpus: the whole job's
    whole: bool  # whole nodes (an exclusive partition or job, select/linear)
    wall: int  # seconds
    extra: tuple[int, int] = (0, 0)  # GPUs and MB of memory on each of its nodes (``Usage.free``)
    mem_per_cpu: int = 0  # MB for each of its CPUs (--mem-per-cpu): caps the CPUs a node's free memory gives
    per_task: int = 1  # CPUs of each of its tasks (--cpus-per-task): a task's CPUs are on one node
    per_node: int = 0  # exactly this many CPUs on each of its nodes (--ntasks-per-node × --cpus-per-task)
    least: int = 0  # a node qualifies only with this many CPUs free (--mincpus)
    only: int = -1  # the nodes it may have (``Machine.for_job``): the select plugin picks among them
    gpus: int = 0  # GPUs for the whole job (--gpus), taken where free on its nodes as they are chosen


@dataclass
class Held:
    """A running job as the will-run test sees it: its end and the cores it holds per node.
    ``sole``: its nodes no other job uses (they are idle once it ends: one big-int OR), and
    ``shared``: its cores on the others; both kept by ``Usage``."""

    end: int
    mask: int  # its nodes
    cores: dict[int, int]
    sole: int = 0
    shared: dict[int, int] = field(default_factory=dict)
    extra: tuple[int, int] = (0, 0)  # GPUs and MB of memory it holds on each of its nodes
    mem_per_core: int = 0  # else MB for each of its cores there
    gpus_on: dict[int, int] | None = None  # else the GPUs it holds on each node (--gpus, spread as found)

    def amounts(self, n: int) -> tuple[int, int]:
        """The GPUs and MB of memory it holds on node ``n``."""
        return (self.extra[0] if self.gpus_on is None else self.gpus_on.get(n, 0),
                self.mem_per_core * self.cores[n] if self.mem_per_core else self.extra[1])


@dataclass
class Planned:
    """The plan for one job: its start, and the nodes and cores it gets (``node → cores``)."""

    start: int
    cores: dict[int, int]
    held: bool  # a hold was added to the map (the start is in the future and within the window)


def runs(mask: int) -> Iterable[tuple[int, int]]:
    """The runs of consecutive set bits of ``mask``, lowest first, as ``(first, last)``.
    O(runs × bits / 64).

    >>> list(runs(0b1110011))
    [(0, 1), (4, 6)]
    """
    while mask:
        low = mask & -mask
        first = low.bit_length() - 1
        x = mask >> first
        length = ((~x) & (x + 1)).bit_length() - 1
        yield first, first + length - 1
        mask &= mask + low  # clears the lowest run


class NodeSpace:
    """Slurm's node-space map: from the pass's start to the end of its window, which nodes no
    planned job holds, as records ``[begins[k], begins[k+1])`` (the last ends at ``end``) with
    a node mask each. Records are split and merged exactly as ``_add_reservation`` does it:
    the map's shape decides where a job is tried again (``scan``'s ``later_start``), so it must
    be Slurm's, not merely equivalent. Adding a hold is O(records); so is a scan.

    >>> space = NodeSpace(0, 600, 0b1111)
    >>> space.hold(60, 120, 0b0011, 60)
    >>> space.begins, [bin(m) for m in space.avail]
    ([0, 60, 120], ['0b1111', '0b1100', '0b1111'])
    >>> space.scan(0b1111, 0, 60)  # ends at 60: the hold beginning then counts; it ends at 120
    (12, 120)
    >>> space.overlaps(0b0001, 0, 60), space.overlaps(0b0001, 0, 61)
    (False, True)
    >>> space.hold(120, 180, 0b0011, 60)  # the same nodes right after: the two records merge
    >>> space.begins, [bin(m) for m in space.avail]
    ([0, 60, 180], ['0b1111', '0b1100', '0b1111'])
    """

    def __init__(self, begin: int, end: int, everything: int) -> None:
        self.begins = [begin]
        self.avail = [everything]
        self.end = end  # the window's end: the last record's end

    def _end(self, k: int) -> int:
        return self.begins[k + 1] if k + 1 < len(self.begins) else self.end

    def _insert(self, k: int, t: int) -> None:
        """Split record ``k`` at ``t``: it ends there, a copy of it runs on to its old end."""
        self.begins.insert(k + 1, t)
        self.avail.insert(k + 1, self.avail[k])

    def hold(self, start: int, end: int, nodes: int, resolution: int) -> None:
        """Nodes held during ``[start, end)`` (on the grid), at least one step, cut at the
        window; then the first pair of neighbouring records with equal masks around the hold
        is merged (one pair, as Slurm: its map is not canonical)."""
        start = max(start, self.begins[0])
        end = max(end, start + resolution)
        before, k = 0, None
        for j in range(len(self.begins)):
            e = self._end(j)
            if e > start:  # a start record, even where record j begins at ``start`` (j = 0)
                self._insert(j, start)
                k = j + 1
                break
            if e == start:
                k = j + 1
                break
            before = j
        after = -1
        if k is not None:
            keep = ~nodes
            while k < len(self.begins):
                if end < self._end(k):
                    self._insert(k, end)
                self.avail[k] &= keep
                if end == self._end(k):
                    if k + 1 < len(self.begins):
                        after = k + 1
                    break
                k += 1
        i = before
        while i != after and i + 1 < len(self.begins):
            if self.avail[i] == self.avail[i + 1]:
                del self.begins[i + 1], self.avail[i + 1]
                break
            i += 1

    def scan(self, base: int, start: int, end: int) -> tuple[int, int]:
        """Nodes of ``base`` free of holds from ``start`` until ``end`` (a hold beginning at
        ``end`` counts, as in Slurm), and ``later_start``: the end of the first segment after
        which more of ``base`` becomes free (0 if none), where the job may be tried again."""
        avail, later = base, 0
        begins, masks, n = self.begins, self.avail, len(self.begins)
        for j in range(max(0, bisect.bisect_right(begins, start) - 2), n):  # records before end earlier
            seg_end = begins[j + 1] if j + 1 < n else self.end
            if seg_end > start and j + 1 < n and not later and (base & masks[j + 1]) & ~(avail & masks[j]):
                later = seg_end
            if seg_end <= start:
                continue
            if begins[j] <= end:
                avail &= masks[j]
            else:
                break
        return avail, later

    def overlaps(self, nodes: int, start: int, end: int) -> bool:
        """Does a hold on any of ``nodes`` meet ``[start, end)``?"""
        begins, masks, n = self.begins, self.avail, len(self.begins)
        for j in range(n):
            seg_end = begins[j + 1] if j + 1 < n else self.end
            if seg_end > start and begins[j] < end and nodes & ~masks[j]:
                return True
            if begins[j] >= end:
                break
        return False


@dataclass
class Usage:
    """Cores (GPUs, memory) in use on each node now, and the running jobs in order of their ends."""

    ncores: list[int]
    used: list[int]
    running: list[Held] = field(default_factory=list)
    # per node, the GPUs and the MB of memory free now: a shared node takes a job only with what
    # it asks of each free (an empty list: not counted, no node has GPUs or memory is no consumable)
    free: tuple[list[int], list[int]] = field(default_factory=lambda: ([], []))
    memory: list[int] = field(default_factory=list)  # MB of each node (where memory is counted)
    tiers: list[int] = field(default_factory=list)  # nodes of each weight, lightest first (``Machine.weight_tiers``)
    gpus: list[int] = field(default_factory=list)  # GPUs of each node (where any node has some)

    def __post_init__(self) -> None:
        self.idle = 0
        # the least MB per core of a node: a job asking no more per CPU may have all cores of any
        self.mem_per_core = min((m // max(1, c) for m, c in zip(self.memory, self.ncores)), default=0)
        self.core_counts = set(self.ncores)  # (a job's tasks fill a node of each exactly, or leave cores)
        self.partial: dict[int, int] = {}  # node → free cores, for nodes neither idle nor full
        for n, (have, busy) in enumerate(zip(self.ncores, self.used)):
            self._note(n, have, busy)
        self.running.sort(key=lambda h: h.end)
        self.jobs_on: dict[int, int] = {}  # node → running jobs on it
        self.only: dict[int, Held] = {}  # node → the one job on it
        for held in self.running:
            for n in held.cores:
                self.jobs_on[n] = self.jobs_on.get(n, 0) + 1
        for held in self.running:
            held.sole, held.shared = 0, {}
            for n, c in held.cores.items():
                if self.jobs_on[n] == 1:
                    held.sole |= 1 << n
                    self.only[n] = held
                else:
                    held.shared[n] = c
        self.prefix = [0]
        for have in self.ncores:
            self.prefix.append(self.prefix[-1] + have)

    def _note(self, n: int, have: int, busy: int) -> None:
        if busy <= 0:
            self.idle |= 1 << n
            self.partial.pop(n, None)
        else:
            self.idle &= ~(1 << n)
            if busy < have:
                self.partial[n] = have - busy
            else:
                self.partial.pop(n, None)

    def gpus_taken(self, cores: dict[int, int], gpus: int) -> dict[int, int]:
        """Where a job asking ``gpus`` for itself (--gpus) that starts now on ``cores`` (in the
        order its nodes were chosen) takes them: as many as are free on each, in turn.  O(nodes)."""
        out = {}
        for n in cores:
            take = min(self.free[0][n] if self.free[0] else 0, gpus)
            out[n], gpus = take, gpus - take
        return out

    def start(self, job: Held) -> None:
        """A job starts now on its cores.  O(its nodes + log running)."""
        job.sole, job.shared = 0, {}
        for n, c in job.cores.items():
            self.used[n] += c
            for k, amount in enumerate(job.amounts(n)):
                if amount and self.free[k]:
                    self.free[k][n] -= amount
            self._note(n, self.ncores[n], self.used[n])
            count = self.jobs_on.get(n, 0)
            if count == 0:
                job.sole |= 1 << n
                self.only[n] = job
            else:
                job.shared[n] = c
                if count == 1:  # the job alone there so far shares it now
                    other = self.only.pop(n)
                    other.sole &= ~(1 << n)
                    other.shared[n] = other.cores[n]
            self.jobs_on[n] = count + 1
        bisect.insort(self.running, job, key=lambda h: h.end)


class Plan:
    """One backfill pass over pending jobs given in priority order (see the module's text)."""

    def __init__(self, usage: Usage, up: int, epoch: int, resolution: int = 60, window: int = 86400,
                 reservations: list[tuple[int, int, int, bool]] | None = None, now: int = 0,
                 reservation_ids: list[str] | None = None) -> None:
        self.usage = usage
        self.up = up
        self.epoch = epoch
        self.resolution = resolution
        self.offset = epoch % resolution
        self.window = window
        self.now = now  # when the pass runs (seconds from time zero; at or before it)
        begin = floor_to(now, resolution, self.offset)
        self.space = NodeSpace(begin, floor_to(now + window, resolution, self.offset), up)
        self.reservations = reservations or []  # (start, end, nodes, maint)
        # reservation id → its place in ``reservations`` (where the jobs bound to it are planned)
        self.reservation_of = {rid: k for k, rid in enumerate(reservation_ids or [])}

    # -- advance reservations (job_test_resv) ---------------------------------------------------
    def _reserved(self, start: int, wall: int, partition: int, own: int | None = None) -> tuple[int, int, bool]:
        """The nodes reservations take while a job runs from ``start``, and that start: moved
        to the end of a maintenance reservation that covers the whole partition (up to ten
        times, as Slurm). Also whether any reservation took nodes of the partition. ``own``:
        the reservation the job is bound to (its place in ``reservations``), which takes
        nothing from it (``job_test_resv``: ``res2_ptr == resv_ptr``)."""
        for _ in range(11):
            taken, overlap, moved = 0, False, False
            for k, (r_start, r_end, nodes, maint) in enumerate(self.reservations):
                if k == own or r_start >= start + wall or r_end <= start:
                    continue
                if maint and partition & ~nodes == 0:
                    start, moved = r_end, True
                    break
                taken |= nodes
                if nodes & partition:
                    overlap = True
            if not moved:
                return taken, start, overlap
        return self.up, start, False

    def _resv_end(self, start: int) -> int:
        """The first end of a reservation at or after ``start``, rounded up to the grid (0: none)."""
        ends = [r[1] for r in self.reservations if r[1] >= start]
        if not ends:
            return 0
        return floor_to(min(ends) + self.resolution - 1, self.resolution, self.offset)  # rounded up

    # -- the will-run test ----------------------------------------------------------------------
    def select(self, req: Request, avail: int, freed_idle: int = 0, freed: dict[int, int] | None = None,
               freed_extra: tuple[dict[int, int], dict[int, int]] = ({}, {})) -> dict[int, int] | None:
        """The nodes and cores the select plugin gives ``req`` among ``avail`` once the nodes
        ``freed_idle`` are idle and the cores in ``freed`` and GPUs and memory in ``freed_extra``
        (on shared nodes) are free too: runs of consecutive usable nodes of one ``weight``, the
        lightest first, then best fit (``_eval_nodes``); a partly used node only with the GPUs
        and memory ``req`` asks free on it; GPUs asked for the whole job (``req.gpus``) as free on
        the nodes picked, in turn (``gres_sched_add``). None if they do not suffice.
        O(runs × bits / 64 + partly used nodes)."""
        u = self.usage
        ncores, used = u.ncores, u.used
        avail &= req.only
        idle = (u.idle | freed_idle) & avail
        part: dict[int, int] = {}  # usable nodes with some cores busy: their free cores
        for n, c in (freed or {}).items():
            if (avail >> n) & 1 and not (idle >> n) & 1:
                free = ncores[n] - used[n] + c
                if free >= ncores[n]:
                    idle |= 1 << n
                elif not req.whole and free > 0:
                    part[n] = free
        if not req.whole:
            for n, free in u.partial.items():
                if n not in part and (avail >> n) & 1 and not (idle >> n) & 1:
                    part[n] = free
        for need, free, back in zip(req.extra, u.free, freed_extra):  # (an idle node has them all:
            if need and free:  # eligibility asked for them)
                for n in [n for n in part if free[n] + back.get(n, 0) < need]:
                    del part[n]
        cpt = 1 if req.whole else max(1, req.per_task)
        per_cpu = req.mem_per_cpu if u.memory else 0
        cap, least = (0, 1) if req.whole else (req.per_node, max(req.per_node, req.least, 1))
        if per_cpu or cpt > 1 or cap or least > 1:
            # a node gives whole tasks, as many CPUs as its free memory pays for, no more than the
            # job asks per node, and none unless as many as it asks at least
            def gives(free: int, mb: int) -> int:  # of ``free`` cores and ``mb`` MB free on a node
                have = min(free, mb // per_cpu) if per_cpu else free
                have = min(have, cap) if cap else have
                return have - have % cpt

            back = freed_extra[1]
            for n in list(part):
                part[n] = gives(part[n], u.free[1][n] + back.get(n, 0) if per_cpu else 0)
                if part[n] < least:
                    del part[n]
            if not req.whole and (per_cpu > u.mem_per_core or any(c % cpt for c in u.core_counts)
                                  or any(c > cap > 0 or c < least for c in u.core_counts)):
                for n in bits_of(idle):  # (else no idle node is short)
                    have = gives(ncores[n], u.memory[n] if per_cpu else 0)
                    if have < ncores[n]:
                        idle &= ~(1 << n)
                        if have >= least:
                            part[n] = have
        usable = idle
        for n in part:
            usable |= 1 << n
        if usable.bit_count() < req.nodes:
            return None
        rem_gpus = req.gpus if u.gpus else 0  # (--gpus: the job's GPUs wherever its nodes have them free)

        def gpus_of(n: int) -> int:
            return u.gpus[n] if (idle >> n) & 1 else u.free[0][n] + freed_extra[0].get(n, 0)
        partly = sorted(part)
        sets = []  # [first, last, cpus, nodes, weight rank]: a run of consecutive nodes ends where the weight changes
        for rank, tier in enumerate(u.tiers or (-1,)):
            for first, last in runs(usable & tier):
                cpus = u.prefix[last + 1] - u.prefix[first]
                lo, hi = bisect.bisect_left(partly, first), bisect.bisect_right(partly, last)
                for n in partly[lo:hi]:
                    cpus -= ncores[n] - part[n]
                gpus = sum(gpus_of(n) for n in range(first, last + 1)) if rem_gpus else 0
                sets.append([first, last, cpus, last - first + 1, rank, gpus])
        if u.tiers:
            sets.sort()

        def cpus_of(n: int) -> int:
            return part.get(n, ncores[n])

        rem_cpus, rem_nodes, max_nodes = req.cpus, req.nodes, req.max_nodes
        chosen: dict[int, int] = {}
        while max_nodes > 0:
            best, best_cpus, best_ok, best_rank = -1, 0, False, 0
            for i, (_, _, cpus, count, rank, gpus) in enumerate(sets):
                if count == 0:
                    continue
                ok = cpus >= rem_cpus and count >= rem_nodes and gpus >= rem_gpus
                if best < 0 or rank < best_rank or (rank == best_rank and (
                        (ok and not best_ok) or (ok and cpus < best_cpus) or (not ok and cpus > best_cpus))):
                    best, best_cpus, best_ok, best_rank = i, cpus, ok, rank
            if best < 0:
                break
            first, last = sets[best][0], sets[best][1]
            only = -1
            if rem_nodes <= 1:  # best fit single node: the fewest cores that suffice
                size = 0
                for n in range(first, last + 1):
                    have = cpus_of(n)
                    if have >= rem_cpus and (only < 0 or have < size) and (not rem_gpus or gpus_of(n) >= rem_gpus):
                        only, size = n, have
                        if size == rem_cpus:
                            break
            for n in (range(first, last + 1) if only < 0 else (only,)):
                if max_nodes == 0 or (rem_nodes <= 0 and rem_cpus <= 0 and rem_gpus <= 0):
                    break
                if n in chosen:
                    continue
                have = cpus_of(n)
                if max_nodes == 1 and have < rem_cpus:
                    continue
                take = have if req.whole else min(have, max(rem_cpus - max(rem_nodes - 1, 0) * cpt, cpt, req.least,
                                                            req.per_node))
                take -= take % cpt
                if take <= 0:
                    continue
                chosen[n] = take
                rem_cpus -= take
                rem_nodes -= 1
                max_nodes -= 1
                if rem_gpus:
                    rem_gpus -= min(gpus_of(n), rem_gpus)
            if rem_nodes <= 0 and rem_cpus <= 0 and rem_gpus <= 0:
                return chosen
            sets[best][2] = sets[best][3] = 0
        return chosen if rem_nodes <= 0 and rem_cpus <= 0 and rem_gpus <= 0 else None

    def will_run(self, req: Request, avail: int) -> tuple[int, dict[int, int]] | None:
        """When and where running jobs leave ``req`` room on ``avail`` (``_will_run_test``).

        Running jobs are taken in order of their ends, in batches: the first batch runs to the
        first end (of a job on ``avail``) rounded up to 30 s of the clock, plus 30 s; each next
        batch's window doubles. A batch ends where the *next* job ends beyond the window, but
        that look-ahead does not skip jobs off ``avail``: the job after one of those is taken
        into the batch whatever its end (as Slurm's ``list_peek_next`` does). The start is the
        end of the last job taken, once the select plugin finds room."""
        found = self.select(req, avail)
        if found is not None:
            return self.now, found
        jobs = self.usage.running
        count, epoch = len(jobs), self.epoch
        freed: dict[int, int] = {}
        freed_extra: tuple[dict[int, int], dict[int, int]] = ({}, {})
        freed_idle = 0
        window, end_time, i, more = WILL_RUN_WINDOW, None, 0, True
        while more:
            last = None
            while True:
                if i >= count:
                    more = False
                    break
                held = jobs[i]
                i += 1
                if not held.mask & avail:
                    continue
                if end_time is None:
                    end_time = held.end + window - (held.end + epoch) % window
                last = held
                freed_idle |= held.sole
                if held.shared:
                    for n, c in held.shared.items():
                        freed[n] = freed.get(n, 0) + c
                        for amount, back in zip(held.amounts(n), freed_extra):
                            if amount:
                                back[n] = back.get(n, 0) + amount
                if i >= count:
                    more = False
                    break
                if jobs[i].end > end_time + window:
                    break
            if last is None:
                break
            window *= 2
            while i < count and jobs[i].end > end_time + window:
                window *= 2
            found = self.select(req, avail, freed_idle, freed, freed_extra)
            if found is not None:
                return (last.end if last.end > self.now else self.now + 1), found
        return None

    # -- the pass ---------------------------------------------------------------------------------
    def start(self, job: Held, whole: bool) -> None:
        """A job the pass starts now: later jobs see it running, and a whole-node job also held
        in the map until its end rounded down (``_bf_reserve_running``)."""
        self.usage.start(job)
        if whole:
            self.space.hold(self.space.begins[0], floor_to(job.end, self.resolution, self.offset), job.mask,
                            self.resolution)

    def place(self, req: Request, partition: int, not_before: int = 0, now_only: bool = False,
              own: int | None = None) -> Planned | None:
        """Plan one job (in priority order); None if Slurm's pass finds it no start within its
        window. A job that fits now is started: later jobs see it running. ``now_only``: the
        job may only start now and gets no reservation (Slurm's ``TEST_NOW_ONLY``): None unless
        it fits now. ``own``: the advance reservation the job is bound to (its place in
        ``reservations``): it runs on that reservation's nodes, from its start on."""
        base = partition & self.up
        now = self.now
        start_res = max(now, not_before)
        if own is not None:  # job_test_resv: the reservation's nodes, from its start
            r_start, _, nodes, _ = self.reservations[own]
            base &= nodes
            req = replace(req, only=req.only & nodes)
            start_res = max(start_res, r_start)
        for _ in range(2 * len(self.space.begins) + 16):  # each retry moves start_res to a later record
            taken, moved, overlap = self._reserved(start_res, req.wall, base, own)
            start_res = moved
            if now_only and start_res > now:
                return None
            end_time = start_res + req.wall
            avail, later = self.space.scan(base & ~taken, start_res, end_time)
            if overlap:
                resv_end = self._resv_end(start_res)
                if resv_end and resv_end + 1 < self.space.end and (not later or resv_end + 1 < later):
                    later = resv_end + 1
            found = self.will_run(req, avail) if (avail & req.only).bit_count() >= req.nodes else None
            if found is None:
                if later and not now_only:
                    start_res = later
                    continue
                return None
            start, cores = max(found[0], start_res), found[1]
            if now_only and start > now:
                return None
            nodes = 0
            for n in cores:
                nodes |= 1 << n
            if start <= now:
                self.start(Held(now + req.wall, nodes, cores, extra=req.extra, mem_per_core=req.mem_per_cpu,
                                gpus_on=self.usage.gpus_taken(cores, req.gpus) if req.gpus else None), req.whole)
                return Planned(now, cores, False)
            if later and start > later:
                start_res = later
                continue
            if start > now + self.window:
                return Planned(start, cores, False)
            first = floor_to(start, self.resolution, self.offset)
            last = floor_to(start + req.wall, self.resolution, self.offset)
            if self.space.overlaps(nodes, first, last):  # (_test_resv_overlap: not widened to a step)
                start_res = start
                continue
            self.space.hold(first, last, nodes, self.resolution)
            return Planned(start, cores, True)
        return None



# -- a snapshot's jobs through the pass -----------------------------------------------------------

FOREVER = 365 * 86400  # an unlimited job's end, as _guess_job_end's "one year"


def plan_pending(snap: Snapshot, config: Configuration, sim: Simulation, now: int | None = None) -> int:
    """Replace the simulation's walltime-only start of each pending job that Slurm's backfill
    tests by the start its pass plans (``plan=slurm``); returns how many jobs were planned.
    ``now``: when the pass runs (default: Slurm's last pass, ``plan_time``, unless the snapshot
    shows a later change, ``last_change``).

    A job bound to an advance reservation is planned on its nodes, from its start. Jobs Slurm
    does not test keep the simulation's forecast: those waiting for a dependency,
    past an array's throttle or its ``bf_max_job_array_resv`` tasks tested, held by a per-user limit
    (a limit reason; or its QOS's ``MaxJobsPU`` or ``MaxTRESPU`` reached with the jobs the pass
    started, ``_QosUse``), components of a heterogeneous job, those beyond ``bf_max_job_test``
    (``maxtopdogs``) or beyond the pass's limits per user and partition, and all after it has
    started ``bf_max_job_start`` jobs (``config.plan_limits``); a dependency's later planned end
    moves them on. Jobs Slurm reserves nothing for (below ``bf_min_prio_reserve``, younger than
    ``bf_min_age_reserve``, past ``bf_job_part_count_reserve``) start if they fit now, else keep
    it too. O(jobs × retries × (records + will-run batches × runs))."""
    if now is None:
        now = last_change(snap.jobs, snap.epoch)
        if config.plan_time is not None and config.plan_time <= snap.epoch:
            now = max(now, config.plan_time - snap.epoch)
    # a pass known from sdiag: the jobs that started then were started by it, in their turn
    known = config.plan_time is not None and now == config.plan_time - snap.epoch
    tested = _tested(snap, sim, now, started=known)
    plan = _pass_of(snap, config, now, {job for job in tested if job.running})
    machine, shape = snap.machine, snap.machine.shape
    running_tasks: dict[str, int] = {}
    for job in snap.jobs:
        if job.running and job.array is not None:
            running_tasks[job.array] = running_tasks.get(job.array, 0) + 1
    planned = started = 0
    # Slurm tests a waiting array as one record: task after task at its turn ("next_task"),
    # each started or planned on its own nodes, until bf_max_job_array_resv tasks were tested,
    # its throttle is reached by the tasks it started, or one finds no place; the array's
    # other tasks are not tested in the pass (they keep the simulation's forecast, not before
    # the array's last planned start). A live Slurm 22.05 plans the tasks past the throttle
    # too: the throttle counts running tasks only (tests/test_scontrol.py, arrays)
    array_tested: Counter[str] = Counter()
    latest: dict[str, int] = {}  # the latest start planned for a task of each array
    closed: dict[str, int] = {}  # arrays done in this pass → that start (0: none planned)
    per_array = max(1, config.plan_array_resv)
    limits = config.plan_limits
    counted: Counter[tuple[str, ...]] = Counter()  # jobs tested per user, partition, user and partition
    reserved: Counter[str] = Counter()  # reservations made per partition
    using = _QosUse(snap, {job for job in tested if job.running})
    for job in tested:
        if planned >= sim.policy.maxtopdogs or (limits.max_job_start and started >= limits.max_job_start):
            break
        if job.running:  # the pass itself started it: in its turn, on the nodes it got, counted
            plan.start(_held(job, machine), _whole(job, config))
            if limits:
                limits.beyond(job, counted)
            using.add(job)
            planned += 1
            started += 1
            continue
        if job.array is not None and (job.array in closed or running_tasks.get(job.array, 0)
                                      >= snap.throttles.get(job.array, FOREVER)):
            if job.array in closed:
                _move(job, closed[job.array])
            continue
        if using.full(job):  # passed over uncounted, and the array's other tasks with it
            if job.array is not None:
                closed[job.array] = latest.get(job.array, 0)
            continue
        if (limits and limits.beyond(job, counted)) or using.over(job):  # (_job_exceeds_max_bf_param: counts to the depth)
            planned += 1
            if job.array is not None:  # Slurm goes on to the next record: the array's other tasks are not tested
                closed[job.array] = latest.get(job.array, 0)
            continue
        whole = _whole(job, config)
        req = _request(job, whole, machine)
        now_only = bool(limits) and limits.reserves_nothing(
            batch_priority(job, sim.sorter, 0), now - job.queued, reserved[job.queue])
        scope = machine.for_job(job, 1 if whole else None, scope=True)  # (what it may have: req.only)
        bound = sim.bound_to.get(job)  # a job of an advance reservation: planned inside it
        own = None if bound is None else plan.reservation_of.get(bound)
        if bound is not None and own is None:  # (a reservation of no nodes: the simulation's forecast)
            continue
        result = plan.place(req, scope, max(0, job.arrival), now_only, own)
        planned += 1
        if result is None:  # none within the window (or not now): the simulation's forecast stands
            if job.array is not None:
                closed[job.array] = latest.get(job.array, 0)  # (and its other tasks are not tested)
            continue
        if result.start <= plan.now:
            started += 1
            using.add(job)
        elif result.held:
            reserved[job.queue] += 1
        if job.array is not None:
            if result.start <= plan.now:
                running_tasks[job.array] = running_tasks.get(job.array, 0) + 1
            array_tested[job.array] += 1
            latest[job.array] = max(latest.get(job.array, 0), result.start)
            if array_tested[job.array] >= per_array:
                closed[job.array] = latest[job.array]
        resources = NodeCores()
        for n, c in sorted(result.cores.items()):
            resources.add_node(n, shape[n] if whole else lowest(shape[n], c) or shape[n], shape)
        start = max(result.start, 0)  # Slurm shows a start its pass placed before now as now
        job.start, job.end, job.resources = start, start + job.wall, resources
        job.reason, job.topdog, job.backfilled = None, result.held, False
    _after_dependencies(sim.dependencies)
    return planned


def test_only(snap: Snapshot, config: Configuration, sim: Simulation, job: Job) -> int | None:
    """What ``sbatch --test-only`` would answer for the pending ``job`` (seconds from time zero;
    None where it finds no room): Slurm's quick estimate (``job_start_data``), which plans no
    other pending job. The will-run test against the running jobs alone, on the partition's
    nodes outside advance reservations, then delayed by the work queued ahead of it in its
    partition spread over the partition's CPUs (``_delayed_job_start_time``: each pending job of
    equal or higher priority counts its CPUs, at least whole nodes, times its limit in
    minutes).  O(running + pending)."""
    machine = snap.machine
    plan = _pass_of(snap, config, 0)
    whole = _whole(job, config)
    partition = machine.for_job(job, 1 if whole else None, scope=True)
    start_res = max(0, job.arrival)
    taken, start_res, _ = plan._reserved(start_res, job.wall, partition & plan.up)
    req = _request(job, whole, machine)
    found = plan.will_run(req, partition & plan.up & ~taken)
    if found is None:
        return None
    members = [node for node in machine.nodes if node.limit(job.queue) > 0]
    part_nodes, part_cpus = len(members), sum(node.ncores for node in members)
    per_node = part_cpus // part_nodes if part_cpus > part_nodes else 1
    mine = batch_priority(job, sim.sorter, 0)
    ahead, arrays = 0, set()
    for other in snap.jobs:  # (a pending array is one job record in Slurm: its first task counts)
        if (other is job or other.running or other.read_reason is not None or other.queue != job.queue
                or other.array in arrays or batch_priority(other, sim.sorter, 0) < mine):
            continue
        if other.array is not None:
            arrays.add(other.array)
        ahead += max(other.total_cores, other.nodes * per_node) * (other.wall // 60)
    delay = ahead // max(part_cpus, 1) * 60
    return max(found[0] + delay, start_res, 0)


class _QosUse:
    """What each user, each account and all users together run in each QOS with a limit on it
    (``snapshot``'s ``qos_limits``, ``qos_account_limits`` and ``qos_group_limits``: Slurm's
    ``MaxJobsPU``, ``MaxJobsPA`` and ``GrpJobs``; ``qos_tres``, ``qos_account_tres`` and
    ``qos_group_tres``: ``MaxTRESPU``, ``MaxTRESPA`` and ``GrpTRES`` cpu= and node=), as a
    pass goes: the jobs, cores and nodes of the running jobs, and of those the pass starts.

    >>> from types import SimpleNamespace
    >>> ann, more = (Job(str(k), k, {"qos": "normal", "account": "p1"}, state, owner="ann")
    ...              for k, state in ((1, "Running"), (2, "Idle")))
    >>> ann.nodes, ann.total_cores, more.nodes, more.total_cores = 2, 8, 1, 4
    >>> none = dict(qos_limits={}, qos_tres={}, qos_account_limits={}, qos_account_tres={}, qos_group_limits={},
    ...             qos_group_tres={})
    >>> use = _QosUse(SimpleNamespace(jobs=[ann], **{**none, "qos_limits": {"normal": 2},
    ...                                               "qos_tres": {"normal": {"cores": 12}}}))
    >>> use.full(more), use.over(more), use.add(more), use.full(more), use.over(more)
    (False, False, None, True, True)
    >>> use = _QosUse(SimpleNamespace(jobs=[ann], **{**none, "qos_account_limits": {"normal": 1}}))
    >>> use.full(more), use.full(replace(more, owner="bob")), use.full(replace(more, data={"qos": "normal"}))
    (True, True, False)
    >>> use = _QosUse(SimpleNamespace(jobs=[ann], **{**none, "qos_group_tres": {"normal": {"nodes": 2}}}))
    >>> use.over(more), use.over(replace(more, owner="bob")), use.over(replace(more, data={"qos": "long"}))
    (True, True, False)
    """

    def __init__(self, snap: Snapshot, aside: set[Job] | frozenset[Job] = frozenset()) -> None:
        self.limits = {"user": (snap.qos_limits, snap.qos_tres),
                       "account": (snap.qos_account_limits, snap.qos_account_tres),
                       "qos": (snap.qos_group_limits, snap.qos_group_tres)}
        # ("user", "account" or "qos"; the user, the account or the QOS; the QOS) → [jobs, cores, nodes]
        self.used: dict[tuple[str, str, str], list[int]] = {}
        if any(jobs or tres for jobs, tres in self.limits.values()):
            for job in snap.jobs:
                if job.running and job not in aside:  # (those the pass started count in their turn)
                    self.add(job)

    def _keys(self, job: Job) -> list[tuple[tuple[str, str, str], int | None, dict[str, int]]]:
        """The (kind, holder, QOS) a job counts under where its QOS limits them, with the limits."""
        qos = job.data.get("qos", "").strip()
        out = []
        for kind, holder in (("user", job.owner), ("account", job.data.get("account", "").strip()), ("qos", qos)):
            jobs, tres = self.limits[kind]
            if holder and (qos in jobs or qos in tres):
                out.append(((kind, holder, qos), jobs.get(qos), tres.get(qos, {})))
        return out

    def add(self, job: Job) -> None:
        """``job`` runs: its user's and its account's use of its QOS grow by it.  O(1)."""
        for key, _, _ in self._keys(job):
            used = self.used.setdefault(key, [0, 0, 0])
            used[0] += 1
            used[1] += job.total_cores
            used[2] += job.nodes

    def full(self, job: Job) -> bool:
        """Does its user, its account or its whole QOS run as many jobs of its QOS as
        ``MaxJobsPU``, ``MaxJobsPA`` or ``GrpJobs`` allows? Slurm's pass then passes over it
        before counting it to any depth (``acct_policy_job_runnable_pre_select``).  O(1)."""
        return any(cap is not None and self.used.get(key, (0,))[0] >= cap for key, cap, _ in self._keys(job))

    def over(self, job: Job) -> bool:
        """Would ``job`` take its user, account or whole QOS beyond its QOS's ``MaxTRESPU``,
        ``MaxTRESPA`` or ``GrpTRES`` cores or nodes with what runs? Slurm's pass then neither
        starts it nor reserves for it, once it has tested it
        (``acct_policy_job_runnable_post_select``).  O(1)."""
        for key, _, most in self._keys(job):
            used = self.used.get(key, (0, 0, 0))
            if any(kind in most and used[i] + need > most[kind]
                   for i, kind, need in ((1, "cores", job.total_cores), (2, "nodes", job.nodes))):
                return True
        return False


def _on_nodes(job: Job) -> bool:
    """Does the running ``job`` hold nodes the pass knows (a node list, not only core counts)?"""
    return isinstance(job.resources, NodeCores) and bool(job.resources)


def _held(job: Job, machine) -> Held:
    """A running job as the pass sees it: ending at its start plus its limit."""
    cores = {n: mask.bit_count() for n, mask in job.resources.pairs(machine.shape)}
    return Held((job.started or 0) + (job.wall if job.wall > 0 else FOREVER), _mask_of(cores), cores,
                extra=_extra(job), mem_per_core=job.memory_per_cpu)


def _pass_of(snap: Snapshot, config: Configuration, now: int, aside: set[Job] | frozenset[Job] = frozenset()) -> Plan:
    """The pass over the snapshot's machine: its usable nodes, the running jobs (ending at their
    start plus their limit, as Slurm sees them) but those ``aside`` (the pass starts them), its
    reservations and the planning grid."""
    machine = snap.machine
    ncores = [node.ncores for node in machine.nodes]
    up = 0
    for node in machine.nodes:
        if node.usable:
            up |= 1 << node.index
    used = [0] * len(ncores)
    memory = [UNKNOWN_MB if node.memory is None else node.memory for node in machine.nodes] \
        if config.consumable_memory else []
    free = ([node.gpus for node in machine.nodes] if any(node.gpus for node in machine.nodes) else [], list(memory))
    held: list[Held] = []
    for job in snap.jobs:
        if not job.running or not _on_nodes(job) or job in aside:
            continue
        job_held = _held(job, machine)
        for n, c in job_held.cores.items():
            used[n] += c
            for k, amount in enumerate(job_held.amounts(n)):
                if free[k]:
                    free[k][n] -= amount
        held.append(job_held)
    kept = [res for res in snap.reservations if isinstance(res.resources, NodeCores)]
    reservations = [(res.start, res.end, _mask_of(res.resources.part) | res.resources.full, res.maint) for res in kept]
    return Plan(Usage(ncores, [min(u, c) for u, c in zip(used, ncores)], held, free, memory, machine.weight_tiers,
                      [node.gpus for node in machine.nodes] if free[0] else []),
                up, snap.epoch,
                config.resolution or 60, config.plan_window, reservations, now, [res.id for res in kept])


def _request(job: Job, whole: bool, machine: Machine) -> Request:
    """What the pending ``job`` asks of the select plugin."""
    nodes = machine.for_job(job, 1 if whole else None)
    extra = (0, job.memory) if job.gpus_per_job else _extra(job)  # (--gpus: none asked per node)
    return Request(job.nodes, _max_nodes(job, whole, nodes), job.nodes if whole else job.total_cores, whole,
                   job.wall, extra, job.memory_per_cpu, _per_task(job), *_per_node(job), only=nodes,
                   gpus=job.gpus_per_job)


def _extra(job: Job) -> tuple[int, int]:
    """What a job asks (or holds) on each node besides cores: GPUs, and MB of memory."""
    return job.gpus_per_node, job.memory


def _count(job: Job, key: str) -> int:
    """A job's whole-number key as Slurm's plan reads it; 0 where not given or unreadable."""
    raw = job.data.get(key, "").strip()
    return int(raw) if raw.isdigit() else 0


def _per_task(job: Job) -> int:
    """CPUs of each of a job's tasks (``tpt``, from Slurm's ``CPUs/Task``), 1 where not given."""
    return _count(job, "tpt") or 1


def _per_node(job: Job) -> tuple[int, int]:
    """``(exactly, at least)`` CPUs a job asks on each of its nodes: ``ppn`` (or
    ``taskspernode``; from Slurm's ``--ntasks-per-node``) and ``mincpus`` (``--mincpus``); 0 where
    not asked."""
    return _count(job, "ppn") or _count(job, "taskspernode"), _count(job, "mincpus")


def _mask_of(nodes: Iterable[int]) -> int:
    mask = 0
    for n in nodes:
        mask |= 1 << n
    return mask


def _tested(snap: Snapshot, sim: Simulation, now: int | None = None, started: bool = False) -> list[Job]:
    """The pending jobs Slurm's backfill tests, in its order (``sort_job_queue2``): partition
    priority tier, then the priority Slurm last computed (``userprio``; the configured formula
    for a job without one, such as a what-if candidate), then submission, then job id. A job
    submitted after the pass at ``now`` (a snapshot with future queue dates) is not in it.
    ``started``: also the running jobs that started at ``now``, which the pass tested and
    started (they count toward its limits)."""
    deps = sim.dependencies
    jobs = [job for job in snap.jobs if not job.running and job.read_reason is None and job.leader is None
            and job.het is None and job.limited is None and job not in deps and job.wall > 0
            and (now is None or job.queued <= now)]
    if started and now is not None:
        jobs += [job for job in snap.jobs if job.running and job.started == now and job.leader is None
                 and job.het is None and _on_nodes(job)]

    def tier(job: Job) -> float:
        try:
            return float(job.data.get("prioritytier", "0"))
        except ValueError:
            return 0.0

    return sorted(jobs, key=lambda job: (-tier(job), -batch_priority(job, sim.sorter, 0), job.queued, job.index))


def _move(job: Job, start: int) -> None:
    """Move a forecast start later, keeping the job's length."""
    if job.start is not None and start > job.start:
        if job.end is not None:
            job.end += start - job.start
        job.start = start


def _max_nodes(job: Job, whole: bool, partition: int) -> int:
    """The most nodes a job may be spread over: ``numnodes_max`` (``jufo slurm snapshot`` writes it
    from Slurm's ``NumNodes=min-max``; ``unlimited`` where only cores were asked), else as many
    as it asks for (LLview's ``numnodes`` keeps only the minimum)."""
    raw = job.data.get("numnodes_max", "").strip().lower()
    if whole or not raw:
        return job.nodes
    if raw.isdigit():
        return max(job.nodes, int(raw))
    return max(job.nodes, partition.bit_count())


def _whole(job: Job, config: Configuration) -> bool:
    """Does ``job`` take whole nodes: ``select/linear``, an exclusive partition, ``--exclusive``?"""
    return (not config.sharing or job.queue in config.exclusive_queues
            or bool(YES_NO.get(job.data.get("exclusive", "").strip().lower(), False)))


def last_change(jobs: list[Job], epoch: int) -> int:
    """When Slurm's last backfill pass ran, as far as the snapshot tells: Slurm runs a pass only
    after something changed (``_more_work``: a job submitted, started or ended), so its estimates
    are the plan made then. The latest submission, start or end the snapshot shows, at most time
    zero (0 when it shows none).  O(jobs).

    >>> from types import SimpleNamespace as J
    >>> last_change([J(running=True, started=-40, queued=-90, state="Running", data={}),
    ...              J(running=False, started=None, queued=-70, state="Idle", data={}),
    ...              J(running=False, started=None, queued=0, state="Completed",
    ...                data={"endtime": "1970-01-01 00:01:00"})], 100)
    -40
    """
    latest = None
    for job in jobs:
        if job.running:
            t = job.started
        elif job.state in WAITING_STATES or job.state == WAITING:
            t = job.queued
        else:
            try:
                t = parse_date(job.data.get("endtime", ""))[0] - epoch
            except ValueError:
                continue
        if t is not None and t <= 0 and (latest is None or t > latest):
            latest = t
    return latest if latest is not None else 0


def _after_dependencies(deps: dict[Job, list[tuple[str, Job]]]) -> None:
    """Jobs waiting for others start no earlier than those end (or start, for ``after``) in the
    plan: each is moved on, keeping its length.  O(rounds × dependencies), at most one round
    per job in a chain."""
    for _ in range(len(deps) + 1):
        moved = False
        for job, waits in deps.items():
            if job.start is None:
                continue
            need = max((other.start if when == dependency.START else other.end for when, other in waits
                        if (other.start if when == dependency.START else other.end) is not None), default=job.start)
            if need > job.start:
                _move(job, need)
                moved = True
        if not moved:
            return
