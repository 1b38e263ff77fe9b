"""Queue limits (``maxjobs``, ``maxjobsperuser``, ``starters``) and their check over a time window;
a queue's time-of-day settings (``windows``, ``maxnodes``, ``window_end``) are read here and
applied by :class:`jufo.engine.windows.QueueWindows`."""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import dataclass
from bisect import bisect_left
from heapq import heappop, heappush
from typing import Protocol

from ..io.errors import Report
from ..io.lml import LmlObject

LIMIT_KEYS = ("maxjobs", "maxjobsperuser", "starters")


@dataclass(frozen=True)
class Queue:
    """Limits of one queue; None means unlimited."""

    name: str
    maxjobs: int | None = None
    maxjobsperuser: int | None = None
    starters: int | None = None  # cores the queue may use at once
    windows: str | None = None  # when it starts jobs: "Mon-Fri 08:00-18:00, Sat-Sun 00:00-24:00"
    maxnodes: str | None = None  # nodes a job may have by time of day: "Mon-Fri 08:00-18:00:64"
    window_end: bool = False  # strict: a job must also end inside its window

    @property
    def limited(self) -> bool:
        return any(v is not None for v in (self.maxjobs, self.maxjobsperuser, self.starters))


class Span(Protocol):
    """What a limit check needs of an allocation."""

    start: int
    end: int
    cores: int
    queue: str
    user: str


def read_queues(objects: list[LmlObject], report: Report) -> dict[str, Queue]:
    """Queues by name (the object's ``name``, else its id); bad limits are fatal."""
    queues: dict[str, Queue] = {}
    for obj in objects:
        values: dict[str, int | None] = {}
        for key in LIMIT_KEYS:
            raw = obj.data.get(key)
            if raw is None or raw.strip() == "":
                values[key] = None
                continue
            try:
                value = int(raw)
                if value < 0:
                    raise ValueError
            except ValueError:
                report.error(obj.label, key, raw, "must be a whole number ≥ 0")
                continue
            values[key] = value
        name = obj.name or obj.id
        queues[name] = Queue(name, **values, **_time_of_day(obj, report))
    return queues


def _time_of_day(obj: LmlObject, report: Report) -> dict:
    """A queue's ``windows``, ``maxnodes`` and ``window_end``, checked; bad values are fatal."""
    from .windows import parse_spans

    out: dict = {}
    for key in ("windows", "maxnodes"):
        raw = obj.data.get(key, "").strip()
        if not raw:
            continue
        try:
            parse_spans(raw, with_value=key == "maxnodes")
        except ValueError as err:
            report.error(obj.label, key, raw, str(err))
            continue
        out[key] = raw
    end = obj.data.get("window_end", "").strip().lower()
    if end not in ("", "start", "strict"):
        report.error(obj.label, "window_end", obj.data["window_end"], "must be strict or start")
    out["window_end"] = end == "strict"
    return out


def peak(spans: Iterable[Span], start: int, end: int, weight) -> int:
    """Largest sum of ``weight(span)`` over spans active at one instant of ``[start, end)``.

    A span is active on ``[span.start, span.end)``.  O(m log m) for m spans.

    >>> from types import SimpleNamespace as S
    >>> spans = [S(start=0, end=5), S(start=5, end=9), S(start=3, end=7)]
    >>> peak(spans, 0, 10, lambda s: 1), peak(spans, 0, 3, lambda s: 1)
    (2, 1)
    """
    events: list[tuple[int, int]] = []
    for s in spans:
        lo, hi = max(s.start, start), min(s.end, end)
        if lo < hi:
            w = weight(s)
            events.append((lo, w))
            events.append((hi, -w))
    events.sort()  # at equal times the negative (ending) deltas come first
    best = level = 0
    for _, delta in events:
        level += delta
        best = max(best, level)
    return best


class Pool:
    """Caps on what the jobs of each holder run at once together, over all queues (the users of
    an account: Slurm's QOS ``MaxJobsPA`` and ``MaxTRESPA``; every job of a QOS: its ``GrpJobs``
    and ``GrpTRES``): jobs, cores and nodes per holder, with the spans of each capped holder
    (running jobs and planned reservations, each over its own time span). ``label`` names a
    holder in a reason ("UserLimit: account")."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.jobs: dict[str, int] = {}
        self.tres: dict[str, dict[str, int]] = {"cores": {}, "nodes": {}}
        self.sources: dict[str, str] = {}
        self.spans: dict[str, set] = {}
        self.full: dict[str, tuple[int, int]] = {}  # as ``QueueLimits.full_users``
        self.limited = False
        self.version: dict[str, int] = {}  # holder → changes to its spans so far
        # (holder, kind) → (version, from when, event times, the most held up to each): a pass
        # asks the same of every waiting job of a capped holder, so its profile is read once
        self._profiles: dict[tuple[str, str], tuple[int, int, list[int], list[int]]] = {}

    def limit(self, jobs: dict[str, int], cores: dict[str, int], nodes: dict[str, int], source: str = "") -> None:
        """Cap the jobs, cores and nodes of each holder (a second call keeps the lower cap)."""
        for holder, cap in jobs.items():
            if holder not in self.jobs or cap < self.jobs[holder]:
                self.jobs[holder] = cap
        for kind, caps in (("cores", cores), ("nodes", nodes)):
            mine = self.tres[kind]
            for holder, cap in caps.items():
                if holder not in mine or cap < mine[holder]:
                    mine[holder] = cap
        for holder in (*jobs, *cores, *nodes):
            self.sources[holder] = source
            self.spans.setdefault(holder, set())
        self.limited = bool(self.spans)

    def add(self, holder: str, span: Span) -> None:
        """A span of ``holder``'s (counted only where the holder has a cap).  O(1)."""
        spans = self.spans.get(holder)
        if spans is not None:
            spans.add(span)
            self.version[holder] = self.version.get(holder, 0) + 1

    def discard(self, holder: str, span: Span) -> None:
        """O(1)."""
        spans = self.spans.get(holder)
        if spans is not None:
            spans.discard(span)
            self.full.pop(holder, None)
            self.version[holder] = self.version.get(holder, 0) + 1

    def peak(self, holder: str, kind: str, start: int, end: int) -> int:
        """``peak`` of the holder's spans over ``[start, end)`` in ``kind`` ("cores", "nodes"):
        O(m log m) for m spans the first time it is asked from ``start`` since they changed,
        then O(log m).

        >>> class Job:  # a job on 2 cores in ``[start, end)``
        ...     def __init__(self, start, end):
        ...         self.start, self.end, self.cores = start, end, 2
        >>> pool = Pool("QOSLimit: QOS"); pool.limit({}, {"q": 8}, {})
        >>> for lo, hi in ((0, 5), (5, 9), (3, 7)):
        ...     pool.add("q", Job(lo, hi))
        >>> pool.peak("q", "cores", 0, 10), pool.peak("q", "cores", 0, 3), pool.peak("q", "cores", 7, 9)
        (4, 2, 2)
        """
        version = self.version.get(holder, 0)
        known = self._profiles.get((holder, kind))
        if known is None or known[0] != version or known[1] != start:
            weight = _cores if kind == "cores" else _nodes
            events = sorted(event for s in self.spans.get(holder, ()) if max(s.start, start) < s.end
                            for event in ((max(s.start, start), weight(s)), (s.end, -weight(s))))
            times, most, level, best = [], [], 0, 0
            for t, delta in events:  # (at one time the ends come first, as in ``peak``)
                level += delta
                best = max(best, level)
                times.append(t)
                most.append(best)
            known = self._profiles[holder, kind] = (version, start, times, most)
        i = bisect_left(known[2], end)  # the events before ``end``
        return known[3][i - 1] if i else 0

    def exceeded(self, holder: str, start: int, end: int, cores: int = 0, nodes: int = 0) -> str | None:
        """The cap one more job of ``holder`` in ``[start, end)`` on ``cores`` cores and ``nodes``
        nodes would break, or None.  O(1) for a holder without a cap, or with fewer jobs than
        its cap; else O(m log m) for its m jobs."""
        spans = self.spans.get(holder)
        if spans is None:
            return None
        cap = self.jobs.get(holder)
        if cap is not None and _at_cap(self.full, holder, spans, cap, start, end):
            return f"{self.label} {holder} runs at most {cap} jobs at once{self.sources[holder]}"
        for kind, need in (("cores", cores), ("nodes", nodes)):
            most = self.tres[kind].get(holder)
            if most is not None and need and self.peak(holder, kind, start, max(end, start + 1)) + need > most:
                return f"{self.label} {holder} holds at most {most} {kind} at once{self.sources[holder]}"
        return None


class QueueLimits:
    """Tracks the allocations of limited queues (and users) and checks a new one against the limits.

    Both running jobs and planned reservations count, each over its own time span, so a
    limit holds at every instant of the simulated future, not only now. User caps (jobs a
    user runs at once over all queues: the ``maxjobsperuser`` scheduler key, or caps learned
    from history) are checked before the queues' limits.
    """

    def __init__(self, queues: dict[str, Queue]) -> None:
        self.queues = {name: q for name, q in queues.items() if q.limited}
        self.spans: dict[str, set] = {name: set() for name in self.queues}
        # (queue, user) -> spans, for queues with ``maxjobsperuser``
        self.per_user: dict[tuple[str, str], set] = {}
        self._per_user_queues = {name for name, q in self.queues.items() if q.maxjobsperuser is not None}
        self.full_queues: dict[str, tuple[int, int]] = {}  # as ``full_users``, for ``maxjobs``
        self.full_per_user: dict[tuple[str, str], tuple[int, int]] = {}  # and for ``maxjobsperuser``
        self.user_caps: dict[str, int] = {}
        self.user_default: int | None = None
        self.user_sources: dict[str, str] = {}  # where each user's cap comes from, for reasons
        self.by_user: dict[str, set] = {}
        # user -> (t, until): the user's jobs fill its cap over [t, until), unless one of them
        # is discarded first (which drops the entry; spans added never lower the count)
        self.full_users: dict[str, tuple[int, int]] = {}
        # users watched for the end of their being full (``watch``): until when at the latest,
        # the same as a heap, and those with a span discarded since
        self.watched: dict[str, int] = {}
        self._until: list[tuple[int, str]] = []
        self._freed: set[str] = set()
        # cores and nodes a user holds at once over all queues (Slurm's QOS MaxTRESPU cpu= and node=)
        self.user_tres: dict[str, dict[str, int]] = {"cores": {}, "nodes": {}}
        self.tres_sources: dict[tuple[str, str], str] = {}
        # jobs, cores and nodes an account's users hold at once over all queues (Slurm's QOS
        # MaxJobsPA, MaxTRESPA cpu= and node=), and all the jobs of a QOS (GrpJobs, GrpTRES)
        self.accounts = Pool("UserLimit: account")
        self.qos = Pool("QOSLimit: QOS")
        self.array_caps: dict[str, int] = {}  # tasks of a job array running at once (Slurm's ``%N``)
        self.by_array: dict[str, set] = {}
        self.full_arrays: dict[str, tuple[int, int]] = {}  # the same for arrays and their throttles
        # array -> (start, end, exceeded): the last answer of ``array_exceeded``, until a task's
        # span is added or discarded (a pass asks the same for every task of a class)
        self._array_answers: dict[str, tuple[int, int, bool]] = {}
        self._configured()

    def _configured(self) -> None:
        """Note what is limited (asked at every fit: attributes, not properties)."""
        self.tres_limited = any(self.user_tres.values())
        self.users_limited = bool(self.user_caps) or self.user_default is not None or self.tres_limited
        self.accounts_limited = self.accounts.limited
        self.qos_limited = self.qos.limited
        self.active = (bool(self.queues) or self.users_limited or bool(self.array_caps)  # any limit at all
                       or self.accounts_limited or self.qos_limited)

    def limit_users(self, caps: dict[str, int], default: int | None = None, source: str = "") -> None:
        """Cap the jobs each user runs at once over all queues: ``caps`` per user (a second call
        keeps the lower cap), ``default`` for the others (None: unlimited). Call before any
        allocation is added."""
        for user, cap in caps.items():
            if user not in self.user_caps or cap < self.user_caps[user]:
                self.user_caps[user] = cap
                self.user_sources[user] = source
        if default is not None:
            self.user_default = default
        self._configured()

    def limit_user_tres(self, cores: dict[str, int], nodes: dict[str, int], source: str = "") -> None:
        """Cap the cores and the nodes each user holds at once over all queues (a second call
        keeps the lower cap). Call before any allocation is added."""
        for kind, caps in (("cores", cores), ("nodes", nodes)):
            mine = self.user_tres[kind]
            for user, cap in caps.items():
                if user not in mine or cap < mine[user]:
                    mine[user] = cap
                    self.tres_sources[kind, user] = source
        self._configured()

    def limit_accounts(self, jobs: dict[str, int], cores: dict[str, int], nodes: dict[str, int],
                       source: str = "") -> None:
        """Cap the jobs, cores and nodes the users of each account hold at once over all
        queues, per account (a second call keeps the lower cap). Call before any allocation is
        added."""
        self.accounts.limit(jobs, cores, nodes, source)
        self._configured()

    def limit_qos(self, jobs: dict[str, int], cores: dict[str, int], nodes: dict[str, int], source: str = "") -> None:
        """Cap the jobs, cores and nodes all the jobs of each QOS hold at once (Slurm's
        ``GrpJobs`` and ``GrpTRES`` of a QOS), per QOS (a second call keeps the lower cap). Call
        before any allocation is added."""
        self.qos.limit(jobs, cores, nodes, source)
        self._configured()

    def account_exceeded(self, account: str, start: int, end: int, cores: int = 0, nodes: int = 0) -> str | None:
        """The account cap a job of ``account`` in ``[start, end)`` on ``cores`` cores and
        ``nodes`` nodes would break, or None (``Pool.exceeded``).

        >>> class Job:  # a job of user u, account p1, on 3 cores of 1 node from ``start`` to 100
        ...     def __init__(self, start):
        ...         self.start, self.end, self.user, self.queue, self.cores = start, 100, "u", "q", 3
        ...         self.job = type("J", (), {"nodes": 1, "data": {"account": "p1"}})()
        >>> limits = QueueLimits({})
        >>> limits.limit_accounts({"p1": 2}, {"p1": 8}, {})
        >>> for start in (0, 50):
        ...     limits.add(Job(start))
        >>> limits.account_exceeded("p1", 100, 150), limits.account_exceeded("p2", 0, 50, cores=99)
        (None, None)
        >>> limits.account_exceeded("p1", 60, 150)
        'UserLimit: account p1 runs at most 2 jobs at once'
        >>> limits.limit_accounts({}, {"p1": 5}, {}); limits.account_exceeded("p1", 20, 40, cores=3)
        'UserLimit: account p1 holds at most 5 cores at once'
        """
        return self.accounts.exceeded(account, start, end, cores, nodes)

    def qos_exceeded(self, qos: str, start: int, end: int, cores: int = 0, nodes: int = 0) -> str | None:
        """The cap on all the jobs of ``qos`` (``limit_qos``) that one more of them in ``[start,
        end)`` on ``cores`` cores and ``nodes`` nodes would break, or None (``Pool.exceeded``).

        >>> class Job:  # a job of QOS long, on 4 cores of 2 nodes from ``start`` to 100
        ...     def __init__(self, start, user):
        ...         self.start, self.end, self.user, self.queue, self.cores = start, 100, user, "q", 4
        ...         self.job = type("J", (), {"nodes": 2, "data": {"qos": "long"}})()
        >>> limits = QueueLimits({})
        >>> limits.limit_qos({"long": 3}, {"long": 10}, {}, source=" (GrpJobs/GrpTRES)")
        >>> limits.add(Job(0, "ann")); limits.add(Job(50, "bob"))
        >>> limits.qos_exceeded("long", 60, 150, cores=2), limits.qos_exceeded("normal", 0, 50, cores=99)
        (None, None)
        >>> limits.qos_exceeded("long", 60, 150, cores=4)
        'QOSLimit: QOS long holds at most 10 cores at once (GrpJobs/GrpTRES)'
        """
        return self.qos.exceeded(qos, start, end, cores, nodes)

    def user_cap(self, user: str) -> int | None:
        return self.user_caps.get(user, self.user_default)

    def throttle(self, caps: dict[str, int]) -> None:
        """Run at most ``caps[a]`` tasks of job array ``a`` at once. Call before any allocation is added."""
        self.array_caps = dict(caps)
        self._configured()

    def add(self, span: Span) -> None:
        if span.queue in self.spans:
            self.spans[span.queue].add(span)
            if span.queue in self._per_user_queues:
                self.per_user.setdefault((span.queue, span.user), set()).add(span)
        if span.user and self.users_limited:
            self.by_user.setdefault(span.user, set()).add(span)
        if self.accounts_limited:
            self.accounts.add(_account_of(span), span)
        if self.qos_limited:
            self.qos.add(_qos_of(span), span)
        if self.array_caps:
            array = _array_of(span)
            if array in self.array_caps:
                self.by_array.setdefault(array, set()).add(span)
                self._array_answers.pop(array, None)

    def discard(self, span: Span) -> None:
        if span.queue in self.spans:
            self.spans[span.queue].discard(span)
            self.full_queues.pop(span.queue, None)
            if span.queue in self._per_user_queues:
                self.per_user.get((span.queue, span.user), set()).discard(span)
                self.full_per_user.pop((span.queue, span.user), None)
        if span.user in self.by_user:
            self.by_user[span.user].discard(span)
            self.full_users.pop(span.user, None)
            if span.user in self.watched:
                self._freed.add(span.user)
        if self.accounts_limited:
            self.accounts.discard(_account_of(span), span)
        if self.qos_limited:
            self.qos.discard(_qos_of(span), span)
        if self.by_array:
            array = _array_of(span)
            if array in self.by_array:
                self.by_array[array].discard(span)
                self.full_arrays.pop(array, None)
                self._array_answers.pop(array, None)

    def array_exceeded(self, array: str | None, start: int, end: int) -> str | None:
        """The throttle a task of ``array`` in ``[start, end)`` would break, or None.  O(m log m)
        for m tasks of the array running or planned; O(1) when fewer than the throttle, while
        the tasks at ``start`` fill it (``full_arrays``: a pass asks for each task), or when
        asked the same as last time with no task's span added or discarded since (the tasks
        of a class, each asked in a pass while planned tasks fill the throttle later: 5,000
        tasks throttled to 10 with 500 reservations: ``predict`` 14.3 s -> 2.4 s).

        >>> class Task:  # a task of array a, running or planned in [10, 20)
        ...     queue, user, start, end = "q", "u", 10, 20
        ...     job = type("J", (), {"array": "a", "nodes": 1})()
        >>> limits = QueueLimits({}); limits.throttle({"a": 1}); task = Task(); limits.add(task)
        >>> [limits.array_exceeded("a", t, t + 5) is not None for t in (0, 0, 8, 8, 20)]
        [False, False, True, True, False]
        >>> limits.discard(task); limits.array_exceeded("a", 8, 13) is None
        True
        """
        cap = self.array_caps.get(array) if array is not None and self.array_caps else None
        if cap is None:
            return None
        known = self._array_answers.get(array)
        if known is not None and known[0] == start and known[1] == end:
            exceeded = known[2]
        else:
            exceeded = _at_cap(self.full_arrays, array, self.by_array.get(array, ()), cap, start, end)
            self._array_answers[array] = (start, end, exceeded)
        if not exceeded:
            return None
        return f"JobArrayTaskLimit: array {array} runs at most {cap} tasks at once"

    def user_exceeded(self, user: str, start: int, end: int, cores: int = 0, nodes: int = 0) -> str | None:
        """The user cap a job of ``user`` in ``[start, end)`` on ``cores`` cores and ``nodes``
        nodes would break, or None.  O(1) with fewer jobs than the cap or while its jobs at
        ``start`` fill it (``full_users``: a pass asks for each of a capped user's jobs), else
        O(m log m) for m jobs; a cap on cores or nodes: O(m log m).

        >>> class Job:  # a job of user u on 4 cores of 2 nodes
        ...     def __init__(self, start, end):
        ...         self.start, self.end, self.user, self.queue, self.cores = start, end, "u", "q", 4
        ...         self.job = type("J", (), {"nodes": 2})()
        >>> limits = QueueLimits({})
        >>> limits.limit_user_tres({"u": 6}, {"u": 3})
        >>> limits.add(Job(0, 100))
        >>> limits.user_exceeded("u", 50, 150, cores=2, nodes=1), limits.user_exceeded("u", 100, 150, cores=6)
        (None, None)
        >>> limits.user_exceeded("u", 50, 150, cores=4, nodes=1)
        'UserLimit: user u holds at most 6 cores at once'
        >>> limits.user_exceeded("u", 50, 150, cores=1, nodes=2)
        'UserLimit: user u holds at most 3 nodes at once'
        """
        if not self.users_limited:
            return None
        cap = self.user_caps.get(user, self.user_default)
        if cap is not None:
            spans = self.by_user.get(user, ())
            if len(spans) >= cap and _at_cap(self.full_users, user, spans, cap, start, end):
                return f"UserLimit: user {user} runs at most {cap} jobs at once{self.user_sources.get(user, '')}"
        if not self.tres_limited:  # (a pass asks this of every job of a user with a cap)
            return None
        for kind, need, weight in (("cores", cores, _cores), ("nodes", nodes, _nodes)):
            most = self.user_tres[kind].get(user)
            if most is not None and need and peak(self.by_user.get(user, ()), start, end, weight) + need > most:
                return (f"UserLimit: user {user} holds at most {most} {kind} at once"
                        f"{self.tres_sources.get((kind, user), '')}")
        return None

    def full_until(self, user: str, t: int) -> int | None:
        """If ``user`` runs as many jobs at ``t`` as the cap allows: the earliest end among
        them, until which every job of the user is held back, unless one of them is
        discarded before (spans added never lower the count). Else None.  O(m) for m jobs.

        >>> class Job:  # a job of user u in queue q (hashable, as allocations are)
        ...     def __init__(self, start, end):
        ...         self.start, self.end, self.user, self.queue, self.job = start, end, "u", "q", None
        >>> limits = QueueLimits({})
        >>> limits.limit_users({"u": 2})
        >>> a, b = Job(0, 100), Job(50, 80)
        >>> limits.add(a); limits.add(b)
        >>> limits.full_until("u", 60), limits.full_until("u", 90), limits.full_until("v", 60)
        (80, None, None)
        >>> limits.watch("u", 80); limits.released(79), limits.released(80)
        ([], ['u'])
        >>> limits.watch("u", 80); limits.discard(b); limits.released(60), limits.full_until("u", 60)
        (['u'], None)
        """
        cap = self.user_cap(user) if self.users_limited else None
        spans = self.by_user.get(user, ())
        if cap is None or len(spans) < cap:
            return None
        return _full_at(self.full_users, user, spans, cap, t)

    def watch(self, user: str, until: int) -> None:
        """Watch ``user``, found full (``full_until``) until ``until``, for ``released``.  O(log w)."""
        self.watched[user] = until
        heappush(self._until, (until, user))

    def released(self, now: int) -> list[str]:
        """The watched users who may no longer be full at ``now``: a span of theirs was
        discarded, or ``now`` reached their ``until``. They are watched no more. Sorted;
        O(k log w) for k of w watched users."""
        users, heap = self._freed, self._until
        while heap and heap[0][0] <= now:
            until, user = heappop(heap)
            if self.watched.get(user) == until:
                users.add(user)
        out = sorted(u for u in users if u in self.watched)
        for user in out:
            del self.watched[user]
        users.clear()
        return out

    def exceeded(self, queue: str, user: str, cores: int, start: int, end: int, nodes: int = 0,
                 account: str = "", qos: str = "") -> str | None:
        """Which limit a job of ``cores`` on ``nodes`` in ``[start, end)`` would break, or None."""
        capped = self.user_exceeded(user, start, end, cores, nodes) or (
            self.accounts.exceeded(account, start, end, cores, nodes) if self.accounts_limited else None) or (
            self.qos.exceeded(qos, start, end, cores, nodes) if self.qos_limited else None)
        if capped is not None:
            return capped
        q = self.queues.get(queue)
        if q is None:
            return None
        spans = self.spans[queue]
        if end == start:
            end = start + 1  # a zero-length job still counts at its start instant
        if q.maxjobs is not None and _at_cap(self.full_queues, queue, spans, q.maxjobs, start, end):
            return f"QueueLimit: queue {queue} runs at most {q.maxjobs} jobs"
        if q.maxjobsperuser is not None and _at_cap(self.full_per_user, (queue, user), self.per_user.get((queue, user), ()),
                                                    q.maxjobsperuser, start, end):
            return f"QueueLimit: queue {queue} runs at most {q.maxjobsperuser} jobs per user"
        if q.starters is not None and peak(spans, start, end, lambda s: s.cores) + cores > q.starters:
            return f"QueueLimit: queue {queue} uses at most {q.starters} cores"
        return None


def _one(span: Span) -> int:
    return 1


def _cores(span: Span) -> int:
    return span.cores


def _account_of(span: Span) -> str:
    """The account of a span's job (Slurm's ``Account``, LLview's ``account``); "" for none."""
    job = getattr(span, "job", None)
    return job.data.get("account", "").strip() if job is not None else ""


def _qos_of(span: Span) -> str:
    """The QOS of a span's job (Slurm's ``QOS``, LLview's ``qos``); "" for none."""
    job = getattr(span, "job", None)
    return job.data.get("qos", "").strip() if job is not None else ""


def _nodes(span: Span) -> int:
    job = getattr(span, "job", None)
    return job.nodes if job is not None else 0


def _at_cap(memo: dict, key: Hashable, spans: set, cap: int, start: int, end: int) -> bool:
    """Would one more job in ``[start, end)`` make more than ``cap`` of ``spans`` active at
    once (a user's, an array's, a queue's jobs)? O(1) while there are fewer spans than the cap
    or ``_full_at`` remembers them full at ``start``, else O(m log m) for m spans."""
    return len(spans) >= cap and (_full_at(memo, key, spans, cap, start) is not None
                                  or peak(spans, start, max(end, start + 1), _one) + 1 > cap)


def _full_at(memo: dict, key: Hashable, spans: set, cap: int, t: int) -> int | None:
    """If ``spans`` active at ``t`` fill ``cap``: the earliest end among them, until which
    they still fill it, unless one is discarded first (spans added never lower the count).
    Remembered in ``memo[key]`` as ``(t, until)``; the owner of ``memo`` drops the entry when
    it discards a span under ``key``. Else None.  O(1) remembered, else O(m)."""
    known = memo.get(key)
    if known is not None and known[0] <= t < known[1]:
        return known[1]
    ends = [s.end for s in spans if s.start <= t < s.end]
    if len(ends) < cap:
        return None
    until = min(ends)
    memo[key] = (t, until)
    return until


def _array_of(span: Span) -> str | None:
    """The job array an allocation's job is a task of, if any."""
    job = getattr(span, "job", None)
    return job.array if job is not None else None
