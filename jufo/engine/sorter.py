"""Job priority: a restricted arithmetic formula over job keys, and the queue order it gives.

Names in a formula: numeric job keys (``totalcores``, ``wall``, ``userprio``, ... — any key
of any job, and the documented ones even when no job has them), ``DATEkey`` (that date key
in seconds since the Unix epoch, e.g. ``DATEqueuedate``), ``AGE`` (seconds since the job's
queue date at the simulated time) and ``NOW`` (the simulated time, epoch seconds). Only
numbers, + - * / // % **, parentheses and the calls min, max, abs, log, sqrt are allowed.
The formula is checked with Python's ``ast`` before anything runs, then evaluated by asteval.
A job lacking a key gets 0 for it. Higher value = higher priority; ties go to the earlier
queue date, then to document order.
"""

from __future__ import annotations

import ast
import io
import math
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any
from bisect import bisect_left, bisect_right, insort
from heapq import heapify, heappop, heappush, heapreplace
from operator import attrgetter

from sortedcontainers import SortedKeyList

from ..io.dates import parse_date
from ..io.errors import Report
from .job import Job

CALLS = {"min": min, "max": max, "abs": abs, "log": math.log, "sqrt": math.sqrt}
TIME_NAMES = {"AGE", "NOW"}
# Keys a formula may use even when no job in the snapshot carries them ("absent means 0").
DOCUMENTED_KEYS = {
    "wall", "nummachines", "numnodes", "taskspernode", "totalcores", "totaltasks", "tpt", "ppn",
    "totalgpus", "userprio", "classprio", "groupprio", "sysprio", "favored", "restart", "runtime",
    "wallsoft", "actualruntime", "qos_priority",
}
DATE_KEYS = {"queuedate", "dispatchdate", "starttime", "endtime", "submittime"}
_OPERATORS = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow, ast.USub, ast.UAdd)


class FormulaError(ValueError):
    """The formula is not allowed; the message says which part."""


class Formula:
    """A checked priority formula.

    >>> f = Formula("totalcores * 1000 - DATEqueuedate", [])
    >>> sorted(f.names), f.time_dependent
    (['DATEqueuedate', 'totalcores'], False)
    >>> Formula("__import__('os')", [])
    Traceback (most recent call last):
    ...
    jufo.engine.sorter.FormulaError: calls other than min, max, abs, log, sqrt are not allowed
    """

    def __init__(self, text: str, jobs: Iterable[Job]) -> None:
        self.text = text
        if len(text) > MAX_FORMULA_CHARS:
            raise FormulaError(f"longer than {MAX_FORMULA_CHARS:,} characters")
        try:
            tree = ast.parse(text.strip(), mode="eval")
        except (SyntaxError, RecursionError, MemoryError) as err:
            raise FormulaError(f"does not parse: {getattr(err, 'msg', 'too deeply nested')}") from None
        self.names: set[str] = set()
        nodes = 0
        for node, depth in _walk(tree):
            nodes += 1
            if nodes > MAX_FORMULA_NODES or depth > MAX_FORMULA_DEPTH:
                raise FormulaError(f"too large: at most {MAX_FORMULA_NODES} terms and operators, "
                                   f"nested at most {MAX_FORMULA_DEPTH} deep")
            self._check(node)
        for name in sorted(self.names):
            if not _known(name, jobs):
                raise FormulaError(f"unknown name {name!r}: not a numeric job key, DATEkey, AGE or NOW")
        self.time_dependent = bool(self.names & TIME_NAMES)
        # one key, maybe negated (the default -DATEqueuedate, userprio): no interpreter needed
        body, sign = tree.body, 1.0
        if isinstance(body, ast.UnaryOp) and isinstance(body.op, (ast.USub, ast.UAdd)):
            body, sign = body.operand, (-1.0 if isinstance(body.op, ast.USub) else 1.0)
        self._single = (sign, body.id) if isinstance(body, ast.Name) and body.id not in CALLS else None
        if self._single is not None:  # nothing to overflow, and asteval (with numpy) is not imported
            return
        # evaluated in floats: an intermediate value beyond ~1e308 overflows at once instead of
        # growing a big integer for minutes; one that overflows with every name at 1 is refused
        floats = ast.unparse(_FloatConstants().visit(tree))
        from asteval import Interpreter  # here: importing asteval (and numpy) costs ~0.15 s

        self._interp = Interpreter(minimal=True, use_numpy=False, writer=io.StringIO(), err_writer=io.StringIO())
        module = self._interp.parse(floats)
        self._code = module.body[0].value  # the expression itself: two interpreter levels fewer
        probe = self._interp
        probe.symtable.update(CALLS)
        probe.symtable.update({name: 1.0 for name in self.names})
        result = probe(floats)
        if any(e.exc is OverflowError for e in probe.error) or (isinstance(result, float) and math.isinf(result)):
            raise FormulaError("overflows (a value beyond 1e308) even with every name at 1")

    def _check(self, node: ast.AST) -> None:
        if isinstance(node, (ast.Expression, ast.BinOp, ast.UnaryOp, ast.Load)) or isinstance(node, _OPERATORS):
            return
        if isinstance(node, ast.Constant):
            if isinstance(node.value, bool) or not isinstance(node.value, (int, float)):
                raise FormulaError(f"only numbers are allowed as constants, not {node.value!r}")
            return
        if isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Name) or node.func.id not in CALLS or node.keywords:
                raise FormulaError("calls other than min, max, abs, log, sqrt are not allowed")
            return
        if isinstance(node, ast.Name):
            if node.id not in CALLS:
                self.names.add(node.id)
            return
        raise FormulaError(f"{type(node).__name__} is not allowed (only arithmetic over job keys)")

    def evaluate(self, values: dict[str, float]) -> float:
        """Value for one job's ``values``; NaN if the arithmetic fails (e.g. division by zero).
        A formula of one key is read directly (10x faster than the interpreter)."""
        if self._single is not None:
            sign, name = self._single
            return sign * float(values[name])
        table = self._interp.symtable
        table.update(CALLS)
        table.update(values)
        self._interp.error = []
        result = self._interp.run(self._code, with_raise=False)
        if self._interp.error or not isinstance(result, (int, float)):
            return math.nan
        return float(result)


MAX_FORMULA_CHARS = 4000
MAX_FORMULA_NODES = 400  # AST nodes: a formula of ~100 terms
MAX_FORMULA_DEPTH = 60


def _walk(tree: ast.AST):
    """Every node with its depth, without recursion (a deep formula must not crash the check)."""
    stack = [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        yield node, depth
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))


class _FloatConstants(ast.NodeTransformer):
    """Integer constants as floats: the formula is evaluated in floating point."""

    def visit_Constant(self, node: ast.Constant) -> ast.Constant:
        if isinstance(node.value, int) and not isinstance(node.value, bool):
            try:
                return ast.copy_location(ast.Constant(float(node.value)), node)
            except OverflowError:
                raise FormulaError(f"the number {str(node.value)[:20]}... is beyond 1e308") from None
        return node


def _known(name: str, jobs: Iterable[Job]) -> bool:
    """Whether a formula may use ``name``: a documented key, AGE/NOW, or a key that holds a
    number (``DATEkey``: a date) in at least one job. Scans jobs only until one does."""
    if name in DOCUMENTED_KEYS or name in TIME_NAMES:
        return True
    if name.startswith("DATE") and name[4:] in DATE_KEYS:
        return True
    for job in jobs:
        value = job.data.get(name[4:] if name.startswith("DATE") else name)
        if value is None:
            continue
        try:
            if name.startswith("DATE"):
                parse_date(value)
            else:
                float(value)
            return True
        except ValueError:
            continue
    return False


class JobSorter:
    """Orders waiting jobs: priority descending, then queue date, then document order.

    Static formulas (no AGE/NOW) are evaluated once per job; time-dependent ones at every
    event time the queue is ordered.
    """

    def __init__(self, formula: Formula, epoch: int, report: Report) -> None:
        self.formula = formula
        self.epoch = epoch
        self.report = report
        self._warned: set[str] = set()

    @property
    def static(self) -> bool:
        return not self.formula.time_dependent

    def key(self, job: Job, now: int) -> tuple:
        """Sort key of ``job`` at simulated time ``now`` (seconds from time zero)."""
        if self.static:  # computed once, kept on the job (the waiting queue sorts by it)
            if not job.order_key:
                job.order_key = (-self.priority(job, now), job.queued, job.index)
            return job.order_key
        return (-self.priority(job, now), job.queued, job.index)

    def priority(self, job: Job, now: int) -> float:
        values: dict[str, float] = {}
        for name in self.formula.names:
            if name == "AGE":
                values[name] = float(now - job.queued)
            elif name == "NOW":
                values[name] = float(self.epoch + now)
            elif name.startswith("DATE") and (name[4:] in job.data or name == "DATEqueuedate"):
                values[name] = self._date(job, name[4:])
            else:
                values[name] = self._number(job, name)
        value = self.formula.evaluate(values)
        if math.isnan(value):
            if job.id not in self._warned:
                self._warned.add(job.id)
                self.report.warn(job.label, "system_sysprio", self.formula.text,
                                 "cannot be evaluated for this job; it gets the lowest priority")
            return -math.inf
        return value

    def _number(self, job: Job, key: str) -> float:
        raw = job.data.get(key)
        if raw is None or raw.strip() == "":
            return 0.0
        try:
            return float(raw)
        except ValueError:
            if (job.id, key) not in self._warned:
                self._warned.add((job.id, key))
                self.report.warn(job.label, key, raw, "not a number; the priority formula uses 0")
            return 0.0

    def _date(self, job: Job, key: str) -> float:
        if key == "queuedate":  # already read (or defaulted, with a warning) by the job reader
            return float(self.epoch + job.queued)
        try:
            return float(parse_date(job.data[key])[0])
        except ValueError:
            return 0.0


class WaitingQueue:
    """The waiting jobs in priority order.

    With a static formula the order is kept incrementally (O(log n) per change), and the
    jobs that hold no reservation are also kept per *request class* (group, shape, size,
    wall, and the job array of a task): jobs of one class fit in exactly the same places, so
    once one of them fails in a pass, ``walk`` passes over the whole class (and every class a
    failure covers) at once, and over an array's tasks at once while its throttle is full.
    The jobs of an owner held at its cap can be parked outside the classes (``park``).
    With a time-dependent formula the queue is sorted again at each pass and walked whole.
    """

    def __init__(self, sorter: JobSorter, size: Callable[[Job], int],
                 group: Callable[[Job], Any] = lambda job: None) -> None:
        self.sorter = sorter
        self.size = size  # job → the number a free-resource bound is compared with
        self.group = group  # job → its top-dog group
        self.static = sorter.static
        key = attrgetter("order_key")  # set on add: the static sort key
        self._key = key
        self._jobs: SortedKeyList | list = SortedKeyList(key=key) if self.static else []
        self._count = 0  # len(_jobs), without SortedKeyList's Python-level __len__ (asked once per event)
        # unreserved jobs by request class, each a list in priority order: most hold one job,
        # and a list is made and dropped 8x faster than a SortedKeyList
        self._classes: dict[tuple, list[Job]] = {}
        self._filed: dict[Job, tuple] = {}  # each unreserved job's request class
        self._by_size: dict[int, set[tuple]] = {}  # request classes by size
        self._sizes: list[int] = []  # the sizes in _by_size, ascending (a few hundred at most)
        self.groups: Counter = Counter()  # request classes per top-dog group
        # jobs of owners held at their cap, out of the request classes meanwhile (``park``)
        self.parked: dict[Any, dict[Job, None]] = {}
        self._owned: dict[Any, set[Job]] | None = None  # owner -> filed jobs, kept from the first park on

    def __len__(self) -> int:
        return self._count

    def __bool__(self) -> bool:
        return self._count > 0

    def __iter__(self):
        return iter(self._jobs)

    def _class(self, job: Job) -> tuple:
        shape, size = job.shape
        return (self.group(job), shape, size, job.wall, job.array)

    def add(self, job: Job) -> None:
        """O(log n)."""
        self._count += 1
        if not self.static:
            self._jobs.append(job)
            return
        self.sorter.key(job, 0)  # sets job.order_key
        self._jobs.add(job)
        parked = self.parked.get(job.owner) if self.parked else None
        if parked is not None:
            parked[job] = None
        else:
            self._file(job)

    def _file(self, job: Job) -> None:
        cls = self._filed[job] = self._class(job)
        if self._owned is not None:
            self._owned.setdefault(job.owner, set()).add(job)
        bucket = self._classes.get(cls)
        if bucket is None:
            bucket = self._classes[cls] = []
            size = cls[2]
            if size not in self._by_size:
                self._by_size[size] = set()
                insort(self._sizes, size)
            self._by_size[size].add(cls)
            self.groups[cls[0]] += 1
        insort(bucket, job, key=self._key)

    def _unfile(self, job: Job) -> None:
        cls = self._filed.pop(job, None)
        if cls is None:
            if self.parked and job.owner in self.parked:
                self.parked[job.owner].pop(job, None)
        else:
            if self._owned is not None:
                owned = self._owned[job.owner]
                owned.discard(job)
                if not owned:
                    del self._owned[job.owner]
            bucket = self._classes[cls]
            i = bisect_left(bucket, job.order_key, key=self._key)
            while bucket[i] is not job:  # equal keys (the index breaks every tie, though)
                i += 1
            del bucket[i]
            if not bucket:
                del self._classes[cls]
                size = cls[2]
                self._by_size[size].discard(cls)
                if not self._by_size[size]:
                    del self._by_size[size]
                    self._sizes.remove(size)
                self.groups[cls[0]] -= 1
                if not self.groups[cls[0]]:
                    del self.groups[cls[0]]

    def remove(self, job: Job) -> None:
        """O(log n) (O(n) with a time-dependent formula)."""
        self._jobs.remove(job)
        self._count -= 1
        if self.static:
            self._unfile(job)

    def reserved(self, job: Job) -> None:
        """``job`` holds a reservation now: walks reach it only when its slot is due."""
        if self.static:
            self._unfile(job)

    def unreserved(self, job: Job) -> None:
        """``job`` lost its reservation (``replan``): walks reach it as any waiting job again
        (a parked owner's job stays parked).  O(log n)."""
        if self.static:
            if job.owner in self.parked:
                self.parked[job.owner][job] = None
            else:
                self._file(job)

    def park(self, owner: Any) -> None:
        """Take ``owner``'s unreserved jobs out of the request classes until ``unpark``: walks
        pass over none of them, and jobs of ``owner`` that come meanwhile are parked too. For
        an owner at its cap (see ``Backfilling``), whose jobs every pass would visit only to
        find them held back. Static order only; O(k log n) for the owner's k jobs (the first
        call O(n))."""
        if self._owned is None:
            self._owned = {}
            for job in self._filed:
                self._owned.setdefault(job.owner, set()).add(job)
        kept = self.parked.setdefault(owner, {})
        for job in sorted(self._owned.get(owner, ()), key=self._key):
            self._unfile(job)
            kept[job] = None

    def unpark(self, owner: Any) -> None:
        """File ``owner``'s parked jobs in their request classes again.  O(k log n)."""
        for job in self.parked.pop(owner, ()):
            self._file(job)

    def sort(self, jobs, now: int) -> list[Job]:
        """Queued ``jobs`` in priority order at ``now`` (static: by the key each carries).  O(k log k)."""
        return sorted(jobs, key=self._key if self.static else lambda j: self.sorter.key(j, now))

    def ordered(self, now: int) -> list[Job]:
        """All waiting jobs in priority order at ``now`` (a copy).  O(n), or O(n log n) re-sorted."""
        if not self.static:
            self._jobs.sort(key=lambda j: self.sorter.key(j, now))
        return list(self._jobs)

    def walk(self, due: list[Job], bound: int, skip, small_only: bool) -> Walk:
        """Static order only: ``due`` (jobs whose reservation starts now) and the unreserved
        jobs, merged in priority order, passing over each class as long as
        ``skip(group, shape, size, wall, array, bound)`` says none of its jobs can matter.
        ``small_only``: start from the classes of size ≤ ``bound`` only (no group can take a
        new reservation, so larger ones cannot matter until ``reopen``).

        O((jobs yielded + classes looked at) log n) per walk, however long the queue.
        """
        if small_only:
            # at the start of a pass nothing has failed and these fit the bound: none to skip
            sizes = self._sizes
            classes = [cls for size in sizes[:bisect_right(sizes, bound)] for cls in self._by_size[size]]
            return Walk(self, due, bound, skip, classes, checked=True)
        return Walk(self, due, bound, skip, list(self._classes))

    def ahead(self, job: Job) -> bool:
        """Static order only: does a job of higher priority wait?  O(1)."""
        first = self._jobs[0]
        return first is not job and first.order_key < job.order_key


class Walk:
    """One pass over a WaitingQueue (see ``WaitingQueue.walk``).

    ``reopen`` brings back every class not in the walk, from the current position on, when
    what ``skip`` depends on changes (a top dog started and freed a reservation slot).
    """

    def __init__(self, queue: WaitingQueue, due: list[Job], bound: int, skip, classes: list[tuple],
                 checked: bool = False) -> None:
        self.queue, self.bound, self.skip = queue, bound, skip
        self.heap: list[tuple] = [(job.order_key, 0, None, job) for job in due]
        self.at: tuple = ()
        buckets = queue._classes
        if checked:  # the caller knows none of ``classes`` is to be skipped now
            self.heap.extend((buckets[cls][0].order_key, id(cls), cls, buckets[cls][0]) for cls in classes)
            self.live: set[tuple] = set(classes)  # classes in the heap
        else:
            self.live = set()
            for cls in classes:
                self._push(cls, buckets[cls][0])
        heapify(self.heap)

    def _push(self, cls: tuple, job: Job, heap: bool = False) -> None:
        if self.skip(*cls, self.bound):
            return
        self.live.add(cls)
        if heap:
            heappush(self.heap, (job.order_key, id(cls), cls, job))
        else:
            self.heap.append((job.order_key, id(cls), cls, job))

    def __iter__(self) -> Walk:
        return self

    def __next__(self) -> Job:
        heap = self.heap
        while heap:
            key, _, cls, job = heap[0]
            if cls is not None and self.skip(*cls, self.bound):
                heappop(heap)
                self.live.discard(cls)
                continue
            self.at = key
            if cls is None:
                heappop(heap)
            else:
                nxt = self._after(cls, key)
                if nxt is None:
                    heappop(heap)
                    self.live.discard(cls)
                else:
                    heapreplace(heap, (nxt.order_key, id(cls), cls, nxt))
            return job
        raise StopIteration

    def _after(self, cls: tuple, key: tuple) -> Job | None:
        bucket = self.queue._classes.get(cls)
        if bucket is None:
            return None
        i = bisect_right(bucket, key, key=self.queue._key)
        return bucket[i] if i < len(bucket) else None

    def passed_over(self, group: Any, key: tuple) -> bool:
        """Is a job of ``group`` ahead of ``key`` in a class this walk has passed over (skipped,
        or left out as larger than what is free)? It was refused a reservation as surely as a
        job looked at and refused.  O(classes); asked only when a top dog starts."""
        return any(cls[0] == group and cls not in self.live and bucket[0].order_key < key
                   for cls, bucket in self.queue._classes.items())

    def reopen(self) -> None:
        """Bring back every class not in the walk, from the current position on.  O(classes)."""
        for cls in list(self.queue._classes):
            if cls not in self.live:
                nxt = self._after(cls, self.at)
                if nxt is not None:
                    self._push(cls, nxt, heap=True)
