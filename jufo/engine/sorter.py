"""Job priority: a restricted arithmetic formula over job keys, and the queue order it gives.

Names in a formula: numeric job keys (``totalcores``, ``wall``, ``userprio``, ... — any key
of any job, and the documented ones even when no job has them), ``DATEkey`` (that date key
in seconds since the Unix epoch, e.g. ``DATEqueuedate``), ``AGE`` (seconds since the job's
queue date at the simulated time) and ``NOW`` (the simulated time, epoch seconds). Only
numbers, + - * / // % **, parentheses and the calls min, max, abs, log, sqrt are allowed.
The formula is checked with Python's ``ast`` before anything runs, then compiled into nested
closures over the checked tree (``_compile``), which compute what asteval computed, to the bit
(a test compares them), in 1.0 µs instead of 8.5 µs for Slurm's age-and-size formula; no code
of the input's is ever run.
A job lacking a key gets 0 for it. Higher value = higher priority; ties go to the earlier
queue date, then to document order.
"""

from __future__ import annotations

import ast
import math
import numbers
import operator
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
SUBMIT_ORDER = "-DATEqueuedate"  # the default priority: the oldest job first, whoever its owner
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
        self.saturation: float | None = None  # the age from which the value no longer changes (``_saturation``)
        # time-dependent, but never lower at a greater age (``_rising``): jobs alike in all else keep their order
        self.rising = self.time_dependent and (self._single is None or sign > 0 or self._single[1] == "NOW")
        if self._single is not None:  # nothing to overflow
            return
        # evaluated in floats: an intermediate value beyond ~1e308 overflows at once instead of
        # growing a big integer for minutes; one that overflows with every name at 1 is refused
        self.floats = ast.unparse(_FloatConstants().visit(tree))  # what asteval would evaluate
        self._tree = ast.parse(self.floats, mode="eval").body
        self._code = _compile(self._tree)
        try:
            result = self._code({name: 1.0 for name in self.names})
        except OverflowError:
            result = math.inf
        except Exception:  # noqa: BLE001 - any other failure is a job's (NaN), not the formula's
            result = None
        if isinstance(result, float) and math.isinf(result):
            raise FormulaError("overflows (a value beyond 1e308) even with every name at 1")
        self.saturation = _saturation(self._tree)
        self.rising = self.time_dependent and _rising(self._tree)

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
        """Value for one job's ``values``; NaN if the arithmetic fails (e.g. division by zero)
        or does not give a real number. A formula of one key is read directly."""
        if self._single is not None:
            sign, name = self._single
            return sign * float(values[name])
        try:
            result = self._code(values)
        except Exception:  # noqa: BLE001 - ZeroDivisionError, OverflowError, a log of 0, ...: no value
            return math.nan
        return _real(result)

    def at_times(self, values: dict[str, float]) -> Callable[[dict[str, float]], float]:
        """The formula for one job: every part that names neither AGE nor NOW evaluated once
        with the job's ``values``; the result takes ``{"AGE": ..., "NOW": ...}`` and gives
        what ``evaluate`` gives for all the values together. A time-dependent formula orders
        the queue anew at every event: evaluating the rest once per job, not every time,
        is what keeps Slurm's age factor cheap.

        >>> f = Formula("1000 * min(AGE, 3600) / 3600 + totalcores / 2", [])
        >>> at = f.at_times({"totalcores": 8.0})
        >>> at({"AGE": 1800.0}), f.evaluate({"AGE": 1800.0, "totalcores": 8.0})
        (504.0, 504.0)
        >>> Formula("AGE / totalcores", []).at_times({"totalcores": 0.0})({"AGE": 5.0})
        nan
        """
        if self._single is not None:
            sign, name = self._single
            if name in TIME_NAMES:
                return lambda env: sign * float(env[name])
            fixed = sign * float(values[name])
            return lambda env: fixed
        try:
            fixed, code = _partial(self._tree, values)
        except Exception:  # noqa: BLE001 - a part without time fails for this job: no value ever
            return lambda env: math.nan
        if fixed:
            value = _real(code)
            return lambda env: value

        def run(env: dict[str, float]) -> float:
            try:
                return _real(code(env))
            except Exception:  # noqa: BLE001 - as in evaluate
                return math.nan
        return run


def _saturation(tree: ast.AST) -> float | None:
    """The age from which a formula's value stops changing: where every AGE in it stands in a
    ``min`` with numbers only (Slurm's age factor, ``min(AGE, 604800)``) and NOW nowhere, past
    the largest of those mins' smallest numbers each ``min`` gives that number (the same
    float: at a tie ``min`` returns AGE, which equals it), so every operation after it
    computes what it computed at that age, to the bit. None: no such age (AGE elsewhere, NOW).

    >>> [_saturation(ast.parse(f, mode="eval").body) for f in
    ...  ("1000.0 * min(AGE, 3600.0) / 3600.0 + x", "min(7.0, AGE, 5.0) + min(AGE, 2.0 * 3.0)", "AGE", "min(AGE, NOW)")]
    [3600.0, 6.0, None, None]
    """
    capped: set[int] = set()  # ids of the AGE names inside such a min
    ages: list[float] = []
    for node, _ in _walk(tree):
        if isinstance(node, ast.Name) and node.id == "NOW":
            return None
        if isinstance(node, ast.Call) and node.func.id == "min":
            names = [arg for arg in node.args if isinstance(arg, ast.Name) and arg.id == "AGE"]
            numbers = [x for x in map(_number, node.args) if x is not None]
            if len(names) == 1 and len(numbers) == len(node.args) - 1 >= 1:
                capped.add(id(names[0]))
                ages.append(min(numbers))
    for node, _ in _walk(tree):
        if isinstance(node, ast.Name) and node.id == "AGE" and id(node) not in capped:
            return None
    if not ages or math.isinf(max(ages)):
        return None
    return max(ages)


def _rising(node: ast.AST) -> bool:
    """Whether a formula's value never falls as AGE grows, whatever the other names hold (NOW
    is one number at any time): built from parts without AGE, AGE itself, sums, a difference
    whose right part has no AGE, products and quotients by a positive number, and ``min`` and
    ``max``. Each such float operation is monotone, its rounding too, so two jobs whose other
    values are the same are ordered by their ages at every time: the older first, and at a
    tie the older by the queue date anyway. Anything else with AGE in it (a power, ``abs``,
    ``log``, a negation): False.

    >>> [_rising(ast.parse(f, mode="eval").body) for f in
    ...  ("1000.0 * min(AGE, 3600.0) / 3600.0 + x / 2.0", "max(AGE - x, NOW) * 2.0", "x * AGE", "-AGE", "AGE ** 2.0")]
    [True, True, False, False, False]
    """
    if _age_free(node) or isinstance(node, ast.Name):
        return True
    if isinstance(node, ast.UnaryOp):
        return isinstance(node.op, ast.UAdd) and _rising(node.operand)
    if isinstance(node, ast.Call):
        return node.func.id in ("min", "max") and all(_rising(arg) for arg in node.args)
    if not isinstance(node, ast.BinOp):
        return False
    left, right = node.left, node.right
    if isinstance(node.op, ast.Add):
        return _rising(left) and _rising(right)
    if isinstance(node.op, ast.Sub):
        return _rising(left) and _age_free(right)
    if isinstance(node.op, ast.Mult):
        return ((_positive(left) and _rising(right)) or (_positive(right) and _rising(left)))
    if isinstance(node.op, ast.Div):
        return _positive(right) and _rising(left)
    return False


def _age_free(node: ast.AST) -> bool:
    """A part of a formula without AGE."""
    return not any(isinstance(n, ast.Name) and n.id == "AGE" for n, _ in _walk(node))


def _positive(node: ast.AST) -> bool:
    """A part naming nothing whose value is a positive (finite) number."""
    value = _number(node)
    return value is not None and 0 < value < math.inf


def _number(node: ast.AST) -> float | None:
    """The value of a part of a formula that names nothing (``7 * 86400``, ``-5``), if it
    is a real number; else None."""
    if any(isinstance(n, ast.Name) for n, _ in _walk(node)):
        return None
    try:
        value = _partial(node, None)[1]
    except Exception:  # noqa: BLE001 - it fails (1 / 0): no number
        return None
    return float(value) if isinstance(value, (int, float)) and not math.isnan(value) else None


def _real(result: Any) -> float:
    """A formula's value as a float; NaN where it is not a real number (a complex one: a
    negative base's root)."""
    return float(result) if isinstance(result, (int, float)) else math.nan


MAX_EXPONENT = 10_000  # as asteval's safe_pow: a larger exponent is an error (NaN)


def _power(base: Any, exponent: Any) -> Any:
    """``base ** exponent``, refusing what asteval's ``safe_pow`` refuses."""
    if isinstance(exponent, numbers.Number) and exponent > MAX_EXPONENT:
        raise ValueError(f"exponent beyond {MAX_EXPONENT}")
    return base ** exponent


_BINARY: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: _power}


def _compile(node: ast.AST) -> Callable[[dict[str, float]], Any]:
    """A checked formula's tree (``Formula._check`` allowed every node) as nested closures
    over the names' values (``_partial`` with every name given at the call): Python's own
    float arithmetic, in the tree's order, as asteval evaluates it, without an interpreter
    walking the tree at every call. Recursion is bounded by the check's depth limit.

    >>> _compile(ast.parse("max(2.0 * x, 1.0) - -y", mode="eval").body)({"x": 3.0, "y": 1.0})
    7.0
    """
    try:
        fixed, code = _partial(node, None)
    except Exception as err:  # noqa: BLE001 - a part of constants alone fails (1 / 0): so does every call
        def failing(env: dict[str, float], err: Exception = err) -> Any:
            raise err
        return failing
    return (lambda env: code) if fixed else code


def _partial(node: ast.AST, values: dict[str, float] | None) -> tuple[bool, Any]:
    """``(True, value)`` for a part of a checked formula that names neither AGE nor NOW (with
    ``values`` None: no name at all), evaluated with ``values`` (raising as the whole would);
    else ``(False, closure)`` over the names' values at the call, its fixed parts held as
    their values. The operations of the tree in its order: the floats asteval computed."""
    if isinstance(node, ast.Constant):
        return True, node.value
    if isinstance(node, ast.Name):
        if values is None or node.id in TIME_NAMES:
            name = node.id
            return False, lambda env: env[name]
        return True, values[node.id]
    if isinstance(node, ast.UnaryOp):
        fixed, operand = _partial(node.operand, values)
        negate = isinstance(node.op, ast.USub)
        if fixed:
            return True, (-operand if negate else +operand)
        return False, (lambda env: -operand(env)) if negate else (lambda env: +operand(env))
    if isinstance(node, ast.BinOp):
        op = _BINARY[type(node.op)]
        (fixed_left, left), (fixed_right, right) = _partial(node.left, values), _partial(node.right, values)
        if fixed_left and fixed_right:
            return True, op(left, right)
        if fixed_left:
            return False, lambda env: op(left, right(env))
        if fixed_right:
            return False, lambda env: op(left(env), right)
        return False, lambda env: op(left(env), right(env))
    if isinstance(node, ast.Call):
        function = CALLS[node.func.id]
        parts = [_partial(arg, values) for arg in node.args]
        if all(fixed for fixed, _ in parts):
            return True, function(*[value for _, value in parts])
        getters = [(lambda env, v=value: v) if fixed else value for fixed, value in parts]
        return False, lambda env: function(*[get(env) for get in getters])
    raise FormulaError(f"{type(node).__name__} is not allowed (only arithmetic over job keys)")


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
    event time the queue is ordered, except for jobs past the formula's saturation age
    (``Formula.saturation``), whose keys no longer change. Once every job is past it
    (``freeze_time``), a ``frozen`` sorter is static.
    """

    def __init__(self, formula: Formula, epoch: int, report: Report, frozen: int | None = None,
                 lags: dict[str, int] | None = None) -> None:
        self.formula = formula
        self.epoch = epoch
        self.report = report
        self.frozen = frozen  # the time every job's value was read at, once none changes any more
        # owner → seconds its jobs' priority is lowered by (a learned fair share: ``order_by_standing``)
        self.lags: dict[str, int] = lags or {}
        self._warned: set[str] = set()
        self._at: dict[Job, Callable[[dict[str, float]], float]] = {}  # per job: Formula.at_times
        self._settled: dict[Job, tuple] = {}  # the keys of jobs past the saturation age
        self._constants: dict[Job, tuple] = {}  # per job: its values of the names but AGE and NOW

    @property
    def static(self) -> bool:
        return not self.formula.time_dependent or self.frozen is not None

    @property
    def rising(self) -> bool:
        """Time-dependent, but never lower at a greater age (``Formula.rising``): jobs with
        the same ``constants`` are in the order of their queue dates at every time."""
        return not self.static and self.formula.rising

    def constants(self, job: Job) -> tuple:
        """The job's values of the formula's names other than AGE and NOW, as a tuple.  O(1)
        once the job is ready (``_ready``)."""
        found = self._constants.get(job)
        if found is None:
            self._ready(job)
            found = self._constants[job]
        return found

    def freeze_time(self, jobs: Iterable[Job]) -> int | None:
        """When every one of ``jobs`` will be past the formula's saturation age, so that the
        queue's order stops changing and may be kept as a static one's (``frozen``); None if
        the formula has no such age (or is static already).

        >>> sorter = JobSorter(Formula("10 * min(AGE, 3600) + totalcores", []), 0, Report(quiet=True))
        >>> sorter.freeze_time([Job("a", 0, {}, "Q", queued=-7200), Job("b", 1, {}, "Q", queued=-60)])
        3540
        """
        saturation = self.formula.saturation if self.formula.time_dependent else None
        latest = None if saturation is None else max((job.queued for job in jobs), default=None)
        if latest is None:
            return None
        return latest + math.ceil(max(saturation, 0.0))

    def frozen_at(self, now: int) -> JobSorter:
        """This sorter from ``now`` on, when every job is past the saturation age: static,
        each job's key read at ``now`` (its value at any later time, to the bit). It shares
        the warnings already given.  O(1)."""
        sorter = JobSorter(self.formula, self.epoch, self.report, frozen=now, lags=self.lags)
        sorter._warned, sorter._at = self._warned, self._at
        return sorter

    def key(self, job: Job, now: int) -> tuple:
        """Sort key of ``job`` at simulated time ``now`` (seconds from time zero)."""
        if self.static:  # computed once, kept on the job (the waiting queue sorts by it)
            if not job.order_key:
                at = now if self.frozen is None else self.frozen
                job.order_key = (-self.priority(job, at), job.queued, job.index)
            return job.order_key
        return (-self.priority(job, now), job.queued, job.index)

    def priority(self, job: Job, now: int) -> float:
        """The formula's value for ``job`` at ``now``; -inf (with a warning) where it has none.
        A time-dependent formula is made ready for each job once (``Formula.at_times``): the
        job's keys do not change while it waits."""
        if self.formula.time_dependent:
            code = self._at.get(job) or self._ready(job)
            value = code({"AGE": float(now - job.queued), "NOW": float(self.epoch + now)})
        else:
            value = self.formula.evaluate(self._values(job))
        if math.isnan(value):
            return self._lowest(job)
        return value - self.lags[job.owner] if job.owner in self.lags else value

    def order_by_standing(self, lags: dict[str, int], waiting: Iterable[Job] = ()) -> bool:
        """Lower each owner's jobs' priority by its ``lags`` (seconds), where the order is the
        submit order: the default formula ``-DATEqueuedate``, or a static one whose names no
        ``waiting`` job carries (``userprio`` in a backtest of ``sacct``, which has no
        priorities: every job's value is 0, so the queue dates order them). There the lag
        places each job as if queued that much later. False (nothing changed) where the
        jobs' values differ: the batch system's own priorities or a site's terms rank them
        already.  O(users + waiting jobs × names).

        >>> sorter = JobSorter(Formula("-DATEqueuedate", []), 0, Report(quiet=True))
        >>> sorter.order_by_standing({"ann": 3600}), sorter.lags
        (True, {'ann': 3600})
        >>> job = Job("j1", 0, {"userprio": "7"}, "Idle")
        >>> JobSorter(Formula("userprio", []), 0, Report(quiet=True)).order_by_standing({"ann": 3600}, [job])
        False
        >>> JobSorter(Formula("userprio", []), 0, Report(quiet=True)).order_by_standing({"ann": 3600}, [Job("j2", 1, {}, "Idle")])
        True
        """
        if not lags:
            return False
        if self.formula.text.replace(" ", "") != SUBMIT_ORDER:
            if self.formula.time_dependent:
                return False
            keys = {name[4:] if name.startswith("DATE") else name for name in self.formula.names}
            if any(key in job.data for job in waiting for key in keys):
                return False
        self.lags = dict(lags)
        return True

    def keys(self, jobs: list[Job], now: int) -> list[tuple]:
        """``key`` of each of ``jobs`` at ``now``, in one loop: a time-dependent formula orders
        the whole queue at every event, and calls per job were most of that.  O(k)."""
        if self.static:
            return [self.key(job, now) for job in jobs]
        at, ready, lowest = self._at, self._ready, self._lowest
        clock = float(self.epoch + now)
        settled, saturation = self._settled, self.formula.saturation
        cutoff = -math.inf if saturation is None else now - saturation  # queued by then: past the age
        out = []
        for job in jobs:
            queued = job.queued
            if queued <= cutoff and job in settled:
                out.append(settled[job])
                continue
            code = at.get(job) or ready(job)
            value = code({"AGE": float(now - queued), "NOW": clock})
            key = (-(lowest(job) if value != value else value), queued, job.index)  # NaN != NaN
            if queued <= cutoff:  # its value stays
                settled[job] = key
            out.append(key)
        return out

    def _ready(self, job: Job) -> Callable[[dict[str, float]], float]:
        """``Formula.at_times`` for ``job``, made once and kept."""
        values = self._values(job)
        self._constants[job] = tuple(values.values())
        code = self._at[job] = self.formula.at_times(values)
        return code

    def _lowest(self, job: Job) -> float:
        """The priority of a job the formula gives no value: the lowest, said once per job."""
        if job.id not in self._warned:
            self._warned.add(job.id)
            self.report.warn(job.label, "system_sysprio", self.formula.text,
                             "cannot be evaluated for this job; it gets the lowest priority")
        return -math.inf

    def _values(self, job: Job) -> dict[str, float]:
        """The job's values of the formula's names other than AGE and NOW."""
        values: dict[str, float] = {}
        for name in sorted(self.formula.names - TIME_NAMES):  # sorted: warnings in one order
            if name.startswith("DATE") and (name[4:] in job.data or name == "DATEqueuedate"):
                values[name] = self._date(job, name[4:])
            else:
                values[name] = self._number(job, name)
        return values

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


def _by_keys(jobs: list[Job], keys: list[tuple]) -> list[Job]:
    """``jobs`` sorted by their ``keys``, equal keys in their present order (as a stable
    ``list.sort``; jobs themselves are never compared).  O(k log k)."""
    return [jobs[i] for _, i in sorted(zip(keys, range(len(jobs))))]


class WaitingQueue:
    """The waiting jobs in priority order.

    With a static formula the order is kept incrementally (O(log n) per change), and the
    jobs that hold no reservation are also kept per *request class* (group, shape, size,
    wall, and the job array of a task): jobs of one class fit in exactly the same places, so
    once one of them fails in a pass, ``walk`` passes over the whole class (and every class a
    failure covers) at once, and over an array's tasks at once while its throttle is full.
    The jobs of an owner held at its cap can be parked outside the classes (``park``).
    With a time-dependent formula that rises with age (``JobSorter.rising``) the classes are
    kept too, each also by the job's other values in the formula and in queue-date order,
    which is its priority order at every time: a walk then orders only the classes' heads,
    at the time of the pass (``rising``). With any other time-dependent formula the queue is
    sorted again at each pass and walked whole.
    """

    def __init__(self, sorter: JobSorter, size: Callable[[Job], int],
                 group: Callable[[Job], Any] = lambda job: None) -> None:
        self.sorter = sorter
        self.size = size  # job → the number a free-resource bound is compared with
        self.group = group  # job → its top-dog group
        self.static = sorter.static
        self.rising = sorter.rising
        self.classed = self.static or self.rising  # kept in request classes, walked by ``walk``
        # a class's order: the static sort key (set on add), or for a rising formula the queue date
        key = attrgetter("order_key") if self.static else attrgetter("queued", "index")
        self._key = key
        self._jobs: SortedKeyList | list = SortedKeyList(key=key) if self.static else []
        self._in: set[Job] = set()  # a rising formula's waiting jobs (``ahead``)
        self._reserved: dict[Job, None] = {}  # ... those holding a reservation, out of the classes, in turn
        self._firsts: _Firsts | None = None  # ... the waiting jobs' first at a time (``ahead``)
        self._ranks: _Ranks | None = None  # ... their sort keys at that time (``rank``)
        self._count = 0  # len(_jobs), without SortedKeyList's Python-level __len__ (asked once per event)
        # unreserved jobs by request class, each a list in priority order: most hold one job,
        # and a list is made and dropped 8x faster than a SortedKeyList
        self._classes: dict[tuple, list[Job]] = {}
        self._filed: dict[Job, tuple] = {}  # each unreserved job's request class
        self._by_size: dict[int, set[tuple]] = {}  # request classes by size
        self._sizes: list[int] = []  # the sizes in _by_size, ascending (a few hundred at most)
        self.groups: Counter = Counter()  # request classes per top-dog group
        # jobs of owners held at their cap, out of the request classes meanwhile (``park``)
        self.parked: dict[Any, dict[Job, tuple | None]] = {}  # ... each with its class where it had one
        self._owned: dict[Any, set[Job]] | None = None  # owner -> filed jobs, kept from the first park on

    def __len__(self) -> int:
        return self._count

    def __bool__(self) -> bool:
        return self._count > 0

    def __iter__(self):
        return iter(self._jobs)

    def _class(self, job: Job) -> tuple:
        shape, size = job.shape
        if self.rising:
            return (self.group(job), shape, size, job.wall, job.array, self.sorter.constants(job))
        return (self.group(job), shape, size, job.wall, job.array)

    def add(self, job: Job) -> None:
        """O(log n)."""
        self._count += 1
        if not self.static:
            self._jobs.append(job)
            if not self.rising:
                return
            self._in.add(job)
            self._firsts = None
        else:
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
            bucket = self._open(cls)
        insort(bucket, job, key=self._key)

    def _open(self, cls: tuple) -> list[Job]:
        """A new, empty request class."""
        bucket = self._classes[cls] = []
        size = cls[2]
        if size not in self._by_size:
            self._by_size[size] = set()
            insort(self._sizes, size)
        self._by_size[size].add(cls)
        self.groups[cls[0]] += 1
        return bucket

    def _close(self, cls: tuple) -> None:
        """Drop an emptied request class."""
        del self._classes[cls]
        size = cls[2]
        self._by_size[size].discard(cls)
        if not self._by_size[size]:
            del self._by_size[size]
            self._sizes.remove(size)
        self.groups[cls[0]] -= 1
        if not self.groups[cls[0]]:
            del self.groups[cls[0]]

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
            i = bisect_left(bucket, self._key(job), key=self._key)
            while bucket[i] is not job:  # equal keys (the index breaks every tie, though)
                i += 1
            del bucket[i]
            if not bucket:
                self._close(cls)

    def remove(self, job: Job) -> None:
        """O(log n) (O(n) with a time-dependent formula)."""
        self._jobs.remove(job)
        self._count -= 1
        if self.rising:
            self._in.discard(job)
            self._reserved.pop(job, None)
        if self.classed:
            self._unfile(job)

    def reserved(self, job: Job) -> None:
        """``job`` holds a reservation now: walks reach it only when its slot is due."""
        if self.classed:
            self._unfile(job)
            if self.rising:
                self._reserved[job] = None

    def unreserved(self, job: Job) -> None:
        """``job`` lost its reservation (``replan``): walks reach it as any waiting job again
        (a parked owner's job stays parked).  O(log n)."""
        if self.classed:
            if self.rising:
                self._reserved.pop(job, None)
                self._firsts = None
            if job.owner in self.parked:
                self.parked[job.owner][job] = None
            else:
                self._file(job)

    def park(self, owner: Any) -> None:
        """Take ``owner``'s unreserved jobs out of the request classes until ``unpark``: walks
        pass over none of them, and jobs of ``owner`` that come meanwhile are parked too. For
        an owner at its cap (see ``Backfilling``), whose jobs every pass would visit only to
        find them held back. Static order only; O(k + m) for the owner's k jobs in classes of
        m jobs (the first call O(n)): a class is filtered at once, not a job at a time (an
        owner is parked and let go at every end of one of its jobs, and most of its jobs share
        a few classes)."""
        if self._owned is None:
            self._owned = {}
            for job in self._filed:
                self._owned.setdefault(job.owner, set()).add(job)
        kept = self.parked.setdefault(owner, {})
        jobs = sorted(self._owned.pop(owner, ()), key=self._key)
        classes: dict[tuple, None] = {}
        for job in jobs:
            cls = kept[job] = self._filed.pop(job)
            classes[cls] = None
        for cls in classes:
            bucket = self._classes[cls]
            bucket[:] = [job for job in bucket if job.owner != owner]
            if not bucket:
                self._close(cls)

    def unpark(self, owner: Any) -> None:
        """File ``owner``'s parked jobs in their request classes again.  O(k log k + m) for
        its k jobs in classes of m jobs (see ``park``)."""
        jobs = self.parked.pop(owner, None)
        if not jobs:
            return
        self._firsts = None
        classes: dict[tuple, list[Job]] = {}
        for job, cls in jobs.items():
            cls = self._filed[job] = cls or self._class(job)
            classes.setdefault(cls, []).append(job)
        if self._owned is not None:
            self._owned.setdefault(owner, set()).update(jobs)
        for cls, new in classes.items():
            bucket = self._classes.get(cls)
            if bucket is None:
                bucket = self._open(cls)
            bucket.extend(new)
            bucket.sort(key=self._key)

    def sort(self, jobs, now: int) -> list[Job]:
        """Queued ``jobs`` in priority order at ``now`` (static: by the key each carries).  O(k log k)."""
        if self.static:
            return sorted(jobs, key=self._key)
        jobs = list(jobs)
        return _by_keys(jobs, self.sorter.keys(jobs, now))

    def ordered(self, now: int) -> list[Job]:
        """All waiting jobs in priority order at ``now`` (a copy).  O(n), or O(n log n) re-sorted."""
        if not self.static:
            self._jobs = _by_keys(self._jobs, self.sorter.keys(self._jobs, now))
        return list(self._jobs)

    def walk(self, due: list[Job], bound: int, skip, small_only: bool, now: int) -> Walk:
        """Classes kept only (``classed``): ``due`` (jobs whose reservation starts now) and the
        unreserved jobs, merged in priority order at ``now``, passing over each class as long
        as ``skip(bound, group, shape, size, wall, array, ...)`` says none of its jobs can matter.
        ``small_only``: start from the classes of size ≤ ``bound`` only (no group can take a
        new reservation, so larger ones cannot matter until ``reopen``).

        O((jobs yielded + classes looked at) log n) per walk, however long the queue.
        """
        if small_only:
            # at the start of a pass nothing has failed and these fit the bound: none to skip
            sizes = self._sizes
            classes = [cls for size in sizes[:bisect_right(sizes, bound)] for cls in self._by_size[size]]
            return Walk(self, due, bound, skip, classes, self.rank(now), checked=True)
        return Walk(self, due, bound, skip, list(self._classes), self.rank(now))

    def rank(self, now: int) -> Callable[[Job], tuple]:
        """Each job's sort key at ``now``: the static one, or a rising formula's at that time
        (``_Ranks``, kept for the time: a pass's walk and ``ahead`` compute each once).  O(1)
        per job."""
        if self.static:
            return self._key
        ranks = self._ranks
        if ranks is None or ranks.now != now:
            ranks = self._ranks = _Ranks(self.sorter, now)
        return ranks

    def ahead(self, job: Job, now: int) -> bool:
        """Classes kept only: does a job of higher priority at ``now`` wait?  O(1) with a
        static order. With a rising formula, first a look at the jobs holding reservations in
        the order they took them, until one of them is ahead (the first, mostly); if none is,
        O(classes + jobs out of them) once at a time, then amortised O(log n) (``_Firsts``)."""
        if self.static:
            first = self._jobs[0]
            return first is not job and first.order_key < job.order_key
        firsts = self._firsts
        if firsts is None or firsts.now != now:
            rank = self.rank(now)
            mine = rank(job)
            if any(other is not job and rank(other) < mine for other in self._reserved):
                return True
            firsts = self._firsts = _Firsts(self, now)
        return firsts.ahead(job)


class _Ranks:
    """A rising formula's sort keys at one time, each job's computed once; ``fill`` computes
    many at once (``JobSorter.keys``: one loop, not a call per job)."""

    def __init__(self, sorter: JobSorter, now: int) -> None:
        self.sorter, self.now = sorter, now
        self.known: dict[Job, tuple] = {}

    def __call__(self, job: Job) -> tuple:
        found = self.known.get(job)
        if found is None:
            found = self.known[job] = self.sorter.key(job, self.now)
        return found

    def fill(self, jobs: list[Job]) -> None:
        """The keys of ``jobs`` (not yet known ones), in one loop.  O(k)."""
        known = self.known
        jobs = [job for job in jobs if job not in known]
        known.update(zip(jobs, self.sorter.keys(jobs, self.now)))


class _Firsts:
    """The first of a rising formula's waiting jobs at one time, while jobs leave: a heap of
    the classes' heads and of the jobs out of the classes (holding a reservation, parked).
    A job that left is dropped as it reaches the top, and its class's new head comes in.
    The queue drops this for a new one when a job comes into a class (``add``, ``unpark``,
    ``unreserved``), so within its life jobs only leave: the top is the first waiting job."""

    def __init__(self, queue: WaitingQueue, now: int) -> None:
        self.queue, self.now = queue, now
        self.rank = rank = queue.rank(now)
        firsts = [(cls, bucket[0]) for cls, bucket in queue._classes.items()]  # and those out of the classes:
        firsts.extend((None, job) for job in queue._reserved)
        firsts.extend((None, job) for jobs in queue.parked.values() for job in jobs)
        rank.fill([job for _, job in firsts])
        heap = [(rank(job), cls, job) for cls, job in firsts]
        heapify(heap)  # ranks are unique (the index ends each), so classes are never compared
        self.heap = heap

    def ahead(self, job: Job) -> bool:
        heap, waiting, classes = self.heap, self.queue._in, self.queue._classes
        while heap and heap[0][2] not in waiting:
            _, cls, _ = heappop(heap)
            bucket = None if cls is None else classes.get(cls)
            if bucket:
                heappush(heap, (self.rank(bucket[0]), cls, bucket[0]))
        return bool(heap) and heap[0][2] is not job and heap[0][0] < self.rank(job)


class Walk:
    """One pass over a WaitingQueue (see ``WaitingQueue.walk``).

    ``reopen`` brings back every class not in the walk, from the current position on, when
    what ``skip`` depends on changes (a top dog started and freed a reservation slot).
    """

    def __init__(self, queue: WaitingQueue, due: list[Job], bound: int, skip, classes: list[tuple],
                 rank: Callable[[Job], tuple], checked: bool = False) -> None:
        self.queue, self.bound, self.skip = queue, bound, skip
        self.rank = rank  # each job's sort key in this pass (``WaitingQueue.rank``)
        self.at: tuple = ()
        buckets = queue._classes
        if not checked:  # (else the caller knows none of ``classes`` is to be skipped now)
            classes = [cls for cls in classes if not skip(bound, *cls)]
        self.live: set[tuple] = set(classes)  # classes in the heap
        heads = [buckets[cls][0] for cls in classes]
        if isinstance(rank, _Ranks):
            rank.fill(due + heads)
        self.heap: list[tuple] = [(rank(job), 0, None, job) for job in due]
        self.heap.extend((rank(job), id(cls), cls, job) for cls, job in zip(classes, heads))
        heapify(self.heap)

    def _push(self, cls: tuple, job: Job) -> None:
        if self.skip(self.bound, *cls):
            return
        self.live.add(cls)
        heappush(self.heap, (self.rank(job), id(cls), cls, job))

    def __iter__(self) -> Walk:
        return self

    def __next__(self) -> Job:
        heap, filed = self.heap, self.queue._filed
        while heap:
            key, _, cls, job = heap[0]
            if cls is None:  # a due job
                heappop(heap)
            elif self.skip(self.bound, *cls):
                heappop(heap)
                self.live.discard(cls)
                continue
            else:
                self._advance(cls, job)
                if job not in filed:  # parked since it was pushed
                    continue
            self.at = key
            return job
        raise StopIteration

    def _advance(self, cls: tuple, job: Job) -> None:
        """Move class ``cls``'s place in the heap (at its top, at ``job``) to its next job."""
        nxt = self._after(cls, self.queue._key(job), self.queue._key)
        if nxt is None:
            heappop(self.heap)
            self.live.discard(cls)
        else:
            heapreplace(self.heap, (self.rank(nxt), id(cls), cls, nxt))

    def _after(self, cls: tuple, key: tuple, by: Callable[[Job], tuple]) -> Job | None:
        """The first job of class ``cls`` after ``key`` by ``by``: the class's own order, or
        the rank (a class is in rank order too)."""
        bucket = self.queue._classes.get(cls)
        if bucket is None:
            return None
        i = bisect_right(bucket, key, key=by)
        return bucket[i] if i < len(bucket) else None

    def passed_over(self, group: Any, key: tuple) -> bool:
        """Is a job of ``group`` ahead of ``key`` in a class this walk has passed over (skipped,
        or left out as larger than what is free)? It was refused a reservation as surely as a
        job looked at and refused.  O(classes); asked only when a top dog starts."""
        rank = self.rank
        return any(cls[0] == group and cls not in self.live and rank(bucket[0]) < key
                   for cls, bucket in self.queue._classes.items())

    def reopen(self) -> None:
        """Bring back every class not in the walk, from the current position on.  O(classes)."""
        for cls in list(self.queue._classes):
            if cls not in self.live:
                nxt = self._after(cls, self.at, self.rank)
                if nxt is not None:
                    self._push(cls, nxt)
