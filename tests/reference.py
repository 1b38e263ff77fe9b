"""A straightforward scheduler simulation, to check jufo's optimised one against.

Same rules, none of the speed: resources are explicit ``(node, core)`` sets, every check
scans every allocation at every instant it needs, every event time gets a full pass over
the queue, and nothing is cached. Supports any static priority (the order jufo's sorter gives,
else queue date, then document order), node lists of the form ``(k)`` for running jobs, and
whole-node reservations ``(name,n)``, which is what the random snapshots of the tests use.

Jobs with a real run time shorter than their wall end early; backfilling then compresses
the plain way: each top dog in priority order drops its reservation, searches again from
scratch and keeps the new slot only if it is earlier; with ``replan=yes`` (Slurm's backfill)
every reservation that does not begin then is dropped, and the pass reserves anew.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from jufo.engine.job import Job
from jufo.engine.node import Machine


def rank(job: Job) -> tuple:
    """Priority order: the key jufo's sorter gave the job where it has one (any static
    formula), else the default, queue date then document order."""
    return job.order_key or (job.queued, job.index)


@dataclass(eq=False)
class Alloc:
    start: int
    end: int
    cores: frozenset  # {(node, core)}
    queue: str = ""
    user: str = ""
    asked: int = 0
    job: Job | None = None
    real_end: int | None = None  # the job ends then, before ``end`` (unknown to the scheduler until then)


class Reference:
    """``rules``: start windows (``next_start(job, t)``, ``boundary_after(t)``); ``user_caps``:
    jobs each user may run at once (None: no caps; a user not listed is unlimited)."""

    def __init__(self, machine: Machine, queues: dict, settings: dict, rules=None,
                 user_caps: dict[str, int] | None = None) -> None:
        self.rules = rules
        self.user_caps = user_caps
        self.m = machine
        self.queues = queues
        self.algorithm = settings["scheduling_algorithm"]
        self.attribute = settings["system_state"] == "AttributeState"
        self.sharing = settings.get("node_sharing", "yes") == "yes"
        top = settings.get("maxtopdogs", "1")
        self.maxtopdogs = math.inf if top == "all" else int(top)
        self.per_queue = settings.get("topdogs_per_queue", "no") == "yes"
        self.order = settings.get("backfill_order", "priority")
        self.replan = settings.get("replan", "no") == "yes"
        self.allocation = settings.get("node_allocation", "lowest")
        self.allocs: list[Alloc] = []
        self.now = 0

    # -- what is used when ------------------------------------------------------------------
    def overlapping(self, t: int, end: int):
        end = max(end, t + 1)
        return [a for a in self.allocs if a.start < end and a.end > t and a.end > a.start]

    def asked(self, job: Job) -> int:
        return job.total_cores if self.attribute else job.nodes * job.cores_per_node

    def peak(self, allocs, t, end, weight) -> int:
        end = max(end, t + 1)
        points = {t} | {a.start for a in allocs if t < a.start < end}
        return max((sum(weight(a) for a in allocs if a.start <= x < a.end) for x in points), default=0)

    def capped(self, job: Job, t: int) -> bool:
        """Would ``job`` at ``t`` exceed its user's cap (counted over all queues)?"""
        cap = (self.user_caps or {}).get(job.owner)
        if cap is None:
            return False
        end = t + job.wall
        mine = [a for a in self.overlapping(t, end) if a.user == job.owner]
        return self.peak(mine, t, end, lambda a: 1) + 1 > cap

    def allowed(self, job: Job, t: int) -> bool:
        return self.rules is None or self.rules.next_start(job, t) == t

    def limits_ok(self, job: Job, t: int) -> bool:
        if not self.allowed(job, t) or self.capped(job, t):
            return False
        q = self.queues.get(job.queue, {})
        if not q:
            return True
        end = t + job.wall
        mine = [a for a in self.overlapping(t, end) if a.queue == job.queue]
        if "maxjobs" in q and self.peak(mine, t, end, lambda a: 1) + 1 > int(q["maxjobs"]):
            return False
        users = [a for a in mine if a.user == job.owner]
        if "maxjobsperuser" in q and self.peak(users, t, end, lambda a: 1) + 1 > int(q["maxjobsperuser"]):
            return False
        if "starters" in q and self.peak(mine, t, end, lambda a: a.asked) + self.asked(job) > int(q["starters"]):
            return False
        return True

    def fit(self, job: Job, t: int):
        """Resources free at every instant of [t, t+wall), or None."""
        if not self.limits_ok(job, t):
            return None
        end = t + job.wall
        busy = self.overlapping(t, end)
        if self.attribute:
            points = {t} | {a.start for a in busy if a.start > t}
            for x in points:
                if sum(len(a.cores) for a in busy if a.start <= x < a.end) + job.total_cores > self.m.total_cores:
                    return None
            return job.total_cores
        used = set().union(*(a.cores for a in busy)) if busy else set()
        chosen = []  # every node the job could take, in node order
        for node in self.m.nodes:
            limit = node.limit(job.queue)
            if limit < job.cores_per_node:
                continue
            free = [c for c in range(node.ncores) if (node.index, c) not in used]
            if not self.sharing:
                if len(free) == node.ncores:
                    chosen.append([(node.index, c) for c in free])
                continue
            if len(free) < job.cores_per_node:
                continue
            if limit < node.ncores:
                same = [a for a in busy if a.queue == job.queue]
                room = limit - self.peak(same, t, end, lambda a: sum(1 for n, _ in a.cores if n == node.index))
                if room < job.cores_per_node:
                    continue
            chosen.append([(node.index, c) for c in free[: job.cores_per_node]])
        if job.switches is not None and self.m.has_switches and t < job.switches_until:
            chosen = self.under_switches(chosen, job)
        else:
            chosen = self.in_allocation_order(chosen, used, t, job.nodes)
        if chosen is None or len(chosen) < job.nodes:
            return None
        return frozenset(x for group in chosen[: job.nodes] for x in group)

    def under_switches(self, groups: list[list], job: Job) -> list[list] | None:
        """``--switches=N``: the candidates of one switch (the one with the fewest that
        suffice), or of the switches with the most candidates, at most N of them."""
        switch = lambda g: self.m.nodes[g[0][0]].switch or f"node {g[0][0]}"
        order: list[str] = []
        by_switch: dict[str, list] = {}
        for n in self.m.nodes:  # switches in order of first appearance
            key = n.switch or f"node {n.index}"
            if key not in by_switch:
                order.append(key)
                by_switch[key] = []
        for g in groups:
            by_switch[switch(g)].append(g)
        k = job.nodes
        if job.switches == 1:
            fitting = [(len(by_switch[s]), order.index(s), s) for s in order if len(by_switch[s]) >= k]
            return by_switch[min(fitting)[2]][:k] if fitting else None
        ranked = sorted(order, key=lambda s: (-len(by_switch[s]), order.index(s)))
        taken: list = []
        used = 0
        for s in ranked:
            if len(taken) >= k or not by_switch[s]:
                break
            taken += by_switch[s]
            used += 1
        if len(taken) < k or used > job.switches:
            return None
        return sorted(taken, key=lambda g: g[0][0])[:k]

    def in_allocation_order(self, groups: list[list], used: set, t: int, k: int) -> list[list] | None:
        """The candidate nodes (each a list of the cores it would give) in the order
        ``node_allocation`` prefers; for contiguous only the first run, None without one."""
        node = lambda g: g[0][0]
        if self.allocation == "contiguous":
            numbers = [node(g) for g in groups]
            for i in range(len(groups) - k + 1):
                if numbers[i + k - 1] - numbers[i] == k - 1:
                    return groups[i:i + k]
            return None
        if self.allocation == "bestfit":
            free = lambda g: sum(1 for c in range(self.m.nodes[node(g)].ncores) if (node(g), c) not in used)
            return sorted(groups, key=lambda g: (free(g), node(g)))  # the fewest free cores: the tightest
        if self.allocation == "latest_released":
            def released(g):
                ends = [a.end for a in self.allocs if self.now < a.end <= t and any(n == node(g) for n, _ in a.cores)]
                return max(ends, default=self.now)
            return sorted(groups, key=lambda g: (-released(g), node(g)))
        return groups

    def earliest(self, job: Job, now: int):
        times = {now} | {a.end for a in self.allocs if a.end > now} | {a.start for a in self.allocs if a.start > now}
        if job.switches is not None and self.m.has_switches and job.switches_until > now:
            times.add(job.switches_until)
        if self.rules is not None:  # and the first allowed start after each of them
            times |= {x for x in (self.rules.next_start(job, t) for t in list(times)) if x is not None}
        for t in sorted(times):
            found = self.fit(job, t)
            if found is not None:
                return t, found
        return None

    def hold(self, job: Job, t: int, resources) -> Alloc:
        cores = frozenset((-1, i) for i in range(resources)) if self.attribute else resources
        alloc = Alloc(t, t + job.wall, cores, job.queue, job.owner, self.asked(job), job)
        if job.wall > 0:
            self.allocs.append(alloc)
        return alloc

    def start(self, job: Job, t: int, resources) -> Alloc:
        """``job`` runs from ``t``: planned for its wall, really for its run time (nothing held
        if that is zero)."""
        alloc = self.hold(job, t, resources)
        self.runs(alloc, t + job.runtime)
        return alloc

    def runs(self, alloc: Alloc, real: int) -> None:
        """The job of ``alloc`` really ends at ``real``."""
        if real <= alloc.start and alloc in self.allocs:
            self.allocs.remove(alloc)
        elif real < alloc.end:
            alloc.real_end = real

    def reserve_at(self, job: Job, found, reserved: dict) -> None:
        reserved[job] = self.hold(job, found[0], found[1])
        if job.wall == 0:  # holds nothing, but keeps its slot
            reserved[job] = Alloc(found[0], found[0], found[1] if not self.attribute else
                                  frozenset((-1, i) for i in range(found[1])), job=job)

    def compress(self, t: int, reserved: dict) -> None:
        """Jobs ended early: each top dog in priority order searches again without its own
        reservation and moves if that finds an earlier slot."""
        for job in sorted(reserved, key=rank):
            alloc = reserved[job]
            if alloc.start <= t:
                continue
            held = alloc in self.allocs
            if held:
                self.allocs.remove(alloc)
            found = self.earliest(job, t)
            if found is not None and found[0] < alloc.start:
                self.reserve_at(job, found, reserved)
            elif held:
                self.allocs.append(alloc)

    # -- the run --------------------------------------------------------------------------------
    def run(self, running: list[Job], reservations: list[tuple[int, int, frozenset]], waiting: list[Job]) -> dict:
        """Starts and resources of the waiting jobs: {job id: (start, resources, topdog, backfilled)}."""
        for job in running:
            end = max(0, job.started + job.wall)
            if self.attribute:
                res = job.total_cores
            else:
                node = int(job.nodelist.strip("()")) - 1
                taken = {c for a in self.overlapping(0, max(end, 1)) if a.job is not None for c in a.cores}
                ncores = self.m.nodes[node].ncores
                free = [c for c in range(ncores) if (node, c) not in taken]
                if not self.sharing:
                    wanted = range(ncores)  # whole node, less what others hold
                elif len(free) >= job.cores_per_node:
                    wanted = free[: job.cores_per_node]
                else:
                    wanted = range(job.cores_per_node)  # the lowest cores, less what others hold
                res = frozenset((node, c) for c in wanted if (node, c) not in taken)
            real = max(0, job.started + job.runtime)
            if real > 0:
                alloc = self.hold(job, 0, res)
                alloc.start, alloc.end = min(job.started, 0), end
                self.runs(alloc, real)
        for start, end, cores in reservations:
            n = sum(1 for _ in cores)
            self.allocs.append(Alloc(start, end, frozenset((-2, i) for i in range(n)) if self.attribute else cores))
        queue = [j for j in waiting]
        out: dict = {}
        reserved: dict[Job, Alloc] = {}
        t = active = 0
        real = True  # time zero counts as activity
        while True:
            self.now = t
            early = [a for a in self.allocs if a.real_end == t]
            for a in early:  # the job ends now, before its wall
                a.end, a.real_end = t, None
            if early and self.algorithm == "Backfilling":
                if self.replan:  # Slurm's backfill: every reservation made anew in this pass
                    for job in [j for j, a in reserved.items() if a.start > t]:
                        if reserved[job] in self.allocs:
                            self.allocs.remove(reserved[job])
                        del reserved[job]
                else:
                    self.compress(t, reserved)
            present = sorted((j for j in queue if j.queued <= t and j.id not in out), key=rank)
            before = len(out)
            self.pass_at(t, present, out, reserved)
            if real or len(out) > before:
                active = t
            events = [a.real_end or a.end for a in self.allocs if a.end > t]
            events += [a.start for a in reserved.values() if a.start > t]
            events += [j.queued for j in queue if j.queued > t]
            if self.m.has_switches:  # a job's --switches wait lapses: it may go anywhere
                events += [j.switches_until for j in queue if j.switches is not None and j.switches_until > t]
            later = list(events)
            if self.rules is not None and len(out) < len(queue):
                # wake up where a start window changes, but not after two quiet weeks (as the engine)
                boundary = self.rules.boundary_after(t)
                if boundary is not None and boundary - active <= 2 * 7 * 86400:
                    later.append(boundary)
            if not later or len(out) == len(queue):
                return out
            t = min(later)
            real = t in events

    def pass_at(self, t: int, present: list[Job], out: dict, reserved: dict) -> None:
        self.now = t
        if self.algorithm == "Backfilling" and self.order not in ("priority", "firstfit"):
            return self.ordered_pass(t, present, out, reserved)
        passed_over = False
        for job in present:
            if job in reserved:
                passed_over |= not self.take_due(job, t, out, reserved, passed_over)
                continue
            found = self.fit(job, t)
            if found is not None:
                self.start(job, t, found)
                out[job.id] = (t, found, False, passed_over)
                continue
            if self.user_caps is not None and self.capped(job, t):
                passed_over = True  # held back by its user's cap: not eligible, takes no reservation
                continue
            if self.algorithm == "FCFS":
                return
            passed_over = True
            if self.algorithm == "Backfilling":
                group = job.queue if self.per_queue else None
                held = sum(1 for j in reserved if (j.queue if self.per_queue else None) == group)
                if held < self.maxtopdogs:
                    self.reserve(job, t, reserved)

    def held(self, job: Job, reserved: dict) -> int:
        group = job.queue if self.per_queue else None
        return sum(1 for j in reserved if (j.queue if self.per_queue else None) == group)

    def reserve(self, job: Job, t: int, reserved: dict) -> None:
        found = self.earliest(job, t)
        if found is not None:
            self.reserve_at(job, found, reserved)

    def ordered_pass(self, t: int, present: list[Job], out: dict, reserved: dict) -> None:
        """backfill_order shortest/bestfit, written out plainly: reservations and the head in
        priority order, then every other job that fits, in the backfill order."""
        passed_over = False
        candidates = []
        for job in present:
            if job in reserved:
                passed_over |= not self.take_due(job, t, out, reserved, passed_over)
                continue
            if self.user_caps is not None and self.capped(job, t):
                passed_over = True
                continue
            if not passed_over or self.held(job, reserved) < self.maxtopdogs:
                found = self.fit(job, t)
                if found is not None:
                    self.start(job, t, found)
                    out[job.id] = (t, found, False, passed_over)
                    continue
                passed_over = True
                if self.held(job, reserved) < self.maxtopdogs:
                    self.reserve(job, t, reserved)
                    continue
            candidates.append(job)
        rank = {job: i for i, job in enumerate(present)}
        if self.order == "greedy":
            candidates = self.greedy(candidates, t, out)
        elif self.order == "shortest":
            candidates.sort(key=lambda j: (j.wall, rank[j]))
        else:
            candidates.sort(key=lambda j: (-self.asked(j) if not self.attribute else -j.total_cores, rank[j]))
        for job in candidates:
            found = self.fit(job, t)
            if found is not None:
                self.start(job, t, found)
                out[job.id] = (t, found, False, True)

    def greedy(self, candidates: list[Job], t: int, out: dict) -> list[Job]:
        """Moab's GREEDY, plainly: every set of the first 8 candidates that fit one by one,
        tried by holding its jobs in priority order; the set with the most cores (the first
        such in priority order) starts."""
        pool = [j for j in candidates if j.wall > 0 and self.fit(j, t) is not None][:8]
        best: list = [0, []]

        def search(first: int, chosen: list[int], cores: int) -> None:
            if cores > best[0]:
                best[:] = [cores, list(chosen)]
            for k in range(first, len(pool)):
                found = self.fit(pool[k], t)
                if found is None:
                    continue
                alloc = self.hold(pool[k], t, found)
                search(k + 1, chosen + [k], cores + self.asked(pool[k]))
                self.allocs.remove(alloc)

        search(0, [], 0)
        for k in best[1]:
            found = self.fit(pool[k], t)
            self.start(pool[k], t, found)
            out[pool[k].id] = (t, found, False, True)
        return [j for j in candidates if j.id not in out]

    def take_due(self, job: Job, t: int, out: dict, reserved: dict, passed_over: bool) -> bool:
        """Start ``job`` if its reservation begins at ``t``; False if it still waits."""
        alloc = reserved[job]
        if alloc.start > t:
            return False
        del reserved[job]
        self.runs(alloc, t + job.runtime)
        out[job.id] = (t, alloc.cores if not self.attribute else len(alloc.cores), True, passed_over)
        return True
